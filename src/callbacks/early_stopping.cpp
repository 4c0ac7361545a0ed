#include <tarantella/callbacks/builtins.h>
#include <tarantella/train/training_host.h>
#include <tarantella/base/logging.h>

#include "callbacks/monitor.h"

namespace tnt::callbacks {

EarlyStopping::EarlyStopping(EarlyStoppingOptions options) : o_(std::move(options)) {
  TNT_CHECK(o_.patience() >= 0, "EarlyStopping patience must be >= 0, got ", o_.patience());
}

void EarlyStopping::on_train_begin(const Logs&) {
  wait_ = 0;
  stopped_epoch_ = 0;
  best_weights_.clear();
  const bool max = detail::maximize(o_.mode(), o_.monitor());
  best_ = o_.baseline() ? *o_.baseline() : detail::worst(max);
}

void EarlyStopping::on_epoch_end(std::int64_t epoch, const Logs& logs) {
  const bool max = detail::maximize(o_.mode(), o_.monitor());
  const auto value = detail::monitored(logs, o_.monitor(), "EarlyStopping", params());
  if (!value) return;  // an epoch without validation
  const double current = *value;
  ++wait_;
  if (detail::improved(max, current, best_, o_.min_delta())) {
    best_ = current;
    wait_ = 0;
    if (o_.restore_best_weights()) {
      // In host memory: a second copy of the weights on the GPU would take
      // room from training (one wait per improved epoch).
      best_weights_ = host()->get_weights_on_host();
    }
    return;
  }
  // Keras's count: patience epochs without improvement, then stop.
  if (wait_ >= o_.patience() && epoch > 0) {
    stopped_epoch_ = epoch;
    host()->request_stop();
  }
}

void EarlyStopping::on_train_end(const Logs&) {
  if (stopped_epoch_ > 0) {
    log::info("EarlyStopping: stopped after epoch " + std::to_string(stopped_epoch_ + 1));
  }
  // Collective (set_weights broadcasts): every rank runs this callback.
  if (o_.restore_best_weights() && !best_weights_.empty()) host()->set_weights(best_weights_);
}

}  // namespace tnt::callbacks
