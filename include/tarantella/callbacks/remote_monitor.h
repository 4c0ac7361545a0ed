// The RemoteMonitor callback, as Keras's: at the end of every epoch, an HTTP
// POST of the epoch's logs (and "epoch") to a server, e.g. a live dashboard.
// Only the master rank sends (global values) unless run_on_all_ranks is set.
// A server that cannot be reached, is slow or answers with an error costs a
// warning (tnt::log::warning) and at most the timeout, never the training.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include <tarantella/base/arg.h>
#include <tarantella/train/callback.h>

namespace tnt::callbacks {

/// Options of RemoteMonitor, with Keras's defaults.
///
/// Example:
///   tnt::callbacks::RemoteMonitorOptions().root("http://dashboard:8080").send_as_json(true)
struct RemoteMonitorOptions {
  /// Scheme, host and port of the server.
  TNT_ARG(std::string, root) = "http://localhost:9000";
  /// Path on the server the logs are posted to.
  TNT_ARG(std::string, path) = "/publish/epoch/end/";
  /// Form field holding the JSON text when send_as_json is false.
  TNT_ARG(std::string, field) = "data";
 public:
  /// Extra HTTP headers, name -> value.
  using Headers = std::map<std::string, std::string>;
  TNT_ARG(Headers, headers);
  /// true: the body is the JSON object (application/json); false (Keras's
  /// default): a form with one field `field` = the JSON text
  /// (application/x-www-form-urlencoded).
  TNT_ARG(bool, send_as_json) = false;
  /// Upper bound in seconds on one request, connection included.
  TNT_ARG(double, timeout_seconds) = 5.0;
};

/// The fields of RemoteMonitorOptions, each once (see fields() in builtins.h).
template <typename Visit>
void fields(RemoteMonitorOptions& o, Visit&& v) {
  v("root", o.root());
  v("path", o.path());
  v("field", o.field());
  v("headers", o.headers());
  v("send_as_json", o.send_as_json());
  v("timeout_seconds", o.timeout_seconds());
}

/// Posts {"epoch": e, "loss": ..., "<metric>": ..., "val_loss": ...} at the
/// end of every epoch. Non-finite values are sent as JSON null.
///
/// Example:
///   auto monitor = std::make_shared<tnt::callbacks::RemoteMonitor>(
///       tnt::callbacks::RemoteMonitorOptions().send_as_json(true));
///   model.fit(train, tnt::FitOptions().epochs(5).callbacks({monitor}));
class RemoteMonitor : public Callback {
 public:
  bool wants_batch_logs(std::int64_t) const override { return false; }
  /// Throws tnt::Error for a timeout that is not positive.
  explicit RemoteMonitor(RemoteMonitorOptions options = RemoteMonitorOptions());

  void on_epoch_end(std::int64_t epoch, const Logs& logs) override;

  const RemoteMonitorOptions& options() const { return options_; }

 private:
  RemoteMonitorOptions options_;
};

}  // namespace tnt::callbacks
