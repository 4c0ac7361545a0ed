// PYBIND11_MODULE for `_tarantella`: the bindings in dependency order, so
// that a later one may refer to the types an earlier one registered (the
// Model binding takes a ProcessGroup and a Dataset).
#include "python/bindings.h"

PYBIND11_MODULE(_tarantella, m) {
  m.doc() = "Tarantella's C++ core; use it through `import tarantella as tnt`.";
  tnt::python::bind_errors(m);
  tnt::python::bind_runtime(m);
  tnt::python::bind_groups(m);
  tnt::python::bind_data(m);
  tnt::python::bind_images(m);
  tnt::python::bind_optimizer(m);
  tnt::python::bind_nn(m);
  tnt::python::bind_losses_and_metrics(m);
  tnt::python::bind_registries(m);
  tnt::python::bind_callbacks(m);
  tnt::python::bind_model(m);
}
