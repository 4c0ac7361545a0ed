// Whole models from files and descriptions, as Keras's tf.keras.models:
// load_model, model_from_config / model_from_json and clone_model.
//
// Example:
//   model.save("ckpt.pt");                                  // collective
//   tnt::Model restored = tnt::models::load_model("ckpt.pt");  // compiled, trained state
//   restored.fit(train, tnt::FitOptions().initial_epoch(restored.epochs_done()).epochs(10));
#pragma once

#include <string>

#include <nlohmann/json_fwd.hpp>

#include <tarantella/model/model.h>

namespace tnt::models {

/// Rebuilds the model saved by Model::save at `path`: the architecture
/// (a tnt::layers::Sequential, or a TorchScript module, stored in the file),
/// its weights and buffers, the completed epochs and — when `compile` and the
/// model was saved compiled — the compile configuration and the optimizer
/// state. A model of a plain C++ module class cannot be rebuilt from a file:
/// construct it and call Model::load(path) instead (the error says so).
/// A compile configuration with user-defined parts (a custom optimizer,
/// loss, metric or schedule) cannot be rebuilt either: pass compile = false,
/// compile yourself, then call Model::load(path) to restore the optimizer.
/// Collective: the master reads the file and broadcasts; errors name the
/// file and what is wrong, on every rank.
Model load_model(const std::string& path, bool compile = true);
/// The same on the ranks of `group` (the file is read by its master).
Model load_model(const std::string& path, const comm::ProcessGroup& group, bool compile = true);

/// A new, uncompiled model from Model::get_config()'s output, with freshly
/// initialized weights (the master's, broadcast to every rank).
Model model_from_config(const nlohmann::json& config);
Model model_from_config(const nlohmann::json& config, const comm::ProcessGroup& group);
/// The same from Model::to_json()'s output.
Model model_from_json(const std::string& json);
Model model_from_json(const std::string& json, const comm::ProcessGroup& group);

/// A new, uncompiled model with the same architecture. As Keras, a model
/// built from the layer registry gets freshly initialized weights; a
/// TorchScript module or a C++ module (through LibTorch's clone(), which
/// needs torch::nn::Cloneable) is deep-copied, weights included. The clone
/// trains on the same process group as `model`.
Model clone_model(const Model& model);

}  // namespace tnt::models
