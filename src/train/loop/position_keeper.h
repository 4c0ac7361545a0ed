// Private: where fit() is (the position that callbacks and backups see,
// TrainingHost::position()) and where the next fit() starts
// (TrainingHost::resume_from()). The engine owns one; the fit loop moves
// it on. The epoch's loss/metric state may be given as a device tensor: it
// is read on the host only when the position is asked for (a backup), not
// at every step.
#pragma once

#include <optional>

#include <torch/types.h>

#include <tarantella/train/training_host.h>

namespace tnt::train {

class PositionKeeper {
 public:
  /// The position, its state read from the device if it was given there.
  const TrainingPosition& current() const;
  void set(TrainingPosition position, torch::Tensor state = {});
  /// Where the next fit() starts.
  void resume_from(const TrainingPosition& position) { resume_ = position; }
  /// The resume point, once: fit() takes it as it begins.
  std::optional<TrainingPosition> take_resume();

 private:
  mutable TrainingPosition position_;
  mutable torch::Tensor state_;  // position_.state, not yet read from the device
  std::optional<TrainingPosition> resume_;
};

}  // namespace tnt::train
