// PositionKeeper: the fit loop's position, read from the device on demand.
#include "train/loop/position_keeper.h"

#include <utility>

#include "train/observe/host_reads.h"

namespace tnt::train {

const TrainingPosition& PositionKeeper::current() const {
  if (state_.defined()) {
    position_.state = read_state(state_);
    state_ = torch::Tensor();
  }
  return position_;
}

void PositionKeeper::set(TrainingPosition position, torch::Tensor state) {
  position_ = std::move(position);
  state_ = std::move(state);
}

std::optional<TrainingPosition> PositionKeeper::take_resume() {
  return std::exchange(resume_, std::nullopt);
}

}  // namespace tnt::train
