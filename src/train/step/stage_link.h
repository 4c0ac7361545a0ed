// Private: a pipeline stage's links to its neighbours, over the pipeline's
// group (stage s is rank s of it): activations go forward, their gradients
// come back. Each tensor travels as a small header (dtype and shape, which
// the receiver needs to allocate) and then its data, each on a tag of its
// own, so that the receiver knows the shape of what it takes. Sends are
// posted and left to finish on their own (a send completes when the
// neighbour takes it); a stage waits for them before the step ends, so
// that 1F1B's crossing sends (an activation forward while a gradient comes
// back) never wait on each other. A posted transfer moves only while some
// thread of the rank drives it (comm's point-to-point has no progress
// thread of its own), so the link has one: it drives the posted sends,
// napping between tries, while the training thread computes the next
// micro-batch; without it an output would reach the next stage only when
// this stage next waits. Within one tag, transfers arrive in the order they
// were sent: micro-batch order.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <torch/types.h>

#include <tarantella/comm/process_group.h>

#include "stages/layout.h"

namespace tnt::train {

class StageLink {
 public:
  /// `pipeline`: the P ranks of this rank's pipeline, stage order.
  StageLink(comm::ProcessGroup pipeline, stages::StageLayout layout, torch::Device device);
  ~StageLink();
  StageLink(const StageLink&) = delete;
  StageLink& operator=(const StageLink&) = delete;

  const stages::StageLayout& layout() const { return layout_; }
  const comm::ProcessGroup& pipeline() const { return pipeline_; }

  /// Sends micro-batch `micro`'s output to the next stage (posted).
  void send_activation(const torch::Tensor& output, int micro);
  /// Receives micro-batch `micro`'s input from the previous stage, on the
  /// training device.
  torch::Tensor recv_activation(int micro);
  /// Sends the gradient of micro-batch `micro`'s input to the previous
  /// stage (posted).
  void send_gradient(const torch::Tensor& grad, int micro);
  /// Receives the gradient of micro-batch `micro`'s output from the next
  /// stage, shaped like `output`.
  torch::Tensor recv_gradient(const torch::Tensor& output, int micro);
  /// Deterministic mode: the CPU generator's state after micro-batch
  /// `micro`'s forward, to the next stage (posted), so that a chunk's random
  /// stream runs through the whole model as it does on one rank.
  void send_generator(const torch::Tensor& state, int micro);
  /// The previous stage's generator state after micro-batch `micro`'s
  /// forward (host memory), taken after its activations.
  torch::Tensor recv_generator(int micro);
  /// Waits for every posted send (the end of a step).
  void finish_sends();
  /// Broadcasts `values` from the last stage to the whole pipeline.
  torch::Tensor from_last_stage(torch::Tensor values) const;
  /// `t` of the last stage, whatever its shape, on every stage of the
  /// pipeline (host memory). Collective over the pipeline.
  torch::Tensor share_from_last_stage(const torch::Tensor& t) const;
  /// Every stage's named tensors on the first stage, in stage order (each
  /// stage sends its names, then its tensors); on the other stages, none.
  /// Collective over the pipeline.
  std::vector<std::pair<std::string, torch::Tensor>> gather_on_first_stage(
      const std::vector<std::pair<std::string, torch::Tensor>>& mine);
  /// The time spent waiting on the neighbours since the last call (their
  /// tensors, the end of the sends): a step's wait, not its compute.
  std::chrono::steady_clock::duration take_waited();

 private:
  void post(const torch::Tensor& t, int peer, int header_tag, int data_tag,
            const std::string& what);
  /// On the training device, or on `device` where given.
  torch::Tensor take(int peer, int header_tag, int data_tag, const std::string& what,
                     std::optional<torch::Device> device = std::nullopt);
  std::string label(const char* kind, int from, int micro) const;
  void drive_sends();

  comm::ProcessGroup pipeline_;
  stages::StageLayout layout_;
  torch::Device device_;
  std::vector<comm::Handle> sends_;
  std::vector<torch::Tensor> in_flight_;  // kept alive until their sends finish
  std::chrono::steady_clock::duration waited_{};
  // The progress thread's sends still to drive, and its stop.
  std::mutex driving_mutex_;
  std::condition_variable driving_cv_;
  std::vector<comm::Handle> driving_;
  bool stopping_ = false;
  std::thread driver_;
};

}  // namespace tnt::train
