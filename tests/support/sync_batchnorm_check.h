// Shared by the unit tests (in-process groups, threads as ranks) and the
// multi-rank tests (MPI): one rank's SyncBatchNorm on its micro-batch of a
// global batch against LibTorch's BatchNorm over the whole batch, which
// every rank computes for itself (the data is small).
//
// Each rank's loss is the mean over its own samples and its gradients count
// with weight n_r / B, as in tnt::Model; the serial loss is the mean over
// the global batch. Two training steps, then evaluation.
#pragma once

#include <algorithm>
#include <cstdint>
#include <iomanip>
#include <sstream>
#include <string>
#include <vector>

#include <torch/torch.h>

#include <tarantella/comm/process_group.h>
#include <tarantella/data/distribute.h>
#include <tarantella/keras/sync_batchnorm.h>

namespace tnt_test {

/// Worst relative difference: max |got - want| / max |want| (0 for empty
/// tensors), on the CPU in want's dtype whatever the devices of the two (a
/// tnt::Model's state on a GPU against a reference).
inline double sbn_relative(const torch::Tensor& got, const torch::Tensor& want) {
  if (want.numel() == 0) return 0.0;
  const torch::Tensor w = want.detach().cpu();
  const double scale = std::max(w.abs().max().item<double>(), 1e-12);
  return (got.detach().to(torch::kCPU, w.scalar_type()) - w).abs().max().item<double>() / scale;
}

/// The worst relative difference of each quantity over the steps.
struct SbnErrors {
  double output = 0, input_grad = 0, weight_grad = 0, bias_grad = 0;
  double running_mean = 0, running_var = 0, eval_output = 0;
  std::int64_t batches_tracked = -1;
  std::int64_t local_samples = -1;

  double worst() const {
    return std::max({output, input_grad, weight_grad, bias_grad, running_mean, running_var,
                     eval_output});
  }
  std::string describe() const {
    std::ostringstream out;
    out << std::scientific << std::setprecision(2) << "output " << output << ", input grad "
        << input_grad << ", weight grad " << weight_grad << ", bias grad " << bias_grad
        << ", running mean " << running_mean << ", running var " << running_var
        << ", eval output " << eval_output << " (local samples " << local_samples << ")";
    return out.str();
  }
};

/// `sample_shape` is {C} or {C, H, W}. Collective over `group`.
inline SbnErrors sbn_check_against_serial(const tnt::comm::ProcessGroup& group,
                                          std::int64_t batch,
                                          const std::vector<std::int64_t>& sample_shape) {
  const std::int64_t channels = sample_shape.front();
  std::vector<std::int64_t> shape{batch};
  shape.insert(shape.end(), sample_shape.begin(), sample_shape.end());
  std::vector<std::int64_t> channel_shape(shape.size(), 1);
  channel_shape[1] = channels;

  torch::Generator gen = at::detail::createCPUGenerator(1234);
  const torch::Tensor weight0 = 1 + 0.2 * torch::randn({channels}, gen);
  const torch::Tensor bias0 = 0.3 * torch::randn({channels}, gen);

  // The reference: LibTorch's BatchNorm over the whole batch.
  torch::nn::AnyModule serial;
  torch::Tensor s_weight, s_bias, s_mean, s_var;
  if (sample_shape.size() == 1) {
    torch::nn::BatchNorm1d bn(torch::nn::BatchNorm1dOptions(channels).momentum(0.3));
    s_weight = bn->weight, s_bias = bn->bias, s_mean = bn->running_mean, s_var = bn->running_var;
    serial = torch::nn::AnyModule(bn);
  } else {
    torch::nn::BatchNorm2d bn(torch::nn::BatchNorm2dOptions(channels).momentum(0.3));
    s_weight = bn->weight, s_bias = bn->bias, s_mean = bn->running_mean, s_var = bn->running_var;
    serial = torch::nn::AnyModule(bn);
  }
  tnt::nn::SyncBatchNorm sync(tnt::nn::SyncBatchNormOptions(channels).momentum(0.3), group);
  {
    torch::NoGradGuard no_grad;
    s_weight.copy_(weight0);
    s_bias.copy_(bias0);
    sync->weight.copy_(weight0);
    sync->bias.copy_(bias0);
  }

  const auto [lo, hi] = tnt::data::micro_batch_range(batch, group.size(), group.rank());
  const std::int64_t n = hi - lo;
  const double share = static_cast<double>(n) / static_cast<double>(batch);
  SbnErrors e;
  e.local_samples = n;
  std::vector<torch::Tensor> inputs;
  for (int step = 0; step < 2; ++step) {
    // Channel means well away from 0: the variance must not come from a
    // cancellation of large sums.
    const torch::Tensor x_all =
        torch::randn(shape, gen) * 2 + torch::arange(channels).view(channel_shape) * 0.5 - 1;
    const torch::Tensor r_all = torch::randn(shape, gen);
    inputs.push_back(x_all);

    torch::Tensor xs = x_all.clone().requires_grad_();
    const torch::Tensor ys = serial.forward(xs);
    s_weight.mutable_grad().reset();
    s_bias.mutable_grad().reset();
    ((ys * r_all).sum() / static_cast<double>(batch)).backward();

    torch::Tensor x = x_all.slice(0, lo, hi).clone().requires_grad_();
    const torch::Tensor y = sync->forward(x);
    sync->weight.mutable_grad().reset();
    sync->bias.mutable_grad().reset();
    const torch::Tensor local = (y * r_all.slice(0, lo, hi)).sum();
    (n > 0 ? local / static_cast<double>(n) : local).backward();

    e.output = std::max(e.output, sbn_relative(y, ys.detach().slice(0, lo, hi)));
    e.input_grad =
        std::max(e.input_grad, sbn_relative(x.grad() * share, xs.grad().slice(0, lo, hi)));
    torch::Tensor wg = sync->weight.grad() * share;
    torch::Tensor bg = sync->bias.grad() * share;
    group.allreduce(wg);
    group.allreduce(bg);
    e.weight_grad = std::max(e.weight_grad, sbn_relative(wg, s_weight.grad()));
    e.bias_grad = std::max(e.bias_grad, sbn_relative(bg, s_bias.grad()));
    e.running_mean = std::max(e.running_mean, sbn_relative(sync->running_mean, s_mean));
    e.running_var = std::max(e.running_var, sbn_relative(sync->running_var, s_var));
  }
  e.batches_tracked = sync->num_batches_tracked.item<std::int64_t>();

  // Evaluation: the running statistics, no communication.
  serial.ptr()->eval();
  sync->eval();
  torch::NoGradGuard no_grad;
  for (const torch::Tensor& x_all : inputs) {
    const torch::Tensor want = serial.forward(x_all).slice(0, lo, hi);
    const torch::Tensor got = sync->forward(x_all.slice(0, lo, hi));
    e.eval_output = std::max(e.eval_output, sbn_relative(got, want));
  }
  return e;
}

}  // namespace tnt_test
