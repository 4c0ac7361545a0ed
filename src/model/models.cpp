// Architectures and compile configurations as JSON, and the tnt::models
// functions that rebuild models from them (see models.h).
#include <tarantella/model/models.h>

#include <sstream>

#include <nlohmann/json.hpp>
#include <torch/script.h>
#include <torch/torch.h>

#include <tarantella/keras/layers.h>
#include <tarantella/keras/losses.h>
#include <tarantella/keras/metrics.h>
#include <tarantella/keras/optimizers.h>
#include <tarantella/keras/schedules.h>
#include <tarantella/base/argument_error.h>
#include <tarantella/base/error.h>
#include <tarantella/base/logging.h>

#include "model/model_impl.h"
#include "train/engine/compile_config.h"

namespace tnt {
namespace {

using json = nlohmann::json;

// A name of the compile configuration (mixed_precision, compression) with
// the one parser both front ends use; an error names the file.
template <typename Parse>
auto named_setting(const json& c, const char* key, const std::string& path, Parse parse) {
  const std::string name = c.at(key).get<std::string>();
  try {
    return parse(name);
  } catch (const ArgumentError& e) {
    throw Error(detail::concat("'", path, "': the compile configuration's ", e.what()));
  }
}

// Rebuilds a part of the compile configuration with its kind's from_config
// (keras/): a user-defined part (null) cannot be rebuilt, and every error
// names the file.
template <typename FromConfig>
auto part_from(const json& j, const std::string& what, const std::string& path,
               FromConfig from_config) {
  if (j.is_null()) {
    throw Error(detail::concat(
        "'", path, "' was compiled with a user-defined ", what,
        " that cannot be rebuilt from the file: load it with "
        "tnt::models::load_model(path, /*compile=*/false), compile it yourself, then call "
        "model.load(path) to restore the optimizer state"));
  }
  try {
    return from_config(j);
  } catch (const Error& e) {
    throw Error(
        detail::concat("'", path, "': the ", what, " of the compile configuration: ", e.what()));
  }
}

Model model_from_description(const SavedModelDescription& d, const std::string& path,
                             const comm::ProcessGroup& group) {
  if (!d.architecture.empty()) {
    try {
      return models::model_from_json(d.architecture, group);
    } catch (const std::exception& e) {
      throw Error(
          detail::concat("cannot rebuild the architecture stored in '", path, "': ", e.what()));
    }
  }
  if (!d.torchscript.empty()) {
    std::istringstream in(d.torchscript);
    try {
      // On the CPU, wherever it was saved from: the Model moves it to this
      // rank's device (a GPU-saved module would land on the saver's GPU).
      return Model(make_adapter(torch::jit::load(in, torch::Device(torch::kCPU))), group);
    } catch (const std::exception& e) {
      throw Error(detail::concat("the TorchScript module stored in '", path,
                                 "' does not load: ", std::string(e.what()).substr(0, 300)));
    }
  }
  throw Error(detail::concat(
      "'", path,
      "' holds no architecture: the model was a C++ module that cannot describe "
      "itself. Construct the same network, wrap it in tnt::Model, compile it and call "
      "model.load(path) instead (or build it from tnt::layers to make load_model work)"));
}

}  // namespace

nlohmann::json Model::get_config() const {
  const std::string text = impl_->engine().net().config_json();
  TNT_CHECK(!text.empty(), "get_config()/to_json(): the network '",
            impl_->engine().net().type_name(),
            "' cannot describe its architecture: build it from tnt::layers (a "
            "tnt::layers::Sequential) to get a config; TorchScript and C++ modules are saved "
            "whole by Model::save and copied by tnt::models::clone_model");
  return json::parse(text);
}

std::string Model::to_json() const { return get_config().dump(2); }

nlohmann::json Model::get_compile_config() const {
  const CompileOptions* compiled = impl_->engine().compiled();
  return compiled ? train::compile_config(*compiled) : nullptr;
}

CompileOptions compile_options_from_config(const std::string& compile_json,
                                           const std::string& path) {
  json c;
  try {
    c = json::parse(compile_json);
  } catch (const json::exception& e) {
    throw Error(
        detail::concat("'", path, "': the compile configuration is not valid JSON: ", e.what()));
  }
  try {
    CompileOptions o;
    o.optimizer(part_from(c.at("optimizer"), "optimizer", path, optimizers::from_config))
        .loss(part_from(c.at("loss"), "loss", path, losses::from_config));
    std::vector<metrics::Metric> metrics;
    for (const json& m : c.value("metrics", json::array())) {
      metrics.push_back(part_from(m, "metric", path, metrics::from_config));
    }
    o.metrics(std::move(metrics));
    if (c.contains("schedule")) {
      o.schedule(
          part_from(c.at("schedule"), "learning-rate schedule", path, schedules::from_config));
    }
    // A field the file leaves out keeps CompileOptions' default.
    if (c.contains("num_inputs")) o.num_inputs(c.at("num_inputs").get<int>());
    if (c.contains("aggregation_frequency")) {
      o.aggregation_frequency(c.at("aggregation_frequency").get<int>());
    }
    if (c.contains("compression")) {
      o.compression(named_setting(c, "compression", path, compression_from_name));
    }
    if (c.contains("clip_norm")) o.clip_norm(c.at("clip_norm").get<double>());
    if (c.contains("clip_value")) o.clip_value(c.at("clip_value").get<double>());
    if (c.contains("deterministic")) o.deterministic(c.at("deterministic").get<std::int64_t>());
    if (c.contains("mixed_precision")) {
      o.mixed_precision(named_setting(c, "mixed_precision", path, mixed_precision_from_name));
    }
    if (c.contains("loss_scaling")) o.loss_scaling(c.at("loss_scaling").get<bool>());
    if (c.contains("shard_optimizer")) o.shard_optimizer(c.at("shard_optimizer").get<bool>());
    if (c.contains("fusion_threshold_bytes")) {
      o.fusion_threshold_bytes(c.at("fusion_threshold_bytes").get<std::size_t>());
    }
    return o;
  } catch (const json::exception& e) {
    throw Error(detail::concat("'", path, "': a field of the compile configuration is missing "
                               "or has the wrong type: ", e.what()));
  }
}

namespace models {

Model model_from_config(const nlohmann::json& config) {
  return model_from_config(config, default_group());
}

Model model_from_config(const nlohmann::json& config, const comm::ProcessGroup& group) {
  return Model(layers::Sequential(layers::SequentialImpl::from_config(config)), group);
}

Model model_from_json(const std::string& text) { return model_from_json(text, default_group()); }

Model model_from_json(const std::string& text, const comm::ProcessGroup& group) {
  json config;
  try {
    config = json::parse(text);
  } catch (const json::exception& e) {
    throw Error(detail::concat("model_from_json: not valid JSON: ", e.what()));
  }
  return model_from_config(config, group);
}

Model clone_model(const Model& model) {
  const train::Engine& s = ModelInternals::of(model);
  const std::string architecture = s.net().config_json();
  if (!architecture.empty()) return model_from_json(architecture, s.group());
  return Model(s.net().clone(), s.group());
}

}  // namespace models

CompileOptions runnable_on(CompileOptions options, torch::Device device, const std::string& path) {
  if (device.is_cuda() || options.mixed_precision() != MixedPrecision::Float16) return options;
  log::warning(detail::concat(
      "load_model: ", path, " was compiled with mixed_precision float16, which needs a GPU; ",
      "this model is on the ", device.str(), " and is compiled in full precision (float32) ",
      "instead: compile it again with mixed_precision bfloat16 to keep mixed precision there"));
  return options.mixed_precision(MixedPrecision::None).loss_scaling(std::nullopt);
}

namespace models {

Model load_model(const std::string& path, bool compile) {
  return load_model(path, default_group(), compile);
}

Model load_model(const std::string& path, const comm::ProcessGroup& group, bool compile) {
  const SavedModelDescription d = train::read_saved_model_description(group, path);
  Model model = model_from_description(d, path, group);
  if (compile && !d.compile.empty()) {
    model.compile(runnable_on(compile_options_from_config(d.compile, path), model.device(), path));
    model.load(path);  // weights, optimizer state, epochs, steps, RNG
  } else {
    train::load_weights_of_checkpoint(ModelInternals::of(model), path);
  }
  return model;
}

}  // namespace models
}  // namespace tnt
