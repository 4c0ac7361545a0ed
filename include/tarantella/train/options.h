// What the training engine takes from a front end, as Keras's arguments:
// compile (optimizer, loss, metrics and the engine's training settings),
// fit, evaluate and predict. The C++ tnt::Model and Python's tnt.Model
// fill the same structs, so both drive the engine with the same meaning.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <tarantella/base/arg.h>
#include <tarantella/base/mixed_precision.h>
#include <tarantella/dp/gradient_sync.h>
#include <tarantella/keras/losses.h>
#include <tarantella/keras/metrics.h>
#include <tarantella/keras/optimizers.h>
#include <tarantella/keras/schedules.h>
#include <tarantella/train/callback.h>

namespace tnt {

namespace data {
class Dataset;
}

/// What compile() takes. optimizer and loss are required.
///
/// Example:
///   model.compile(tnt::CompileOptions()
///                     .optimizer(tnt::optimizers::SGD(0.01))
///                     .loss(tnt::losses::SparseCategoricalCrossentropy())
///                     .metrics({tnt::metrics::SparseCategoricalAccuracy()}));
struct CompileOptions {
  TNT_ARG(optimizers::Factory, optimizer);
  TNT_ARG(losses::Loss, loss);
  TNT_ARG(std::vector<metrics::Metric>, metrics);
  /// Learning rate per global step; overrides the optimizer's rate.
  TNT_ARG(schedules::Schedule, schedule);
  /// How many leading tensors of a dataset element are inputs (default 1);
  /// the next one is the target.
  TNT_ARG(int, num_inputs) = 1;
  /// Gradient accumulation (Determined's aggregation_frequency): k
  /// micro-steps per optimizer step and allreduce; gradients are averaged.
  TNT_ARG(int, aggregation_frequency) = 1;
  /// Send gradients as float16/bfloat16 (off by default).
  TNT_ARG(dp::Compression, compression) = dp::Compression::None;
  /// Fusion threshold in bytes; default: TNT_FUSION_THRESHOLD (32 KiB).
  TNT_ARG(std::optional<std::size_t>, fusion_threshold_bytes);
  /// Keras's clipnorm: before each optimizer step, scale the (global,
  /// allreduced) gradients so that their joint L2 norm is at most v.
  TNT_ARG(std::optional<double>, clip_norm);
  /// Keras's clipvalue: clamp every gradient element to [-v, v].
  TNT_ARG(std::optional<double>, clip_value);
  /// Deterministic mode with chunks of `chunk` samples: every chunk of a
  /// global batch is computed on its own (on one thread), and the chunks'
  /// gradients, losses, metrics and BatchNorm statistics are summed exactly
  /// (64-bit fixed point), so weights and logs are bitwise the same at any
  /// number of ranks and without MPI. Costs speed: no overlap, one chunk at
  /// a time. See docs/training.md, "Deterministic mode".
  TNT_ARG(std::optional<std::int64_t>, deterministic);
  /// Mixed precision: the forward pass under autocast to bfloat16 (CPU and
  /// GPU) or float16 (GPU); weights, gradients, optimizer, loss and metrics
  /// stay float32 (the outputs are cast back). See docs/training.md.
  TNT_ARG(MixedPrecision, mixed_precision) = MixedPrecision::None;
  /// Dynamic loss scaling: on by default with Float16, off otherwise. A step
  /// whose summed gradients overflow is skipped on every rank alike and the
  /// scale halved (Model::loss_scale()).
  TNT_ARG(std::optional<bool>, loss_scaling);
  /// ZeRO stage 1: gradients are reduce-scattered, each rank keeps the
  /// optimizer state of and steps only its 1/N of every gradient bucket, and
  /// the updated parameters are allgathered. Optimizer memory per rank falls
  /// to 1/N; checkpoints hold the whole state, so they load at any rank
  /// count and with or without sharding. Works with the built-in optimizers
  /// (SGD, Adam, AdamW, RMSprop, Adagrad), whose updates are element-wise.
  /// See docs/performance.md, the "Optimizer" rows of its table.
  TNT_ARG(bool, shard_optimizer) = false;
};

/// The names of CompileOptions' mixed_precision and compression values, as
/// the compile configuration stores them and Python's compile() takes them:
/// "none", "bfloat16", "float16". The one parser both front ends use; an
/// unknown name is a tnt::ArgumentError naming it and the known ones.
/// Example: tnt::CompileOptions().mixed_precision(tnt::mixed_precision_from_name("bfloat16"))
MixedPrecision mixed_precision_from_name(const std::string& name);
const char* mixed_precision_name(MixedPrecision precision);
dp::Compression compression_from_name(const std::string& name);
const char* compression_name(dp::Compression compression);

/// What fit() takes.
/// Example: model.fit(train, tnt::FitOptions().epochs(5).validation_data(val).verbose(1));
struct FitOptions {
  TNT_ARG(std::int64_t, epochs) = 1;
  TNT_ARG(std::int64_t, initial_epoch) = 0;
  TNT_ARG(std::optional<std::int64_t>, steps_per_epoch);
  TNT_ARG(std::int64_t, validation_freq) = 1;
  /// Keras's validation_steps: each validation evaluates at most this many
  /// batches of validation_data, its first ones; nullopt or 0: all of them.
  TNT_ARG(std::optional<std::int64_t>, validation_steps);
  TNT_ARG(std::vector<callbacks::CallbackPtr>, callbacks);
  /// 0 silent, 1 progress bar, 2 one line per epoch (master rank only).
  TNT_ARG(int, verbose) = 1;
  TNT_ARG(std::optional<std::int64_t>, micro_batch_size);
  TNT_ARG(std::optional<std::int64_t>, validation_micro_batch_size);
  /// false: the dataset is already this rank's share (e.g. shard()).
  TNT_ARG(bool, distribute_dataset) = true;
  TNT_ARG(bool, distribute_validation_dataset) = true;

