#include <tarantella/dp/gradient_sync.h>

#include <algorithm>
#include <mutex>

#include <c10/util/strides.h>
#include <torch/torch.h>

#include <tarantella/base/error.h>

#include "comm/float16.h"

namespace tnt::dp {
namespace {

torch::ScalarType wire_dtype(Compression c, torch::ScalarType dtype) {
  if (!c10::isFloatingType(dtype)) return dtype;
  switch (c) {
    case Compression::None: return dtype;
    case Compression::Float16: return torch::kFloat16;
    case Compression::BFloat16: return torch::kBFloat16;
  }
  return dtype;
}

// float32 buckets on the CPU are converted by the vectorized loops of
// comm/float16.h into a wire buffer kept across steps (a fresh 40 MB tensor
// per step cost page faults; LibTorch's float16 conversion is scalar).
bool fast_wire(const torch::Tensor& bucket, torch::ScalarType wire) {
  return bucket.scalar_type() == torch::kFloat32 && bucket.device().is_cpu() &&
         (wire == torch::kFloat16 || wire == torch::kBFloat16);
}

void to_wire(const torch::Tensor& bucket, torch::Tensor& wire) {
  const auto* in = bucket.data_ptr<float>();  // host-only: CPU buckets only
  auto* out = reinterpret_cast<std::uint16_t*>(wire.data_ptr());  // host-only: CPU buckets only
  if (wire.scalar_type() == torch::kFloat16) {
    comm::detail::float_to_float16(in, out, bucket.numel());
  } else {
    comm::detail::float_to_bfloat16(in, out, bucket.numel());
  }
}

void from_wire(const torch::Tensor& wire, torch::Tensor& bucket) {
  const auto* in = reinterpret_cast<const std::uint16_t*>(wire.data_ptr());  // host-only: CPU buckets only
  auto* out = bucket.data_ptr<float>();  // host-only: CPU buckets only
  if (wire.scalar_type() == torch::kFloat16) {
    comm::detail::float16_to_float(in, out, bucket.numel());
  } else {
    comm::detail::bfloat16_to_float(in, out, bucket.numel());
  }
}

// A tensor over `bucket`'s memory at `offset` with `sizes`, that autograd
// does not know as a view: the optimizer reads the reduced gradient without
// a copy, and the textbook `optimizer.zero_grad()` (detach_() then zero_())
// works on it — on a real view, detach_() fails ("Can't detach views
// in-place").
torch::Tensor alias_of(const torch::Tensor& bucket, std::int64_t offset, at::IntArrayRef sizes) {
  torch::Tensor out = torch::empty({0}, bucket.options());
  out.set_(bucket.storage(), bucket.storage_offset() + offset, sizes,
           c10::contiguous_strides(sizes));
  return out;
}

}  // namespace

struct GradientSynchronizer::Impl {
  comm::ProcessGroup group;
  std::vector<torch::Tensor> params;
  SyncOptions options;
  std::vector<Bucket> buckets;
  std::vector<torch::Tensor> buffers;
  std::vector<torch::Device> bucket_device;  // where each bucket was made
  std::vector<std::size_t> bucket_of;  // param -> bucket
  std::vector<std::int64_t> offset_of;  // param -> offset in its bucket
  std::vector<unsigned> hook_ids;
  bool extras_ride = false;  // extras travel in the tail of the last bucket
  // One rank, nothing to reduce: autograd's own .grad is the answer, so a
  // plain step skips the bucket copy (weight is 1: n_r = B). Accumulation
  // and compression still take the bucket path.
  bool single_rank = false;
  bool bypass = false;  // this step takes the single-rank shortcut

