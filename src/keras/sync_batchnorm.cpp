// SyncBatchNorm's arithmetic (see the header for the algorithm and the note
// on gradient weighting) and the module around it.
//
// Per channel c, over the M elements of the global batch (all ranks, all
// positions), with xmu = x - mean and invstd = 1 / sqrt(var + eps):
//   forward   y  = xmu * invstd * weight + bias
//   backward  dx = weight * invstd * (dy - S1 / (n_r M) - xmu * invstd^2 * S2 / (n_r M))
//             S1 = sum over ranks s of n_s * sum(dy),  S2 = ... of n_s * sum(dy * xmu)
// where n_r is rank r's sample count (the weight of its loss, see the
// header). With one rank this is BatchNorm's own gradient.
#include <tarantella/keras/sync_batchnorm.h>

#include <ostream>
#include <vector>

#include <torch/torch.h>

#include <tarantella/base/error.h>
#include <tarantella/base/torch_compat.h>
#include <tarantella/runtime/runtime.h>

namespace tnt::nn {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// The autograd context stores IValues; a capsule carries the group.
struct SyncBatchNormGroup : torch::CustomClassHolder {
  explicit SyncBatchNormGroup(comm::ProcessGroup g) : group(std::move(g)) {}
  comm::ProcessGroup group;
};

// Dimensions reduced over (all but channel dimension 1) and the shape that
// broadcasts a [C] vector against the input.
std::vector<std::int64_t> sbn_reduced_dims(const torch::Tensor& input) {
  std::vector<std::int64_t> dims{0};
  for (std::int64_t d = 2; d < input.dim(); ++d) dims.push_back(d);
  return dims;
}
std::vector<std::int64_t> sbn_channel_shape(const torch::Tensor& input) {
  std::vector<std::int64_t> shape(static_cast<std::size_t>(input.dim()), 1);
  shape[1] = input.size(1);
  return shape;
}

// Statistics are computed in float32 at least (float16/bfloat16 inputs).
// The dtype SyncBatchNorm computes in: float32 for float16/bfloat16 inputs.
torch::ScalarType sbn_compute_type(const torch::Tensor& input) {
  const bool low = input.scalar_type() == torch::kHalf || input.scalar_type() == torch::kBFloat16;
  return low ? torch::kFloat : input.scalar_type();
}

torch::Tensor sbn_stat_input(const torch::Tensor& input) {
  return input.to(sbn_compute_type(input));
}

// An absent tensor as it crosses SyncBatchNormFunction::apply, and back.
torch::Tensor sbn_absent_as_empty(const torch::Tensor& t) {
  return t.defined() ? t : torch::empty({0});
}
torch::Tensor sbn_present(const torch::Tensor& t) { return t.numel() > 0 ? t : torch::Tensor(); }

class SyncBatchNormFunction : public torch::autograd::Function<SyncBatchNormFunction> {
 public:
  // weight, bias and the running statistics come as empty tensors where
  // they are absent (affine(false), track_running_stats(false)): LibTorch
  // 1.13's custom functions cannot take undefined tensors.
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& input,
                               const torch::Tensor& weight_in, const torch::Tensor& bias_in,
                               const torch::Tensor& running_mean_in,
                               const torch::Tensor& running_var_in, double momentum, double eps,
                               const comm::ProcessGroup& group) {
    const torch::Tensor weight = sbn_present(weight_in);
    const torch::Tensor bias = sbn_present(bias_in);
    torch::Tensor running_mean = sbn_present(running_mean_in);
    torch::Tensor running_var = sbn_present(running_var_in);
    const std::int64_t channels = input.size(1);
    const std::int64_t elements = channels > 0 ? input.numel() / channels : 0;
    const auto dims = sbn_reduced_dims(input);
    // float32 for a float16/bfloat16 input (autocast), as below.
    const torch::Tensor x = sbn_stat_input(input);
    // [count, sums (C), sums of squares (C)]: from the local mean and
    // variance, which are stable, rather than from raw sums of squares.
    torch::Tensor stats = torch::zeros({2 * channels + 1}, input.options().dtype(torch::kDouble));
    if (elements > 0) {
      const auto [var, mean] = torch::var_mean(x, dims, /*unbiased=*/false);
      const torch::Tensor mean64 = mean.to(torch::kDouble);
      const auto n = static_cast<double>(elements);
      stats[0] = n;
      stats.narrow(0, 1, channels).copy_(mean64 * n);
      stats.narrow(0, 1 + channels, channels).copy_((var.to(torch::kDouble) + mean64 * mean64) * n);
    }
    group.allreduce(stats);
    // The global count stays on the device (reading it would make the host
    // wait for the GPU in every SyncBatchNorm layer of every step). A rank
    // with more than 1 value per channel knows the total is more than 1; only
    // ranks with 0 or 1 read it to check (all ranks do when the global
    // batch is too small, and all of them throw).
    const torch::Tensor total = stats.narrow(0, 0, 1);
    if (elements <= 1) {
      const double global = total.item<double>();  // host-sync: docs/training.md "What a step waits for on a GPU"
      TNT_CHECK(global > 1, "SyncBatchNorm: the global batch has ", global,
                " value(s) per channel (input of shape ", input.sizes(), " on rank ",
                group.rank(), " of ", group.size(), "): training needs more than 1");
    }
    const torch::Tensor mean = stats.narrow(0, 1, channels) / total;
    const torch::Tensor var =
        (stats.narrow(0, 1 + channels, channels) / total - mean * mean).clamp_min(0);
    const torch::Tensor invstd = (var + eps).rsqrt();
    if (running_mean.defined()) {
      running_mean.mul_(1 - momentum).add_(mean.to(running_mean.dtype()), momentum);
    }
    if (running_var.defined()) {
      running_var.mul_(1 - momentum)
          .add_((var * (total / (total - 1))).to(running_var.dtype()), momentum);
    }

    const auto shape = sbn_channel_shape(input);
    torch::Tensor scale = weight.defined() ? invstd * weight.to(torch::kDouble) : invstd;
    torch::Tensor shift = -mean * scale;
    if (bias.defined()) shift = shift + bias.to(torch::kDouble);
    // In float32 for a float16/bfloat16 input (autocast), cast once at the
    // end, as torch's own batch norm kernels do: scale and shift rounded to
    // the input's dtype would err by |mean| * invstd ulps, not |y| (and a
    // large shift overflows float16).
    const auto compute = x.scalar_type();
    const torch::Tensor output =
        torch::addcmul(shift.to(compute).view(shape), x, scale.to(compute).view(shape))
            .to(input.scalar_type());

    ctx->save_for_backward({input, weight, mean, invstd, total});
    ctx->saved_data["samples"] = input.size(0);
    ctx->saved_data["group"] =
        c10::IValue::make_capsule(c10::make_intrusive<SyncBatchNormGroup>(group));
    return output;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const variable_list saved = ctx->get_saved_variables();
    const torch::Tensor& input = saved[0];
    const torch::Tensor& weight = saved[1];
    const torch::Tensor& mean = saved[2];    // float64 [C]
    const torch::Tensor& invstd = saved[3];  // float64 [C]
    const torch::Tensor& total = saved[4];   // float64 [1], the global count
    const std::int64_t samples = ctx->saved_data["samples"].toInt();
    const auto capsule = ctx->saved_data["group"].toCapsule();
    const comm::ProcessGroup& group = static_cast<SyncBatchNormGroup*>(capsule.get())->group;

    const std::int64_t channels = input.size(1);
    const auto dims = sbn_reduced_dims(input);
    const auto shape = sbn_channel_shape(input);
    torch::Tensor dy = grads[0];
    const bool any = input.numel() > 0 && dy.defined();
    torch::Tensor sum_dy = torch::zeros({channels}, mean.options());
    torch::Tensor sum_dy_xmu = torch::zeros({channels}, mean.options());
    // float32 for float16/bfloat16 (as in forward): dy is loss-scaled, and
    // dy * (x - mean) formed in float16 overflows where torch's kernels,
    // which compute it in float32, do not.
    torch::Tensor xmu, dyc;
    const auto compute = sbn_compute_type(input);
    if (any) {
      dyc = sbn_stat_input(dy);
      xmu = sbn_stat_input(input) - mean.to(compute).view(shape);
      sum_dy = dyc.sum(dims).to(torch::kDouble);
      sum_dy_xmu = (dyc * xmu).sum(dims).to(torch::kDouble);
    }

    torch::Tensor grad_input;
    // Whether the input needs a gradient is a property of the graph, the
    // same on every rank: all or none of them allreduce here.
    if (ctx->needs_input_grad(0)) {
      torch::Tensor sums = torch::cat({sum_dy, sum_dy_xmu}) * static_cast<double>(samples);
      group.allreduce(sums);
      if (any) {
        const torch::Tensor per = 1.0 / (total * static_cast<double>(samples));
        const torch::Tensor k1 = sums.narrow(0, 0, channels) * per;
        const torch::Tensor k2 = sums.narrow(0, channels, channels) * per * invstd * invstd;
        const torch::Tensor scale = weight.defined() ? invstd * weight.to(torch::kDouble) : invstd;
        grad_input = ((dyc - k1.to(compute).view(shape) - xmu * k2.to(compute).view(shape)) *
                      scale.to(compute).view(shape))
                         .to(input.scalar_type());
      } else {
        grad_input = torch::zeros_like(input);
      }
    }
    torch::Tensor grad_weight, grad_bias;
    if (weight.defined() && ctx->needs_input_grad(1)) {
      grad_weight = (sum_dy_xmu * invstd).to(weight.dtype());
    }
    if (ctx->needs_input_grad(2)) {
      grad_bias = sum_dy.to(weight.defined() ? weight.dtype() : input.dtype());
    }
    return {grad_input, grad_weight, grad_bias, torch::Tensor(), torch::Tensor(),
            torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

// The group to normalize over: the one given, else the world group of the
// running runtime; an empty handle without a runtime (one process: its
// batch is the global batch). Not default_group(): that makes a new
// one-rank group (an engine thread) per call without a runtime.
comm::ProcessGroup sbn_active_group(const comm::ProcessGroup& given) {
  if (given.valid()) return given;
  if (is_initialized()) return world();
  return {};
}

}  // namespace

torch::Tensor sync_batch_norm(const torch::Tensor& input, const torch::Tensor& weight,
                              const torch::Tensor& bias, const torch::Tensor& running_mean,
                              const torch::Tensor& running_var, bool training, double momentum,
                              double eps, const comm::ProcessGroup& group) {
  TNT_CHECK(input.dim() >= 2, "SyncBatchNorm needs inputs [batch, channels, ...], got ",
            input.sizes());
  const bool has_running = running_mean.defined() && running_var.defined();
  if (!training && has_running) {
    return torch::batch_norm(input, weight, bias, running_mean, running_var, false, momentum, eps,
                             /*cudnn_enabled=*/true);
  }
  const comm::ProcessGroup active = training ? sbn_active_group(group) : comm::ProcessGroup();
  if (!active.valid() || active.size() == 1) {  // the local batch is the global batch
    return torch::batch_norm(input, weight, bias, running_mean, running_var, true, momentum, eps,
                             /*cudnn_enabled=*/true);
  }
  TNT_CHECK(active.is_member(), "SyncBatchNorm: this rank is not a member of the ",
            active.describe(), " it normalizes over: give it a group this rank belongs to");
  return SyncBatchNormFunction::apply(input, sbn_absent_as_empty(weight), sbn_absent_as_empty(bias),
                                      sbn_absent_as_empty(running_mean),
                                      sbn_absent_as_empty(running_var), momentum, eps, active);
}

SyncBatchNormImpl::SyncBatchNormImpl(const SyncBatchNormOptions& options_,
                                     comm::ProcessGroup group)
    : compat::NamedModuleBase<SyncBatchNormImpl>("tnt::nn::SyncBatchNorm"),
      CollectiveModule(std::move(group)),
      options(options_) {
  SyncBatchNormImpl::reset();
}

void SyncBatchNormImpl::reset() {
  TNT_CHECK(options.num_features() > 0, "SyncBatchNorm needs num_features > 0, got ",
            options.num_features());
  TNT_CHECK(options.eps() > 0, "SyncBatchNorm needs eps > 0, got ", options.eps());
  const std::int64_t c = options.num_features();
  if (options.affine()) {
    weight = register_parameter("weight", torch::empty({c}));
    bias = register_parameter("bias", torch::empty({c}));
  } else {
    weight = register_parameter("weight", torch::Tensor(), /*requires_grad=*/false);
    bias = register_parameter("bias", torch::Tensor(), /*requires_grad=*/false);
  }
  if (options.track_running_stats()) {
    running_mean = register_buffer("running_mean", torch::zeros({c}));
    running_var = register_buffer("running_var", torch::ones({c}));
    num_batches_tracked = register_buffer("num_batches_tracked", torch::zeros({}, torch::kLong));
  } else {
    running_mean = register_buffer("running_mean", torch::Tensor());
    running_var = register_buffer("running_var", torch::Tensor());
    num_batches_tracked = register_buffer("num_batches_tracked", torch::Tensor());
  }
  reset_parameters();
}

void SyncBatchNormImpl::reset_running_stats() {
  if (!options.track_running_stats()) return;
  torch::NoGradGuard no_grad;
  running_mean.zero_();
  running_var.fill_(1);
  num_batches_tracked.zero_();
}

void SyncBatchNormImpl::reset_parameters() {
  reset_running_stats();
  if (!options.affine()) return;
  torch::NoGradGuard no_grad;
  weight.fill_(1);
  bias.zero_();
}

torch::Tensor SyncBatchNormImpl::forward(const torch::Tensor& input) {
  TNT_CHECK(input.dim() >= 2 && input.size(1) == options.num_features(),
            "SyncBatchNorm(num_features=", options.num_features(), ") needs inputs [batch, ",
            options.num_features(), ", ...], got ", input.sizes());
  double factor = options.momentum().value_or(0.0);
  if (is_training() && options.track_running_stats()) {
    torch::NoGradGuard no_grad;
    num_batches_tracked.add_(1);
    // No momentum: a cumulative average, as torch::nn::BatchNorm.
    // (A host read, as in LibTorch's BatchNorm: the factor is a number.)
    if (!options.momentum()) {
      factor = 1.0 / num_batches_tracked.item<double>();  // host-sync: docs/training.md "What a step waits for on a GPU"
    }
  }
  return sync_batch_norm(input, weight, bias, running_mean, running_var, is_training(), factor,
                         options.eps(), process_group());
}

void SyncBatchNormImpl::pretty_print(std::ostream& stream) const {
  stream << "tnt::nn::SyncBatchNorm(" << options.num_features() << ", eps=" << options.eps()
         << ", momentum=";
  if (options.momentum()) {
    stream << *options.momentum();
  } else {
    stream << "None";
  }
  stream << ", affine=" << std::boolalpha << options.affine()
         << ", track_running_stats=" << options.track_running_stats() << ")";
}

}  // namespace tnt::nn
