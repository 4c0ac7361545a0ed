// The engine's state and what it does outside the loops: construction on a
// device, compile's checks, the gradient engine (built lazily, rebuilt for
// auto-tuning), state synchronization, and the loss/metric state of a batch.
#include "train/engine/engine_state.h"

#include <optional>
#include <string>
#include <utility>

#include <fmt/format.h>
#include <torch/torch.h>

#include <tarantella/base/argument_error.h>
#include <tarantella/base/error.h>
#include <tarantella/base/logging.h>
#include <tarantella/dp/state_sync.h>
#include <tarantella/keras/sync_batchnorm.h>

#include "comm/world/backend_choice.h"
#include "data/pipeline/element_ops.h"
#include "dp/optimizer_shards.h"
#include "train/observe/timeline.h"

namespace tnt::train {
namespace {

torch::Device pick_device(const EngineOptions& options, const comm::ProcessGroup& group) {
  // An explicit TNT_USE_GPU=true is a demand: training on the CPU instead
  // would be a silent surprise (hours on the wrong device), so it fails here, before any
  // state exists. Unset/auto follows the LibTorch build.
  TNT_CHECK(options.use_gpu() != true || torch::cuda::is_available(), "rank ", group.rank(),
            ": TNT_USE_GPU=true asks for a GPU, but LibTorch sees none (no CUDA device, or a "
            "LibTorch built without CUDA): unset TNT_USE_GPU or set TNT_USE_GPU=false to train "
            "on the CPU, or run on a node with a GPU and a CUDA build of LibTorch");
  // The world's local rank, not the group's: a subgroup's communicator
  // keeps the GPU its process got in the world (comm/nccl/nccl_backend.cpp).
  const auto gpu =
      comm::rank_training_gpu(options.use_gpu().value_or(true), group.world_local_rank());
  return gpu ? torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(*gpu))
             : torch::Device(torch::kCPU);
}

// A batch tensor on the training device. From the CPU to a GPU, the tensor
// is pinned first (a host copy into torch's cached pinned blocks, unless the
// pipeline's read-ahead pinned it already, as it does under fit) and copied
// without blocking: a copy from pageable memory, or from a pinned tensor that
// is not dense (copied through a pageable temporary), synchronises the host
// with the stream, so the host would wait for the previous step's kernels
// before it could queue this step's. The caching host allocator keeps the
// pinned block until the copy is done.
torch::Tensor on_device(const torch::Tensor& t, torch::Device device) {
  if (!device.is_cuda() || !t.device().is_cpu()) return t.to(device);
  return data::detail::pinned_dense(t).to(device, /*non_blocking=*/true);
}

// compile()'s checks: every problem named with its fix, before any state
// changes. The settings' mistakes are the caller's (ArgumentError: Python's
// ValueError); a metric without its functions is a program's.
void check_compile_options(const CompileOptions& options, torch::Device device) {
  TNT_CHECK_ARG(static_cast<bool>(options.optimizer()),
            "compile() needs an optimizer: CompileOptions().optimizer(tnt::optimizers::SGD(0.01))");
  TNT_CHECK_ARG(static_cast<bool>(options.loss()),
            "compile() needs a loss: CompileOptions().loss(tnt::losses::MeanSquaredError())");
  TNT_CHECK_ARG(options.num_inputs() >= 1, "num_inputs must be at least 1, got ", options.num_inputs());
  TNT_CHECK_ARG(options.aggregation_frequency() >= 1, "aggregation_frequency must be at least 1, got ",
            options.aggregation_frequency());
  TNT_CHECK_ARG(!options.clip_norm() || *options.clip_norm() > 0, "clip_norm must be positive, got ",
            options.clip_norm().value_or(0));
  TNT_CHECK_ARG(!options.clip_value() || *options.clip_value() > 0, "clip_value must be positive, got ",
            options.clip_value().value_or(0));
  TNT_CHECK_ARG(!options.deterministic() || *options.deterministic() >= 1,
            "deterministic: the chunk size must be at least 1 sample, got ",
            options.deterministic().value_or(0));
  TNT_CHECK_ARG(!options.deterministic() || options.compression() == dp::Compression::None,
            "deterministic training sums gradients exactly and sends them as 64-bit integers: "
            "remove compression(...) or deterministic(...)");
  TNT_CHECK_ARG(!options.deterministic() || !options.shard_optimizer(),
            "deterministic training steps the optimizer on whole gradients after an exact sum, "
            "and shard_optimizer(true) reduce-scatters them: remove one of the two");
  const std::string precision_problem = mixed_precision_problem(options.mixed_precision(), device);
  TNT_CHECK_ARG(precision_problem.empty(), precision_problem);
  for (const auto& m : options.metrics()) {
    TNT_CHECK(m.update && m.result && m.state_size > 0, "metric '", m.name,
              "' needs an update function, a result function and a positive state size");
  }
}

// What pipeline stages combine with so far. The rest is refused with the
// way out, never run with a silently different meaning.
// Whether any of the network's tensors is on the meta device (no memory):
// a model too large for one rank, built there and wrapped, whose owner
// materialises this rank's part afterwards (docs/guide/pipelining.md).
std::optional<std::string> first_on_meta(ModuleAdapter& net) {
  for (const auto& [name, t] : net.named_parameters()) {
    if (t.is_meta()) return "parameter '" + name + "'";
  }
  for (const auto& [name, t] : net.named_buffers()) {
    if (t.is_meta()) return "buffer '" + name + "'";
  }
  return std::nullopt;
}

void check_materialised(ModuleAdapter& net) {
  const std::optional<std::string> meta = first_on_meta(net);
  TNT_CHECK(!meta, "compile(): ", *meta, " of this rank's model is on the meta device, without ",
            "memory: materialise this rank's part first, then initialise it (Python: ",
            "model.stage_module.to_empty(device=model.device), then reset_parameters() of its ",
            "layers or load_state_dict; docs/guide/pipelining.md, \"A model too large for one ",
            "rank\")");
}

void check_stage_options(const CompileOptions& options, const stages::StageLayout& layout) {
  const std::string stages = std::to_string(layout.stages) + " pipeline stages";
  TNT_CHECK(options.num_inputs() == 1, "a model cut into ", stages, " takes one input (the ",
            "first stage's), got num_inputs=", options.num_inputs(),
            ": combine the inputs into one tensor, or train with pipeline_stages=1");
}

}  // namespace

