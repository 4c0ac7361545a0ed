// The epoch loop of tnt::Model::fit around the training step of
// train/train_step.h (forward, armed backward, summed gradients, clip,
// learning rate, optimizer): distribution of the dataset over the model's
// group, accumulation cycles, auto-tuning between cycles, the timeline and
// overlap meter, callbacks with global and local logs, BatchNorm buffers
// shared after each epoch, validation, and the stop vote.
#include <optional>
#include <utility>

#include <fmt/format.h>

#include <tarantella/callbacks/builtins.h>
#include <tarantella/data/dataset.h>
#include <tarantella/data/distribute.h>
#include <tarantella/dp/state_sync.h>

#include "dp/optimizer_shards.h"
#include <tarantella/base/error.h>
#include <tarantella/base/logging.h>
#include <tarantella/runtime/runtime.h>

#include "callbacks/callback_list.h"
#include "model/model_impl.h"
#include "train/autotune.h"
#include "train/timeline.h"
#include "train/deterministic_step.h"
#include "train/train_step.h"

namespace tnt {
namespace {


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
          "tnt::nn::convert_sync_batchnorm)",
          name.empty() ? type : name, micro_batch));
      return;
    }
  }
}

using train::Clock;

double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// The global sample count of a step when the user distributed by hand.
std::int64_t manual_global_size(const comm::ProcessGroup& group, std::int64_t local) {
  torch::Tensor n = torch::tensor({local});
  group.allreduce(n);
  return n.item<std::int64_t>();
}

// The learning-rate callbacks set the optimizer's rate each epoch; a
// compile-time schedule sets it every step and would silently win.
void check_no_lr_conflict(const CompileOptions& compiled,
                          const std::vector<callbacks::CallbackPtr>& list) {
  if (!compiled.schedule()) return;
  for (const auto& cb : list) {
    const bool plateau = std::dynamic_pointer_cast<callbacks::ReduceLROnPlateau>(cb) != nullptr;
    const bool scheduler =
        std::dynamic_pointer_cast<callbacks::LearningRateScheduler>(cb) != nullptr;
    TNT_CHECK(!plateau && !scheduler, "fit(): the model was compiled with a learning-rate "
              "schedule (CompileOptions().schedule(...)), which sets the rate every step and "
              "would silently override the ",
              plateau ? "ReduceLROnPlateau" : "LearningRateScheduler",
              " callback: use one of the two (compile without schedule, or drop the callback)");
  }
}

// A restored position must fit this run's data: the same global batch (the
// step counts global batches) and a step inside the epoch.
void check_resume(const TrainingPosition& resume, const data::DistributedDataset& dist,
                  std::int64_t steps_total) {
  TNT_CHECK(resume.global_batch_size == dist.global_batch_size(),
            "the backup to resume from was made with global batch size ",
            resume.global_batch_size, ", this run's is ", dist.global_batch_size(),
            ": resume with the same global batch size (any number of ranks), or delete the backup");
  TNT_CHECK(steps_total < 0 || resume.step <= steps_total, "the backup to resume from is at step ",
            resume.step, " of its epoch, but this run's epochs have ", steps_total,
            " steps: resume with the same dataset and steps_per_epoch, or delete the backup");
}

}  // namespace

FitOptions& FitOptions::validation_data(const data::Dataset& v) {
  validation_data_ = std::make_shared<data::Dataset>(v);
  return *this;
}

