// The Keras progress bar as a callback; the engine adds one to fit() and
// evaluate() for verbose > 0 (train/observe/progress_bar.h draws it).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>

#include <tarantella/base/arg.h>
#include <tarantella/train/callback.h>

namespace tnt::callbacks {

/// Options of ProgbarLogger.
struct ProgbarLoggerOptions {
  /// 1: a bar per epoch; 2: one line per epoch.
  TNT_ARG(int, verbose) = 1;
  /// Redraw the bar in place (a terminal); unset: ask isatty().
  TNT_ARG(std::optional<bool>, live);
};

/// The fields of ProgbarLoggerOptions, each once (see fields() in builtins.h).
template <typename Visit>
void fields(ProgbarLoggerOptions& o, Visit&& v) {
  v("verbose", o.verbose());
  v("live", o.live());
}

/// The progress bar of fit() (added automatically for verbose > 0).
class ProgbarLogger : public Callback {
 public:
  /// `live`: redraw the bar in place (a terminal); unset: ask isatty().
  explicit ProgbarLogger(int verbose = ProgbarLoggerOptions().verbose(),
                         std::optional<bool> live = ProgbarLoggerOptions().live());
  explicit ProgbarLogger(const ProgbarLoggerOptions& options)
      : ProgbarLogger(options.verbose(), options.live()) {}
  ~ProgbarLogger() override;
  /// The clock the bar reads (a test's fake clock; default steady_clock).
  void set_clock(std::function<std::chrono::steady_clock::time_point()> now) {
    now_ = std::move(now);
  }
  /// Only when a live bar is redrawn (at most 4 times a second): reading
  /// the logs is a host synchronisation.
  bool wants_batch_logs(std::int64_t batch) const override;
  void on_train_begin(const Logs& logs) override;
  void on_train_end(const Logs& logs) override;
  void on_epoch_begin(std::int64_t epoch, const Logs& logs) override;
  void on_train_batch_end(std::int64_t batch, const Logs& logs) override;
  void on_epoch_end(std::int64_t epoch, const Logs& logs) override;
  /// evaluate() shows its progress through the same bar; fit()'s
  /// validation does not (its results end the epoch's line), as in Keras.
  void on_test_begin(const Logs& logs) override;
  void on_test_batch_end(std::int64_t batch, const Logs& logs) override;
  void on_test_end(const Logs& logs) override;

 private:
  int verbose_;
  std::optional<bool> live_;
  bool in_fit_ = false;
  bool in_test_ = false;
  std::function<std::chrono::steady_clock::time_point()> now_;
  struct Bar;
  std::unique_ptr<Bar> bar_;
};

}  // namespace tnt::callbacks
