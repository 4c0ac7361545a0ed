// Private: the parts of a load that both Engine::restore paths share
// (without and with pipeline stages): the model's tensors by name, and the
// check of a file's weights against them, which changes nothing until the
// returned step runs, so that a bad file leaves the model as it was.
#pragma once

#include <functional>
#include <set>
#include <string>

#include <ATen/core/Dict.h>

#include <tarantella/keras/module_adapter.h>

namespace tnt::train {

/// The module's parameters, then its buffers.
NamedTensorList all_weights(ModuleAdapter& net);

/// Checks that `dict` holds every tensor of `net` with its shape, and no
/// entry that is neither `net`'s nor in `elsewhere` (the other pipeline
/// stages' names; empty without stages); returns the copy.
std::function<void()> prepare_weights(ModuleAdapter& net, const c10::impl::GenericDict& dict,
                                      const std::string& path,
                                      const std::set<std::string>& elsewhere = {});

}  // namespace tnt::train