EngineOptions EngineOptions::from_config(const Config& config) {
  return EngineOptions()
      .fusion_threshold_bytes(config.fusion_threshold_bytes)
      .overlap(config.overlap)
      .overlap_set(config.overlap_set)
      .overlap_optimizer(config.overlap_optimizer)
      .autotune(config.autotune)
      .autotune_log_path(config.autotune_log_path)
      .timeline_path(config.timeline_path)
      .straggler_window(config.straggler_window)
      .use_gpu(config.use_gpu)
      .output_on_all_ranks(config.output_on_all_devices)
      .stdout_is_terminal(config.stdout_is_terminal);
}

EngineState::EngineState(std::shared_ptr<ModuleAdapter> net, comm::ProcessGroup group,
               EngineOptions options, std::optional<stages::StageGroups> stages)
    : group_(std::move(group)), options_(std::move(options)), net_(std::move(net)),
      stages_(std::move(stages)) {
  TNT_CHECK(net_ != nullptr, "tnt::Model needs a network, got a null pointer");
  TNT_CHECK(group_.valid(), "tnt::Model needs a process group, got an empty handle: pass "
                            "tnt::world() or a group made by split()/subgroup()");
  TNT_CHECK(group_.is_member(), "tnt::Model: this rank is not a member of the ", group_.describe(),
            ": build the model only on the ranks of its group (check group.is_member())");
  device_ = pick_device(options_, group_);
  // A network on the meta device stays there: its owner materialises it
  // on device() (compile() refuses it until then).
  if (!first_on_meta(*net_)) net_->to(device_);
  bind_collective_layers();
  if (stages_) link_ = std::make_shared<StageLink>(stages_->pipeline, stages_->layout, device_);
}

EngineState::~EngineState() = default;

