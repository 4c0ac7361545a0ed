// Python callbacks in the engine's callback list: a tnt.callbacks.Callback
// subclass (or any object with Keras's hooks) behind callbacks::Callback,
// its hooks called under the GIL; the built-in (C++) callbacks as they are.
#pragma once

#include <vector>

#include <tarantella/train/callback.h>

#include "python/bindings.h"

namespace tnt::python {

/// fit/evaluate/predict's `callbacks` list as the engine's: each C++
/// callback as it is, any other object through a trampoline that calls
/// its Keras hooks under the GIL. Needs the GIL.
std::vector<callbacks::CallbackPtr> to_callbacks(const py::list& list);

}  // namespace tnt::python
