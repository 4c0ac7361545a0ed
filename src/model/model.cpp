#include "model/model_impl.h"

#include "dp/optimizer_shards.h"

#include <cstring>
#include <iostream>
#include <sstream>

#include <fmt/format.h>

#include <tarantella/dp/state_sync.h>
#include <tarantella/base/error.h>
#include <tarantella/model/sync_batchnorm.h>
#include <tarantella/base/logging.h>
#include <tarantella/runtime/runtime.h>

#include "train/autotune.h"
#include "train/timeline.h"

namespace tnt {
namespace {

torch::Device pick_device(const Config& config, const comm::ProcessGroup& group) {
  if (config.use_gpu.value_or(true) && torch::cuda::is_available()) {
    return torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(
                                           group.local_rank() % torch::cuda::device_count()));
  }
  return torch::Device(torch::kCPU);
}

}  // namespace

Model::Impl::Impl() = default;
Model::Impl::~Impl() = default;

void run_on_master_checked(const comm::ProcessGroup& group, const std::function<void()>& action) {
  std::string error;
  if (group.is_master()) {
    try {
      action();
    } catch (const std::exception& e) {
      error = e.what();
      if (error.empty()) error = "unknown error";
    }
  }
  const std::string message = group.broadcast_string(error);
  if (message.empty()) return;
  if (group.is_master()) throw Error(message);
  detail::throw_error("the master rank failed: " + message);
}

std::vector<double> allreduce_state(const comm::ProcessGroup& group,
                                    const std::vector<double>& local) {
  torch::Tensor t = torch::tensor(local, torch::kFloat64);
  group.allreduce(t);
  return std::vector<double>(t.data_ptr<double>(), t.data_ptr<double>() + t.numel());
}


void Model::Impl::require_compiled(const char* caller) const {
  TNT_CHECK(options.has_value(), caller, " needs a compiled model: call model.compile(...) first");
}

std::vector<torch::Tensor> Model::Impl::inputs_of(const data::Element& e) const {
  const int n = options ? options->num_inputs() : 1;
  TNT_CHECK(static_cast<int>(e.size()) >= n, "a dataset element has ", e.size(),
            " tensors but the model takes ", n, " input(s): check CompileOptions().num_inputs()");
  std::vector<torch::Tensor> in;
  for (int i = 0; i < n; ++i) in.push_back(e[static_cast<std::size_t>(i)].to(device));
  return in;
}

torch::Tensor Model::Impl::target_of(const data::Element& e) const {
  const int n = options->num_inputs();
  TNT_CHECK(static_cast<int>(e.size()) > n, "a dataset element has ", e.size(),
            " tensors: training and evaluation need (inputs..., target) with ", n,
            " input(s) and a target");
  return e[static_cast<std::size_t>(n)].to(device);
}

std::int64_t Model::Impl::state_size() const {
  std::int64_t n = 2;
  for (const auto& m : options->metrics()) n += m.state_size;
  return n;
}

torch::Tensor Model::Impl::state_of(const torch::Tensor& output, const torch::Tensor& target,
                                    const torch::Tensor& mean_loss, std::int64_t samples) const {
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> parts;
  parts.push_back(torch::stack({mean_loss.detach().to(torch::kFloat64).cpu() * samples,
                                torch::tensor(static_cast<double>(samples), torch::kFloat64)}));
  for (const auto& m : options->metrics()) {
    const torch::Tensor s = m.update(output.detach(), target).to(torch::kFloat64).cpu().reshape({-1});
    TNT_CHECK(s.numel() == m.state_size, "metric '", m.name, "' returned ", s.numel(),
              " state values, declared ", m.state_size);
    parts.push_back(s);
  }
  return torch::cat(parts);
}

Logs Model::Impl::logs_of(const std::vector<double>& state, const std::string& prefix) const {
  Logs logs;
  logs[prefix + "loss"] = state[1] > 0 ? state[0] / state[1] : 0.0;
  std::size_t at = 2;
  for (const auto& m : options->metrics()) {
    std::vector<double> s(state.begin() + static_cast<std::ptrdiff_t>(at),
                          state.begin() + static_cast<std::ptrdiff_t>(at + m.state_size));
    logs[prefix + m.name] = m.result(s);
    at += static_cast<std::size_t>(m.state_size);
  }
  return logs;
}

void Model::Impl::synchronize_state() {
  const NamedTensorList params = net->named_parameters();
  const NamedTensorList buffers = net->named_buffers();
  dp::check_same_structure(group, params, "parameters");
  dp::check_same_structure(group, buffers, "buffers");
  std::vector<torch::Tensor> all;
  for (const auto& [name, t] : params) all.push_back(t);
  for (const auto& [name, t] : buffers) all.push_back(t);
  dp::broadcast_tensors(group, all);
  // A sharded optimizer's state differs per rank by design; each rank's
  // shards were cut from the same full state.
  if (optimizer && !shards) dp::broadcast_optimizer_state(group, *optimizer);
}

void Model::Impl::unshard_optimizer() {
  if (!shards) return;
  shards->unshard();
  shards.reset();
  drop_engine();
}

