// Private: the Keras-like progress display of fit/evaluate on the master
// rank. verbose 1: a bar redrawn in place
//   12/938 [>.............................] - ETA: 10s - loss: 0.5312 - accuracy: 0.8125
// ending in "938/938 [==============================] - 12s 13ms/step - loss: ...";
// verbose 2: only the final line of each epoch.
//
// Redrawing in place needs a terminal. Written to a file or a pipe (a batch
// job's log), verbose 1 prints only the final bar line of each epoch, as
// Keras does: one line per epoch instead of ~40 carriage-return updates.
// Under the launcher every rank's stdout is a pipe, so the launcher says
// whether its own stdout is a terminal (TNT_STDOUT_IS_TERMINAL).
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <optional>
#include <string>

namespace tnt::detail {

class ProgressBar {
 public:
  using Clock = std::function<std::chrono::steady_clock::time_point()>;
  /// A live bar is redrawn at most this often: drawing reads the step's
  /// logs from the device (a host synchronisation), so it must not happen
  /// every step.
  static constexpr std::chrono::milliseconds kRedrawInterval{250};

  /// `total` steps (<= 0 if unknown); prints only if `enabled`. `live`:
  /// redraw in place; nullopt asks output_is_terminal(out). `now`: the
  /// clock (a test's fake one; default steady_clock).
  ProgressBar(std::int64_t total, int verbose, bool enabled, std::FILE* out = stdout,
              std::optional<bool> live = std::nullopt, Clock now = nullptr);
  /// Whether update() would draw now (a live bar, kRedrawInterval after
  /// the last drawing): only then does it need the logs.
  bool due() const;
  /// Records `step_done` and draws the bar with `logs` if due().
  void update(std::int64_t step_done, const std::map<std::string, double>& logs);
  /// Records `step_done` without drawing (a step whose logs were not read).
  void advance(std::int64_t step_done) { done_ = step_done; }
  void finish(const std::map<std::string, double>& logs);

  /// Whether `out` is a terminal (the launcher's TNT_STDOUT_IS_TERMINAL
  /// reaches the bar as `live`, through EngineOptions).
  static bool output_is_terminal(std::FILE* out);

 private:
  std::string bar(std::int64_t done) const;
  static std::string format_logs(const std::map<std::string, double>& logs);

  std::int64_t total_;
  int verbose_;
  bool enabled_;
  bool live_;
  std::FILE* out_;
  Clock now_;
  std::int64_t done_ = 0;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_draw_;
};

}  // namespace tnt::detail
