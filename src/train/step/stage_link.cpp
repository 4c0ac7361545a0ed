// StageLink (stage_link.h): transfers between neighbouring stages over the
// pipeline's group, with a header where the receiver cannot know the shape.
#include "train/step/stage_link.h"

#include "base/threads.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <torch/torch.h>

#include <tarantella/base/error.h>

namespace tnt::train {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int kActivationHeader = 0;
constexpr int kActivationData = 1;
// Tag 2 carried the gradients' headers; they go without one now.
constexpr int kGradientData = 3;
// 4 to 7: gather_on_first_stage.
constexpr int kGeneratorHeader = 8;
constexpr int kGeneratorData = 9;
// dtype, rank of the shape, the micro-batch's samples (< 0: not given),
// whether the tensor is in host memory, then up to kMaxDims sizes.
constexpr int kMaxDims = 8;
constexpr int kHeaderSize = 4 + kMaxDims;

torch::Tensor header_of(const torch::Tensor& t, const std::string& what,
                        std::int64_t samples = -1) {
  TNT_CHECK(t.dim() <= kMaxDims, what, ": a tensor of ", t.dim(), " dimensions cannot pass ",
            "between pipeline stages (at most ", kMaxDims, ")");
  torch::Tensor h = torch::zeros({kHeaderSize}, torch::kInt64);
  auto* p = h.data_ptr<std::int64_t>();
  p[0] = static_cast<std::int64_t>(t.scalar_type());
  p[1] = t.dim();
  p[2] = samples;
  p[3] = t.device().is_cpu() ? 1 : 0;
  for (std::int64_t d = 0; d < t.dim(); ++d) p[4 + d] = t.size(d);
  return h;
}

struct Header {
  torch::ScalarType dtype;
  std::vector<std::int64_t> shape;
  std::int64_t samples;
  bool on_host;
};

Header read_header(const torch::Tensor& h) {
  const auto* p = h.data_ptr<std::int64_t>();
  return {static_cast<torch::ScalarType>(p[0]), std::vector<std::int64_t>(p + 4, p + 4 + p[1]),
          p[2], p[3] != 0};
}

}  // namespace

StageLink::StageLink(comm::ProcessGroup pipeline, stages::StageLayout layout,
                     torch::Device device)
    : pipeline_(std::move(pipeline)), layout_(std::move(layout)), device_(device),
      driver_([this] { drive_sends(); }) {}

StageLink::~StageLink() {
  {
    std::lock_guard<std::mutex> lock(driving_mutex_);
    stopping_ = true;
  }
  driving_cv_.notify_all();
  driver_.join();
}

// Tries every posted send, naps (20 us, doubling to 200 us) while some are
// left, sleeps while none are. Errors are the training thread's to see, in
// finish_sends().
void StageLink::drive_sends() {
  // Polling a send's CUDA event is this thread's first CUDA call: on the
  // rank's GPU, not GPU 0 (base/threads.h).
  ::tnt::detail::adopt_device(device_);
  std::chrono::microseconds nap{20};
  std::unique_lock<std::mutex> lock(driving_mutex_);
  while (!stopping_) {
    if (driving_.empty()) {
      nap = std::chrono::microseconds{20};
      driving_cv_.wait(lock, [this] { return stopping_ || !driving_.empty(); });
      continue;
    }
    std::vector<comm::Handle> sends = driving_;
    lock.unlock();
    std::vector<bool> done;
    for (const comm::Handle& h : sends) done.push_back(h.ready());
    lock.lock();
    // Sends posted meanwhile were appended after these.
    std::vector<comm::Handle> left;
    for (std::size_t i = 0; i < driving_.size(); ++i) {
      if (i >= done.size() || !done[i]) left.push_back(driving_[i]);
    }
    driving_ = std::move(left);
    if (driving_.empty()) continue;
    driving_cv_.wait_for(lock, nap, [this] { return stopping_; });
    nap = std::min(nap * 2, std::chrono::microseconds{200});
  }
}

std::string StageLink::label(const char* kind, int from, int micro) const {
  return fmt::format("pipeline {}: stage {}'s {} of micro-batch {}", layout_.replica, from, kind,
                     micro);
}

void StageLink::post(const torch::Tensor& t, int peer, int header_tag, int data_tag,
                     const std::string& what, std::int64_t samples) {
  const torch::Tensor header = header_of(t, what, samples);
  sends_.push_back(pipeline_.isend(header, peer, header_tag, what + " (shape)"));
  in_flight_.push_back(header);
  {
    std::lock_guard<std::mutex> lock(driving_mutex_);
    driving_.push_back(sends_.back());
  }
  post_data(t, peer, data_tag, what);
}