void Model::Impl::drop_engine() {
  shards.reset();
  bucket_steps.reset();
  sync.reset();
}

dp::GradientSynchronizer& Model::Impl::retune() {
  const EngineSetting wanted = autotuner->setting();
  if (threshold_override != wanted.threshold_bytes || overlap_override != wanted.overlap) {
    threshold_override = wanted.threshold_bytes;
    overlap_override = wanted.overlap;
    unshard_optimizer();  // the shards follow the buckets
    drop_engine();
  }
  return synchronizer();
}

dp::GradientSynchronizer& Model::Impl::synchronizer() {
  if (!sync) {
    const std::size_t threshold =
        threshold_override ? *threshold_override
                           : options->fusion_threshold_bytes().value_or(config.fusion_threshold_bytes);
    // At one rank there is nothing to shard: the plain step is the same.
    const bool shard = options->shard_optimizer() && group.size() > 1;
    sync = std::make_unique<dp::GradientSynchronizer>(
        group, trainable,
        dp::SyncOptions()
                       .fusion_threshold_bytes(threshold)
                       .compression(options->compression())
                       .extras_numel(state_size())
                       .overlap(overlap_override.value_or(config.overlap))
                       .shard(shard));
    log::debug(fmt::format("{} gradient buckets (fusion threshold {} bytes)",
                           sync->buckets().size(), threshold));
    if (shard) {
      dp::GradientSynchronizer* engine = sync.get();
      shards = std::make_unique<dp::OptimizerShards>(
          group, trainable, sync->buckets(), *optimizer,
          [engine](std::size_t b, torch::Tensor bucket) { engine->adopt_buffer(b, std::move(bucket)); });
    } else if (config.overlap_optimizer && group.size() > 1 &&
               dp::updates_element_wise(*optimizer)) {
      bucket_steps = std::make_unique<dp::BucketSteps>(trainable, sync->buckets(), *optimizer);
    }
  }
  return *sync;
}

torch::Tensor Model::Impl::forward(const std::vector<torch::Tensor>& inputs) {
  const bool empty = !inputs.empty() && inputs[0].dim() > 0 && inputs[0].size(0) == 0;
  if (empty && !collective_layers) return {};
  return run(inputs);
}

torch::Tensor Model::Impl::run(const std::vector<torch::Tensor>& inputs) {
  const MixedPrecision precision = options ? options->mixed_precision() : MixedPrecision::None;
  if (precision == MixedPrecision::None) return net->forward(inputs);
  torch::Tensor output;
  {
    train::AutocastScope autocast(precision, device);
    output = net->forward(inputs);
  }
  // Loss and metrics in float32, as Keras's mixed policy recommends.
  return output.is_floating_point() ? output.to(torch::kFloat32) : output;
}

double Model::loss_scale() const { return impl_->scaler ? impl_->scaler->scale() : 1.0; }

std::int64_t Model::skipped_steps() const { return impl_->scaler ? impl_->scaler->skipped() : 0; }

void Model::Impl::bind_collective_layers() {
  collective_layers = false;
  for (const auto& module : net->modules()) {
    auto* layer = dynamic_cast<nn::CollectiveModule*>(module.get());
    if (layer == nullptr) continue;
    layer->use_model_group(group);
    collective_layers = true;
  }
}

Model::Model(std::shared_ptr<ModuleAdapter> adapter) : Model(std::move(adapter), default_group()) {}

Model::Model(std::shared_ptr<ModuleAdapter> adapter, comm::ProcessGroup group)
    : impl_(std::make_unique<Impl>()) {
  TNT_CHECK(adapter != nullptr, "tnt::Model needs a network, got a null pointer");
  TNT_CHECK(group.valid(), "tnt::Model needs a process group, got an empty handle: pass "
                           "tnt::world() or a group made by split()/subgroup()");
  TNT_CHECK(group.is_member(), "tnt::Model: this rank is not a member of the ", group.describe(),
            ": build the model only on the ranks of its group (check group.is_member())");
  impl_->group = std::move(group);
  impl_->config = is_initialized() ? tnt::config() : Config::from_env();
  impl_->net = std::move(adapter);
  impl_->device = pick_device(impl_->config, impl_->group);
  impl_->net->to(impl_->device);
  impl_->bind_collective_layers();
}

const comm::ProcessGroup& Model::group() const { return impl_->group; }

Model::~Model() = default;
Model::Model(Model&&) noexcept = default;
Model& Model::operator=(Model&&) noexcept = default;

