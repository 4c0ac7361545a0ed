// Private: one HTTP POST with libcurl, bounded in time, that reports failure
// as a value instead of throwing: RemoteMonitor turns it into a warning.
#pragma once

#include <string>

#include "callbacks/remote_monitor_request.h"

namespace tnt::callbacks::detail {

struct HttpResult {
  bool ok = false;
  long status = 0;    ///< the HTTP status, 0 when no answer came
  std::string error;  ///< why it failed, empty when ok
};

/// Sends `request` as a POST. Gives up after `timeout_seconds` (connection
/// included). ok only for a 2xx answer.
HttpResult http_post(const HttpRequest& request, double timeout_seconds);

}  // namespace tnt::callbacks::detail