  std::mutex mutex;  // hooks may run on autograd's device threads
  bool armed = false;
  bool reduce = false;
  double weight = 0.0;
  // begin_step with a weight source: asked once, at the first hook (or at
  // finish() if no gradient came), when the step's batch is known.
  std::function<double()> weight_source;
  std::function<double()> step_source;  // the step's source, for discard()
  torch::Tensor extras;
  std::vector<char> written;   // per param: has a value in this accumulation cycle
  std::vector<char> seen;      // per param: hook ran in this step
  std::vector<std::size_t> ready;  // per bucket: params seen in this step
  std::size_t next_to_send = 0;
  std::vector<comm::Handle> handles;
  std::vector<std::chrono::steady_clock::time_point> enqueued;  // per bucket
  std::vector<torch::Tensor> wire;  // per bucket: what was sent (compressed copy or the buffer)
  std::vector<torch::Tensor> wire_buffers;  // per bucket: kept compressed copy, or undefined
  std::vector<torch::Tensor> slices;  // shard mode: this rank's reduced slice per bucket

  // The buckets, their buffers and the wire buffers, where the parameters
  // are now.
  void plan() {
    buckets = plan_buckets(params, options.fusion_threshold_bytes());
    bucket_of.assign(params.size(), 0);
    offset_of.assign(params.size(), 0);
    // Only float32 and float64 carry the extras exactly enough: float16
    // counts stop being exact at 2048 samples, bfloat16 at 256.
    extras_ride = options.extras_numel() > 0 && options.compression() == Compression::None &&
                  !options.shard() && !buckets.empty() &&
                  (buckets.back().dtype == torch::kFloat32 ||
                   buckets.back().dtype == torch::kFloat64);
    buffers.clear();
    bucket_device.clear();
    for (std::size_t b = 0; b < buckets.size(); ++b) {
      const Bucket& bucket = buckets[b];
      const bool tail = extras_ride && b + 1 == buckets.size();
      const std::int64_t size = bucket.numel + (tail ? options.extras_numel() : 0);
      buffers.push_back(torch::zeros({size}, params[bucket.params[0]].options()));
      bucket_device.push_back(params[bucket.params[0]].device());
      for (std::size_t k = 0; k < bucket.params.size(); ++k) {
        bucket_of[bucket.params[k]] = b;
        offset_of[bucket.params[k]] = bucket.offsets[k];
      }
    }
    ready.assign(buckets.size(), 0);
    handles.assign(buckets.size(), comm::Handle());
    enqueued.assign(buckets.size(), {});
    wire.assign(buckets.size(), torch::Tensor());
    wire_buffers.assign(buckets.size(), torch::Tensor());
    for (std::size_t b = 0; b < buckets.size(); ++b) {
      const auto dtype = wire_dtype(options.compression(), buffers[b].scalar_type());
      if (fast_wire(buffers[b], dtype)) {
        wire_buffers[b] = torch::empty_like(buffers[b], buffers[b].options().dtype(dtype));
      }
    }
  }

  // Whether a parameter is on another device than its bucket (the model
  // was moved after the synchronizer was made).
  bool moved() const {
    for (std::size_t p = 0; p < params.size(); ++p) {
      if (params[p].device() != bucket_device[bucket_of[p]]) return true;
    }
    return false;
  }

  torch::Tensor view(std::size_t p) {
    return buffers[bucket_of[p]].narrow(0, offset_of[p], params[p].numel());
  }

  bool nothing_written() const {
    return std::none_of(written.begin(), written.end(), [](char w) { return w != 0; });
  }

  void resolve_weight() {
    if (!weight_source) return;
    weight = weight_source();
    weight_source = nullptr;
    bypass = single_rank && reduce && weight == 1.0 && nothing_written();
  }