void Model::compile(CompileOptions options) {
  TNT_CHECK(static_cast<bool>(options.optimizer()),
            "compile() needs an optimizer: CompileOptions().optimizer(tnt::optimizers::SGD(0.01))");
  TNT_CHECK(static_cast<bool>(options.loss()),
            "compile() needs a loss: CompileOptions().loss(tnt::losses::MeanSquaredError())");
  TNT_CHECK(options.num_inputs() >= 1, "num_inputs must be at least 1, got ", options.num_inputs());
  TNT_CHECK(options.aggregation_frequency() >= 1, "aggregation_frequency must be at least 1, got ",
            options.aggregation_frequency());
  TNT_CHECK(!options.clip_norm() || *options.clip_norm() > 0, "clip_norm must be positive, got ",
            options.clip_norm().value_or(0));
  TNT_CHECK(!options.clip_value() || *options.clip_value() > 0, "clip_value must be positive, got ",
            options.clip_value().value_or(0));
  TNT_CHECK(!options.deterministic() || *options.deterministic() >= 1,
            "deterministic: the chunk size must be at least 1 sample, got ",
            options.deterministic().value_or(0));
  TNT_CHECK(!options.deterministic() || options.compression() == dp::Compression::None,
            "deterministic training sums gradients exactly and sends them as 64-bit integers: "
            "remove compression(...) or deterministic(...)");
  TNT_CHECK(!options.deterministic() || !options.shard_optimizer(),
            "deterministic training steps the optimizer on whole gradients after an exact sum, "
            "and shard_optimizer(true) reduce-scatters them: remove one of the two");
  const std::string precision_problem =
      train::mixed_precision_problem(options.mixed_precision(), impl_->device);
  TNT_CHECK(precision_problem.empty(), precision_problem);
  for (const auto& m : options.metrics()) {
    TNT_CHECK(m.update && m.result && m.state_size > 0, "metric '", m.name,
              "' needs an update function, a result function and a positive state size");
  }
  impl_->bind_collective_layers();
  impl_->trainable.clear();
  for (const auto& [name, p] : impl_->net->named_parameters()) {
    if (p.requires_grad()) impl_->trainable.push_back(p);
  }
  impl_->drop_engine();  // shards belong to the optimizer replaced here
  impl_->optimizer = options.optimizer()(impl_->trainable);
  TNT_CHECK(!options.shard_optimizer() || dp::shard_problem(*impl_->optimizer).empty(),
            dp::shard_problem(*impl_->optimizer));
  impl_->options = std::move(options);
  impl_->optimizer_steps = 0;
  impl_->scaler.reset();
  if (impl_->options->loss_scaling().value_or(impl_->options->mixed_precision() ==
                                              MixedPrecision::Float16)) {
    impl_->scaler = std::make_shared<train::LossScaler>();
  }
}

bool Model::is_compiled() const { return impl_->options.has_value(); }

torch::Tensor Model::forward(const std::vector<torch::Tensor>& inputs) {
  std::vector<torch::Tensor> on_device;
  for (const auto& t : inputs) on_device.push_back(t.to(impl_->device));
  return impl_->run(on_device);
}

NamedTensorList Model::named_parameters() const { return impl_->net->named_parameters(); }
NamedTensorList Model::named_buffers() const { return impl_->net->named_buffers(); }

std::vector<torch::Tensor> Model::get_weights() const {
  std::vector<torch::Tensor> out;
  for (const auto& [name, t] : named_parameters()) out.push_back(t.detach().clone());
  for (const auto& [name, t] : named_buffers()) out.push_back(t.detach().clone());
  return out;
}

void Model::set_weights(const std::vector<torch::Tensor>& weights) {
  NamedTensorList all = named_parameters();
  for (auto& b : named_buffers()) all.push_back(b);
  TNT_CHECK(weights.size() == all.size(), "set_weights() got ", weights.size(),
            " tensors, the model has ", all.size(), " (parameters, then buffers)");
  torch::NoGradGuard no_grad;
  for (std::size_t i = 0; i < all.size(); ++i) {
    TNT_CHECK(weights[i].sizes() == all[i].second.sizes(), "set_weights(): tensor ", i, " ('",
              all[i].first, "') has shape ", weights[i].sizes(), ", the model's has ",
              all[i].second.sizes());
    all[i].second.copy_(weights[i]);
  }
  impl_->synchronize_state();
}

torch::optim::Optimizer& Model::optimizer() {
  impl_->require_compiled("optimizer()");
  return *impl_->optimizer;
}

torch::Device Model::device() const { return impl_->device; }

void Model::summary() const { summary(std::cout); }

void Model::summary(std::ostream& out) const {
  if (!impl_->group.is_master()) return;
  std::int64_t trainable = 0, frozen = 0;
  out << fmt::format("Model: {}\n{:<40} {:<20} {:>12}\n", impl_->net->type_name(), "parameter",
                     "shape", "count");
  out << std::string(74, '-') << "\n";
  for (const auto& [name, p] : named_parameters()) {
    std::ostringstream shape;
    shape << p.sizes();
    out << fmt::format("{:<40} {:<20} {:>12}\n", name, shape.str(), p.numel());
    (p.requires_grad() ? trainable : frozen) += p.numel();
  }
  std::int64_t buffer_elements = 0;
  for (const auto& [name, b] : named_buffers()) buffer_elements += b.numel();
  out << std::string(74, '-') << "\n"
      << fmt::format("Trainable parameters: {}\nNon-trainable parameters: {}\nBuffer elements: {}\n",
                     trainable, frozen, buffer_elements);
}

}  // namespace tnt