void StageLink::post_data(const torch::Tensor& t, int peer, int data_tag,
                          const std::string& what) {
  // Host tensors travel over MPI; a GPU tensor as the group's backend
  // sends it (NCCL where it has one).
  const torch::Tensor data = t.detach().contiguous();
  sends_.push_back(pipeline_.isend(data, peer, data_tag, what));
  in_flight_.push_back(data);
  {
    std::lock_guard<std::mutex> lock(driving_mutex_);
    driving_.push_back(sends_.back());
  }
  driving_cv_.notify_one();
}

torch::Tensor StageLink::take(int peer, int header_tag, int data_tag, const std::string& what) {
  const auto begin = Clock::now();
  torch::Tensor header = torch::zeros({kHeaderSize}, torch::kInt64);
  pipeline_.recv(header, peer, header_tag, what + " (shape)");
  waited_ += Clock::now() - begin;
  const Header h = read_header(header);
  // Where the sender's tensor is: on an NCCL group both ends of a transfer
  // hold it on the GPU, or both in host memory.
  const torch::Device device = h.on_host ? torch::Device(torch::kCPU) : device_;
  return take_data(torch::empty(h.shape, torch::TensorOptions().dtype(h.dtype).device(device)),
                   peer, data_tag, what);
}

torch::Tensor StageLink::take_data(torch::Tensor buffer, int peer, int data_tag,
                                   const std::string& what) {
  const auto begin = Clock::now();
  pipeline_.recv(buffer, peer, data_tag, what);
  waited_ += Clock::now() - begin;
  return buffer;
}

bool StageLink::headerless(int micro, std::int64_t samples, const StepShape& shape) const {
  return micro > 0 && samples >= 0 && shape.batch_major;
}

// What micro-batch 0's header says about the rest of the step.
StageLink::StepShape StageLink::step_shape(torch::ScalarType dtype,
                                           const std::vector<std::int64_t>& shape,
                                           std::int64_t samples) {
  StepShape s;
  s.dtype = dtype;
  s.batch_major = samples >= 0 && !shape.empty() && shape[0] == samples;
  if (!shape.empty()) s.rest.assign(shape.begin() + 1, shape.end());
  return s;
}

namespace {

std::vector<std::int64_t> batch_of(std::int64_t samples, const std::vector<std::int64_t>& rest) {
  std::vector<std::int64_t> shape{samples};
  shape.insert(shape.end(), rest.begin(), rest.end());
  return shape;
}

}  // namespace

void StageLink::send_activation(const torch::Tensor& output, int micro, std::int64_t samples) {
  const int to = layout_.stage + 1;
  const std::string what = label("activations", layout_.stage, micro);
  if (headerless(micro, samples, sent_)) {
    const std::vector<std::int64_t> expected = batch_of(samples, sent_.rest);
    TNT_CHECK(output.scalar_type() == sent_.dtype && output.sizes().vec() == expected, what,
              " are ", output.scalar_type(), " of shape ", output.sizes(),
              ", but micro-batch 0 of this step sent ", sent_.dtype, " of shape [samples",
              sent_.rest.empty() ? "" : ", ", fmt::format("{}", fmt::join(sent_.rest, ", ")),
              "]: within a step, a stage's outputs must keep one dtype and one shape past ",
              "the first dimension, and the first must be the micro-batch's sample count (",
              samples, " here)");
    post_data(output, to, kActivationData, what);
  } else {
    post(output, to, kActivationHeader, kActivationData, what, samples);
    if (micro == 0) {
      sent_ = step_shape(output.scalar_type(), output.sizes().vec(), samples);
    }
  }
  if (tracing_) {
    traced_sends_.emplace_back(fmt::format("send activations {} (to stage {})", micro, to),
                               sends_.back());
  }
}

torch::Tensor StageLink::recv_activation(int micro, std::int64_t samples) {
  const int from = layout_.stage - 1;
  const std::string what = label("activations", from, micro);
  const auto begin = Clock::now();
  torch::Tensor data;
  if (headerless(micro, samples, received_)) {
    data = take_data(torch::empty(batch_of(samples, received_.rest),
                                  torch::TensorOptions().dtype(received_.dtype).device(device_)),
                     from, kActivationData, what);
  } else {
    TNT_CHECK(micro == 0 || !received_.batch_major || samples >= 0, "internal error: ", what,
              " taken without its sample count, which the sender gave");
    torch::Tensor header = torch::zeros({kHeaderSize}, torch::kInt64);
    pipeline_.recv(header, from, kActivationHeader, what + " (shape)");
    waited_ += Clock::now() - begin;
    const Header h = read_header(header);
    if (micro == 0) received_ = step_shape(h.dtype, h.shape, h.samples);
    data = take_data(torch::empty(h.shape, torch::TensorOptions().dtype(h.dtype).device(device_)),
                     from, kActivationData, what);
  }
  if (tracing_) {
    events_.push_back({fmt::format("receive activations {} (from stage {})", micro, from), begin,
                       Clock::now(), false});
  }
  return data;
}

