// tnt::Model over a pipelined torch::nn::Sequential: the run's stage
// groups, the cut (at the user's SplitPoints or balanced by parameter
// count), this rank's stage as a Sequential of its layers under their own
// names (so that weight files keep the whole model's keys), and the other
// stages' tensors freed.
#include "model/model_impl.h"

#include <vector>

#include <fmt/format.h>

#include <tarantella/base/argument_error.h>
#include <tarantella/base/logging.h>
#include <tarantella/model/pipeline.h>
#include <tarantella/runtime/runtime.h>

#include "stages/groups.h"
#include "stages/partition.h"

namespace tnt {
namespace {

stages::PipelineSettings settings_of(const PipelineOptions& o) {
  TNT_CHECK_ARG(o.stages() >= 1, "PipelineOptions().stages(", o.stages(),
                "): a model has at least 1 stage");
  stages::PipelineSettings s;
  s.stages = o.stages();
  s.micro_batches = o.micro_batches().value_or(stages::default_micro_batches(o.stages()));
  TNT_CHECK_ARG(s.micro_batches >= 1, "PipelineOptions().micro_batches(", s.micro_batches,
                "): a global batch is at least 1 micro-batch per replica");
  s.schedule = stages::schedule_from_name(o.schedule());
  return s;
}

bool is_split_point(const torch::nn::Module& m) {
  return dynamic_cast<const nn::SplitPointImpl*>(&m) != nullptr;
}

std::int64_t parameter_count(const torch::nn::Module& m) {
  std::int64_t n = 0;
  for (const auto& p : m.parameters()) n += p.numel();
  return n;
}

void free_tensors(torch::nn::Module& m) {
  torch::NoGradGuard no_grad;
  for (auto& p : m.parameters()) p.set_data(torch::empty({0}, p.options()));
  for (auto& b : m.buffers()) b.set_data(torch::empty({0}, b.options()));
}

// This rank's stage: its layers of `net`, named as in `net`; the layers of
// the other stages keep their structure but lose their tensors.
torch::nn::Sequential stage_of(torch::nn::Sequential& net, const stages::StageLayout& layout,
                               bool log_the_cut) {
  std::vector<bool> split_point;
  std::vector<std::int64_t> parameters;
  for (const auto& child : net->children()) {
    split_point.push_back(is_split_point(*child));
    parameters.push_back(parameter_count(*child));
  }
  std::vector<std::int64_t> per_stage;
  const auto ranges = stages::stage_ranges(split_point, parameters, layout.stages, &per_stage);
  if (log_the_cut) log::info(stages::describe_cut(ranges, per_stage, split_point));
  const auto [begin, end] = ranges[static_cast<std::size_t>(layout.stage)];
  const auto named = net->named_children();
  torch::nn::Sequential stage;
  int i = 0;
  for (const auto& any : *net) {
    const std::string& name = named[i].key();
    if (i >= begin && i < end && !is_split_point(*any.ptr())) {
      stage->push_back(name, any);
    } else if (i < begin || i >= end) {
      free_tensors(*any.ptr());
    }
    ++i;
  }
  return stage;
}

}  // namespace

std::optional<PipelinePosition> Model::pipeline() const {
  const stages::StageLayout* l = impl_->engine().stage_layout();
  if (l == nullptr) return std::nullopt;
  return PipelinePosition{l->stage, l->stages, l->replica, l->replicas};
}

Model::Model(torch::nn::Sequential net, PipelineOptions pipeline)
    : Model(std::move(net), std::move(pipeline), default_group()) {}

Model::Model(torch::nn::Sequential net, PipelineOptions pipeline, comm::ProcessGroup group) {
  const stages::PipelineSettings settings = settings_of(pipeline);
  auto options = train::EngineOptions::from_config(current_config());
  if (settings.stages == 1) {  // SplitPoints are identities
    impl_ = std::make_unique<Impl>(
        *this, std::make_unique<train::Engine>(make_adapter(net), std::move(group), options));
    return;
  }
  TNT_CHECK(group.valid() && group.is_member(),
            "tnt::Model: this rank is not a member of the group it was given: build the model "
            "only on the ranks of its group");
  stages::StageGroups groups = stages::split_into_stages(group, settings);
  torch::nn::Sequential stage = stage_of(net, groups.layout, group.is_master());
  comm::ProcessGroup stage_group = groups.stage;
  impl_ = std::make_unique<Impl>(
      *this, std::make_unique<train::Engine>(make_adapter(stage), std::move(stage_group), options,
                                             std::move(groups)));
}

}  // namespace tnt
