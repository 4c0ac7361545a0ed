// LearningRateScheduler and ReduceLROnPlateau: both change the optimizer's
// rate on every rank, from global logs, so ranks stay identical.
#include <fmt/format.h>

#include <tarantella/callbacks/builtins.h>
#include <tarantella/train/training_host.h>
#include <tarantella/base/logging.h>

#include "callbacks/monitor.h"

namespace tnt::callbacks {

LearningRateScheduler::LearningRateScheduler(Schedule schedule, int verbose)
    : schedule_(std::move(schedule)), verbose_(verbose) {
  TNT_CHECK(static_cast<bool>(schedule_), "LearningRateScheduler needs a schedule function");
}

void LearningRateScheduler::on_epoch_begin(std::int64_t epoch, const Logs&) {
  const double lr = schedule_(epoch, host()->learning_rate());
  TNT_CHECK(std::isfinite(lr) && lr >= 0, "LearningRateScheduler: the schedule returned ", lr,
            " for epoch ", epoch, ": return a finite, non-negative rate");
  host()->set_learning_rate(lr);
  if (verbose_ > 0) log::info(fmt::format("epoch {}: learning rate {}", epoch + 1, lr));
}

void LearningRateScheduler::on_epoch_end(std::int64_t, const Logs&) {}

ReduceLROnPlateau::ReduceLROnPlateau(ReduceLROnPlateauOptions options) : o_(std::move(options)) {
  TNT_CHECK(o_.factor() > 0 && o_.factor() < 1, "ReduceLROnPlateau factor must be in (0, 1), got ",
            o_.factor());
}

void ReduceLROnPlateau::on_train_begin(const Logs&) {
  wait_ = 0;
  cooldown_left_ = 0;
  best_ = detail::worst(detail::maximize(o_.mode(), o_.monitor()));
}

void ReduceLROnPlateau::on_epoch_end(std::int64_t epoch, const Logs& logs) {
  const bool max = detail::maximize(o_.mode(), o_.monitor());
  const auto value = detail::monitored(logs, o_.monitor(), "ReduceLROnPlateau", params());
  if (!value) return;  // an epoch without validation
  const double current = *value;
  if (cooldown_left_ > 0) {
    --cooldown_left_;
    wait_ = 0;
  }
  if (detail::improved(max, current, best_, o_.min_delta())) {
    best_ = current;
    wait_ = 0;
    return;
  }
  if (cooldown_left_ > 0 || ++wait_ < o_.patience()) return;
  const double old_lr = host()->learning_rate();
  const double new_lr = std::max(old_lr * o_.factor(), o_.min_lr());
  if (new_lr < old_lr) {
    host()->set_learning_rate(new_lr);
    log::info(fmt::format("epoch {}: ReduceLROnPlateau lowers the learning rate to {}", epoch + 1,
                          new_lr));
  }
  cooldown_left_ = o_.cooldown();
  wait_ = 0;
}

}  // namespace tnt::callbacks
