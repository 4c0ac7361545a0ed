#include "train/loop/fit_checks.h"

#include <algorithm>
#include <string>

#include <fmt/format.h>

#include <tarantella/base/argument_error.h>
#include <tarantella/base/error.h>
#include <tarantella/base/logging.h>
#include <tarantella/train/progbar_logger.h>

namespace tnt::train {

void check_fit_options(const FitOptions& options, const CompileOptions& compiled,
                       bool collective_layers) {
  TNT_CHECK_ARG(options.initial_epoch() >= 0, "fit(): initial_epoch=", options.initial_epoch(),
                " is negative: give the index of the first epoch to run (0, or the epochs done "
                "before a load)");
  TNT_CHECK_ARG(options.steps_per_epoch().value_or(1) >= 1, "fit(): steps_per_epoch=",
                options.steps_per_epoch().value_or(1),
                " trains nothing: give 1 or more steps, or None for every batch of the dataset");
  TNT_CHECK_ARG(options.epochs() > options.initial_epoch(), "fit(): epochs=", options.epochs(),
                " must be greater than initial_epoch=", options.initial_epoch(),
                ": epochs is the index of the last epoch plus one (Keras's meaning), e.g. "
                "epochs=", options.initial_epoch() + 1);
  TNT_CHECK_ARG(options.validation_freq() >= 1, "fit(): validation_freq=",
                options.validation_freq(), " is invalid: validate every 1 or more epochs");
  TNT_CHECK_ARG(options.validation_steps().value_or(0) >= 0, "fit(): validation_steps=",
                options.validation_steps().value_or(0),
                " is negative: give the number of validation batches to evaluate, or None (0) "
                "for all of them");
  // The learning-rate callbacks set the optimizer's rate each epoch; a
  // compile-time schedule sets it every step and would silently win.
  if (compiled.schedule()) {
    for (const auto& cb : options.callbacks()) {
      TNT_CHECK(cb->sets_learning_rate() == nullptr,
                "fit(): the model was compiled with a learning-rate schedule "
                "(CompileOptions().schedule(...)), which sets the rate every step and would "
                "silently override the ",
                cb->sets_learning_rate(),
                " callback: use one of the two (compile without schedule, or drop the callback)");
    }
  }
  const bool deterministic = compiled.deterministic().has_value();
  TNT_CHECK(!deterministic || options.distribute_dataset(), "fit(): deterministic training needs "
            "distribute_dataset(true): it gives each rank whole chunks of the global batch");
  TNT_CHECK(!deterministic || !collective_layers, "fit(): deterministic training computes every "
            "chunk on its own, and the model has collective layers (SyncBatchNorm), whose "
            "statistics span the ranks: use BatchNorm in deterministic mode, or compile without "
            "deterministic(...)");
}

data::DistributeOptions distribute_options(const comm::ProcessGroup& group,
                                           const FitOptions& options,
                                           std::optional<std::int64_t> chunk,
                                           torch::Device device) {
  data::DistributeOptions d;
  // On a GPU: batches collated into pinned memory ahead of the step.
  d.group(group)
      .enabled(options.distribute_dataset())
      .pin_memory(device.is_cuda())
      .pin_memory_device(device);
  if (chunk) d.granularity(*chunk);
  if (options.micro_batch_size()) d.micro_batch_size(*options.micro_batch_size());
  return d;
}

std::int64_t steps_per_epoch(std::int64_t cardinality, std::optional<std::int64_t> cap) {
  if (!cap) return cardinality;
  return cardinality < 0 ? *cap : std::min(cardinality, *cap);
}

void check_resume(const TrainingPosition& resume, std::int64_t global_batch_size,
                  std::int64_t steps_total) {
  TNT_CHECK(resume.global_batch_size == global_batch_size,
            "the backup to resume from was made with global batch size ",
            resume.global_batch_size, ", this run's is ", global_batch_size,
            ": resume with the same global batch size (any number of ranks), or delete the backup");
  TNT_CHECK(steps_total < 0 || resume.step <= steps_total, "the backup to resume from is at step ",
            resume.step, " of its epoch, but this run's epochs have ", steps_total,
            " steps: resume with the same dataset and steps_per_epoch, or delete the backup");
}

void warn_small_batchnorm(ModuleAdapter& net, std::int64_t micro_batch) {
  for (const auto& [name, type] : net.named_module_types()) {
    // SyncBatchNorm normalizes over the global batch: nothing to warn about.
    const bool local = type.find("BatchNorm") != std::string::npos &&
                       type.find("SyncBatchNorm") == std::string::npos;
    if (local && micro_batch < 16) {
      log::warning(fmt::format(
          "the model has BatchNorm layers ('{}') and trains with micro-batches of {} samples: "
          "BatchNorm uses each rank's local statistics, which are noisy below 16 samples; use "
          "a larger global batch or fewer ranks, or SyncBatchNorm for the statistics of the "
          "global batch (tnt::nn::SyncBatchNorm, tnt::layers::SyncBatchNorm, "
          "tnt::nn::convert_sync_batchnorm; from Python tnt.nn.convert_sync_batchnorm)",
          name.empty() ? type : name, micro_batch));
      return;
    }
  }
}

callbacks::CallbackPtr progress_bar(const EngineOptions& options, int verbose) {
  auto bar = std::make_shared<callbacks::ProgbarLogger>(verbose, options.stdout_is_terminal());
  bar->run_on_all_ranks = options.output_on_all_ranks();
  return bar;
}

}  // namespace tnt::train
