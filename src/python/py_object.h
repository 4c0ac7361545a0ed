// Python objects held by C++ pipelines, and the conversions between Python
// values and tnt::data::Element.
//
// Note: a Dataset's nodes are copied, kept and destroyed on threads that do
// not hold the GIL (prefetch, map workers, the lead's training engine). A
// py::object inside a std::function would touch reference counts there. So a
// Python object is held through a SharedPyObject: copies share one C++
// reference count, and the Python reference is dropped under the GIL by the
// last owner.
#pragma once

#include <memory>
#include <string>

#include <tarantella/data/element.h>

#include "python/bindings.h"

namespace tnt::python {

using SharedPyObject = std::shared_ptr<const py::object>;

/// Holds `object`; the last copy releases it with the GIL taken (or leaks it
/// if the interpreter is already gone).
SharedPyObject share_object(py::object object);

/// A tensor for one Python value, sharing memory where it can: a
/// torch.Tensor as it is, a numpy array through torch.as_tensor (no copy), a
/// number as a 0-dim tensor (int: int64, float: float64, bool: bool, as
/// torch's default_collate makes them). Made contiguous (no copy when it
/// already is). `what` names the value in errors. Needs the GIL.
at::Tensor to_tensor(const py::handle& value, const std::string& what);

/// An element from a sample: a tuple or list gives one component per item,
/// anything else one component. Needs the GIL.
data::Element to_element(const py::handle& sample, const std::string& what);

/// The element as a tuple of tensors. Needs the GIL.
py::tuple to_python(const data::Element& element);

/// Whether `value` is a torch.Tensor or a numpy array.
bool is_array(const py::handle& value);

/// The name of `object`'s type ("list", "LeNet5"), for messages. Needs the GIL.
std::string type_name_of(const py::handle& object);

}  // namespace tnt::python
