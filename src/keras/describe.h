// Private: the {"class_name": ..., "config": {...}} descriptions that the
// built-in optimizers, losses, metrics, schedules and layers carry, so that a
// saved model can be rebuilt (model/models.cpp reads them back).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace tnt {

inline std::string describe(const std::string& class_name, nlohmann::json config) {
  return nlohmann::json{{"class_name", class_name}, {"config", std::move(config)}}.dump();
}

}  // namespace tnt
