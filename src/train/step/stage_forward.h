// Private: the parts of a step that pipeline stages change, shared by the
// training step and evaluation: a replica's share cut into micro-batches,
// and one micro-batch's forward on this rank's stage (its input from the
// data or from the previous stage, its output to the next stage). Without
// stages (no link) both are the plain case: one micro-batch, the data in,
// the output kept.
#pragma once

#include <functional>
#include <optional>
#include <vector>

#include <torch/types.h>

#include <tarantella/data/distribute.h>

#include "train/step/stage_link.h"
#include "train/step/step_model.h"

namespace tnt::train {

/// `mb`'s samples as `micro_batches` micro-batches by the data's rule
/// (the first ones one sample larger where they do not divide), fewer when
/// the share has fewer samples, none when it is empty. One: `mb` itself.
std::vector<data::MicroBatch> micro_batches_of(const data::MicroBatch& mb, int micro_batches);

/// `mb`'s samples as chunks of `chunk` samples (deterministic mode; the
/// last one may be shorter), none when it is empty.
std::vector<data::MicroBatch> chunks_of(const data::MicroBatch& mb, std::int64_t chunk);

struct StageForward {
  /// What came from the previous stage (requires grad when training), or
  /// undefined on the first stage.
  torch::Tensor input;
  torch::Tensor output;
  /// Training on a stage after the first: every layer's output, where the
  /// stage is a chain of layers (StepModel::forward_by_layer), for
  /// backward_on_stage; empty otherwise.
  std::vector<LayerOutput> layers;
  /// When the forward itself began: after the input came.
  Clock::time_point began;
};

/// Micro-batch `micro`'s forward on this rank's stage (`link` null: the
/// whole model). A stage after the first replaces the micro-batch's inputs
/// by the previous stage's output; a stage before the last sends its output
/// on.
/// `seed` (deterministic mode's random stream, which runs through the whole
/// model as on one rank): called before the forward where the model starts
/// (the first stage, or no stages) to seed the CPU generator for the
/// micro-batch; a later stage instead continues from the generator state
/// that the previous stage had after its forward, which travels with the
/// activations.
StageForward forward_on_stage(const StepModel& model, StageLink* link,
                              const data::MicroBatch& part, int micro, bool training,
                              const std::function<void()>& seed = {});

/// Micro-batch `micro`'s backward on this rank's stage. A stage before the
/// last takes its output's gradient from the next stage and backpropagates
/// it; the last stage, or the whole model without stages (`link` null),
/// backpropagates `root` (the loss; undefined: no backward). A stage after
/// the first sends its input's gradient back. Where the forward kept the
/// layers' outputs (StageForward::layers), it does so before it computes
/// the weights' gradients: the backward first follows the layers' outputs
/// down to the input (autograd computes no weight gradient on that path),
/// sends the input's gradient, then computes each layer's weight gradients
/// from its output's, in reverse layer order as a plain backward does. The
/// previous stage's backward then starts while this stage is still on its
/// weights, which shortens the pipeline's drain; the gradients are the same
/// bits (the same kernels on the same operands).
struct StageBackward {
  /// When the backward itself began: after the gradient came.
  Clock::time_point began;
  /// Split: when the input's gradient was done; it was sent then, and the
  /// weights' gradients followed. Otherwise unset.
  std::optional<Clock::time_point> weights;
};
StageBackward backward_on_stage(StageForward& f, const torch::Tensor& root, StageLink* link,
                                int micro);

}  // namespace tnt::train
