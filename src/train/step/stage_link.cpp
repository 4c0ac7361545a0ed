// StageLink (stage_link.h): header-then-data transfers between neighbouring
// stages over the pipeline's group.
#include "train/step/stage_link.h"

#include <algorithm>
#include <utility>

#include <fmt/format.h>
#include <torch/torch.h>

#include <tarantella/base/error.h>

namespace tnt::train {
namespace {

constexpr int kActivationHeader = 0;
constexpr int kActivationData = 1;
constexpr int kGradientHeader = 2;
constexpr int kGradientData = 3;
// 4 to 7: gather_on_first_stage.
constexpr int kGeneratorHeader = 8;
constexpr int kGeneratorData = 9;
// dtype, rank of the shape, then up to kMaxDims sizes.
constexpr int kMaxDims = 8;
constexpr int kHeaderSize = 2 + kMaxDims;

torch::Tensor header_of(const torch::Tensor& t, const std::string& what) {
  TNT_CHECK(t.dim() <= kMaxDims, what, ": a tensor of ", t.dim(), " dimensions cannot pass ",
            "between pipeline stages (at most ", kMaxDims, ")");
  torch::Tensor h = torch::zeros({kHeaderSize}, torch::kInt64);
  auto* p = h.data_ptr<std::int64_t>();
  p[0] = static_cast<std::int64_t>(t.scalar_type());
  p[1] = t.dim();
  for (std::int64_t d = 0; d < t.dim(); ++d) p[2 + d] = t.size(d);
  return h;
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
                     const std::string& what) {
  // Host tensors travel over MPI; a GPU tensor as the group's backend
  // sends it (NCCL where it has one).
  const torch::Tensor data = t.detach().contiguous();
  const torch::Tensor header = header_of(data, what);
  sends_.push_back(pipeline_.isend(header, peer, header_tag, what + " (shape)"));
  sends_.push_back(pipeline_.isend(data, peer, data_tag, what));
  in_flight_.push_back(header);
  in_flight_.push_back(data);
  {
    std::lock_guard<std::mutex> lock(driving_mutex_);
    driving_.insert(driving_.end(), sends_.end() - 2, sends_.end());
  }
  driving_cv_.notify_one();
}

torch::Tensor StageLink::take(int peer, int header_tag, int data_tag, const std::string& what,
                              std::optional<torch::Device> device) {
  const auto begin = std::chrono::steady_clock::now();
  torch::Tensor header = torch::zeros({kHeaderSize}, torch::kInt64);
  pipeline_.recv(header, peer, header_tag, what + " (shape)");
  const auto* p = header.data_ptr<std::int64_t>();
  const auto dtype = static_cast<torch::ScalarType>(p[0]);
  std::vector<std::int64_t> shape(p + 2, p + 2 + p[1]);
  torch::Tensor data =
      torch::empty(shape, torch::TensorOptions().dtype(dtype).device(device.value_or(device_)));
  pipeline_.recv(data, peer, data_tag, what);
  waited_ += std::chrono::steady_clock::now() - begin;
  return data;
}

void StageLink::send_activation(const torch::Tensor& output, int micro) {
  post(output, layout_.stage + 1, kActivationHeader, kActivationData,
       label("activations", layout_.stage, micro));
}

torch::Tensor StageLink::recv_activation(int micro) {
  return take(layout_.stage - 1, kActivationHeader, kActivationData,
              label("activations", layout_.stage - 1, micro));
}

void StageLink::send_gradient(const torch::Tensor& grad, int micro) {
  post(grad, layout_.stage - 1, kGradientHeader, kGradientData,
       label("gradients", layout_.stage, micro));
}

torch::Tensor StageLink::recv_gradient(const torch::Tensor& output, int micro) {
  torch::Tensor g = take(layout_.stage + 1, kGradientHeader, kGradientData,
                         label("gradients", layout_.stage + 1, micro));
  TNT_CHECK(g.sizes() == output.sizes(), label("gradients", layout_.stage + 1, micro),
            " have shape ", g.sizes(), ", but the output they belong to has ", output.sizes());
  return g;
}

void StageLink::send_generator(const torch::Tensor& state, int micro) {
  post(state, layout_.stage + 1, kGeneratorHeader, kGeneratorData,
       label("random generator state", layout_.stage, micro));
}

torch::Tensor StageLink::recv_generator(int micro) {
  return take(layout_.stage - 1, kGeneratorHeader, kGeneratorData,
              label("random generator state", layout_.stage - 1, micro), torch::kCPU);
}

void StageLink::finish_sends() {
  const auto begin = std::chrono::steady_clock::now();
  for (auto& h : sends_) h.wait();
  waited_ += std::chrono::steady_clock::now() - begin;
  sends_.clear();
  in_flight_.clear();
}

torch::Tensor StageLink::share_from_last_stage(const torch::Tensor& t) const {
  const int root = layout_.stages - 1;
  torch::Tensor header = layout_.last_stage() ? header_of(t, "predict's outputs")
                                              : torch::zeros({kHeaderSize}, torch::kInt64);
  header = pipeline_.broadcast(header, root);
  const auto* p = header.data_ptr<std::int64_t>();
  const auto dtype = static_cast<torch::ScalarType>(p[0]);
  const std::vector<std::int64_t> shape(p + 2, p + 2 + p[1]);
  torch::Tensor data = layout_.last_stage() ? t.contiguous()
                                            : torch::empty(shape, torch::TensorOptions().dtype(dtype));
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
