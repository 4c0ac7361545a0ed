#include "train/step/deterministic_step.h"

#include <limits>
#include <mutex>
#include <string>
#include <utility>

#include <torch/torch.h>

#include <tarantella/base/error.h>
#include <tarantella/runtime/seed.h>

#include "data/pipeline/node.h"
#include "train/step/random_state.h"

namespace tnt::train {
namespace {

// Restores the generators' state when it goes (random_state.h): the
// per-chunk seeds must not leak into what the program draws afterwards
// (which would then depend on the chunks this rank had).
class GeneratorStateGuard {
 public:
  explicit GeneratorStateGuard(torch::Device device)
      : device_(device), state_(random_state(device)) {}
  ~GeneratorStateGuard() { set_random_state(device_, state_); }
  GeneratorStateGuard(const GeneratorStateGuard&) = delete;
  GeneratorStateGuard& operator=(const GeneratorStateGuard&) = delete;
  void seed(std::uint64_t s) { seed_random(device_, s); }

 private:
  torch::Device device_;
  torch::Tensor state_;
};

}  // namespace

namespace {
std::mutex g_kernels_mutex;
int g_kernels_scopes = 0;       // live DeterministicKernelsScopes on a GPU
bool g_kernels_switched = false;  // the first of them switched the algorithms on
}  // namespace

DeterministicKernelsScope::DeterministicKernelsScope(const c10::Device& device)
    : active_(device.is_cuda()) {
  if (!active_) return;
  std::lock_guard<std::mutex> lock(g_kernels_mutex);
  // The CUDA settings too (no TF32, no cuDNN benchmarking), from the start
  // of fit or evaluate, not only once a deterministic step is made: an
  // evaluate before any fit, or a train_begin callback, runs under them too.
  // Under the lock (its setenv and other in-process ranks' scopes); before
  // the count, so that a refusal leaves nothing counted.
  use_deterministic_cuda();
  if (g_kernels_scopes++ == 0) {
    at::Context& context = at::globalContext();
    g_kernels_switched = !context.deterministicAlgorithms();
    if (g_kernels_switched) context.setDeterministicAlgorithms(true, /*warn_only=*/false);
  }
}

DeterministicKernelsScope::~DeterministicKernelsScope() {
  if (!active_) return;
  std::lock_guard<std::mutex> lock(g_kernels_mutex);
  if (--g_kernels_scopes == 0 && g_kernels_switched) {
    at::globalContext().setDeterministicAlgorithms(false, /*warn_only=*/false);
    g_kernels_switched = false;
  }
}

void explain_missing_deterministic_kernel(const std::exception& e) {
  const auto* c10_error = dynamic_cast<const c10::Error*>(&e);
  const std::string what = c10_error ? c10_error->what_without_backtrace() : e.what();
  if (what.find("does not have a deterministic implementation") == std::string::npos) return;
  throw Error("deterministic mode (CompileOptions().deterministic, compile(deterministic=...)) "
              "runs LibTorch's deterministic kernels on a GPU, and an operation of this model "
              "has none, so its results would change from run to run: " +
              what.substr(0, what.find(", but you set")) +
              ". Replace that operation with one that has a deterministic kernel, or compile "
              "without deterministic mode");
}

SingleThreadScope::SingleThreadScope() : previous_(at::get_num_threads()) {
  if (previous_ != 1) at::set_num_threads(1);
}

SingleThreadScope::~SingleThreadScope() {
  if (previous_ != 1) at::set_num_threads(previous_);
}

std::uint64_t shared_seed(const comm::ProcessGroup& group) {
  torch::Tensor seed = torch::zeros({1}, torch::kInt64);
  if (group.is_master()) {
    seed[0] = torch::randint(std::numeric_limits<std::int64_t>::max(), {1}, torch::kInt64).item<std::int64_t>();
  }
  group.broadcast(seed);
  return static_cast<std::uint64_t>(seed.item<std::int64_t>());
}

std::int64_t chunk_count(std::int64_t global, std::int64_t chunk) {
  return (global + chunk - 1) / chunk;
}

namespace {

// The engine's seed for deterministic mode, agreed on first use.
std::uint64_t engine_seed(const StepContext& context) {
  Counters& c = context.counters;
  if (!c.deterministic_seed) c.deterministic_seed = shared_seed(context.group);
  return *c.deterministic_seed;
}

}  // namespace

DeterministicStep::DeterministicStep(StepContext context)
    : Step(static_cast<std::size_t>(context.state_size), context.device),
      c_(std::move(context)),
      chunk_(*c_.deterministic_chunk),
      seed_(engine_seed(c_)),
      exponents_(c_.counters.deterministic_exponents) {
  use_deterministic_cuda();
}

StepResult DeterministicStep::run(const StepInput& in) {
  StepResult result;
  StepTimes& t = result.times;
  t.data_begin = in.data_begin;
  t.data_end = in.data_end;
  t.forward_begin = Clock::now();
  const data::MicroBatch& mb = in.mb;
  // With stages, the group is the stage's replicas: the rank's pipeline
  // has the share of its replica.
  const auto [lo, hi] =
      data::micro_batch_range(mb.global_size, c_.group.size(), c_.group.rank(), chunk_);
  TNT_CHECK(hi - lo == mb.local_size, "deterministic training: a micro-batch of ", mb.local_size,
            " samples is not this rank's run of whole chunks (", hi - lo,
            " expected): distribute the dataset with the model's granularity");
  std::vector<torch::Tensor> base;
  for (const auto& b : c_.buffers) base.push_back(b.detach().clone());
  std::vector<torch::Tensor> sums;
  try {
    sums = sum_chunks(in, lo / chunk_, base);
  } catch (const std::exception& e) {  // c10::Error, or a Python module's
    explain_missing_deterministic_kernel(e);
    throw;
  }
  t.backward_begin = t.backward_end = Clock::now();
  t.sync_end = Clock::now();
  t.waited = std::exchange(waited_, Clock::duration::zero());
  if (c_.stage) t.waited += c_.stage->take_waited();  // on a neighbour stage
  add_sums(sums, in, base);
  if (in.cycle.reduce) {
    for (std::size_t i = 0; i < c_.trainable.size(); ++i) {
      c_.trainable[i].mutable_grad() = gradient_[i].to(c_.trainable[i].options());
    }
    result.stepped =
        apply_update(c_.trainable, c_.optimizer, c_.rules, c_.counters.optimizer_steps);
    result.global_state = state_;
    result.local_state = take_pending();
    if (c_.stage) share_last_stage_state(*c_.stage, result);
    gradient_.clear();
    state_ = torch::Tensor();
  }
  t.step_end = Clock::now();
  return result;
}

std::vector<int> DeterministicStep::predicted_exponents() const {
  std::vector<int> out;
  for (std::size_t i = 0; i < part_names_.size(); ++i) {
    auto it = exponents_.find(part_names_[i]);
    // A file from before the names has them by position in the unsplit
    // model's parts.
    if (it == exponents_.end() && !c_.stage) it = exponents_.find("#" + std::to_string(i));
    out.push_back(it != exponents_.end() ? it->second : 0);  // 0: refit on the first step
  }
  return out;
}

void DeterministicStep::keep_exponents(const std::vector<int>& exponents) {
  for (auto it = exponents_.begin(); it != exponents_.end();) {
    it = it->first.rfind('#', 0) == 0 ? exponents_.erase(it) : std::next(it);
  }
  for (std::size_t i = 0; i < part_names_.size(); ++i) exponents_[part_names_[i]] = exponents[i];
}

std::vector<torch::Tensor> DeterministicStep::sum_chunks(const StepInput& in, std::int64_t first,
                                                         const std::vector<torch::Tensor>& base) {
  if (!sum_) {
    // A part: per chunk, [gradients..., state, buffers...].
    std::vector<torch::Tensor> like(c_.trainable.begin(), c_.trainable.end());
    like.push_back(torch::zeros({static_cast<std::int64_t>(state_size())}, torch::kFloat64));
    like.insert(like.end(), c_.buffers.begin(), c_.buffers.end());
    sum_.emplace(like);
    TNT_CHECK(c_.trainable_names.size() == c_.trainable.size() &&
                  c_.buffer_names.size() == c_.buffers.size(),
              "internal error: deterministic training without the tensors' names");
    part_names_ = c_.trainable_names;
    part_names_.push_back(kStateExponent);
    part_names_.insert(part_names_.end(), c_.buffer_names.begin(), c_.buffer_names.end());
  }
  const std::uint64_t batch_key =
      (static_cast<std::uint64_t>(in.epoch) << 32) ^ static_cast<std::uint64_t>(in.step);
  const std::vector<data::MicroBatch> chunks = chunks_of(in.mb, chunk_);
  std::vector<int> exponents = predicted_exponents();
  const comm::ProcessGroup* pipeline = c_.stage ? &c_.stage->pipeline() : nullptr;
  std::optional<std::vector<torch::Tensor>> sums;
  torch::Tensor mine;  // this rank's state increment
  for (int attempt = 0; !sums; ++attempt) {
    TNT_CHECK(attempt < 3, "internal error: deterministic training found no fitting exponents");
    sum_->begin(exponents);
    mine = torch::zeros_like(pending());
    GeneratorStateGuard generator(c_.device);
    run_chunks(
        chunks,
        [&](std::int64_t i) {
          const auto index = static_cast<std::uint64_t>(first + i);  // in the global batch
          generator.seed(data::detail::mix64(
              seed_ ^ data::detail::mix64(batch_key * 0x9E3779B97F4A7C15ULL + index)));
        },
        base, mine);
    const auto exchange_begin = Clock::now();
    sums = sum_->finish(c_.group, chunk_count(in.mb.global_size, chunk_), pipeline);
    waited_ += Clock::now() - exchange_begin;  // the exact sum's exchange (see StepTimes)
    exponents = sum_->exponents();  // to refit now, or the prediction for the next step
  }
  keep_exponents(exponents);
  add_pending(mine);
  return std::move(*sums);
}

// Without stages: forward and backward, chunk after chunk. With stages:
// the stage's schedule; a replica without samples has no chunks, on every
// stage alike.
void DeterministicStep::run_chunks(const std::vector<data::MicroBatch>& chunks,
                                   const std::function<void(std::int64_t)>& seed,
                                   const std::vector<torch::Tensor>& base, torch::Tensor& mine) {
  StageLink* link = c_.stage.get();
  const int stage = link != nullptr ? link->layout().stage : 0;
  const int stage_count = link != nullptr ? link->layout().stages : 1;
  const auto n = static_cast<int>(chunks.size());
  std::vector<ChunkInFlight> flights(chunks.size());
  if (n > 0) {
    for (const stages::Action& a : stages::stage_actions(c_.schedule, stage, stage_count, n)) {
      const auto i = static_cast<std::size_t>(a.micro_batch);
      if (a.kind == stages::Action::forward) {
        flights[i] = chunk_forward(chunks[i], a.micro_batch, [&] { seed(a.micro_batch); }, base);
        continue;
      }
      const std::vector<torch::Tensor> part = chunk_backward(flights[i], chunks[i], a.micro_batch);
      accumulate(mine, part[c_.trainable.size()]);
      sum_->add(part);
      flights[i] = ChunkInFlight();  // the chunk's activations are freed
    }
  }
  if (link != nullptr) link->finish_sends();
}

DeterministicStep::ChunkInFlight DeterministicStep::chunk_forward(
    const data::MicroBatch& chunk, int micro, const std::function<void()>& seed,
    const std::vector<torch::Tensor>& base) {
  {
    // Through variable_data(): the reset is not an in-place change that
    // autograd tracks, so an earlier chunk whose backward is still to come
    // (a stage's schedule) keeps its saved buffers valid (BatchNorm saves
    // its running statistics, which its training-mode backward does not
    // read).
    torch::NoGradGuard no_grad;
    for (std::size_t b = 0; b < c_.buffers.size(); ++b) {
      c_.buffers[b].variable_data().copy_(base[b]);
    }
  }
  ChunkInFlight f;
  f.stage = forward_on_stage(c_.model, c_.stage.get(), chunk, micro, /*training=*/true, seed);
  if (!c_.stage || c_.stage->layout().last_stage()) {
    const torch::Tensor target = c_.model.target(chunk.tensors);
    f.loss = c_.model.loss(f.stage.output, target);
    f.state = c_.model.state(f.stage.output, target, f.loss, chunk.local_size).to(torch::kFloat64);
  }
  // The chunk's buffers, summed with its gradients. The next chunk's
  // forward starts from the step's buffers again: with stages another
  // chunk's forward may come before this one's backward, so they are kept
  // aside; without, the backward (which sums them) follows at once, and
  // reads them in place.
  for (const auto& b : c_.buffers) f.buffers.push_back(c_.stage ? b.detach().clone() : b.detach());
  return f;
}

std::vector<torch::Tensor> DeterministicStep::chunk_backward(ChunkInFlight& f,
                                                             const data::MicroBatch& chunk,
                                                             int micro) {
  for (auto& p : c_.trainable) p.mutable_grad() = torch::Tensor();
  // The chunk's summed loss (times the loss scale, with mixed precision), on
  // the last stage or without stages.
  const double factor = static_cast<double>(chunk.local_size) *
                        (c_.rules.scaler ? c_.rules.scaler->scale() : 1.0);
  backward_on_stage(f.stage, f.loss.defined() ? f.loss * factor : torch::Tensor(),
                    c_.stage.get(), micro);
  std::vector<torch::Tensor> part;
  for (const auto& p : c_.trainable) {
    part.push_back(p.grad().defined() ? p.grad() : torch::zeros_like(p));
  }
  part.push_back(f.state.defined()
                     ? f.state
                     : torch::zeros({static_cast<std::int64_t>(state_size())}, torch::kFloat64));
  part.insert(part.end(), f.buffers.begin(), f.buffers.end());
  return part;
}

void DeterministicStep::add_sums(const std::vector<torch::Tensor>& sums, const StepInput& in,
                                 const std::vector<torch::Tensor>& base) {
  // The mean gradient of this micro-step's global batch, averaged over the
  // cycle (as TrainStep's weights n_r / (B * cycle) do).
  const double divisor = static_cast<double>(in.mb.global_size * in.cycle.length);
  if (gradient_.empty()) {
    for (const auto& p : c_.trainable) gradient_.push_back(torch::zeros(p.sizes(), torch::kFloat64));
    state_ = torch::zeros({static_cast<std::int64_t>(state_size())}, torch::kFloat64);
  }
  for (std::size_t i = 0; i < c_.trainable.size(); ++i) gradient_[i].add_(sums[i].div(divisor));
  state_.add_(sums[c_.trainable.size()]);
  const std::int64_t total = chunk_count(in.mb.global_size, chunk_);
  torch::NoGradGuard no_grad;
  for (std::size_t b = 0; b < c_.buffers.size(); ++b) {
    const torch::Tensor sum = sums[c_.trainable.size() + 1 + b];
    const torch::Tensor mean = sum.is_floating_point()
                                   ? sum.div(static_cast<double>(total))
                                   : sum.div(total, /*rounding_mode=*/"floor");
    c_.buffers[b].copy_(total > 0 ? mean.to(c_.buffers[b].dtype()) : base[b]);
  }
}

void evaluate_chunks(const StepModel& model, const data::MicroBatch& mb, std::int64_t chunk,
                     std::vector<std::vector<torch::Tensor>>& parts, StageLink* stage) {
  const std::vector<data::MicroBatch> chunks = chunks_of(mb, chunk);
  for (std::size_t i = 0; i < chunks.size(); ++i) {
    const data::MicroBatch& c = chunks[i];
    try {
      const StageForward f =
          forward_on_stage(model, stage, c, static_cast<int>(i), /*training=*/false);
      if (stage != nullptr && !stage->layout().last_stage()) continue;
      const torch::Tensor target = model.target(c.tensors);
      parts.push_back({model.state(f.output, target, model.loss(f.output, target), c.local_size)
                           .to(torch::kFloat64)});
    } catch (const std::exception& e) {  // c10::Error, or a Python module's
      explain_missing_deterministic_kernel(e);
      throw;
    }
  }
  if (stage != nullptr) stage->finish_sends();
}

}  // namespace tnt::train
