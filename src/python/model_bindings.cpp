// the Model facade: owned by the lead (this stub keeps the module linking
// until it lands).
#include "python/bindings.h"

namespace tnt::python {

void bind_model(py::module_& /*m*/) {}

}  // namespace tnt::python
