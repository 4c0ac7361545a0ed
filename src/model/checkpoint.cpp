// tnt::Model's whole-model checkpoints: calls into the persistence
// component (train/persist/persistence.h), which Python's tnt.Model uses too, so
// a checkpoint written by one front end loads in the other.
#include <tarantella/model/checkpoints.h>

#include "model/model_impl.h"

namespace tnt {

void Model::save(const std::string& path, bool all_ranks) const {
  train::save(impl_->engine(), path, all_ranks);
}

std::int64_t Model::load(const std::string& path) { return train::load(impl_->engine(), path); }

std::int64_t Model::epochs_done() const { return impl_->engine().counters().epochs_done; }

std::string latest_checkpoint(const std::string& dir) {
  return latest_checkpoint(dir, default_group());
}

std::string latest_checkpoint(const std::string& dir, const comm::ProcessGroup& group) {
  const std::vector<std::string> paths = train::checkpoints_newest_first(dir, group);
  return paths.empty() ? std::string() : paths.front();
}

std::string load_latest_checkpoint(Model& model, const std::string& dir) {
  return train::load_latest_checkpoint(ModelInternals::of(model), dir);
}

}  // namespace tnt
