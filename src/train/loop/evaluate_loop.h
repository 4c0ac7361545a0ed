// Private: evaluate and predict over the loops' contexts
// (train/loop/loop_context.h). Each rank runs its micro-batches of every global
// batch; evaluate sums the loss/metric state locally and reduces it once
// at the end, predict gathers the outputs once at the end in dataset order.
#pragma once

#include <torch/types.h>

#include <tarantella/data/dataset.h>
#include <tarantella/train/callback.h>
#include <tarantella/train/options.h>

#include "train/loop/driver.h"
#include "train/loop/loop_context.h"

namespace tnt::train {

class CallbackList;

/// evaluate() with callbacks of its own (collective over context.group).
callbacks::Logs evaluate(const LoopContext& context, const data::Dataset& dataset,
                         const EvaluateOptions& options, Driver driver);
/// fit()'s validation: reporting to the fit's callbacks (their on_test_*
/// hooks run, as in Keras) instead of a list of its own.
callbacks::Logs validate(const LoopContext& context, const data::Dataset& dataset,
                         const EvaluateOptions& options, CallbackList& fit_callbacks);
/// predict(): the outputs in dataset order, on the master (every rank with
/// on_all_ranks), else undefined.
torch::Tensor predict(const PredictContext& context, const data::Dataset& dataset,
                      const PredictOptions& options, Driver driver);

}  // namespace tnt::train