 public:
  /// Evaluated after every validation_freq epochs (global values, "val_" logs).
  FitOptions& validation_data(const data::Dataset& v);
  const std::shared_ptr<const data::Dataset>& validation_data() const { return validation_data_; }

 private:
  std::shared_ptr<const data::Dataset> validation_data_;
};

/// What evaluate() takes.
struct EvaluateOptions {
  TNT_ARG(int, verbose) = 0;
  /// Keras's steps: at most this many batches, the dataset's first ones;
  /// nullopt or 0: all of them.
  TNT_ARG(std::optional<std::int64_t>, steps);
  TNT_ARG(std::optional<std::int64_t>, micro_batch_size);
  TNT_ARG(bool, distribute_dataset) = true;
  TNT_ARG(std::vector<callbacks::CallbackPtr>, callbacks);
};

/// What predict() takes.
struct PredictOptions {
  /// Return the outputs on every rank, not only the master rank.
  TNT_ARG(bool, on_all_ranks) = false;
  TNT_ARG(std::optional<std::int64_t>, micro_batch_size);
  TNT_ARG(std::vector<callbacks::CallbackPtr>, callbacks);
};

// Each options struct's plain values, each once: the list the Python front
// end binds the struct from (src/python/options.h: an attribute per field
// and a keyword constructor), as the callbacks' options have. The objects
// (optimizer, loss, metrics, schedule, callbacks, validation data) are
// passed beside the struct. A new TNT_ARG of a plain value goes here too;
// then it is in Python as well.
template <typename Visit>
void fields(CompileOptions& o, Visit&& v) {
  v("num_inputs", o.num_inputs());
  v("aggregation_frequency", o.aggregation_frequency());
  v("compression", o.compression());
  v("fusion_threshold_bytes", o.fusion_threshold_bytes());
  v("clip_norm", o.clip_norm());
  v("clip_value", o.clip_value());
  v("deterministic", o.deterministic());
  v("mixed_precision", o.mixed_precision());
  v("loss_scaling", o.loss_scaling());
  v("shard_optimizer", o.shard_optimizer());
}
template <typename Visit>
void fields(FitOptions& o, Visit&& v) {
  v("epochs", o.epochs());
  v("initial_epoch", o.initial_epoch());
  v("steps_per_epoch", o.steps_per_epoch());
  v("validation_freq", o.validation_freq());
  v("validation_steps", o.validation_steps());
  v("verbose", o.verbose());
  v("micro_batch_size", o.micro_batch_size());
  v("validation_micro_batch_size", o.validation_micro_batch_size());
  v("distribute_dataset", o.distribute_dataset());
  v("distribute_validation_dataset", o.distribute_validation_dataset());
}
template <typename Visit>
void fields(EvaluateOptions& o, Visit&& v) {
  v("verbose", o.verbose());
  v("steps", o.steps());
  v("micro_batch_size", o.micro_batch_size());
  v("distribute_dataset", o.distribute_dataset());
}
template <typename Visit>
void fields(PredictOptions& o, Visit&& v) {
  v("on_all_ranks", o.on_all_ranks());
  v("micro_batch_size", o.micro_batch_size());
}

}  // namespace tnt