  void on_gradient(std::size_t p, const torch::Tensor& grad) {
    std::lock_guard<std::mutex> lock(mutex);
    if (!armed) return;  // not a training step of ours
    // At any rank count (1 rank would pass it through), so that a model
    // does not train at 1 rank and fail at 2.
    TNT_CHECK(grad.layout() == torch::kStrided, "parameter ", p,
              " (in the order of the model's parameters) got a ", grad.layout(),
              " gradient: gradients are summed over the ranks in dense buckets, so they must be "
              "dense; make the layer produce dense gradients (e.g. an Embedding without "
              "sparse=true)");
    // A model moved after its optimizer was wrapped: the buckets follow, at
    // its first gradient (every rank alike: the plan depends on the
    // parameters alone), not once a bucket holds some of this cycle's.
    if (grad.device() != bucket_device[bucket_of[p]] && !options.shard() && nothing_written() &&
        next_to_send == 0 && moved()) {
      plan();
    }
    TNT_CHECK(grad.device() == bucket_device[bucket_of[p]], "parameter ", p,
              " (in the order of the model's parameters) has its gradient on ", grad.device(),
              ", but its gradient bucket is on ", bucket_device[bucket_of[p]],
              ", where the model was when this step's first gradient came: move the model to "
              "its device before wrapping the optimizer, or between steps");
    resolve_weight();
    if (bypass) return;  // one rank: autograd's own .grad is the answer
    torch::Tensor target = view(p);
    const torch::Tensor flat = grad.reshape({-1});
    if (weight == 0.0) {
      // A rank without samples: its (possibly NaN, the mean of nothing)
      // gradient counts as zeros.
      if (!written[p]) target.zero_();
    } else if (written[p]) {
      target.add_(flat, weight);
    } else {
      // The weight as a host scalar of the gradient's dtype: rounded as
      // before, and no allocation or fill kernel on the GPU per gradient.
      at::mul_out(target, flat,
                  torch::scalar_tensor(weight, flat.options().device(torch::kCPU)));
    }
    written[p] = 1;
    if (seen[p]) return;
    seen[p] = 1;
    const std::size_t b = bucket_of[p];
    if (++ready[b] == buckets[b].params.size()) send_ready_in_order();
  }

  // Buckets leave strictly in bucket order, so every rank enqueues the same
  // sequence of collectives whatever order its gradients appeared in.
  void send_ready_in_order(bool backward_done = false) {
    if (!reduce || (!options.overlap() && !backward_done)) return;
    while (next_to_send < buckets.size() &&
           ready[next_to_send] == buckets[next_to_send].params.size()) {
      send(next_to_send++);
    }
  }

  void send(std::size_t b) {
    if (extras_ride && b + 1 == buckets.size()) {
      buffers[b].narrow(0, buckets[b].numel, options.extras_numel()).copy_(extras);
    }
    if (wire_buffers[b].defined()) {
      to_wire(buffers[b], wire_buffers[b]);
      wire[b] = wire_buffers[b];
    } else {
      const auto dtype = wire_dtype(options.compression(), buffers[b].scalar_type());
      wire[b] = dtype == buffers[b].scalar_type() ? buffers[b] : buffers[b].to(dtype);
    }
    enqueued[b] = std::chrono::steady_clock::now();
    handles[b] = options.shard() ? group.reduce_scatter_async(wire[b], comm::ReduceOp::Sum)
                                 : group.allreduce_async(wire[b], comm::ReduceOp::Sum);
  }

