// The engine's public face: the loops run over the contexts its state hands
// out, the accessors are EngineState's, except the
// two that persistence uses, which are written here so that what a
// checkpoint reads and writes of the engine is in one place: snapshot()
// copies the state to host memory, restore() loads state read on the
// master into every rank.
#include "train/engine/engine.h"

#include <chrono>
#include <sstream>
#include <thread>

#include <c10/core/Event.h>
#include <c10/core/impl/VirtualGuardImpl.h>

#include <fmt/format.h>
#include <torch/torch.h>

#include <tarantella/base/error.h>
#include <tarantella/base/logging.h>

#include "base/threads.h"
#include "dp/optimizer_shards.h"
#include "dp/optimizer_state.h"
#include "io/master_checked.h"
#include "io/pickle_rewrite.h"
#include "train/engine/compile_config.h"
#include "train/engine/engine_state.h"
#include "train/engine/optimizer_by_name.h"
#include "train/engine/restore_parts.h"
#include "train/loop/evaluate_loop.h"
#include "train/loop/fit_loop.h"

namespace tnt::train {
namespace {

// `expected`: the state's size, if known, so that the bytes are made in one
// allocation (a growing stream would copy and fault in twice the memory).
std::string optimizer_bytes(const torch::optim::Optimizer& optimizer, std::size_t expected = 0) {
  torch::serialize::OutputArchive archive;
  optimizer.save(archive);
  std::string out;
  out.reserve(expected);
  archive.save_to([&](const void* data, std::size_t size) {
    out.append(static_cast<const char*>(data), size);
    return size;
  });
  return out;
}

void load_optimizer_state(torch::optim::Optimizer& optimizer, const std::string& bytes,
                          const std::string& path, const torch::Device& device) {
  std::istringstream in(bytes);
  torch::serialize::InputArchive archive;
  try {
    // Onto the model's device: a snapshot keeps host copies, and a file
    // saved on a GPU may be loaded on a CPU (or the other way round).
    archive.load_from(in, device);
  } catch (const std::exception& e) {
    throw Error(
        fmt::format("checkpoint '{}': entry 'optimizer' is not a readable optimizer "
                    "state (the file is damaged): {}",
                    path, std::string(e.what()).substr(0, 200)));
  }
  try {
    optimizer.load(archive);
  } catch (const std::exception& e) {
    throw Error(
        fmt::format("the optimizer state in '{}' does not fit this model's optimizer "
                    "(compile with the optimizer it was saved with): {}",
                    path, std::string(e.what()).substr(0, 200)));
  }
}

}  // namespace

Engine::Engine(std::shared_ptr<ModuleAdapter> net, comm::ProcessGroup group, EngineOptions options,
               std::optional<stages::StageGroups> stages)
    : state_(std::make_unique<EngineState>(std::move(net), std::move(group), std::move(options),
                                           std::move(stages))) {}

Engine::~Engine() = default;

void Engine::compile(CompileOptions options) { state_->compile(std::move(options)); }

const CompileOptions* Engine::compiled() const {
  return state_->is_compiled() ? &state_->compiled() : nullptr;
}

namespace {
// fit, evaluate and predict set the network's training mode: they leave it
// (every module's) as they found it, as a torch user expects.
class KeepModes {
 public:
  explicit KeepModes(ModuleAdapter& net) {
    try {
      restore_ = net.keep_modes();
    } catch (const std::exception& e) {  // (a Python module without the usual modes)
      ::tnt::log::debug(::tnt::detail::concat("the model's training modes are not kept: ",
                                              e.what()));
    }
  }
  ~KeepModes() {
    if (!restore_) return;
    try {
      restore_();
    } catch (const std::exception& e) {
      ::tnt::log::warning(::tnt::detail::concat("the model's training modes could not be set "
                                                "back: ", e.what()));
    }
  }
  KeepModes(const KeepModes&) = delete;
  KeepModes& operator=(const KeepModes&) = delete;

