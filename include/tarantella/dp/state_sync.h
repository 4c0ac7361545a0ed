// Keeping ranks identical: before training starts and after any load, the
// master rank's weights, buffers and optimizer state are broadcast to every
// rank. First a structure check compares every rank's list of tensors
// (names, shapes, dtypes): a model that differs between ranks becomes an
// error on every rank that names the first difference, never a hang or a
// silent mix of two models.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <torch/types.h>

#include <tarantella/comm/process_group.h>

namespace torch::optim {
class Optimizer;
}

namespace tnt::dp {

using NamedTensors = std::vector<std::pair<std::string, torch::Tensor>>;

/// Collective over `group`. Throws tnt::Error on every rank if any rank's
/// tensors differ in number, names, shapes or dtypes from rank 0's.
///
/// Example: tnt::dp::check_same_structure(tnt::world(), named_parameters, "parameters");
void check_same_structure(const comm::ProcessGroup& group, const NamedTensors& tensors,
                          const std::string& what);

/// Collective over `group`. Overwrites every rank's tensors with `root`'s
/// (one broadcast per dtype, not per tensor). Tensors are updated in place.
///
/// Example: tnt::dp::broadcast_tensors(tnt::world(), model->parameters());
void broadcast_tensors(const comm::ProcessGroup& group, const std::vector<torch::Tensor>& tensors,
                       int root = 0);

/// Collective over `group`. Gives every rank `root`'s optimizer state
/// (momentum buffers, Adam moments, step counts, learning rates), for any
/// torch::optim optimizer, through its own serialization.
///
/// Example: tnt::dp::broadcast_optimizer_state(tnt::world(), optimizer);
void broadcast_optimizer_state(const comm::ProcessGroup& group,
                               torch::optim::Optimizer& optimizer, int root = 0);

}  // namespace tnt::dp