void StageLink::send_gradient(const torch::Tensor& grad, int micro) {
  const int to = layout_.stage - 1;
  post_data(grad, to, kGradientData, label("gradients", layout_.stage, micro));
  if (tracing_) {
    traced_sends_.emplace_back(fmt::format("send gradients {} (to stage {})", micro, to),
                               sends_.back());
  }
}

// The gradient has the shape and dtype of `output` (the transfer checks).
torch::Tensor StageLink::recv_gradient(const torch::Tensor& output, int micro) {
  const int from = layout_.stage + 1;
  const auto begin = Clock::now();
  const auto options = torch::TensorOptions().dtype(output.scalar_type()).device(device_);
  torch::Tensor g = take_data(torch::empty(output.sizes(), options), from, kGradientData,
                              label("gradients", from, micro));
  if (tracing_) {
    events_.push_back({fmt::format("receive gradients {} (from stage {})", micro, from), begin,
                       Clock::now(), false});
  }
  return g;
}

void StageLink::send_generator(const torch::Tensor& state, int micro) {
  post(state, layout_.stage + 1, kGeneratorHeader, kGeneratorData,
       label("random generator state", layout_.stage, micro));
}

torch::Tensor StageLink::recv_generator(int micro) {
  return take(layout_.stage - 1, kGeneratorHeader, kGeneratorData,
              label("random generator state", layout_.stage - 1, micro));
}

void StageLink::finish_sends() {
  const auto begin = Clock::now();
  for (auto& h : sends_) h.wait();
  const auto end = Clock::now();
  waited_ += end - begin;
  if (tracing_) {
    for (const auto& [name, h] : traced_sends_) {
      const auto started = h.started();
      const auto finished = h.finished();
      if (started && finished) events_.push_back({name, *started, *finished, true});
    }
    if (!sends_.empty()) events_.push_back({"wait for sends", begin, end, false});
  }
  traced_sends_.clear();
  sends_.clear();
  in_flight_.clear();
}

torch::Tensor StageLink::share_from_last_stage(const torch::Tensor& t) const {
  const int root = layout_.stages - 1;
  torch::Tensor header = layout_.last_stage() ? header_of(t, "predict's outputs")
                                              : torch::zeros({kHeaderSize}, torch::kInt64);
  header = pipeline_.broadcast(header, root);
  const Header h = read_header(header);
  torch::Tensor data = layout_.last_stage()
                           ? t.contiguous()
                           : torch::empty(h.shape, torch::TensorOptions().dtype(h.dtype));
  return pipeline_.broadcast(data, root);
}

std::vector<std::pair<std::string, torch::Tensor>> StageLink::gather_on_first_stage(
    const std::vector<std::pair<std::string, torch::Tensor>>& mine) {
  constexpr int kNamesHeader = 4, kNames = 5, kTensorHeader = 6, kTensor = 7;  // see the top
  const std::string what = fmt::format("pipeline {}: stage {}'s weights", layout_.replica,
                                       layout_.stage);
  if (!layout_.first_stage()) {
    std::string names;
    for (const auto& [name, t] : mine) names += name + '\n';
    const torch::Tensor bytes =
        torch::from_blob(names.data(), {static_cast<std::int64_t>(names.size())}, torch::kUInt8)
            .clone();
    post(bytes, 0, kNamesHeader, kNames, what + " (names)");
    for (const auto& [name, t] : mine) post(t, 0, kTensorHeader, kTensor, what + " (" + name + ")");
    finish_sends();
    return {};
  }
  std::vector<std::pair<std::string, torch::Tensor>> all = mine;
  for (int s = 1; s < layout_.stages; ++s) {
    const std::string from = fmt::format("pipeline {}: stage {}'s weights", layout_.replica, s);
    const torch::Tensor bytes = take(s, kNamesHeader, kNames, from + " (names)").cpu();
    const std::string names(reinterpret_cast<const char*>(bytes.data_ptr<std::uint8_t>()),
                            static_cast<std::size_t>(bytes.numel()));
    std::size_t begin = 0;
    for (std::size_t end; (end = names.find('\n', begin)) != std::string::npos; begin = end + 1) {
      const std::string name = names.substr(begin, end - begin);
      all.emplace_back(name, take(s, kTensorHeader, kTensor, from + " (" + name + ")"));
    }
  }
  return all;
}

std::chrono::steady_clock::duration StageLink::take_waited() {
  return std::exchange(waited_, std::chrono::steady_clock::duration{});
}

torch::Tensor StageLink::from_last_stage(torch::Tensor values) const {
  return pipeline_.broadcast(std::move(values), layout_.stages - 1);
}

}  // namespace tnt::train
