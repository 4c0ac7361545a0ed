// Private: what RemoteMonitor sends for one epoch, built without any network
// so that it can be tested on its own. Matches Keras's RemoteMonitor: the
// payload is {"epoch": e, <log name>: <value>, ...}; with send_as_json it is
// the body, otherwise it is the JSON text in one form field.
#pragma once

#include <tarantella/train/callback.h>
#include <tarantella/callbacks/remote_monitor.h>

#include <cstdint>
#include <string>
#include <vector>

namespace tnt::callbacks::detail {

struct HttpRequest {
  std::string url;
  std::string body;
  std::vector<std::string> headers;  ///< "Name: value" lines
};

/// {"epoch": epoch, ...logs} as JSON text; non-finite values become null.
std::string epoch_payload(std::int64_t epoch, const Logs& logs);

/// `text` percent-encoded for an application/x-www-form-urlencoded body.
std::string form_encode(const std::string& text);

/// The POST of one epoch: root + path, the body in the chosen encoding, the
/// user's headers plus a Content-Type unless the user gave one.
HttpRequest epoch_request(const RemoteMonitorOptions& options, std::int64_t epoch,
                          const Logs& logs);

}  // namespace tnt::callbacks::detail
