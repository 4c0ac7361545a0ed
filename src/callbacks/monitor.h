// Private: "did the monitored value improve?", shared by EarlyStopping,
// ReduceLROnPlateau and ModelCheckpoint so they agree on Keras's semantics.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
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

/// The monitored value; throws naming the key and what the logs hold. None
/// for a val_ value at an epoch that did not validate (validation_freq > 1):
/// the callback skips that epoch, as Keras's do.
inline std::optional<double> monitored(const Logs& logs, const std::string& key, const char* who,
                                       const Params& params) {
  auto it = logs.find(key);
  const bool validated = std::any_of(logs.begin(), logs.end(), [](const auto& entry) {
    return entry.first.rfind("val_", 0) == 0;
  });
  if (it == logs.end() && params.validation_freq > 1 && key.rfind("val_", 0) == 0 && !validated) {
    return std::nullopt;  // a misspelled key, on an epoch that validated, stays an error
  }
  if (it == logs.end()) {
    std::string have;
    for (const auto& [k, v] : logs) have += (have.empty() ? "" : ", ") + k;
    TNT_CHECK(false, who, " monitors '", key, "', which is not in the logs (", have,
              "): pass validation_data for val_ values or monitor one of those");
  }
  return it->second;
}

}  // namespace tnt::callbacks::detail
