// RemoteMonitor: one bounded POST per epoch on the ranks that send; every
// failure is a warning, so a dashboard that is down never stops training.
#include <fmt/format.h>
#include <tarantella/callbacks/remote_monitor.h>
#include <tarantella/base/error.h>
#include <tarantella/base/logging.h>
#include <tarantella/runtime/runtime.h>

#include "callbacks/remote_monitor_http.h"
#include "callbacks/remote_monitor_request.h"

namespace tnt::callbacks {

RemoteMonitor::RemoteMonitor(RemoteMonitorOptions options) : options_(std::move(options)) {
  TNT_CHECK(options_.timeout_seconds() > 0, "RemoteMonitor: timeout_seconds ",
            options_.timeout_seconds(), " must be positive: a request needs a bound");
  run_on_all_ranks = false;
}

void RemoteMonitor::on_epoch_end(std::int64_t epoch, const Logs& logs) {
  // The dispatcher may already skip other ranks; checked here as well.
  if (!run_on_all_ranks && !master()) return;
  const detail::HttpRequest request = detail::epoch_request(options_, epoch, logs);
  const detail::HttpResult result = detail::http_post(request, options_.timeout_seconds());
  if (!result.ok) {
    log::warning(fmt::format(
        "RemoteMonitor: could not send the logs of epoch {} to {}: {}; training goes on", epoch,
        request.url, result.error));
  }
}

}  // namespace tnt::callbacks
