#include <cmath>

#include <tarantella/callbacks/builtins.h>
#include <tarantella/train/training_host.h>
#include <tarantella/base/logging.h>

namespace tnt::callbacks {

void TerminateOnNaN::on_train_batch_end(std::int64_t batch, const Logs& logs) {
  auto it = logs.find("loss");
  if (it != logs.end() && !std::isfinite(it->second)) {
    log::error("batch " + std::to_string(batch) + ": invalid loss, terminating training");
    host()->request_stop();
  }
}

}  // namespace tnt::callbacks
