// The RemoteMonitor callback, as Keras's: at the end of every epoch, an HTTP
// POST of the epoch's logs (and "epoch") to a server, e.g. a live dashboard.
// Only the master rank sends (global values) unless run_on_all_ranks is set.
// A server that cannot be reached, is slow or answers with an error costs a
// warning (tnt::log::warning) and at most the timeout, never the training.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include <tarantella/callbacks/callback.h>

namespace tnt::callbacks {

/// Options of RemoteMonitor, with Keras's defaults.
///
/// Example:
///   tnt::callbacks::RemoteMonitorOptions().root("http://dashboard:8080").send_as_json(true)
struct RemoteMonitorOptions {
  /// Scheme, host and port of the server.
  RemoteMonitorOptions& root(std::string v) { root_ = std::move(v); return *this; }
  /// Path on the server the logs are posted to.
  RemoteMonitorOptions& path(std::string v) { path_ = std::move(v); return *this; }
  /// Form field holding the JSON text when send_as_json is false.
  RemoteMonitorOptions& field(std::string v) { field_ = std::move(v); return *this; }
  /// Extra HTTP headers, name -> value.
  RemoteMonitorOptions& headers(std::map<std::string, std::string> v) {
    headers_ = std::move(v);
    return *this;
  }
  /// true: the body is the JSON object (application/json); false (Keras's
  /// default): a form with one field `field` = the JSON text
  /// (application/x-www-form-urlencoded).
  RemoteMonitorOptions& send_as_json(bool v) { send_as_json_ = v; return *this; }
  /// Upper bound in seconds on one request, connection included.
  RemoteMonitorOptions& timeout_seconds(double v) { timeout_seconds_ = v; return *this; }

  std::string root_ = "http://localhost:9000";
  std::string path_ = "/publish/epoch/end/";
  std::string field_ = "data";
  std::map<std::string, std::string> headers_;
  bool send_as_json_ = false;
  double timeout_seconds_ = 5.0;
};

/// Posts {"epoch": e, "loss": ..., "<metric>": ..., "val_loss": ...} at the
/// end of every epoch. Non-finite values are sent as JSON null.
///
/// Example:
///   auto monitor = std::make_shared<tnt::callbacks::RemoteMonitor>(
///       tnt::callbacks::RemoteMonitorOptions().send_as_json(true));
///   model.fit(train, tnt::FitOptions().epochs(5).callbacks({monitor}));
class RemoteMonitor : public Callback {
 public:
  /// Throws tnt::Error for a timeout that is not positive.
  explicit RemoteMonitor(RemoteMonitorOptions options = RemoteMonitorOptions());

  void on_epoch_end(std::int64_t epoch, const Logs& logs) override;

  const RemoteMonitorOptions& options() const { return options_; }

 private:
  RemoteMonitorOptions options_;
};

}  // namespace tnt::callbacks
