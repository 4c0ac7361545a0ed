// Private: the learning rate of a compiled model's optimizer (all groups).
#pragma once

#include <torch/torch.h>

#include <tarantella/model/model.h>
#include <tarantella/base/error.h>

namespace tnt::callbacks::detail {

inline double get_lr(Model& model) {
  auto& groups = model.optimizer().param_groups();
  TNT_CHECK(!groups.empty(), "the optimizer has no parameter groups");
  return groups.front().options().get_lr();
}

inline void set_lr(Model& model, double lr) {
  for (auto& group : model.optimizer().param_groups()) group.options().set_lr(lr);
}

}  // namespace tnt::callbacks::detail