void EngineState::compile(CompileOptions options) {
  check_compile_options(options, device_);
  if (stages_) check_stage_options(options, stages_->layout);
  check_materialised(*net_);
  bind_collective_layers();
  trainable_.clear();
  trainable_names_.clear();
  for (const auto& [name, p] : net_->named_parameters()) {
    if (!p.requires_grad()) continue;
    trainable_.push_back(p);
    trainable_names_.push_back(name);
  }
  gradients_.drop();  // shards belong to the optimizer replaced here
  optimizer_ = options.optimizer()(trainable_);
  TNT_CHECK(!options.shard_optimizer() || dp::shard_problem(*optimizer_).empty(),
            dp::shard_problem(*optimizer_));
  // With a binary loss, accuracy is binary and decides where the loss
  // does: at 0 for logits (as Keras picks binary_accuracy for it).
  if (const auto threshold = options.loss().binary_threshold) {
    std::vector<metrics::Metric> metric_list = options.metrics();
    for (auto& m : metric_list) {
      if (m.at_threshold) m = m.at_threshold(*threshold);
    }
    options.metrics(metric_list);
  }
  compiled_ = std::move(options);
  metrics_.emplace(compiled_->metrics());
  gradients_.compiled(trainable_, *optimizer_, *compiled_, metrics_->size());
  counters_.optimizer_steps = 0;
  scaler_.reset();
  if (compiled_->loss_scaling().value_or(compiled_->mixed_precision() ==
                                         MixedPrecision::Float16)) {
    scaler_ = std::make_shared<LossScaler>();
  }
}

void EngineState::require_compiled(const char* caller) const {
  TNT_CHECK(compiled_.has_value(), caller, " needs a compiled model: call model.compile(...) first");
}

const CompileOptions& EngineState::compiled() const {
  require_compiled("this operation");
  return *compiled_;
}

torch::optim::Optimizer& EngineState::optimizer() const {
  require_compiled("optimizer()");
  return *optimizer_;
}

double EngineState::learning_rate() const {
  require_compiled("learning_rate");
  auto& groups = optimizer().param_groups();
  TNT_CHECK(!groups.empty(), "the optimizer has no parameter groups");
  return groups.front().options().get_lr();
}

void EngineState::set_learning_rate(double rate) {
  for (auto& g : optimizer().param_groups()) g.options().set_lr(rate);
}

std::vector<torch::Tensor> EngineState::inputs_of(const data::Element& e) const {
  const int n = compiled_ ? compiled_->num_inputs() : 1;
  TNT_CHECK(static_cast<int>(e.size()) >= n, "a dataset element has ", e.size(),
            " tensors but the model takes ", n, " input(s): check CompileOptions().num_inputs()");
  std::vector<torch::Tensor> in;
  for (int i = 0; i < n; ++i) in.push_back(on_device(e[static_cast<std::size_t>(i)], device_));
  return in;
}

torch::Tensor EngineState::target_of(const data::Element& e) const {
  const int n = compiled_->num_inputs();
  TNT_CHECK(static_cast<int>(e.size()) > n, "a dataset element has ", e.size(),
            " tensors: training and evaluation need (inputs..., target) with ", n,
            " input(s) and a target");
  return on_device(e[static_cast<std::size_t>(n)], device_);
}

const MetricsAccumulator& EngineState::metrics() const {
  require_compiled("the loss and metrics");
  return *metrics_;
}

void EngineState::synchronize_state() {
  const NamedTensorList params = net_->named_parameters();
  const NamedTensorList buffers = net_->named_buffers();
  dp::check_same_structure(group_, params, "parameters");
  dp::check_same_structure(group_, buffers, "buffers");
  std::vector<torch::Tensor> all;
  for (const auto& [name, t] : params) all.push_back(t);
  for (const auto& [name, t] : buffers) all.push_back(t);
  dp::broadcast_tensors(group_, all);
  // A sharded optimizer's state differs per rank by design; each rank's
  // shards were cut from the same full state.
  if (optimizer_ && !gradients_.shards()) dp::broadcast_optimizer_state(group_, *optimizer_);
}

