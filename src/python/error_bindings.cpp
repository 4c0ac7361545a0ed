// C++ errors as Python exceptions. tnt::Error becomes tnt.Error (a
// RuntimeError), its subclasses the matching Python subclasses, each with
// the C++ message unchanged (it already names the rank, the value and the
// fix); tnt::ArgumentError, a caller's mistake in an argument, becomes the
// standard library's ValueError, so the C++ check is the one source of
// truth for that argument. LibTorch's c10::Error loses its C++ backtrace on the way, as in
// torch itself.
//
// Why one translator with the most specific catch first: pybind11 tries
// translators newest first, and a translator for tnt::Error registered last
// would swallow its subclasses.
#include <c10/util/Exception.h>

#include <tarantella/base/argument_error.h>
#include <tarantella/base/error.h>

#include "python/bindings.h"

namespace tnt::python {
namespace {

// Owned references, released never: the translator may run until the
// interpreter is gone, and a static py::object would be destroyed after it.
PyObject* g_error = nullptr;
PyObject* g_mismatch = nullptr;
PyObject* g_timeout = nullptr;

PyObject* new_exception(py::module_& m, const char* name, PyObject* base, const char* doc) {
  const std::string qualified = std::string("tarantella.") + name;
  PyObject* type = PyErr_NewExceptionWithDoc(qualified.c_str(), doc, base, nullptr);
  if (type == nullptr) throw py::error_already_set();
  Py_INCREF(type);  // one reference for the module attribute, one kept here
  m.add_object(name, py::reinterpret_steal<py::object>(type));
  return type;
}

void translate(std::exception_ptr error) {
  try {
    if (error) std::rethrow_exception(error);
  } catch (const MismatchError& e) {
    PyErr_SetString(g_mismatch, e.what());
  } catch (const TimeoutError& e) {
    PyErr_SetString(g_timeout, e.what());
  } catch (const ArgumentError& e) {
    PyErr_SetString(PyExc_ValueError, e.what());
  } catch (const Error& e) {
    PyErr_SetString(g_error, e.what());
  } catch (const c10::IndexError& e) {
    PyErr_SetString(PyExc_IndexError, e.what_without_backtrace());
  } catch (const c10::ValueError& e) {
    PyErr_SetString(PyExc_ValueError, e.what_without_backtrace());
  } catch (const c10::TypeError& e) {
    PyErr_SetString(PyExc_TypeError, e.what_without_backtrace());
  } catch (const c10::Error& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what_without_backtrace());
  }
}

}  // namespace

void bind_errors(py::module_& m) {
  g_error = new_exception(m, "Error", PyExc_RuntimeError,
                          "Base class of Tarantella's errors (a RuntimeError).");
  g_mismatch = new_exception(m, "MismatchError", g_error,
                             "Ranks called different collectives (operation, dtype, size, "
                             "root); raised on every rank with the same message.");
  g_timeout = new_exception(m, "TimeoutError", g_error,
                            "A rank did not arrive at a collective within TNT_COMM_TIMEOUT "
                            "seconds; the message names it.");
  py::register_exception_translator(&translate);

  // Test hook: raises the C++ exception `kind` ("error", "mismatch",
  // "timeout", "argument") with `message`, to show the translation from Python.
  py::module_ testing = m.def_submodule("_testing", "Hooks for the test suite only.");
  testing.def("raise_error", [](const std::string& kind, const std::string& message) {
    if (kind == "mismatch") throw MismatchError(message);
    if (kind == "timeout") throw TimeoutError(message);
    if (kind == "error") throw Error(message);
    if (kind == "argument") throw ArgumentError(message);
    throw std::invalid_argument("raise_error: unknown kind " + kind);
  });
}

}  // namespace tnt::python
