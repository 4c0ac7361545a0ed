// The runtime from Python: tnt::Runtime held by a handle that the package
// creates on import and closes at interpreter exit (atexit), so MPI starts
// once and finalizes cleanly; the rank API; set_seed; and fail_rank, which
// the package's sys.excepthook calls so that a Python exception ends the
// rank the way a C++ failure does.
#include <memory>

#include <tarantella/runtime/fail_rank.h>
#include <tarantella/runtime/runtime.h>
#include <tarantella/runtime/seed.h>

#include "base/stack_dump.h"
#include "python/bindings.h"

namespace tnt::python {
namespace {

/// Owns the process's tnt::Runtime. close() is the collective shutdown
/// (every rank must reach it); it waits, so the GIL is released.
class RuntimeHandle {
 public:
  RuntimeHandle() {
    py::gil_scoped_release no_gil;
    runtime_ = std::make_unique<Runtime>();
  }
  ~RuntimeHandle() { close(); }
  RuntimeHandle(const RuntimeHandle&) = delete;
  RuntimeHandle& operator=(const RuntimeHandle&) = delete;

  void close() {
    if (!runtime_) return;
    if (PyGILState_Check()) {
      py::gil_scoped_release no_gil;
      runtime_.reset();
    } else {
      runtime_.reset();
    }
  }
  bool closed() const { return runtime_ == nullptr; }

 private:
  std::unique_ptr<Runtime> runtime_;
};

}  // namespace

void bind_runtime(py::module_& m) {
  py::class_<RuntimeHandle>(m, "Runtime",
                            "The running Tarantella runtime (MPI and the world group). The "
                            "package holds the only one: use tnt.init() and tnt.shutdown().")
      .def(py::init<>())
      .def("close", &RuntimeHandle::close,
           "Collective: stops the engine and finalizes MPI. Every rank must call it.")
      .def_property_readonly("closed", &RuntimeHandle::closed);

  m.def("is_initialized", &is_initialized);
  m.def("get_rank", &get_rank, "This rank's number in 0..get_size()-1.");
  m.def("get_size", &get_size, "The number of ranks in the job.");
  m.def("get_master_rank", &get_master_rank, "The master rank (always 0).");
  m.def("is_master_rank", &is_master_rank, "Whether this rank is the master rank.");
  m.def("get_local_rank", &get_local_rank, "This rank's number among the ranks on its node.");
  m.def("get_local_size", &get_local_size, "The number of ranks on this node.");
  m.def("set_seed", &set_seed, py::arg("seed"), py::arg("deterministic") = true,
        "Seeds LibTorch's generators (torch's too: the same library), the default shuffle "
        "seed and rand(); with deterministic, LibTorch's deterministic algorithms.");
  m.def(
      "fail_rank",
      [](const std::string& message) {
        py::gil_scoped_release no_gil;  // _exit: nothing of Python runs again
        fail_rank(message);
      },
      py::arg("message"),
      "Ends this rank as a failed rank: one report line naming it, exit status 1; the "
      "launcher stops the other ranks.");
  m.def(
      "_stack_dump_target",
      [] { return py::make_tuple(detail::stack_dump_signal(), detail::stack_dump_fd()); },
      "(signal, fd): where faulthandler writes this rank's Python stack when a collective "
      "that it did not reach times out; fd -1: nowhere (python/tarantella/_stack_dump.py).");
}

}  // namespace tnt::python
