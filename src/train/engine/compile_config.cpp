#include "train/engine/compile_config.h"

namespace tnt::train {
namespace {

using json = nlohmann::json;

json parsed_or_null(const std::string& text) { return text.empty() ? json() : json::parse(text); }

}  // namespace

json compile_config(const CompileOptions& o) {
  json metrics = json::array();
  json metric_names = json::array();
  for (const auto& m : o.metrics()) {
    metrics.push_back(parsed_or_null(m.config));
    metric_names.push_back(m.name);
  }
  json c = {{"optimizer", parsed_or_null(o.optimizer().config)},
            {"loss", parsed_or_null(o.loss().config)},
            {"loss_name", o.loss().name},
            {"metrics", metrics},
            {"metric_names", metric_names},
            {"num_inputs", o.num_inputs()},
            {"aggregation_frequency", o.aggregation_frequency()},
            {"compression", compression_name(o.compression())}};
  if (o.schedule()) c["schedule"] = parsed_or_null(o.schedule().config);
  if (o.fusion_threshold_bytes()) c["fusion_threshold_bytes"] = *o.fusion_threshold_bytes();
  if (o.clip_norm()) c["clip_norm"] = *o.clip_norm();
  if (o.clip_value()) c["clip_value"] = *o.clip_value();
  if (o.deterministic()) c["deterministic"] = *o.deterministic();
  if (o.mixed_precision() != MixedPrecision::None) {
    c["mixed_precision"] = mixed_precision_name(o.mixed_precision());
  }
  if (o.loss_scaling()) c["loss_scaling"] = *o.loss_scaling();
  if (o.shard_optimizer()) c["shard_optimizer"] = true;
  return c;
}

}  // namespace tnt::train
