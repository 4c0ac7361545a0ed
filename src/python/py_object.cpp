#include "python/py_object.h"

#include <tarantella/base/error.h>

namespace tnt::python {

SharedPyObject share_object(py::object object) {
  return SharedPyObject(new py::object(std::move(object)), [](const py::object* held) {
    if (!Py_IsInitialized()) {
      // The interpreter is gone: its objects with it. Dropping the
      // reference now would touch freed memory.
      const_cast<py::object*>(held)->release();
      delete held;
      return;
    }
    py::gil_scoped_acquire gil;
    delete held;
  });
}

bool is_array(const py::handle& value) {
  if (THPVariable_Check(value.ptr())) return true;
  return py::hasattr(value, "__array_interface__");
}

at::Tensor to_tensor(const py::handle& value, const std::string& what) {
  if (THPVariable_Check(value.ptr())) return THPVariable_Unpack(value.ptr()).contiguous();
  const py::module_ torch = py::module_::import("torch");
  py::object tensor;
  try {
    if (py::isinstance<py::bool_>(value)) {
      tensor = torch.attr("tensor")(value, py::arg("dtype") = torch.attr("bool"));
    } else if (py::isinstance<py::float_>(value)) {
      tensor = torch.attr("tensor")(value, py::arg("dtype") = torch.attr("float64"));
    } else {
      tensor = torch.attr("as_tensor")(value);
    }
  } catch (py::error_already_set& e) {
    throw Error(detail::concat(
        what, " is a ", std::string(py::str(py::type::handle_of(value).attr("__name__"))),
        ", which cannot be made a tensor (", e.what(),
        "): give tensors, numpy arrays or numbers; for images, a transform such as "
        "torchvision.transforms.ToTensor()"));
  }
  return THPVariable_Unpack(tensor.ptr()).contiguous();
}

data::Element to_element(const py::handle& sample, const std::string& what) {
  data::Element element;
  if (py::isinstance<py::tuple>(sample) || py::isinstance<py::list>(sample)) {
    std::size_t k = 0;
    for (const py::handle item : sample) {
      element.push_back(to_tensor(item, what + " component " + std::to_string(k++)));
    }
  } else {
    element.push_back(to_tensor(sample, what));
  }
  return element;
}

py::tuple to_python(const data::Element& element) {
  py::tuple out(element.size());
  for (std::size_t i = 0; i < element.size(); ++i) out[i] = py::cast(element[i]);
  return out;
}

std::string type_name_of(const py::handle& object) {
  return py::str(py::type::handle_of(object).attr("__name__"));
}

}  // namespace tnt::python