Timeline* EngineState::timeline() {
  if (!options_.timeline_path().empty() && !timeline_) {
    // Over every rank (with stages, all pipelines' stages): one file.
    timeline_ = std::make_unique<Timeline>(everyone(), options_.timeline_path());  // collective
  }
  return timeline_.get();
}

torch::Tensor EngineState::forward(const std::vector<torch::Tensor>& inputs,
                                   std::vector<LayerOutput>* kept) {
  const bool empty = !inputs.empty() && inputs[0].dim() > 0 && inputs[0].size(0) == 0;
  if (empty && !collective_layers_) return {};
  return run(inputs, kept);
}

torch::Tensor EngineState::run(const std::vector<torch::Tensor>& inputs,
                               std::vector<LayerOutput>* kept) {
  const auto call = [&] {
    if (kept != nullptr) {
      kept->clear();
      torch::Tensor out = net_->forward_by_layer(inputs, *kept);
      if (out.defined()) return out;
      kept->clear();
    }
    return net_->forward(inputs);
  };
  const MixedPrecision precision = compiled_ ? compiled_->mixed_precision() : MixedPrecision::None;
  if (precision == MixedPrecision::None) return call();
  torch::Tensor output;
  {
    AutocastScope autocast(precision, device_);
    output = call();
  }
  // Loss and metrics in float32, as Keras's mixed policy recommends.
  return output.is_floating_point() ? output.to(torch::kFloat32) : output;
}

StepModel EngineState::step_model() {
  return {[this](const data::Element& x) { return forward(inputs_of(x)); },
          [this](const data::Element& x, std::vector<LayerOutput>& kept) {
            return forward(inputs_of(x), &kept);
          },
          [this](const data::Element& x) { return target_of(x); },
          [this](const torch::Tensor& output, const torch::Tensor& target) {
            return compiled().loss()(output, target);
          },
          [this](const torch::Tensor& output, const torch::Tensor& target,
                 const torch::Tensor& loss,
                 std::int64_t samples) { return metrics().increment(output, target, loss, samples); }};
}

StepContext EngineState::step_context() {
  const CompileOptions& c = compiled();
  std::vector<torch::Tensor> buffers;
  std::vector<std::string> buffer_names;
  for (const auto& [name, b] : net_->named_buffers()) {
    buffers.push_back(b);
    buffer_names.push_back(name);
  }
  return StepContext{step_model(),
                     *optimizer_,
                     gradients_,
                     StepRules{c.clip_norm(), c.clip_value(), c.schedule().fn, scaler_,
                               stages_ ? &stages_->pipeline : nullptr},
                     group_,
                     timeline(),
                     counters_,
                     trainable_,
                     std::move(buffers),
                     trainable_names_,
                     std::move(buffer_names),
                     metrics_->size(),
                     device_,
                     c.deterministic(),
                     link_,
                     stages_ ? stages_->settings.micro_batches : 1,
                     stages_ ? stages_->settings.schedule : stages::Schedule::one_f_one_b};
}

LoopContext EngineState::loop_context(const char* caller) {
  require_compiled(caller);
  return LoopContext{group_,
                     everyone(),
                     link_.get(),
                     stages_ ? stages_->settings.micro_batches : 1,
                     device_,
                     *net_,
                     collective_layers_,
                     options_,
                     *compiled_,
                     step_model(),
                     *metrics_,
                     timeline(),
                     counters_,
                     position_,
                     gradients_,
                     [this] { synchronize_state(); },
                     [this] { return step_context(); }};
}

PredictContext EngineState::predict_context() {
  return PredictContext{group_, everyone(), device_, *net_,
                        [this](const data::Element& x) { return run(inputs_of(x)); },
                        link_.get(), stages_ ? stages_->settings.micro_batches : 1,
                        compiled_ ? compiled_->deterministic() : std::nullopt};
}

void EngineState::bind_collective_layers() {
  collective_layers_ = false;
  for (const auto& module : net_->modules()) {
    auto* layer = dynamic_cast<nn::CollectiveModule*>(module.get());
    if (layer == nullptr) continue;
    layer->use_model_group(group_);
    collective_layers_ = true;
  }
}

}  // namespace tnt::train
