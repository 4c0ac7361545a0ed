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
//
// Note: which transfers carry a header. A gradient never does: it has the
// shape and dtype of the output it belongs to, which the receiver holds.
// An activation does once per step, with micro-batch 0: the micro-batches
// of a step are slices of one batch, so a stage's outputs share their dtype
// and their shape past the first dimension, and the first is the
// micro-batch's sample count, which every stage knows from the data
// (uneven splits, a short last batch and deterministic mode's chunks only
// change that count). The header of micro-batch 0 says whether its output
// is batch-major (first dimension = its samples); when it is, micro-batches
// 1.. go without a header, their shape [samples, rest of micro-batch 0's];
// when it is not, or a caller does not pass the samples, every activation
// has its header. The sender checks that an output keeps micro-batch 0's
// dtype and shape past the first dimension (a clear error otherwise), and
// the transfer itself checks dtype and shape against the receiver's
// buffer. Within a step that saves one header transfer (a round trip the
// receiver waits for) per activation and per gradient.
#pragma once

#include <chrono>
#include <cstdint>
#include <condition_variable>
#include <mutex>
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
  /// The training device, where received activations and gradients go.
  torch::Device device() const { return device_; }

  /// Sends micro-batch `micro`'s output to the next stage (posted).
  /// `samples`: the micro-batch's sample count, as the receiver passes it
  /// (< 0: unknown, the output goes with its header).
  void send_activation(const torch::Tensor& output, int micro, std::int64_t samples = -1);
  /// Receives micro-batch `micro`'s input from the previous stage, on the
  /// training device. `samples` as the sender passed it.
  torch::Tensor recv_activation(int micro, std::int64_t samples = -1);
  /// Sends the gradient of micro-batch `micro`'s input to the previous
  /// stage (posted).
  void send_gradient(const torch::Tensor& grad, int micro);
  /// Receives the gradient of micro-batch `micro`'s output from the next
  /// stage, shaped like `output`.
  torch::Tensor recv_gradient(const torch::Tensor& output, int micro);
  /// Deterministic mode: the generators' state (random_state.h) after
  /// micro-batch `micro`'s forward, to the next stage (posted), so that a
  /// chunk's random stream runs through the whole model as it does on one
  /// rank.
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

  /// A transfer as the timeline shows it: a receive (the training thread's
  /// wait for the neighbour), a send (posted to taken), or the wait for
  /// the sends at the end of a step.
  struct Event {
    std::string name;  ///< "receive activations 3 (from stage 0)"
    std::chrono::steady_clock::time_point begin, end;
    bool send = false;  ///< runs beside the training thread, not on it
  };
  /// Records the activations' and gradients' transfers from now on (or
  /// stops), for take_events().
  void trace(bool on) { tracing_ = on; }
  /// The transfers recorded since the last call; the sends once finished
  /// (after finish_sends()).
  std::vector<Event> take_events() { return std::exchange(events_, {}); }

 private:
  // The activations of this step as micro-batch 0's header gave them, on
  // each end: sent (to the next stage) and received (from the previous).
  struct StepShape {
    torch::ScalarType dtype = torch::kFloat32;
    std::vector<std::int64_t> rest;  // the shape past the first dimension
    bool batch_major = false;
  };
  // `t` with its header on `header_tag` (`samples` in it, see the note),
  // its data on `data_tag`.
  void post(const torch::Tensor& t, int peer, int header_tag, int data_tag,
            const std::string& what, std::int64_t samples = -1);
  /// Where the sender's tensor was: in host memory, or on the training
  /// device.
  torch::Tensor take(int peer, int header_tag, int data_tag, const std::string& what);
  // Posts `t`'s data alone, on `data_tag` (the receiver knows its shape).
  void post_data(const torch::Tensor& t, int peer, int data_tag, const std::string& what);
  // Receives into `buffer` on `data_tag`, timed as a wait.
  torch::Tensor take_data(torch::Tensor buffer, int peer, int data_tag, const std::string& what);
  // Whether micro-batch `micro`'s activation goes without a header (both
  // ends decide alike: the note above).
  bool headerless(int micro, std::int64_t samples, const StepShape& shape) const;
  std::string label(const char* kind, int from, int micro) const;
  void drive_sends();
  static StepShape step_shape(torch::ScalarType dtype, const std::vector<std::int64_t>& shape,
                              std::int64_t samples);

  comm::ProcessGroup pipeline_;
  stages::StageLayout layout_;
  torch::Device device_;
  std::vector<comm::Handle> sends_;
  std::vector<torch::Tensor> in_flight_;  // kept alive until their sends finish
  std::chrono::steady_clock::duration waited_{};
  StepShape sent_, received_;
  bool tracing_ = false;
  std::vector<Event> events_;
  std::vector<std::pair<std::string, comm::Handle>> traced_sends_;
  // The progress thread's sends still to drive, and its stop.
  std::mutex driving_mutex_;
  std::condition_variable driving_cv_;
  std::vector<comm::Handle> driving_;
  bool stopping_ = false;
  std::thread driver_;
};

}  // namespace tnt::train
