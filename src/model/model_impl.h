// Private: the state behind tnt::Model, shared by model.cpp (construction,
// compile, weights), fit.cpp (the loops' entry points), checkpoint.cpp and
// weights_io.cpp (persistence, each a call into train/persist/persistence.h) and
// models.cpp: the engine with its callbacks' host (train/persist/engine_host.h,
// the same one Python's tnt.Model holds), whose stop request is the
// model's public stop_training.
#pragma once

#include <memory>
#include <string>

#include <torch/torch.h>

#include <tarantella/model/model.h>
#include <tarantella/train/training_host.h>

#include "runtime/default_group.h"
#include "train/persist/engine_host.h"
#include "train/persist/persistence.h"

namespace tnt {

using Logs = callbacks::Logs;

using TrainingPosition = train::TrainingPosition;
using train::SavedModelDescription;

struct Model::Impl final : train::EngineHost {
  Impl(Model& model, std::unique_ptr<train::Engine> e)
      : train::EngineHost(std::move(e)), self(&model) {}
  /// The facade this state belongs to (updated when a Model is moved).
  Model* self;

  train::Driver driver() { return EngineHost::driver(self); }
  void set_stop_requested(bool stop) override { self->stop_training = stop; }
  bool stop_requested() const override { return self->stop_training; }
};

/// The library's access to a Model's engine.
struct ModelInternals {
  static train::Engine& of(const Model& model) { return model.impl_->engine(); }
};

/// Rebuilds CompileOptions from get_compile_config()'s JSON; user-defined
/// parts (null) are an Error naming the part and `path`.
CompileOptions compile_options_from_config(const std::string& compile_json,
                                           const std::string& path);

/// `options` as a model on `device` can run them: float16 mixed precision
/// (a GPU's) becomes full precision on the CPU, with a warning that names
/// `path` and bfloat16; anything else as it is. For load_model, whose file
/// may come from a GPU run.
CompileOptions runnable_on(CompileOptions options, torch::Device device, const std::string& path);

}  // namespace tnt
