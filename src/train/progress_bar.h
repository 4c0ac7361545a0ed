// Private: the Keras-like progress display of fit/evaluate on the master
// rank. verbose 1: a bar redrawn in place
//   12/938 [>.............................] - ETA: 10s - loss: 0.5312 - accuracy: 0.8125
// ending in "938/938 [==============================] - 12s 13ms/step - loss: ...";
// verbose 2: only the final line of each epoch.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <map>
#include <string>

namespace tnt::detail {

class ProgressBar {
 public:
  /// `total` steps (<= 0 if unknown); prints only if `enabled`.
  ProgressBar(std::int64_t total, int verbose, bool enabled, std::FILE* out = stdout);
  void update(std::int64_t step_done, const std::map<std::string, double>& logs);
  void finish(const std::map<std::string, double>& logs);

 private:
  std::string bar(std::int64_t done) const;
  static std::string format_logs(const std::map<std::string, double>& logs);

  std::int64_t total_;
  int verbose_;
  bool enabled_;
  std::FILE* out_;
  std::int64_t done_ = 0;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_draw_;
};

}  // namespace tnt::detail