 private:
  std::function<void()> restore_;
};
}  // namespace

callbacks::History Engine::fit(const data::Dataset& train, const FitOptions& options,
                               Driver driver) {
  const KeepModes modes(state_->net());
  return train::fit(state_->loop_context("fit()"), train, options, driver);
}

Logs Engine::evaluate(const data::Dataset& dataset, const EvaluateOptions& options, Driver driver) {
  const KeepModes modes(state_->net());
  return train::evaluate(state_->loop_context("evaluate()"), dataset, options, driver);
}

torch::Tensor Engine::predict(const data::Dataset& dataset, const PredictOptions& options,
                              Driver driver) {
  const KeepModes modes(state_->net());
  return train::predict(state_->predict_context(), dataset, options, driver);
}

torch::Tensor Engine::run(const std::vector<torch::Tensor>& inputs) { return state_->run(inputs); }

const comm::ProcessGroup& Engine::group() const { return state_->everyone(); }

const stages::StageLayout* Engine::stage_layout() const { return state_->stage_layout(); }

NamedTensorList Engine::whole_model_weights() {
  const NamedTensorList mine = all_weights(state_->net());
  StageLink* link = state_->stage_link();
  if (link == nullptr) return mine;
  if (link->layout().replica != 0) return {};  // the first replica's stages hold them all
  return link->gather_on_first_stage(mine);
}
torch::Device Engine::device() const { return state_->device(); }
ModuleAdapter& Engine::net() const { return state_->net(); }
torch::optim::Optimizer& Engine::optimizer() const { return state_->optimizer(); }
double Engine::learning_rate() const { return state_->learning_rate(); }
void Engine::set_learning_rate(double rate) { state_->set_learning_rate(rate); }
const TrainingPosition& Engine::position() const { return state_->position().current(); }
void Engine::resume_from(const TrainingPosition& position) {
  state_->position().resume_from(position);
}
const Counters& Engine::counters() const { return state_->counters(); }

std::optional<LossScaleState> Engine::loss_scale() const {
  const auto& scaler = state_->scaler();
  if (!scaler) return std::nullopt;
  return LossScaleState{scaler->scale(), scaler->good_steps(), scaler->skipped()};
}

std::vector<torch::Tensor> Engine::get_weights(torch::Device to) const {
  std::vector<torch::Tensor> out;
  for (const auto& [name, t] : all_weights(state_->net())) {
    out.push_back(t.detach().to(to, /*non_blocking=*/false, /*copy=*/true));
  }
  return out;
}

void Engine::set_weights(const std::vector<torch::Tensor>& weights) {
  const NamedTensorList all = all_weights(state_->net());
  TNT_CHECK(weights.size() == all.size(), "set_weights() got ", weights.size(),
            " tensors, the model has ", all.size(), " (parameters, then buffers)");
  for (std::size_t i = 0; i < all.size(); ++i) {
    TNT_CHECK(weights[i].sizes() == all[i].second.sizes(), "set_weights(): tensor ", i, " ('",
              all[i].first, "') has shape ", weights[i].sizes(), ", the model's has ",
              all[i].second.sizes());
  }
  torch::NoGradGuard no_grad;
  for (std::size_t i = 0; i < all.size(); ++i) all[i].second.copy_(weights[i]);
  state_->synchronize_state();
}

HostCopies::HostCopies(SnapshotUse use, torch::Device device)
    : later_(use == SnapshotUse::write_later), device_(device) {}

torch::Tensor HostCopies::operator()(const torch::Tensor& t) {
  if (t.is_cuda() && !pinning_failed_) {
    torch::Tensor out;
    try {
      out = torch::empty(t.sizes(),
                         t.options().device(torch::kCPU).pinned_memory(true).requires_grad(false));
    } catch (const std::exception& e) {
      // Page-locked memory ran out (the host's, or a container's limit): the
      // snapshot is still taken, with copies the host waits for, rather than
      // failing on this rank alone while the others go on.
      pinning_failed_ = true;
      ::tnt::log::warning(::tnt::detail::concat(
          "a snapshot's host copies could not be page-locked (", e.what(),
          "); this one is copied without overlap: training waits for it"));
    }
    if (out.defined()) {
      from_gpu_ = true;
      out.copy_(t.detach(), /*non_blocking=*/true);
      return out;
    }
  }
  if (t.is_cuda()) return t.detach().to(torch::kCPU).contiguous();  // host-sync: pinning failed
  return later_ ? t.detach().clone(at::MemoryFormat::Contiguous) : t.detach().contiguous();
}

std::function<void()> HostCopies::waiter() const {
  if (!from_gpu_) return {};
  const torch::Device device = device_;
  auto copied = std::make_shared<c10::Event>(device.type());
  copied->record(c10::impl::VirtualGuardImpl(device.type()).getStream(device));
  // Polled (and destroyed) on the writer's thread: on this GPU, not GPU 0.
  return [copied, device] {
    ::tnt::detail::adopt_device(device);
    while (!copied->query()) std::this_thread::sleep_for(std::chrono::microseconds(100));
  };
}

std::optional<EngineSnapshot> Engine::snapshot(bool keep, SnapshotUse use) {
  EngineState& s = *state_;
  // With stages: host copies, whatever the use.
  if (s.stage_link() != nullptr) return snapshot_with_stages(keep);
  // A sharded optimizer's state is on every rank in parts: gathered by all.
  std::optional<std::string> gathered;
  std::string names;  // the optimizer's parameters' names, in its order
  if (dp::OptimizerShards* shards = s.gradients().shards()) {
    shards->with_full_form([&](const torch::optim::Optimizer& full) {
      if (!keep) return;  // the gather is collective; the bytes are the master's
      gathered = optimizer_bytes(full);
      names = optimizer_parameter_names(full, s.net().named_parameters());
    });
  } else if (s.is_compiled()) {
    names = optimizer_parameter_names(s.optimizer(), s.net().named_parameters());
  }
  if (!keep) return std::nullopt;
  // For a later write, host copies, so that training can change its
  // tensors while these are written; the writer waits for those from a GPU
  // (wait_for_copies). A write before training goes on needs no copy in
  // host memory.
  const bool later = use == SnapshotUse::write_later;
  HostCopies host_copy(use, s.device());
  EngineSnapshot out;
  for (const auto& [name, t] : all_weights(s.net())) out.weights.emplace_back(name, host_copy(t));
  if (s.is_compiled()) {
    if (gathered) {
      out.optimizer = std::move(gathered);
    } else if (auto copy = later ? dp::state_copy(s.optimizer(), std::ref(host_copy)) : nullptr) {
      out.optimizer_copy = std::move(copy);
    } else {
      out.optimizer = optimizer_bytes(s.optimizer());  // a type state_copy does not know
    }
    out.optimizer_names = std::move(names);
    out.compile = compile_config(s.compiled()).dump();
  }
  out.wait_for_copies = host_copy.waiter();
  out.counters = s.counters();
  out.loss_scale = loss_scale();
  out.architecture = s.net().config_json();
  out.torchscript = s.net().torchscript_bytes();
  return out;
}

std::optional<std::string> optimizer_bytes(const EngineSnapshot& snapshot) {
  if (const auto& copy = snapshot.optimizer_copy) {
    // The tensors' bytes, and room for the archive's records and headers.
    const auto tensors = static_cast<std::size_t>(dp::optimizer_state_bytes(*copy));
    return optimizer_bytes(*copy, tensors + tensors / 64 + (1 << 20));
  }
  return snapshot.optimizer;
}

namespace {

// Whether an unsplit checkpoint's optimizer held the parameters in another
// order than this model's optimizer does. Only a one-group optimizer of a
// built-in kind is mapped by name; others load by position, as torch does.
bool saved_in_another_order(const EngineState& s, const RestoredState& r) {
  if (!r.optimizer_names || s.optimizer().param_groups().size() != 1) return false;
  const dp::StateKind* kind = dp::state_kind(s.optimizer());
  if (kind == nullptr || !kind->exactly(s.optimizer())) return false;
  std::string saved;
  for (const auto& name : *r.optimizer_names) saved += name + '\n';
  return saved != optimizer_parameter_names(s.optimizer(), s.net().named_parameters());
}

}  // namespace

void Engine::restore(const std::function<RestoredState()>& read_on_master) {
  EngineState& s = *state_;
  if (s.stage_link() != nullptr) return restore_with_stages(read_on_master);
  // The file holds the full optimizer state: it is loaded in full form.
  s.gradients().unshard();
  run_on_master_checked(s.group(), [&] {
    const RestoredState r = read_on_master();
    if (r.optimizer_by_name) {
      // A pipelined model's checkpoint: the state by parameter name.
      const NamedOptimizerState saved = from_entry(*r.optimizer_by_name, r.source);
      const auto set_optimizer = prepare_optimizer_state(
          s.optimizer(), s.net().named_parameters(), saved, r.optimizer_kind, r.source,
          s.device());
      prepare_weights(s.net(), r.weights, r.source)();  // checks every entry, then copies
      set_optimizer();
      return;
    }
    if (r.optimizer && saved_in_another_order(s, r)) {
      // torch::optim's load maps by position: the saver held the parameters
      // in another order (a user's optimizer over a permuted list). By name.
      const NamedOptimizerState saved =
          decode_optimizer_bytes(s.optimizer(), *r.optimizer, *r.optimizer_names, r.source);
      const auto set_optimizer = prepare_optimizer_state(
          s.optimizer(), s.net().named_parameters(), saved,
          optimizer_kind_name(s.optimizer(), "loading a checkpoint"), r.source, s.device());
      prepare_weights(s.net(), r.weights, r.source)();  // checks every entry, then copies
      set_optimizer();
      return;
    }
    std::optional<std::string> previous;
    if (r.optimizer) {
      previous = optimizer_bytes(s.optimizer());
      load_optimizer_state(s.optimizer(), *r.optimizer, r.source, s.device());
    }
    try {
      prepare_weights(s.net(), r.weights, r.source)();  // checks every entry, then copies
    } catch (...) {
      if (previous) load_optimizer_state(s.optimizer(), *previous, r.source, s.device());
      throw;
    }
  });
  s.synchronize_state();  // weights, buffers and optimizer state to all ranks
}

void Engine::restore_counters(const Counters& counters,
                              const std::optional<LossScaleState>& loss_scale) {
  state_->counters() = counters;
  if (loss_scale && state_->scaler()) {
    state_->scaler()->restore(loss_scale->scale, loss_scale->good_steps, loss_scale->skipped_steps);
  }
}

}  // namespace tnt::train
