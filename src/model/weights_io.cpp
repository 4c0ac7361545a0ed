// tnt::Model's weight files (the format of Python's torch.save of a dict of
// tensors): calls into the persistence component (train/persist/persistence.h).
#include "model/model_impl.h"

namespace tnt {

void Model::save_weights(const std::string& path, bool all_ranks) const {
  train::save_weights(impl_->engine(), path, all_ranks);
}

void Model::load_weights(const std::string& path) { train::load_weights(impl_->engine(), path); }

}  // namespace tnt
