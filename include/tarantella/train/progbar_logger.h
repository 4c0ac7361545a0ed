// The Keras progress bar as a callback; the engine adds one to fit() and
// evaluate() for verbose > 0 (train/progress_bar.h draws it).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

#include <tarantella/train/callback.h>

namespace tnt::callbacks {

/// The progress bar of fit() (added automatically for verbose > 0).
class ProgbarLogger : public Callback {
 public:
  /// `live`: redraw the bar in place (a terminal); unset: ask isatty().
  explicit ProgbarLogger(int verbose = 1, std::optional<bool> live = std::nullopt);
  ~ProgbarLogger() override;
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
  struct Bar;
  std::unique_ptr<Bar> bar_;
};

}  // namespace tnt::callbacks
