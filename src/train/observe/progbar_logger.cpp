#include <fmt/format.h>

#include <tarantella/train/progbar_logger.h>

#include "train/observe/progress_bar.h"

namespace tnt::callbacks {

struct ProgbarLogger::Bar {
  ::tnt::detail::ProgressBar bar;
};

ProgbarLogger::ProgbarLogger(int verbose, std::optional<bool> live)
    : verbose_(verbose), live_(live) {
  run_on_all_ranks = false;  // output belongs to the master rank (the engine may widen it)
}

ProgbarLogger::~ProgbarLogger() = default;

bool ProgbarLogger::wants_batch_logs(std::int64_t) const {
  return !in_test_ && bar_ && bar_->bar.due();
}

void ProgbarLogger::on_train_begin(const Logs&) { in_fit_ = true; }
void ProgbarLogger::on_train_end(const Logs&) { in_fit_ = false; }

void ProgbarLogger::on_epoch_begin(std::int64_t epoch, const Logs&) {
  if (verbose_ > 0) fmt::print("Epoch {}/{}\n", epoch + 1, params().epochs);
  bar_ = std::make_unique<Bar>(Bar{::tnt::detail::ProgressBar(params().steps, verbose_, true, stdout, live_, now_)});
}

void ProgbarLogger::on_train_batch_end(std::int64_t batch, const Logs& logs) {
  if (!bar_) return;
  // Empty logs: wants_batch_logs() said no; drawing now would drop them.
  if (logs.empty()) {
    bar_->bar.advance(batch + 1);
  } else {
    bar_->bar.update(batch + 1, logs);
  }
}

void ProgbarLogger::on_epoch_end(std::int64_t, const Logs& logs) {
  if (bar_) bar_->bar.finish(logs);
  bar_.reset();
}

void ProgbarLogger::on_test_begin(const Logs&) {
  in_test_ = true;
  if (in_fit_) return;
  bar_ = std::make_unique<Bar>(Bar{::tnt::detail::ProgressBar(params().steps, verbose_, true, stdout, live_, now_)});
}

void ProgbarLogger::on_test_batch_end(std::int64_t batch, const Logs&) {
  if (in_fit_) return;
  // Per-step values of an evaluation are this rank's partial sums: the bar
  // shows progress only, and the global result at the end.
  if (bar_) bar_->bar.update(batch + 1, {});
}

void ProgbarLogger::on_test_end(const Logs& logs) {
  in_test_ = false;
  if (in_fit_) return;
  if (bar_) bar_->bar.finish(logs);
  bar_.reset();
}

}  // namespace tnt::callbacks