callbacks::History Model::fit(const data::Dataset& train, FitOptions options) {
  Impl& s = *impl_;
  s.require_compiled("fit()");
  TNT_CHECK(options.epochs() > options.initial_epoch(), "fit(): epochs (", options.epochs(),
            ") must be greater than initial_epoch (", options.initial_epoch(), ")");
  TNT_CHECK(options.validation_freq() >= 1, "validation_freq must be at least 1, got ",
            options.validation_freq());
  check_no_lr_conflict(*s.options, options.callbacks());
  const std::optional<std::int64_t> chunk = s.options->deterministic();
  TNT_CHECK(!chunk || options.distribute_dataset(), "fit(): deterministic training needs "
            "distribute_dataset(true): it gives each rank whole chunks of the global batch");
  TNT_CHECK(!chunk || !s.collective_layers, "fit(): deterministic training computes every chunk "
            "on its own, and the model has collective layers (SyncBatchNorm), whose statistics "
            "span the ranks: use BatchNorm in deterministic mode, or compile without "
            "deterministic(...)");
  data::DistributeOptions distribute;
  distribute.group(s.group).enabled(options.distribute_dataset());
  if (chunk) distribute.granularity(*chunk);
  if (options.micro_batch_size()) distribute.micro_batch_size(*options.micro_batch_size());
  const data::DistributedDataset dist = data::distribute(train, distribute);
  s.synchronize_state();
  std::optional<train::SingleThreadScope> one_thread;
  if (chunk) one_thread.emplace();
  if (s.config.autotune && !s.autotuner && !chunk) {
    const std::size_t configured =
        s.options->fusion_threshold_bytes().value_or(s.config.fusion_threshold_bytes);
    s.autotuner = std::make_shared<AutoTuner>(s.group,  // collective: checks the plan
                                              AutoTuneOptions::from_config(s.config, configured));
  }
  if (!s.config.timeline_path.empty() && !s.timeline) {
    s.timeline = std::make_unique<Timeline>(s.group, s.config.timeline_path);  // collective
  }
  Timeline* timeline = s.timeline.get();
  train::TrainStep step_unit(
      {[&s](const data::Element& e) { return s.forward(s.inputs_of(e)); },
       [&s](const data::Element& e) { return s.target_of(e); },
       [&s](const torch::Tensor& output, const torch::Tensor& target) {
         return s.options->loss()(output, target);
       },
       [&s](const torch::Tensor& output, const torch::Tensor& target, const torch::Tensor& loss,
            std::int64_t samples) { return s.state_of(output, target, loss, samples); }},
      s.trainable, *s.optimizer,
      {s.options->clip_norm(), s.options->clip_value(), s.options->schedule().fn, s.scaler});
  // With distribute_dataset(false) the dataset's batch is already this rank's.
  warn_small_batchnorm(*s.net, options.distribute_dataset() ? dist.global_batch_size() / s.group.size()
                                                   : dist.global_batch_size());

  const int k = s.options->aggregation_frequency();
  std::int64_t steps_total = dist.cardinality();
  if (options.steps_per_epoch()) {
    steps_total = steps_total < 0 ? *options.steps_per_epoch()
                                  : std::min(steps_total, *options.steps_per_epoch());
  }
  auto history = std::make_shared<callbacks::History>();
  std::vector<callbacks::CallbackPtr> list = options.callbacks();
  if (options.verbose() > 0) list.push_back(std::make_shared<callbacks::ProgbarLogger>(options.verbose()));
  list.push_back(history);
  callbacks::CallbackList cbs(list, this, {options.epochs(), steps_total, options.verbose()},
                              s.group.is_master());
  stop_training = false;
  s.resume.reset();
  cbs.train_begin();
  // A callback (BackupAndRestore) may have restored a position to continue from.
  std::optional<TrainingPosition> resume = std::exchange(s.resume, std::nullopt);
  if (resume) check_resume(*resume, dist, steps_total);
  // After train_begin: a callback's load() puts a sharded optimizer back in
  // full form and drops the engine. Deterministic mode sums the chunks'
  // gradients itself: no engine.
  dp::GradientSynchronizer* sync = chunk ? nullptr : &s.synchronizer();
  // After train_begin: a restored backup brings the model's seed and exponents.
  std::optional<train::DeterministicStep> deterministic_step;
  if (chunk) {
    std::vector<torch::Tensor> buffers;
    for (const auto& [name, b] : s.net->named_buffers()) buffers.push_back(b);
    if (!s.deterministic_seed) s.deterministic_seed = train::shared_seed(s.group);
    deterministic_step.emplace(step_unit.model(), s.trainable, std::move(buffers), *s.optimizer,
                               step_unit.rules(), s.group, *chunk, *s.deterministic_seed,
                               s.deterministic_exponents);
  }

  Logs logs, local_logs;
  for (std::int64_t epoch = resume ? resume->epoch : options.initial_epoch();
       epoch < options.epochs() && !stop_training; ++epoch) {
    cbs.epoch_begin(epoch);
    s.net->train(true);
    const std::size_t n_state = static_cast<std::size_t>(s.state_size());
    std::vector<double> global_state(n_state, 0.0), local_state(n_state, 0.0);
    std::vector<double> pending(n_state, 0.0);  // this rank, this accumulation cycle
    auto it = dist.iterate(epoch);
    std::int64_t first_step = 0;
    if (resume && resume->step > 0) {  // mid-epoch: the batches done are passed unread
      first_step = it.skip(resume->step);
      global_state = resume->state;
      logs = s.logs_of(global_state);
    }
    resume.reset();
    OverlapMeter overlap;
    for (std::int64_t step = first_step;; ++step) {
      if (stop_training || (options.steps_per_epoch() && step >= *options.steps_per_epoch())) break;
      const auto data_begin = Clock::now();
      std::optional<data::MicroBatch> mb = it.next();
      if (!mb) break;
      const auto data_end = Clock::now();
      cbs.train_batch_begin(step);
      const std::int64_t global =
          options.distribute_dataset() ? mb->global_size : manual_global_size(s.group, mb->local_size);
      // Accumulation cycles are k micro-steps; the last one of an epoch may
      // be shorter, and its gradients are averaged over its real length.
      const std::int64_t cycle_start = step - step % k;
      const std::int64_t cycle =
          steps_total > 0 ? std::min<std::int64_t>(k, steps_total - cycle_start) : k;
      const bool reduce = (step + 1) % k == 0 || (steps_total > 0 && step + 1 == steps_total);
      train::StepResult r;
      if (deterministic_step) {
        const std::uint64_t batch_key = (static_cast<std::uint64_t>(epoch) << 32) ^
                                        static_cast<std::uint64_t>(step);
        r = deterministic_step->run(*mb, batch_key, cycle, reduce, pending, s.optimizer_steps,
                                    data_begin, data_end);
      } else {
        // Asked every step: a callback's load() may have dropped the engine.
        // A new threshold only between cycles.
        sync = s.autotuner && step == cycle_start ? &s.retune() : &s.synchronizer();
        const double weight =
            static_cast<double>(mb->local_size) / static_cast<double>(global * cycle);
        r = step_unit.run(*mb, *sync, weight, reduce, pending, s.optimizer_steps, data_begin,
                          data_end, s.shards.get(), s.bucket_steps.get());
        train::record_step(timeline, overlap, *sync, reduce, r.times);
      }
      const torch::Tensor& step_state = r.global_state;
      const auto forward_begin = r.times.forward_begin;
      const auto step_end = r.times.step_end;
      if (!reduce) continue;
      if (s.autotuner) s.autotuner->record(seconds(step_end - forward_begin));
      train::accumulate(global_state, step_state);
      for (std::size_t i = 0; i < n_state; ++i) local_state[i] += pending[i];
      std::fill(pending.begin(), pending.end(), 0.0);
      logs = s.logs_of(global_state);
      local_logs = s.logs_of(local_state);
      s.position = {epoch, step + 1, global_state, dist.global_batch_size(), s.group.size()};
      // A callback that stops training here stops every rank at this step
      // when it decides from global logs (the default).
      cbs.train_batch_end(step, logs, local_logs);
    }
    if (overlap.total_s > 0) {
      log::info(fmt::format("epoch {}: {:.0f}% of the allreduce time was hidden behind backward "
                            "({:.3f} s of {:.3f} s)",
                            epoch + 1, 100.0 * overlap.fraction(), overlap.hidden_s,
                            overlap.total_s));
    }
    // Buffers (BatchNorm statistics) are local during the epoch; the
    // master's are shared so that every rank evaluates the same model.
    std::vector<torch::Tensor> buffers;
    for (const auto& [name, b] : s.net->named_buffers()) buffers.push_back(b);
    if (!buffers.empty()) dp::broadcast_tensors(s.group, buffers);

    if (options.validation_data() && (epoch + 1) % options.validation_freq() == 0) {
      EvaluateOptions eval;
      eval.distribute_dataset(options.distribute_validation_dataset());
      if (options.validation_micro_batch_size()) eval.micro_batch_size(*options.validation_micro_batch_size());
      for (const auto& [name, value] : evaluate(*options.validation_data(), eval)) {
        logs["val_" + name] = value;
        local_logs["val_" + name] = value;  // evaluation logs are global
      }
    }
    s.epochs_done = epoch + 1;
    s.position = {epoch + 1, 0, {}, dist.global_batch_size(), s.group.size()};
    cbs.epoch_end(epoch, logs, local_logs);
    // Callbacks decide from global values, but agree anyway: no rank may
    // leave the loop alone.
    torch::Tensor stop = torch::tensor({stop_training ? 1 : 0}, torch::kInt32);
    s.group.allreduce(stop, comm::ReduceOp::Max);
    stop_training = stop.item<int>() != 0;
  }
  cbs.train_end(logs, local_logs);
  if (timeline) timeline->write();
  return *history;
}

}  // namespace tnt
