// Private: clipping by the global 2-norm without a host synchronisation.
// LibTorch's torch::nn::utils::clip_grad_norm_ ends by returning the norm as
// a double (.item()): on a GPU the host then waits for the whole backward
// and allreduce before it can queue the optimizer. The training step needs
// no number, only the clipped gradients.
#pragma once

#include <vector>

#include <torch/types.h>

namespace tnt::train {

/// Scales the gradients of `params` (those with one) so that their joint
/// 2-norm is at most `max_norm`, with LibTorch's clip_grad_norm_'s kernels
/// in its order (each gradient's norm, the norm of those, max_norm /
/// (total + 1e-6) clamped at 1, multiplied in): the same bits, everything
/// on the gradients' device, nothing read by the host.
void clip_grad_norm_on_device(const std::vector<torch::Tensor>& params, double max_norm);

/// The tail of that: scales the gradients of `params` by max_norm / (total
/// + 1e-6), clamped at 1, with `total` their joint norm on their device
/// (pipeline stages gather it from every stage's gradient norms).
void scale_to_norm(const std::vector<torch::Tensor>& params, const torch::Tensor& total,
                   double max_norm);

}  // namespace tnt::train
