// Engine::snapshot() and Engine::restore() with pipeline stages: a
// checkpoint holds the whole model's training state, as the unsplit
// model's would (its weights under the Sequential's names, the optimizer
// state by parameter name), so that it loads at any layout (P', D').
//
// Note: saving. Only the first replica's stages take part in the gather
// (every replica holds the same tensors): each sends its weights and its
// optimizer state, as named tensors ("w\tname", "o\tname\tfield"), to the
// first stage over the pipeline's links (StageLink::gather_on_first_stage),
// and the master (stage 0 of replica 0) keeps host copies of the lot, made
// before the step ends, so the snapshot can be written beside training.
//
// Note: loading. Each stage's first replica reads the file (it must be
// readable there: a shared or local disk) and checks its stage's part:
// weights and optimizer state for every parameter of its stage, no entry
// that no stage has. A file of an unsplit run holds torch::optim's bytes
// over the whole model's trainable parameters in order; they are decoded
// onto the stage's names. Only when every stage found its part good (one
// agreement over the model's group) does any stage change; then each stage
// sends its tensors to its other replicas (EngineState::synchronize_state).
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <torch/torch.h>

#include <tarantella/base/error.h>

#include "dp/optimizer_shards.h"
#include "train/engine/engine.h"
#include "train/engine/compile_config.h"
#include "train/engine/engine_state.h"
#include "train/engine/optimizer_by_name.h"
#include "train/engine/restore_parts.h"

namespace tnt::train {
namespace {

constexpr const char* kWeight = "w\t";
constexpr const char* kOptimizer = "o\t";
// Deterministic mode's predicted exponents, each stage's own (by name).
constexpr const char* kExponent = "e\t";

torch::Tensor host_copy(const torch::Tensor& t) {
  return t.detach().to(torch::kCPU, /*non_blocking=*/false, /*copy=*/true).contiguous();
}

torch::Tensor as_is(const torch::Tensor& t) { return t.detach(); }

// Raises, on every rank of `group`, the error of the lowest rank that has
// one (none if `error` is empty everywhere). Collective.
void agree_on_failure(const comm::ProcessGroup& group, const std::string& error) {
  const torch::Tensor failed =
      group.allgather(torch::tensor({error.empty() ? 0 : 1}, torch::kInt64)).cpu();
  int first = -1;
  for (int r = 0; r < failed.numel() && first < 0; ++r) {
    if (failed[r].item<std::int64_t>() != 0) first = r;
  }
  if (first < 0) return;
  const std::string message = group.broadcast_string(error, first);
  if (group.rank() == first) throw Error(message);
  detail::throw_error(fmt::format("rank {} of the model's group failed: {}", first, message));
}

// What the other stages of this pipeline hold: their tensors' names, and
// the whole model's trainable parameters in order (the unsplit optimizer's
// order). Collective over the pipeline.
struct WholeModelNames {
  std::set<std::string> elsewhere;
  std::vector<std::string> trainable;
};

WholeModelNames whole_model_names(ModuleAdapter& net, const comm::ProcessGroup& pipeline,
                                  int stage) {
  WholeModelNames out;
  for (int s = 0; s < pipeline.size(); ++s) {
    std::string text;
    if (s == stage) {
      for (const auto& [name, p] : net.named_parameters()) {
        text += (p.requires_grad() ? "p " : "f ") + name + "\n";
      }
      for (const auto& [name, b] : net.named_buffers()) text += "b " + name + "\n";
    }
    text = pipeline.broadcast_string(text, s);
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);) {
      const std::string name = line.substr(2);
      if (s != stage) out.elsewhere.insert(name);
      if (line[0] == 'p') out.trainable.push_back(name);
    }
  }
  return out;
}

// The order of the parameters in an unsplit checkpoint's optimizer bytes:
// the saver's (the user's optimizer may hold them in any order), checked to
// be the whole model's trainable parameters, each once; in files from before
// the names, named_parameters()'s.
std::vector<std::string> saver_order(const std::optional<std::vector<std::string>>& saved,
                                     const std::vector<std::string>& trainable,
                                     const std::string& path) {
  if (!saved) return trainable;
  std::set<std::string> want(trainable.begin(), trainable.end()), seen;
  for (const auto& name : *saved) {
    TNT_CHECK(want.count(name) == 1, "the optimizer state in '", path, "' is for parameter '",
              name, "', which is not a trainable parameter of this model: load it into the "
              "model it was saved from (the same Sequential, the same frozen parameters)");
    TNT_CHECK(seen.insert(name).second, "the optimizer state in '", path,
              "' names parameter '", name, "' twice: the file is damaged");
  }
  for (const auto& name : trainable) {
    TNT_CHECK(seen.count(name) == 1, "the optimizer state in '", path,
              "' has no entry for parameter '", name, "': it was saved from a different model "
              "(or with that parameter frozen)");
  }
  return *saved;
}

}  // namespace

