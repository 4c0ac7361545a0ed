// Private: the random generators a model draws from in deterministic mode,
// as one value: LibTorch's default CPU generator and, for a model on a GPU,
// that GPU's default generator (Dropout on a GPU draws from it, not from
// the CPU's). Deterministic mode seeds them per chunk, restores them after
// the step, and passes their state from stage to stage.
#pragma once

#include <cstdint>

#include <torch/types.h>

namespace tnt::train {

/// Their state as one uint8 host tensor: the CPU generator's, then the
/// GPU's where `device` is one.
torch::Tensor random_state(torch::Device device);
/// Restores a state that random_state(device) returned (on this rank or on
/// another stage's, whose model is on the same kind of device).
void set_random_state(torch::Device device, const torch::Tensor& state);
/// Seeds them all with `seed` (the GPU generator's offset back at 0).
void seed_random(torch::Device device, std::uint64_t seed);

/// The GPU generator's state alone (checkpoints keep it apart from the CPU
/// generator's, whose entry Python reads): an empty tensor where `device`
/// is not a GPU.
torch::Tensor gpu_random_state(torch::Device device);
/// Restores a state that gpu_random_state returned. False, and nothing
/// changed, where `device` is not a GPU or `state` is not the size of this
/// torch's GPU generator state (a file from another torch or device).
bool set_gpu_random_state(torch::Device device, const torch::Tensor& state);

}  // namespace tnt::train
