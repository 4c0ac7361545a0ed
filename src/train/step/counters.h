// Private: the training counters that a step advances and a checkpoint
// keeps (train/engine/engine.h's snapshot), and dynamic loss scaling's state.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

namespace tnt::train {

/// What checkpoints keep besides weights and optimizer state, so that a
/// resumed run continues exactly: completed epochs, optimizer steps (the
/// schedule's clock) and deterministic mode's seed and predicted exponents.
/// The exponents are keyed by the tensor's name in the whole model
/// (parameters and buffers by their state_dict keys, the loss/metric state
/// as kStateExponent), so that a checkpoint written with pipeline stages
/// resumes at another layout; files from before the names have them by
/// position ("#0", "#1", ... over [parameters, state, buffers] of the
/// unsplit model).
struct Counters {
  std::int64_t epochs_done = 0;
  /// The data order (shuffle, deterministic mode's per-batch seeds) used
  /// next: an epoch's order is max(epoch, data_epochs), so that fit called
  /// again from epoch 0 (Keras's `for e in ...: fit(epochs=1)`) draws a new
  /// order instead of repeating the last one, while a continuation
  /// (initial_epoch=e) gets epoch e's. Counted when an epoch ends; kept in
  /// checkpoints (older files: epochs_done).
  std::int64_t data_epochs = 0;
  std::int64_t optimizer_steps = 0;
  std::optional<std::uint64_t> deterministic_seed;
  std::map<std::string, int> deterministic_exponents;
};

/// The loss/metric state's key among deterministic mode's exponents.
inline constexpr const char* kStateExponent = "(loss and metrics)";

/// Dynamic loss scaling's state (mixed precision with float16).
struct LossScaleState {
  double scale = 1.0;
  std::int64_t good_steps = 0;
  std::int64_t skipped_steps = 0;
};

}  // namespace tnt::train
