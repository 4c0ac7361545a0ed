// The Python network as the engine's network: a torch.nn.Module behind the
// ModuleAdapter interface (keras/module_adapter.h), so that tnt.Model's
// engine trains it as it trains a C++ module. Only PyModel makes one.
#pragma once

#include <memory>

#include <tarantella/keras/module_adapter.h>

#include "python/bindings.h"
#include "stages/layout.h"

namespace tnt::python {

/// `module` (a torch.nn.Module, checked by the caller) as the engine's
/// network. Its forward is called under the GIL; its parameters and buffers
/// are the module's own tensors, shared without copies.
std::shared_ptr<ModuleAdapter> module_adapter(py::object module);

/// This rank's stage of `module`, a torch.nn.Sequential cut into
/// `layout.stages` stages (at its tnt.nn.SplitPoints, else by parameter
/// count): a torch.nn.Sequential of the stage's layers under their names in
/// `module`. The other stages' parameters and buffers are freed. Throws a
/// TypeError for a module that is not a Sequential. The master logs the cut.
py::object stage_of(const py::object& module, const stages::StageLayout& layout, bool master);

}  // namespace tnt::python
