// The extension module `_tarantella`: one bind_* function per concern, each
// in its own file, called in this order by module.cpp. The pure-Python
// package python/tarantella/ wraps what they define; user code never imports
// _tarantella directly.
//
// Rules every binding follows (docs/python.md, "How the package is built"):
//  * tensors cross as at::Tensor without copies (torch/extension.h casters);
//  * every call that waits or communicates releases the GIL
//    (py::gil_scoped_release), so other Python threads and the pipeline's
//    Python callbacks can run;
//  * C++ calls back into Python only after taking the GIL
//    (py::gil_scoped_acquire), and Python objects held by C++ are released
//    under the GIL (py_object.h);
//  * tnt::Error and its subclasses reach Python as tnt.Error,
//    tnt.MismatchError and tnt.TimeoutError (error_bindings.cpp).
#pragma once

#include <torch/extension.h>

namespace tnt::python {

namespace py = pybind11;

/// tnt.Error, tnt.MismatchError, tnt.TimeoutError and their translator.
void bind_errors(py::module_& m);
/// The runtime's lifetime, rank queries, set_seed, fail_rank.
void bind_runtime(py::module_& m);
/// ProcessGroup (the C++ handle) and its collectives.
void bind_groups(py::module_& m);
/// tnt::data::Dataset, its iteration, BatchShare, distribution helpers.
void bind_data(py::module_& m);
/// Image folders, tar shards and the seeded transforms (image_bindings.cpp).
void bind_images(py::module_& m);
/// The gradient synchronizer under tnt.DistributedOptimizer.
void bind_optimizer(py::module_& m);
/// tnt.nn's C++ core (CollectiveLayer: SyncBatchNorm for Python modules).
void bind_nn(py::module_& m);
/// The Loss and Metric handles and Python callables as losses and metrics.
void bind_losses_and_metrics(py::module_& m);
/// The Keras registries: optimizers from options, and names.
void bind_registries(py::module_& m);
/// The built-in (C++) callbacks.
void bind_callbacks(py::module_& m);
/// The Model facade (PyModel).
void bind_model(py::module_& m);

}  // namespace tnt::python
