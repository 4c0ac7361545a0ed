// tnt::Model's loops: each a call into the training engine (train/engine/engine.h),
// with the model as the callbacks' host. The loops themselves live in
// train/loop/fit_loop.cpp and train/loop/evaluate_loop.cpp, shared with every other
// front end.
#include <tarantella/data/dataset.h>

#include "model/model_impl.h"

namespace tnt {

callbacks::History Model::fit(const data::Dataset& train, FitOptions options) {
  stop_training = false;
  return impl_->engine().fit(train, options, impl_->driver());
}

std::map<std::string, double> Model::evaluate(const data::Dataset& dataset,
                                              EvaluateOptions options) {
  return impl_->engine().evaluate(dataset, options, impl_->driver());
}

torch::Tensor Model::predict(const data::Dataset& dataset, PredictOptions options) {
  return impl_->engine().predict(dataset, options, impl_->driver());
}

}  // namespace tnt
