#include <tarantella/train/callback.h>

namespace tnt::callbacks {

void History::on_train_begin(const Logs&) {}

void History::on_epoch_end(std::int64_t epoch, const Logs& logs) {
  epochs.push_back(epoch);
  for (const auto& [name, value] : logs) history[name].push_back(value);
}

}  // namespace tnt::callbacks