std::optional<EngineSnapshot> Engine::snapshot_with_stages(bool keep) {
  EngineState& s = *state_;
  StageLink& link = *s.stage_link();
  const stages::StageLayout& layout = link.layout();
  std::string kind;
  NamedOptimizerState state;
  if (s.is_compiled()) {
    // Checked on every rank alike, before any collective.
    kind = optimizer_kind_name(s.optimizer(), "a checkpoint with pipeline stages");
    const NamedTensorList params = s.net().named_parameters();
    if (dp::OptimizerShards* shards = s.gradients().shards()) {
      // Sharded within the stage's replicas: gathered by all of them.
      shards->with_full_form([&](const torch::optim::Optimizer& full) {
        if (layout.replica == 0) state = optimizer_state_by_name(full, params, as_is);
      });
    } else if (layout.replica == 0) {
      state = optimizer_state_by_name(s.optimizer(), params, as_is);
    }
  }
  if (layout.replica != 0) return std::nullopt;  // the first replica holds every tensor
  // On the training device: a GPU tensor travels as the pipeline's backend
  // sends it, and the first stage receives onto its device. The sends end
  // before the gather returns, so the training tensors go as they are.
  NamedTensorList mine;
  for (const auto& [name, t] : all_weights(s.net())) mine.emplace_back(kWeight + name, as_is(t));
  // The optimizer state where it is: a sharded optimizer's full form is in
  // host memory (OptimizerShards::with_full_form) and goes so, over MPI.
  for (auto& [name, t] : to_named_tensors(state)) mine.emplace_back(kOptimizer + name, t);
  // Host tensors travel over MPI whatever the device, and are received in
  // host memory (StageLink::take).
  for (const auto& [name, e] : s.counters().deterministic_exponents) {
    mine.emplace_back(kExponent + name, torch::tensor({static_cast<std::int64_t>(e)}));
  }
  const NamedTensorList all = link.gather_on_first_stage(mine);  // collective over the pipeline
  if (!keep || !layout.first_stage()) return std::nullopt;
  EngineSnapshot out;
  out.counters = s.counters();
  out.counters.deterministic_exponents.clear();  // every stage's, below
  NamedTensorList optimizer;
  const std::size_t prefix = std::char_traits<char>::length(kWeight);
  for (const auto& [key, t] : all) {
    if (key.compare(0, prefix, kExponent) == 0) {
      out.counters.deterministic_exponents[key.substr(prefix)] =
          static_cast<int>(t.cpu().item<std::int64_t>());  // host-only: a gathered host value
      continue;
    }
    const bool weight = key.compare(0, prefix, kWeight) == 0;
    // Copies: this stage's entries are the training tensors themselves.
    (weight ? out.weights : optimizer).emplace_back(key.substr(prefix), host_copy(t));
  }
  if (s.is_compiled()) {
    out.optimizer_by_name = to_entry(from_named_tensors(optimizer));
    out.optimizer_kind = kind;
    out.compile = compile_config(s.compiled()).dump();
  }
  out.loss_scale = loss_scale();
  // architecture and torchscript stay empty: they would describe one stage.
  return out;
}

void Engine::restore_with_stages(const std::function<RestoredState()>& read_on_master) {
  EngineState& s = *state_;
  StageLink& link = *s.stage_link();
  s.gradients().unshard();
  const WholeModelNames names = whole_model_names(s.net(), link.pipeline(), link.layout().stage);
  std::function<void()> apply;
  std::string error;
  if (s.group().is_master()) {  // this stage's first replica
    try {
      const RestoredState r = read_on_master();
      std::function<void()> set_optimizer;
      if (r.optimizer_by_name || r.optimizer) {
        auto saved = std::make_shared<NamedOptimizerState>(
            r.optimizer_by_name
                ? from_entry(*r.optimizer_by_name, r.source)
                : decode_optimizer_bytes(s.optimizer(), *r.optimizer,
                                         saver_order(r.optimizer_names, names.trainable, r.source),
                                         r.source));
        const std::string kind = r.optimizer_by_name
                                     ? r.optimizer_kind
                                     : optimizer_kind_name(s.optimizer(), "loading a checkpoint");
        auto set = prepare_optimizer_state(s.optimizer(), s.net().named_parameters(), *saved,
                                           kind, r.source, s.device());
        set_optimizer = [saved, set] { set(); };  // `set` points into *saved
      }
      auto set_weights = prepare_weights(s.net(), r.weights, r.source, names.elsewhere);
      apply = [set_weights, set_optimizer] {
        set_weights();
        if (set_optimizer) set_optimizer();
      };
    } catch (const std::exception& e) {
      error = e.what();
      if (error.empty()) error = "unknown error";
    }
  }
  agree_on_failure(s.everyone(), error);  // no stage changes unless every stage can
  if (apply) apply();
  s.synchronize_state();  // each stage's replicas
}

}  // namespace tnt::train
