#include "train/step/deterministic_step.h"

#include <limits>
#include <mutex>
#include <utility>

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include <tarantella/base/error.h>
#include <tarantella/runtime/seed.h>

#include "data/pipeline/node.h"

namespace tnt::train {
namespace {

// Rows [begin, begin + n) of every tensor of an element.
data::Element rows(const data::Element& e, std::int64_t begin, std::int64_t n) {
  data::Element out;
  for (const auto& t : e) out.push_back(t.narrow(0, begin, n));
  return out;
}

// Restores the default CPU generator's state when it goes: the per-chunk
// seeds must not leak into what the program draws afterwards (which would
// then depend on the chunks this rank had).
class GeneratorStateGuard {
 public:
  GeneratorStateGuard() : generator_(at::detail::getDefaultCPUGenerator()) {
    std::lock_guard<std::mutex> lock(generator_.mutex());
    state_ = generator_.get_state();
  }
  ~GeneratorStateGuard() {
    std::lock_guard<std::mutex> lock(generator_.mutex());
    generator_.set_state(state_);
  }
  void seed(std::uint64_t s) {
    std::lock_guard<std::mutex> lock(generator_.mutex());
    generator_.set_current_seed(s);
  }

 private:
  at::Generator generator_;
  torch::Tensor state_;
};

}  // namespace

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
  const auto [lo, hi] =
      data::micro_batch_range(mb.global_size, c_.group.size(), c_.group.rank(), chunk_);
  TNT_CHECK(hi - lo == mb.local_size, "deterministic training: a micro-batch of ", mb.local_size,
            " samples is not this rank's run of whole chunks (", hi - lo,
            " expected): distribute the dataset with the model's granularity");
  std::vector<torch::Tensor> base;
  for (const auto& b : c_.buffers) base.push_back(b.detach().clone());
  const std::vector<torch::Tensor> sums = sum_chunks(in, lo / chunk_, base);
  t.backward_begin = t.backward_end = Clock::now();
  t.sync_end = Clock::now();
  t.waited = std::exchange(waited_, Clock::duration::zero());
  add_sums(sums, in, base);
  if (in.cycle.reduce) {
    for (std::size_t i = 0; i < c_.trainable.size(); ++i) {
      c_.trainable[i].mutable_grad() = gradient_[i].to(c_.trainable[i].options());
    }
    result.stepped =
        apply_update(c_.trainable, c_.optimizer, c_.rules, c_.counters.optimizer_steps);
    result.global_state = state_;
    result.local_state = take_pending();
    gradient_.clear();
    state_ = torch::Tensor();
  }
  t.step_end = Clock::now();
  return result;
}

std::vector<torch::Tensor> DeterministicStep::sum_chunks(const StepInput& in, std::int64_t first,
                                                         const std::vector<torch::Tensor>& base) {
  if (!sum_) {
    // A part: per chunk, [gradients..., state, buffers...].
    std::vector<torch::Tensor> like(c_.trainable.begin(), c_.trainable.end());
    like.push_back(torch::zeros({static_cast<std::int64_t>(state_size())}, torch::kFloat64));
    like.insert(like.end(), c_.buffers.begin(), c_.buffers.end());
    sum_.emplace(like);
    if (exponents_.size() != like.size()) exponents_.assign(like.size(), 0);
  }
  const std::uint64_t batch_key =
      (static_cast<std::uint64_t>(in.epoch) << 32) ^ static_cast<std::uint64_t>(in.step);
  const data::MicroBatch& mb = in.mb;
  std::optional<std::vector<torch::Tensor>> sums;
  torch::Tensor mine;  // this rank's state increment
  for (int attempt = 0; !sums; ++attempt) {
    TNT_CHECK(attempt < 3, "internal error: deterministic training found no fitting exponents");
    sum_->begin(exponents_);
    mine = torch::zeros_like(pending());
    GeneratorStateGuard generator;
    for (std::int64_t begin = 0; begin < mb.local_size; begin += chunk_) {
      const std::int64_t n = std::min(chunk_, mb.local_size - begin);
      const std::int64_t index = first + begin / chunk_;  // in the global batch
      generator.seed(data::detail::mix64(
          seed_ ^ data::detail::mix64(batch_key * 0x9E3779B97F4A7C15ULL +
                                      static_cast<std::uint64_t>(index))));
      {
        torch::NoGradGuard no_grad;
        for (std::size_t b = 0; b < c_.buffers.size(); ++b) c_.buffers[b].copy_(base[b]);
      }
      std::vector<torch::Tensor> part = chunk_part(rows(mb.tensors, begin, n), n);
      accumulate(mine, part[c_.trainable.size()]);
      sum_->add(part);
    }
    const auto exchange_begin = Clock::now();
    sums = sum_->finish(c_.group, chunk_count(mb.global_size, chunk_));
    waited_ += Clock::now() - exchange_begin;  // the exact sum's exchange (see StepTimes)
    exponents_ = sum_->exponents();  // the prediction for the next step
  }
  add_pending(mine);
  return std::move(*sums);
}

std::vector<torch::Tensor> DeterministicStep::chunk_part(const data::Element& e, std::int64_t n) {
  for (auto& p : c_.trainable) p.mutable_grad() = torch::Tensor();
  const torch::Tensor output = c_.model.forward(e);
  const torch::Tensor target = c_.model.target(e);
  const torch::Tensor loss = c_.model.loss(output, target);
  const torch::Tensor state = c_.model.state(output, target, loss, n).to(torch::kFloat64);
  // The chunk's summed loss (times the loss scale, with mixed precision).
  const double factor = static_cast<double>(n) * (c_.rules.scaler ? c_.rules.scaler->scale() : 1.0);
  (loss * factor).backward();
  std::vector<torch::Tensor> part;
  for (const auto& p : c_.trainable) part.push_back(p.grad().defined() ? p.grad() : torch::zeros_like(p));
  part.push_back(state);
  for (const auto& b : c_.buffers) part.push_back(b);
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
                     std::vector<std::vector<torch::Tensor>>& parts) {
  for (std::int64_t begin = 0; begin < mb.local_size; begin += chunk) {
    const std::int64_t n = std::min(chunk, mb.local_size - begin);
    const data::Element e = rows(mb.tensors, begin, n);
    const torch::Tensor output = model.forward(e);
    const torch::Tensor target = model.target(e);
    parts.push_back({model.state(output, target, model.loss(output, target), n).to(torch::kFloat64)});
  }
}

}  // namespace tnt::train
