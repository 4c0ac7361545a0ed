// Private: the training counters that a step advances and a checkpoint
// keeps (train/engine/engine.h's snapshot), and dynamic loss scaling's state.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace tnt::train {

/// What checkpoints keep besides weights and optimizer state, so that a
/// resumed run continues exactly: completed epochs, optimizer steps (the
/// schedule's clock) and deterministic mode's seed and predicted exponents.
struct Counters {
  std::int64_t epochs_done = 0;
  std::int64_t optimizer_steps = 0;
  std::optional<std::uint64_t> deterministic_seed;
  std::vector<int> deterministic_exponents;
};

/// Dynamic loss scaling's state (mixed precision with float16).
struct LossScaleState {
  double scale = 1.0;
  std::int64_t good_steps = 0;
  std::int64_t skipped_steps = 0;
};

}  // namespace tnt::train
