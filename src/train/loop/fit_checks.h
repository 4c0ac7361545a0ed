// Private: fit()'s arithmetic and checks, apart from the loop so that each
// can be read and tested on its own: option checks, how the dataset is
// distributed, the steps of an epoch, whether a resume point fits this run,
// the BatchNorm warning and the progress bar.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

#include <tarantella/comm/process_group.h>
#include <tarantella/data/distribute.h>
#include <tarantella/keras/module_adapter.h>
#include <tarantella/train/engine_options.h>
#include <tarantella/train/options.h>
#include <tarantella/train/training_host.h>

namespace tnt::train {

/// Errors for options that cannot train: epochs, validation_freq,
/// validation_steps, a
/// learning-rate callback beside a compile-time schedule, deterministic mode
/// without distribution or with collective layers.
void check_fit_options(const FitOptions& options, const CompileOptions& compiled,
                       bool collective_layers);
/// How fit() distributes its dataset over `group`, for a model on `device`.
data::DistributeOptions distribute_options(const comm::ProcessGroup& group,
                                           const FitOptions& options,
                                           std::optional<std::int64_t> chunk,
                                           torch::Device device);
/// Steps of an epoch: the dataset's, capped by steps_per_epoch (< 0: unknown).
std::int64_t steps_per_epoch(std::int64_t cardinality, std::optional<std::int64_t> cap);
/// A restored position must fit this run's data: the same global batch (the
/// step counts global batches) and a step inside the epoch.
void check_resume(const TrainingPosition& resume, std::int64_t global_batch_size,
                  std::int64_t steps_total);
/// A warning when local BatchNorm layers see micro-batches below 16 samples.
void warn_small_batchnorm(ModuleAdapter& net, std::int64_t micro_batch);
/// The progress bar callback for `verbose`, on the ranks the options say.
callbacks::CallbackPtr progress_bar(const EngineOptions& options, int verbose);

}  // namespace tnt::train