  void fill_and_send_rest() {
    for (std::size_t b = next_to_send; b < buckets.size(); ++b) {
      for (std::size_t p : buckets[b].params) {
        if (!written[p]) view(p).zero_();  // no gradient in this cycle: zeros
        if (!seen[p]) {
          seen[p] = 1;
          ++ready[b];
        }
      }
    }
    send_ready_in_order(/*backward_done=*/true);
  }
};

GradientSynchronizer::GradientSynchronizer(comm::ProcessGroup group,
                                           std::vector<torch::Tensor> params, SyncOptions options)
    : impl_(std::make_unique<Impl>()) {
  Impl& s = *impl_;
  TNT_CHECK(group.is_member(), "GradientSynchronizer: this rank is not a member of the ",
            group.describe(), ": build it on a group this rank belongs to");
  s.group = std::move(group);
  s.params = std::move(params);
  s.options = options;
  s.plan();
  s.single_rank =
      s.group.size() == 1 && options.compression() == Compression::None && !options.shard();
  s.written.assign(s.params.size(), 0);
  s.seen.assign(s.params.size(), 0);
  for (std::size_t p = 0; p < s.params.size(); ++p) {
    TNT_CHECK(s.params[p].requires_grad(), "parameter ", p,
              " does not require a gradient: pass only trainable parameters");
    Impl* impl = impl_.get();
    s.hook_ids.push_back(s.params[p].register_hook(
        [impl, p](const torch::Tensor& grad) { impl->on_gradient(p, grad); }));
  }
}

GradientSynchronizer::~GradientSynchronizer() {
  for (auto& h : impl_->handles) {
    try {
      if (h.valid()) h.wait();
    } catch (...) {
      // The error was (or will be) reported by finish(); nothing to add here.
    }
  }
  for (std::size_t p = 0; p < impl_->params.size(); ++p) {
    impl_->params[p].remove_hook(impl_->hook_ids[p]);
  }
}

void GradientSynchronizer::begin_step(std::function<double()> weight_source, bool reduce) {
  TNT_CHECK(static_cast<bool>(weight_source), "begin_step() needs a weight source");
  TNT_CHECK(impl_->options.extras_numel() == 0, "begin_step() with a weight source carries no extra "
            "values, but the synchronizer was built with extras_numel(", impl_->options.extras_numel(),
            "): pass them with begin_step(weight, reduce, extras)");
  begin_step(0.0, reduce);
  std::lock_guard<std::mutex> lock(impl_->mutex);
  impl_->bypass = false;
  impl_->step_source = weight_source;
  impl_->weight_source = std::move(weight_source);
}

void GradientSynchronizer::begin_step(double weight, bool reduce, const torch::Tensor& extras) {
  Impl& s = *impl_;
  std::lock_guard<std::mutex> lock(s.mutex);
  s.weight_source = nullptr;
  s.step_source = nullptr;
  TNT_CHECK(!reduce || s.options.extras_numel() == 0 ||
                (extras.defined() && extras.numel() == s.options.extras_numel()),
            "begin_step() needs ", s.options.extras_numel(), " extra values, got ",
            extras.defined() ? extras.numel() : 0);
  s.extras = extras.defined() ? extras.to(torch::kFloat64).reshape({-1}) : extras;
  for (std::size_t b = 0; b < s.buffers.size(); ++b) {
    if (!s.buffers[b].defined()) {  // shard mode: let go and not given back
      s.buffers[b] = torch::zeros({s.buckets[b].numel}, s.params[s.buckets[b].params[0]].options());
    }
  }
  // .grad must be undefined during backward: autograd then hands the new
  // gradient over instead of adding it into last step's bucket views.
  for (auto& p : s.params) p.mutable_grad().reset();
  s.armed = true;
  s.reduce = reduce;
  s.weight = weight;
  s.bypass = s.single_rank && reduce && weight == 1.0 && s.nothing_written();
  std::fill(s.seen.begin(), s.seen.end(), 0);
  std::fill(s.ready.begin(), s.ready.end(), 0);
  s.next_to_send = 0;
}

torch::Tensor GradientSynchronizer::finish(const std::function<void(std::size_t)>& on_reduced) {
  Impl& s = *impl_;
  std::unique_lock<std::mutex> lock(s.mutex);
  TNT_CHECK(s.armed, "GradientSynchronizer::finish() without begin_step()");
  s.resolve_weight();
  s.armed = false;
  // A rank without a gradient this step (its share empty, backward skipped)
  // after the model was moved: its buckets follow here, as the others' did
  // at their first gradient, so that every rank sends the same buckets.
  if (!s.options.shard() && s.nothing_written() && s.next_to_send == 0 && s.moved()) s.plan();
  if (s.bypass) {
    // As on N ranks, a parameter without a gradient gets zeros.
    for (auto& p : s.params) {
      if (!p.grad().defined()) p.mutable_grad() = torch::zeros_like(p);
    }
    return s.options.extras_numel() > 0 ? s.extras.clone() : torch::Tensor();
  }
  for (auto& p : s.params) p.mutable_grad().reset();
  if (!s.reduce) return torch::Tensor();
  s.fill_and_send_rest();
  comm::Handle extras_handle;
  if (s.options.extras_numel() > 0 && !s.extras_ride) {
    extras_handle = s.group.allreduce_async(s.extras.clone(), comm::ReduceOp::Sum);
  }
  lock.unlock();

  if (s.options.shard()) {
    // Each rank's slice of every bucket, back in the bucket's dtype; the
    // parameters' .grad stay undefined (the sharded optimizer steps slices).
    s.slices.resize(s.buckets.size());
    for (std::size_t b = 0; b < s.buckets.size(); ++b) {
      const torch::Tensor slice = s.handles[b].wait();
      s.buffers[b] = torch::Tensor();  // see adopt_buffer()
      s.wire[b] = torch::Tensor();
      s.slices[b] = slice.scalar_type() == s.buckets[b].dtype ? slice
                                                              : slice.to(s.buckets[b].dtype);
      if (on_reduced) on_reduced(b);
    }
    std::fill(s.written.begin(), s.written.end(), 0);
    return s.options.extras_numel() > 0 ? extras_handle.wait() : torch::Tensor();
  }
  for (std::size_t b = 0; b < s.buckets.size(); ++b) {
    s.handles[b].wait();
    if (s.wire_buffers[b].defined()) {
      from_wire(s.wire[b], s.buffers[b]);
    } else if (!s.wire[b].is_same(s.buffers[b])) {
      s.buffers[b].copy_(s.wire[b]);
    }
    for (std::size_t p : s.buckets[b].params) {
      s.params[p].mutable_grad() =
          alias_of(s.buffers[b], s.offset_of[p], s.params[p].sizes());
    }
    if (on_reduced) on_reduced(b);
  }
  std::fill(s.written.begin(), s.written.end(), 0);
  if (s.options.extras_numel() == 0) return torch::Tensor();
  if (s.extras_ride) {
    return s.buffers.back().narrow(0, s.buckets.back().numel, s.options.extras_numel()).to(torch::kFloat64);
  }
  return extras_handle.wait();
}

void GradientSynchronizer::discard() {
  Impl& s = *impl_;
  std::vector<comm::Handle> sent;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    if (!s.armed) return;
    for (std::size_t b = 0; b < s.next_to_send; ++b) sent.push_back(s.handles[b]);
  }
  // Their buffers are being reduced: wait before the next backward writes
  // into them. A failed collective is the job's failure, as in finish().
  for (const comm::Handle& h : sent) h.wait();
  std::lock_guard<std::mutex> lock(s.mutex);
  for (auto& p : s.params) p.mutable_grad().reset();
  std::fill(s.written.begin(), s.written.end(), 0);
  std::fill(s.seen.begin(), s.seen.end(), 0);
  std::fill(s.ready.begin(), s.ready.end(), 0);
  s.next_to_send = 0;
  for (auto& w : s.wire) w = torch::Tensor();
  if (s.step_source) {
    s.weight_source = s.step_source;  // asked again: the next batch's share
    s.bypass = false;
  } else {
    s.bypass = s.single_rank && s.reduce && s.weight == 1.0;
  }
}

