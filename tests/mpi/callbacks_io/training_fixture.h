// What the multi-rank callback tests share: a tiny classification problem
// (50 samples in batches of 8: six full batches and a short one of 2, fewer
// samples than 3 ranks), a one-layer model, a callback that records the logs
// it is given, and a temporary folder that every rank agrees on.
#pragma once

#include <tarantella/tarantella.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace tnt_test {

constexpr std::int64_t kSamples = 50;
constexpr std::int64_t kBatch = 8;
constexpr std::int64_t kStepsPerEpoch = 7;

tnt::data::Dataset train_set();
tnt::data::Dataset validation_set();
/// A Linear(6, 4) classifier, compiled with SGD, cross-entropy and accuracy.
tnt::Model make_model();

/// Records every epoch's and training batch's logs, in call order.
struct LogRecorder : tnt::callbacks::Callback {
  void on_train_batch_end(std::int64_t batch, const tnt::callbacks::Logs& logs) override;
  void on_epoch_end(std::int64_t epoch, const tnt::callbacks::Logs& logs) override;
  std::vector<tnt::callbacks::Logs> batch_logs;
  std::vector<std::pair<std::int64_t, tnt::callbacks::Logs>> epoch_logs;
};

/// A fresh, empty folder under the temporary directory with a name taken
/// from the master's process id, the same on every rank. Collective.
std::filesystem::path shared_temp_dir(const std::string& name);
/// Removes `dir` on the master after every rank is done with it. Collective.
void remove_shared_dir(const std::filesystem::path& dir);

}  // namespace tnt_test
