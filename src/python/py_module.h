// The Python network as the engine's network: a torch.nn.Module behind the
// ModuleAdapter interface (keras/module_adapter.h), so that tnt.Model's
// engine trains it as it trains a C++ module. Only PyModel makes one.
#pragma once

#include <memory>

#include <tarantella/keras/module_adapter.h>

#include "python/bindings.h"

namespace tnt::python {

/// `module` (a torch.nn.Module, checked by the caller) as the engine's
/// network. Its forward is called under the GIL; its parameters and buffers
/// are the module's own tensors, shared without copies.
std::shared_ptr<ModuleAdapter> module_adapter(py::object module);

}  // namespace tnt::python
