// Private: "did the monitored value improve?", shared by EarlyStopping,
// ReduceLROnPlateau and ModelCheckpoint so they agree on Keras's semantics.
#pragma once

#include <cmath>
#include <limits>
#include <string>

#include <tarantella/callbacks/builtins.h>
#include <tarantella/base/error.h>

namespace tnt::callbacks::detail {

inline bool maximize(Mode mode, const std::string& monitor) {
  if (mode == Mode::Auto) return monitor.find("acc") != std::string::npos;
  return mode == Mode::Max;
}

inline double worst(bool max) {
  return max ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
}

inline bool improved(bool max, double current, double best, double min_delta) {
  return max ? current - min_delta > best : current + min_delta < best;
}

/// The monitored value; throws naming the key and what the logs hold.
inline double monitored(const Logs& logs, const std::string& key, const char* who) {
  auto it = logs.find(key);
  if (it == logs.end()) {
    std::string have;
    for (const auto& [k, v] : logs) have += (have.empty() ? "" : ", ") + k;
    TNT_CHECK(false, who, " monitors '", key, "', which is not in the logs (", have,
              "): pass validation_data for val_ values or monitor one of those");
  }
  return it->second;
}

}  // namespace tnt::callbacks::detail
