#include "python/py_dataset.h"

#include <algorithm>
#include <string>
#include <vector>

#include <tarantella/base/argument_error.h>
#include <tarantella/base/default_seed.h>
#include <tarantella/base/error.h>

#include "python/py_object.h"

namespace tnt::python {
namespace {

std::string type_name(const py::handle& value) {
  return py::str(py::type::handle_of(value).attr("__qualname__"));
}

bool is_component_list(const py::handle& value) {
  if (!py::isinstance<py::tuple>(value) && !py::isinstance<py::list>(value)) return false;
  if (py::len(value) == 0) return false;
  for (const py::handle item : value) {
    if (!is_array(item)) return false;
  }
  return true;
}

// x or y as components: an array is one, a tuple/list of arrays is several.
void append_components(const py::object& value, const char* name, data::Element& out) {
  if (is_array(value)) {
    out.push_back(to_tensor(value, name));
    return;
  }
  if (!is_component_list(value)) {
    throw py::type_error(detail::concat(
        "fit/evaluate/predict: ", name, " is a ", type_name(value),
        ": give a torch.Tensor or numpy array, a tuple/list of them, a map-style dataset "
        "(with __len__ and __getitem__, e.g. a torch.utils.data.Dataset) or a "
        "tnt.data.Dataset"));
  }
  std::size_t k = 0;
  for (const py::handle item : value) {
    out.push_back(to_tensor(item, std::string(name) + "[" + std::to_string(k++) + "]"));
  }
}

}  // namespace

data::Dataset from_map_style(const py::object& dataset) {
  const auto size = static_cast<std::int64_t>(py::len(dataset));
  SharedPyObject held = share_object(dataset);
  return data::Dataset::from_generator(
      [held](std::int64_t index) {
        py::gil_scoped_acquire gil;
        const py::object sample = (*held)[py::int_(index)];
        return to_element(sample, "sample " + std::to_string(index));
      },
      size);
}

data::Dataset dataset_from_python(const py::object& x, const py::object& y,
                                  std::optional<std::int64_t> global_batch_size, bool shuffle,
                                  std::uint64_t seed) {
  if (py::isinstance<data::Dataset>(x)) {
    TNT_CHECK_ARG(y.is_none(), "fit/evaluate/predict: x is a tnt.data.Dataset, which carries "
                               "its targets, so y must be None (got a ", type_name(y), ")");
    TNT_CHECK_ARG(!global_batch_size.has_value(),
              "fit/evaluate/predict: x is a tnt.data.Dataset, which is batched already, so "
              "batch_size must be None (got ", global_batch_size.value_or(0),
              "): set the GLOBAL batch size with .batch(...) on the dataset");
    return x.cast<data::Dataset>();
  }
  const std::int64_t batch_size = global_batch_size.value_or(kDefaultBatchSize);
  TNT_CHECK_ARG(batch_size > 0, "fit/evaluate/predict: batch_size=", batch_size,
                " is invalid: give the GLOBAL batch size, 1 or more, e.g. batch_size=64");
  data::Dataset ds = [&] {
    if (is_array(x) || is_component_list(x)) {
      data::Element tensors;
      append_components(x, "x", tensors);
      if (!y.is_none()) append_components(y, "y", tensors);
      return data::Dataset::from_tensor_slices(tensors);
    }
    const bool map_style = py::hasattr(x, "__len__") && py::hasattr(x, "__getitem__");
    if (!map_style) {
      throw py::type_error(detail::concat(
          "fit/evaluate/predict: x is a ", type_name(x),
          ": give a torch.Tensor or numpy array, a tuple/list of them, a map-style dataset "
          "(with __len__ and __getitem__, e.g. a torch.utils.data.Dataset) or a "
          "tnt.data.Dataset"));
    }
    TNT_CHECK_ARG(y.is_none(), "fit/evaluate/predict: x is a map-style dataset (", type_name(x),
                  "), whose items carry the targets, so y must be None (got a ", type_name(y), ")");
    return from_map_style(x);
  }();
  if (shuffle) ds = ds.shuffle(std::max<std::int64_t>(ds.cardinality(), 1), seed);
  return ds.batch(batch_size);
}

data::Dataset dataset_from_data(const py::tuple& data) {
  TNT_CHECK(data.size() == 4, "internal error: the data tuple has ", data.size(),
            " items, not (x, y, batch_size, shuffle)");
  const std::optional<std::int64_t> batch_size =
      data[2].is_none() ? std::nullopt : std::optional<std::int64_t>(data[2].cast<std::int64_t>());
  return dataset_from_python(data[0], data[1], batch_size, data[3].cast<bool>(),
                             default_shuffle_seed());
}

}  // namespace tnt::python