bool GradientSynchronizer::armed() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->armed;
}

const std::vector<Bucket>& GradientSynchronizer::buckets() const { return impl_->buckets; }
const SyncOptions& GradientSynchronizer::options() const { return impl_->options; }
const std::vector<torch::Tensor>& GradientSynchronizer::reduced_slices() const {
  return impl_->slices;
}

void GradientSynchronizer::adopt_buffer(std::size_t b, torch::Tensor buffer) {
  Impl& s = *impl_;
  std::lock_guard<std::mutex> lock(s.mutex);
  TNT_CHECK(s.options.shard(), "adopt_buffer() is for SyncOptions().shard(true)");
  TNT_CHECK(b < s.buckets.size() && buffer.dim() == 1 && buffer.numel() == s.buckets[b].numel &&
                buffer.scalar_type() == s.buckets[b].dtype && buffer.is_contiguous(),
            "adopt_buffer(", b, "): needs a contiguous 1-D tensor of the bucket's ",
            b < s.buckets.size() ? s.buckets[b].numel : 0, " elements and dtype");
  s.buffers[b] = std::move(buffer);
}
const std::vector<comm::Handle>& GradientSynchronizer::last_handles() const {
  return impl_->handles;
}
const std::vector<std::chrono::steady_clock::time_point>& GradientSynchronizer::last_enqueued()
    const {
  return impl_->enqueued;
}

}  // namespace tnt::dp
