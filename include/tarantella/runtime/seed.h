// Reproducibility in one call: tnt::set_seed seeds every random source a
// training run uses and makes LibTorch pick deterministic algorithms.
#pragma once

#include <cstdint>

namespace tnt {

/// Seeds everything the Tarantella manual lists by hand, in one call:
///  * LibTorch's default CPU generator (and every CUDA generator, if any),
///    so weight initialization, dropout and random tensors repeat;
///  * the seed that Dataset::shuffle uses when given none
///    (tnt::default_shuffle_seed()); a shuffle reads it at every pass, so
///    datasets built before set_seed follow it too;
///  * the C library's rand() (srand), for user code that still uses it;
/// and, when `deterministic`, switches LibTorch to deterministic algorithms
/// (at::globalContext().setDeterministicAlgorithms, and cuDNN's
/// deterministic mode / no benchmarking).
///
/// Call it on every rank with the same seed, after tnt::Runtime and before
/// building the model and the datasets. Guarantees:
///  * the same program, seed, rank count and thread count gives bitwise
///    equal weights, run after run (a Dataset::map with num_workers > 1
///    that draws random numbers excepted: its draws depend on scheduling);
///  * different rank counts give results equal up to float rounding (the
///    summation order of gradients differs) as long as the training step
///    draws no random numbers: Dropout or random augmentation draw from
///    each rank's own generator (seeded alike on every rank), so their
///    numbers depend on the rank count.
/// Weights are broadcast from the master rank anyway, so ranks never
/// diverge even without a seed.
///
/// Example:
///   tnt::Runtime runtime(argc, argv);
///   tnt::set_seed(42);
void set_seed(std::uint64_t seed, bool deterministic = true);

/// What CUDA needs for reproducible results, set before CUDA makes its first
/// cuBLAS handle: CUBLAS_WORKSPACE_CONFIG=:4096:8 (a user's :4096:8 or :16:8
/// is kept, any other value is refused with the fix), TF32 off for cuBLAS
/// and cuDNN, cuDNN's deterministic algorithms and no cuDNN benchmarking.
/// Called by set_seed(seed, true) and by deterministic training
/// (CompileOptions::deterministic); harmless without a GPU. LibTorch's
/// deterministic algorithms elsewhere (setDeterministicAlgorithms, which
/// refuses the operations that have none) come with set_seed(seed, true)
/// only.
void use_deterministic_cuda();

/// Whether set_seed() has been called in this process.
bool seed_was_set();

}  // namespace tnt
