// tnt::comm::ProcessGroup as a Python class: the same handle the C++ API
// takes, so bindings of C++ functions with a ProcessGroup parameter accept
// it. Collectives work in place on contiguous tensors, release the GIL while
// they wait, and take the reduction by name ("sum", "average", ...).
#include <tarantella/comm/process_group.h>
#include <tarantella/runtime/runtime.h>

#include "python/bindings.h"

namespace tnt::python {
namespace {

comm::ReduceOp reduce_op(const std::string& name) {
  if (name == "sum") return comm::ReduceOp::Sum;
  if (name == "average" || name == "avg" || name == "mean") return comm::ReduceOp::Average;
  if (name == "min") return comm::ReduceOp::Min;
  if (name == "max") return comm::ReduceOp::Max;
  if (name == "product" || name == "prod") return comm::ReduceOp::Product;
  throw py::value_error("unknown reduction op '" + name +
                        "': use one of 'sum', 'average', 'min', 'max', 'product'");
}

template <typename Fn>
auto without_gil(Fn&& fn) {
  py::gil_scoped_release no_gil;
  return fn();
}

}  // namespace

void bind_groups(py::module_& m) {
  using comm::ProcessGroup;
  py::class_<ProcessGroup>(m, "ProcessGroup",
                           "A group of ranks: tnt.world() or a subgroup of it. Collectives of "
                           "a group must be called by all of its ranks.")
      .def(py::init<>(), "An empty handle (valid is False): means the default group where "
                         "a group is optional.")
      .def_property_readonly("valid", &ProcessGroup::valid)
      .def_property_readonly("is_member", &ProcessGroup::is_member,
                             "Whether this rank belongs to the group.")
      .def_property_readonly("rank", &ProcessGroup::rank,
                             "This rank's number in the group (-1 outside it).")
      .def_property_readonly("size", &ProcessGroup::size)
      .def_property_readonly("local_rank", &ProcessGroup::local_rank)
      .def_property_readonly("local_size", &ProcessGroup::local_size)
      .def_property_readonly("is_master", &ProcessGroup::is_master,
                             "Whether this rank is the group's rank 0.")
      .def_property_readonly("world_ranks", &ProcessGroup::world_ranks,
                             "The world rank of each group rank, in group order.")
      .def("__repr__", [](const ProcessGroup& g) {
        return g.valid() ? "<tarantella.ProcessGroup: " + g.describe() + ">"
                         : std::string("<tarantella.ProcessGroup: empty>");
      })
      .def("__eq__", [](const ProcessGroup& a, const ProcessGroup& b) { return a == b; })
      .def(
          "subgroup",
          [](const ProcessGroup& g, const std::vector<int>& ranks) {
            return without_gil([&] { return g.subgroup(ranks); });
          },
          py::arg("ranks"),
          "Collective over this group: a group of `ranks` (this group's numbers, in that "
          "order). Every rank calls it with the same list; ranks not listed get a "
          "non-member handle.")
      .def(
          "split",
          [](const ProcessGroup& g, int color, int key) {
            return without_gil([&] { return g.split(color, key); });
          },
          py::arg("color"), py::arg("key") = 0,
          "Collective: ranks passing the same non-negative color form a group.")
      .def(
          "allreduce",
          [](const ProcessGroup& g, at::Tensor t, const std::string& op) {
            const comm::ReduceOp r = reduce_op(op);
            return without_gil([&] { return g.allreduce(t, r); });
          },
          py::arg("tensor"), py::arg("op") = "sum", "In place; returns the tensor.")
      .def(
          "broadcast",
          [](const ProcessGroup& g, at::Tensor t, int root) {
            return without_gil([&] { return g.broadcast(t, root); });
          },
          py::arg("tensor"), py::arg("root") = 0, "In place; returns the tensor.")
      .def(
          "allgather",
          [](const ProcessGroup& g, at::Tensor t) {
            return without_gil([&] { return g.allgatherv(t); });
          },
          py::arg("tensor"),
          "The ranks' tensors concatenated along dimension 0 in rank order (their first "
          "dimensions may differ).")
      .def("barrier", [](const ProcessGroup& g) { without_gil([&] { g.barrier(); return 0; }); })
      .def(
          "broadcast_bytes",
          [](const ProcessGroup& g, const py::bytes& data, int root) {
            std::string text = data;
            std::string out = without_gil([&] { return g.broadcast_string(text, root); });
            return py::bytes(out);
          },
          py::arg("data"), py::arg("root") = 0, "`root`'s bytes on every rank.");

  m.def("world", [] { return world(); }, "The group of every rank of the job.");
}

}  // namespace tnt::python
