// The epoch loop of fit around the training step of
// train/step/train_step.h (forward, armed backward, summed gradients, clip,
// learning rate, optimizer): distribution of the dataset over the engine's
// group, accumulation cycles, auto-tuning between cycles, the timeline and
// overlap meter, the straggler report (train/observe/straggler_monitor.h), callbacks
// with global and local logs, BatchNorm buffers
// shared after each epoch, validation, and the stop vote.
#include "train/loop/fit_loop.h"

#include <algorithm>
#include <utility>

#include <fmt/format.h>
#include <torch/torch.h>

#include <tarantella/base/error.h>
#include <tarantella/base/logging.h>
#include <tarantella/data/dataset.h>
#include <tarantella/dp/state_sync.h>
#include <tarantella/train/progbar_logger.h>

#include "train/step/autotune.h"
#include "stages/layout.h"
#include "stages/schedule.h"
#include "train/loop/evaluate_loop.h"
#include "train/loop/fit_checks.h"
#include "train/observe/host_reads.h"

namespace tnt::train {
namespace {

bool sets_learning_rate(const std::vector<callbacks::CallbackPtr>& list) {
  return std::any_of(list.begin(), list.end(), [](const callbacks::CallbackPtr& cb) {
    return cb->sets_learning_rate() != nullptr;
  });
}

// The straggler report's cohorts for a pipelined model of `ranks` ranks:
// each rank's stage (the layout's rule), named "stage 1 of 2".
StragglerCohorts stage_cohorts(int ranks, const stages::StageLayout& mine) {
  StragglerCohorts c;
  for (int r = 0; r < ranks; ++r) c.of_rank.push_back(stages::stage_layout(ranks, r, mine.stages).stage);
  for (int s = 0; s < mine.stages; ++s) c.names.push_back(fmt::format("stage {} of {}", s, mine.stages));
  return c;
}

}  // namespace

FitLoop::FitLoop(LoopContext context, const data::Dataset& train, const FitOptions& options,
                 Driver driver)
    : c_(std::move(context)), train_(train), options_(options), driver_(driver), skipped_(train) {}

FitLoop::~FitLoop() = default;

callbacks::History FitLoop::run() {
  begin();
  for (std::int64_t epoch = first_epoch(); epoch < options_.epochs(); ++epoch) {
    if (!run_epoch(epoch)) break;
  }
  end();
  return *history_;
}

void FitLoop::begin() {
  const CompileOptions& compiled = c_.compiled;
  check_fit_options(options_, compiled, c_.collective_layers);
  const std::optional<std::int64_t> chunk = compiled.deterministic();
  TNT_CHECK(!chunk || !skipped_.may_skip(),
            "fit(): deterministic mode cannot skip bad samples (its chunks of the global batch ",
            "are fixed): read the images with OnBadSample::raise (the default) after removing ",
            "the bad files, or compile without deterministic");
  dist_.emplace(data::distribute(train_, distribute_options(c_.group, options_, chunk, c_.device)));
  c_.synchronize_state();
  // A replica's share of a full global batch fills every micro-batch.
  if (c_.stage != nullptr && options_.distribute_dataset()) {
    stages::check_micro_batches(c_.micro_batches, dist_->global_batch_size() / c_.group.size());
  }
  if (chunk) {
    one_thread_.emplace();
    deterministic_kernels_.emplace(c_.device);
  }
  if (c_.options.autotune() && !chunk) c_.gradients.start_autotuner();
  // With distribute_dataset(false) the dataset's batch is already this rank's.
  warn_small_batchnorm(c_.net, options_.distribute_dataset()
                                     ? dist_->global_batch_size() / c_.group.size()
                                     : dist_->global_batch_size());
  steps_total_ = steps_per_epoch(dist_->cardinality(), options_.steps_per_epoch());
  history_ = std::make_shared<callbacks::History>();
  std::vector<callbacks::CallbackPtr> list = options_.callbacks();
  if (options_.verbose() > 0) list.push_back(progress_bar(c_.options, options_.verbose()));
  list.push_back(history_);
  callbacks_.emplace(list, driver_,
                     callbacks::Params{options_.epochs(), steps_total_, options_.verbose(),
                                       options_.validation_data() ? options_.validation_freq() : 0},
                     c_.everyone.is_master());
  c_.position.take_resume();
  callbacks_->train_begin();
  // A callback (BackupAndRestore) may have given a position to continue from.
  resume_ = c_.position.take_resume();
  if (resume_) check_resume(*resume_, dist_->global_batch_size(), steps_total_);
  // After train_begin: a restored backup brings deterministic mode's seed
  // and exponents.
  step_ = make_step(c_.step_context());
  // One rank cannot straggle behind others. With stages: over the whole
  // model, each rank against its stage's replicas (none with 1 replica).
  if (c_.options.straggler_window() > 0 && c_.group.size() > 1) {
    if (c_.stage != nullptr) {
      stragglers_.emplace(c_.everyone, c_.options.straggler_window(), c_.timeline,
                          StragglerRules(), stage_cohorts(c_.everyone.size(), c_.stage->layout()));
    } else {
      stragglers_.emplace(c_.group, c_.options.straggler_window(), c_.timeline);
    }
  }
}

std::int64_t FitLoop::first_epoch() const {
  return resume_ ? resume_->epoch : options_.initial_epoch();
}

bool FitLoop::run_epoch(std::int64_t epoch) {
  if (driver_.host->stop_requested()) return false;
  callbacks_->epoch_begin(epoch);
  c_.net.train(true);
  const auto on_device = torch::TensorOptions().dtype(torch::kFloat64).device(c_.device);
  global_state_ = torch::zeros({c_.metrics.size()}, on_device);
  local_state_ = torch::zeros({c_.metrics.size()}, on_device);
  logs_stale_ = true;
  const std::int64_t data_epoch = std::max(epoch, c_.counters.data_epochs);
  auto it = dist_->iterate(data_epoch);
  ahead_.clear();
  epoch_end_.reset();
  std::int64_t step = 0;
  if (resume_ && resume_->step > 0) {  // mid-epoch: the batches done are passed unread
    step = it.skip(resume_->step);
    global_state_ = torch::tensor(resume_->state, torch::kFloat64).to(c_.device);
  }
  resume_.reset();
  step_->take_overlap();
  skipped_.start();
  // The epoch's boundary (validation, epoch callbacks, the stop vote) is
  // not a step's time.
  if (stragglers_) stragglers_->start(Clock::now());
  while (run_step(it, epoch, data_epoch, step)) ++step;
  // Counted once the epoch is done: one interrupted and run again (from
  // epochs_done) reads its own order again.
  c_.counters.data_epochs = data_epoch + 1;
  end_epoch(epoch);
  return !stop_vote();
}

bool FitLoop::run_step(data::DistributedDataset::Iterator& it, std::int64_t epoch,
                       std::int64_t data_epoch, std::int64_t step) {
  if (driver_.host->stop_requested()) return false;
  if (options_.steps_per_epoch() && step >= *options_.steps_per_epoch()) return false;
  const auto data_begin = Clock::now();
  const std::int64_t steps_total = cycle_steps_total(it, step);
  std::optional<data::MicroBatch> mb = next_batch(it);
  const auto data_end = Clock::now();
  if (!mb) return false;
  // Counted when the user distributed by hand, or when bad samples may have
  // been dropped from the global batch (then mb->global_size is nominal):
  // an allreduce, whose time is wait for the straggler report.
  const std::int64_t global = options_.distribute_dataset() && !skipped_.may_skip()
                                  ? mb->global_size
                                  : global_sample_count(c_.group, mb->local_size);
  const auto counted = Clock::now();
  if (global == 0) return skip_empty_step(step);  // on every rank alike
  TNT_CHECK(!mb->tensors.empty(), "fit(): rank ", c_.group.rank(),
            " lost every sample of its first batch as bad, so the shapes of an empty batch are "
            "unknown: remove the bad files, or let tarantella distribute the dataset");
  callbacks_->train_batch_begin(step);
  const CyclePoint cycle = cycle_at(step, c_.compiled.aggregation_frequency(), steps_total);
  const StepResult r = step_->run({*mb, data_epoch, step, cycle, global, data_begin, data_end});
  // Every micro-step counts, on every rank alike (a window ends on the same
  // step everywhere); the figures reach callbacks after this step's batch
  // end. The callbacks' time (this batch's end, the next one's begin) is
  // measured as the rest of the cycle up to the next step's end.
  std::optional<StepTimesWindow> window;
  if (stragglers_) {
    window = stragglers_->record({data_end - data_begin, r.times.compute(),
                                  r.times.waited + (counted - data_end), Clock::now()});
  }
  if (cycle.reduce) end_batch(epoch, step, r);
  if (window) callbacks_->step_times(*window);
  return true;
}

std::optional<data::MicroBatch> FitLoop::next_batch(data::DistributedDataset::Iterator& it) {
  if (ahead_.empty()) return it.next();
  data::MicroBatch mb = std::move(ahead_.front());
  ahead_.pop_front();
  return mb;
}

std::int64_t FitLoop::cycle_steps_total(data::DistributedDataset::Iterator& it,
                                        std::int64_t step) {
  const int k = c_.compiled.aggregation_frequency();
  if (k > 1 && dist_->cardinality() == data::kUnknownCardinality && step % k == 0 &&
      !epoch_end_) {
    // This cycle's batches, each rank alike (the same batches end the data);
    // no more than steps_per_epoch leaves.
    const std::int64_t wanted =
        steps_total_ > 0 ? std::min<std::int64_t>(k, steps_total_ - step) : k;
    while (static_cast<std::int64_t>(ahead_.size()) < wanted && !epoch_end_) {
      std::optional<data::MicroBatch> mb = it.next();
      if (mb) {
        ahead_.push_back(std::move(*mb));
      } else {
        epoch_end_ = step + static_cast<std::int64_t>(ahead_.size());
      }
    }
  }
  if (!epoch_end_) return steps_total_;
  return steps_total_ > 0 ? std::min(steps_total_, *epoch_end_) : *epoch_end_;
}

// The state stays on the device; the logs are read from it only for a
// callback that asks at this batch (the progress bar when it draws), and
// the position's copy only when a backup is written.
void FitLoop::end_batch(std::int64_t epoch, std::int64_t step, const StepResult& r) {
  accumulate(global_state_, r.global_state);
  accumulate(local_state_, r.local_state);
  logs_stale_ = true;
  c_.position.set({epoch, step + 1, {}, dist_->global_batch_size(), c_.group.size()},
                  global_state_.clone());
  // A callback that stops training here stops every rank at this step
  // when it decides from global logs (the default).
  callbacks_->train_batch_end(step, [this](bool global) -> const Logs& {
    refresh_logs();
    return global ? logs_ : local_logs_;
  });
}

void FitLoop::refresh_logs() {
  if (!logs_stale_) return;
  const std::vector<double> both = read_state(torch::cat({global_state_, local_state_}));
  const auto half = static_cast<std::ptrdiff_t>(both.size() / 2);
  logs_ = c_.metrics.logs({both.begin(), both.begin() + half});
  local_logs_ = c_.metrics.logs({both.begin() + half, both.end()});
  logs_stale_ = false;
}

// A global batch whose samples were all skipped as bad: no step, no
// callbacks (the serial run has no batch there either).
bool FitLoop::skip_empty_step(std::int64_t step) {
  TNT_CHECK(c_.compiled.aggregation_frequency() == 1, "fit(): every sample of global batch ",
            step, " was skipped as bad while gradients are accumulated over ",
            c_.compiled.aggregation_frequency(),
            " steps: remove the bad files, or use aggregation_frequency 1");
  return true;
}

void FitLoop::end_epoch(std::int64_t epoch) {
  refresh_logs();  // the epoch's one read of its logs
  const OverlapMeter overlap = step_->take_overlap();
  if (overlap.total_s > 0) {
    log::info(fmt::format("epoch {}: {:.0f}% of the allreduce time was hidden behind backward "
                          "({:.3f} s of {:.3f} s)",
                          epoch + 1, 100.0 * overlap.fraction(), overlap.hidden_s,
                          overlap.total_s));
  }
  // Buffers (BatchNorm statistics) are local during the epoch; the
  // master's are shared so that every rank evaluates the same model.
  std::vector<torch::Tensor> buffers;
  for (const auto& [name, b] : c_.net.named_buffers()) buffers.push_back(b);
  if (!buffers.empty()) dp::broadcast_tensors(c_.group, buffers);
  if (skipped_.may_skip()) {  // before validation, which may read the same source
    const auto n =
        static_cast<double>(skipped_.report(c_.group, fmt::format("epoch {}", epoch + 1)));
    logs_["skipped_samples"] = n;  // summed over ranks: the same on every rank
    local_logs_["skipped_samples"] = n;
  }
  if (options_.validation_data() && (epoch + 1) % options_.validation_freq() == 0) {
    EvaluateOptions eval;
    eval.distribute_dataset(options_.distribute_validation_dataset())
        .steps(options_.validation_steps());
    if (options_.validation_micro_batch_size()) {
      eval.micro_batch_size(*options_.validation_micro_batch_size());
    }
    for (const auto& [name, value] : validate(c_, *options_.validation_data(), eval, *callbacks_)) {
      logs_["val_" + name] = value;
      local_logs_["val_" + name] = value;  // evaluation logs are global
    }
  }
  // As Keras: with a callback that sets the rate, the logs (and so the
  // History and CSVLogger) carry the epoch's rate as "lr", read before
  // ReduceLROnPlateau lowers it for the next epoch.
  if (sets_learning_rate(options_.callbacks())) {
    const double lr = driver_.host->learning_rate();
    logs_["lr"] = lr;
    local_logs_["lr"] = lr;
  }
  c_.counters.epochs_done = epoch + 1;
  c_.position.set({epoch + 1, 0, {}, dist_->global_batch_size(), c_.group.size()});
  callbacks_->epoch_end(epoch, logs_, local_logs_);
}

// Callbacks decide from global values, but agree anyway: no rank may leave
// the loop alone.
bool FitLoop::stop_vote() {
  torch::Tensor stop = torch::tensor({driver_.host->stop_requested() ? 1 : 0}, torch::kInt32);
  c_.everyone.allreduce(stop, comm::ReduceOp::Max);
  const bool stopped = stop.item<int>() != 0;  // host-only: a host tensor
  if (stopped) driver_.host->request_stop();
  return stopped;
}

void FitLoop::end() {
  callbacks_->train_end(logs_, local_logs_);
  // A backup or checkpoint still being written in the background is on
  // disk before fit() returns.
  driver_.host->wait_for_backups();
  driver_.host->wait_for_checkpoints();
  if (c_.timeline != nullptr) c_.timeline->write();
}

callbacks::History fit(LoopContext context, const data::Dataset& train, const FitOptions& options,
                       Driver driver) {
  return FitLoop(std::move(context), train, options, driver).run();
}

}  // namespace tnt::train
