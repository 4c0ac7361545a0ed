// tnt.data from C++: the Dataset pipeline (tnt::data::Dataset) with Python
// callables in map/filter/from_generator, its iteration, distribution into
// this rank's micro-batches, BatchShare (what a loader tells the
// DistributedOptimizer), the micro-batch rule and the ready-made datasets.
//
// Threads and the GIL: a pass may run Python callables on the iterating
// thread, on map workers or on a prefetch thread; each takes the GIL only
// around the call. So every call that advances, starts or ends a pass
// releases the GIL first: a worker waiting for the GIL while this thread
// holds it and joins the worker would deadlock.
#include <memory>
#include <optional>

#include <tarantella/data/batch_share.h>
#include <tarantella/data/dataset.h>
#include <tarantella/data/datasets.h>
#include <tarantella/data/distribute.h>
#include <tarantella/data/torch_data.h>
#include <tarantella/runtime/runtime.h>

#include "comm/world/backend_choice.h"
#include "python/py_dataset.h"
#include "python/py_object.h"

namespace tnt::python {
namespace {

using data::Dataset;
using data::Element;

// fn(*components) -> element, under the GIL.
data::MapFunction python_map(py::function fn) {
  SharedPyObject held = share_object(std::move(fn));
  return [held](Element element) {
    py::gil_scoped_acquire gil;
    const py::object out = (*held)(*to_python(element));
    return to_element(out, "the map function's result");
  };
}

data::FilterPredicate python_filter(py::function fn) {
  SharedPyObject held = share_object(std::move(fn));
  return [held](const Element& element) {
    py::gil_scoped_acquire gil;
    return py::cast<bool>(py::bool_((*held)(*to_python(element))));
  };
}

data::GeneratorFunction python_generator(py::function fn) {
  SharedPyObject held = share_object(std::move(fn));
  return [held](std::int64_t index) {
    py::gil_scoped_acquire gil;
    return to_element((*held)(index), "the generator's element " + std::to_string(index));
  };
}

/// A pass handed to Python. `advance` produces the next element or nullopt;
/// it and the pass's destruction run without the GIL.
class ElementIterator {
 public:
  template <typename Pass>
  explicit ElementIterator(std::shared_ptr<Pass> pass)
      : advance_([pass] { return pass->next(); }), keep_(std::move(pass)) {}
  ~ElementIterator() {
    if (Py_IsInitialized() && PyGILState_Check()) {
      py::gil_scoped_release no_gil;
      release();
    } else {
      release();
    }
  }
  ElementIterator(const ElementIterator&) = delete;
  ElementIterator& operator=(const ElementIterator&) = delete;

  py::tuple next() {
    std::optional<Element> element;
    {
      py::gil_scoped_release no_gil;
      if (advance_) element = advance_();
    }
    if (!element) {
      py::gil_scoped_release no_gil;
      release();  // ends the pass's threads now, not at garbage collection
      throw py::stop_iteration();
    }
    return to_python(*element);
  }

 private:
  void release() {
    advance_ = nullptr;
    keep_.reset();
  }
  std::function<std::optional<Element>()> advance_;
  std::shared_ptr<void> keep_;
};

/// A Dataset::Iterator with the Dataset kept alive as long as the pass.
struct DatasetPass {
  Dataset dataset;
  Dataset::Iterator it;
  std::optional<Element> next() { return it.next(); }
};

/// Range-for semantics: the Dataset's next epoch (0, 1, ... per Dataset,
/// copies sharing the counter), started at the first next().
struct RangePass {
  Dataset dataset;
  std::optional<Dataset::RangeIterator> it;
  std::optional<Element> next() {
    if (!it) {
      it.emplace(dataset.begin());
    } else {
      ++*it;
    }
    if (!(*it != dataset.end())) return std::nullopt;
    return **it;
  }
};

std::unique_ptr<ElementIterator> start_pass(const Dataset& ds, std::int64_t epoch) {
  std::shared_ptr<DatasetPass> pass;
  {
    py::gil_scoped_release no_gil;
    pass = std::make_shared<DatasetPass>(DatasetPass{ds, ds.iterate(epoch)});
  }
  return std::make_unique<ElementIterator>(pass);
}

/// This rank's micro-batches; each next() also records the share.
struct DistributedPass {
  data::DistributedDataset dataset;
  data::DistributedDataset::Iterator it;
  std::shared_ptr<data::BatchShare> share;
  std::optional<Element> next() {
    auto mb = it.next();
    if (!mb) return std::nullopt;
    // With bad samples skipped the global size is only known as a sum over
    // the ranks: a DistributedOptimizer reading the share refuses it.
    if (share) {
      share->set(mb->local_size, dataset.may_skip_samples() ? data::BatchShare::kUnknownGlobal
                                                            : mb->global_size);
    }
    return std::move(mb->tensors);
  }
};

std::int64_t length(const Dataset& ds) {
  const std::int64_t n = ds.cardinality();
  if (n == data::kInfiniteCardinality) throw py::type_error("the dataset is infinite (repeat())");
  if (n == data::kUnknownCardinality) {
    throw py::type_error("the dataset's length is unknown until iterated (filter/unbatch)");
  }
  return n;
}

void bind_dataset(py::module_& m) {
  py::class_<Dataset>(m, "Dataset",
                      "A lazy input pipeline (tnt::data::Dataset). Elements are tuples of "
                      "tensors; transformations return a new Dataset.")
      .def_static(
          "from_tensor_slices",
          [](const py::object& tensors) { return Dataset::from_tensor_slices(to_element(tensors, "from_tensor_slices")); },
          py::arg("tensors"),
          "Element i is (t[i] for t in tensors); tensors: a tensor or numpy array, or a "
          "tuple/list of them (shared, not copied).")
      .def_static(
          "from_tensors",
          [](const py::object& tensors) { return Dataset::from_tensors(to_element(tensors, "from_tensors")); },
          py::arg("tensors"))
      // Python's two forms: range(stop) and range(start, stop, step=1).
      .def_static(
          "range", [](std::int64_t stop) { return Dataset::range(0, stop, 1); }, py::arg("stop"))
      .def_static("range", py::overload_cast<std::int64_t, std::int64_t, std::int64_t>(&Dataset::range),
                  py::arg("start"), py::arg("stop"), py::arg("step") = 1)
      .def_static("from_generator",
                  [](py::function fn, std::int64_t size) {
                    return Dataset::from_generator(python_generator(std::move(fn)), size);
                  },
                  py::arg("generator"), py::arg("size"),
                  "Element i is generator(i), for i in range(size); called only for the "
                  "elements that are used.")
      .def_static("from_map_style", &from_map_style, py::arg("dataset"),
                  "A map-style dataset (__len__, __getitem__) as a random-access source.")
      .def_static("from_idx", &Dataset::from_idx, py::arg("paths"))
      .def_static("zip", &Dataset::zip, py::arg("datasets"))
      .def(
          "map",
          [](const Dataset& ds, py::function fn, int num_workers) {
            return ds.map(python_map(std::move(fn)), data::MapOptions().num_workers(num_workers));
          },
          py::arg("fn"), py::arg("num_workers") = 1,
          "fn(*components) returns the new element (a tensor or a tuple of them). With "
          "num_workers > 1 it runs on that many threads, each taking the GIL for the call.")
      .def("filter",
           [](const Dataset& ds, py::function fn) { return ds.filter(python_filter(std::move(fn))); },
           py::arg("predicate"))
      .def("shuffle", &Dataset::shuffle, py::arg("buffer_size"), py::arg("seed") = py::none(),
           py::arg("reshuffle_each_iteration") = true,
           "The order is a pure function of (seed, epoch): the same on every rank.")
      .def("batch", &Dataset::batch, py::arg("batch_size"), py::arg("drop_remainder") = false,
           "Batches of batch_size elements: the GLOBAL batch size when distributed.")
      .def("unbatch", &Dataset::unbatch)
      .def("repeat", &Dataset::repeat, py::arg("count") = -1)
      .def("take", &Dataset::take, py::arg("count"))
      .def("skip", &Dataset::skip, py::arg("count"))
      .def("shard", &Dataset::shard, py::arg("num_shards"), py::arg("index"))
      .def("concatenate", &Dataset::concatenate, py::arg("other"))
      .def("enumerate", &Dataset::enumerate, py::arg("start") = 0)
      .def("cache", &Dataset::cache)
      .def("prefetch", &Dataset::prefetch, py::arg("buffer_size") = 1)
      .def("cardinality", &Dataset::cardinality)
      .def("__len__", &length)
      .def("describe", &Dataset::describe)
      .def("may_skip_samples", &Dataset::may_skip_samples,
           "Whether an image source of the pipeline skips bad samples (on_error='skip').")
      .def("samples_skipped", &Dataset::samples_skipped,
           "Bad samples this process's sources of the pipeline have skipped so far.")
      .def("__repr__", [](const Dataset& ds) { return "<tarantella.data.Dataset: " + ds.describe() + ">"; })
      .def("__iter__",
           [](const Dataset& ds) {
             return std::make_unique<ElementIterator>(std::make_shared<RangePass>(RangePass{ds, std::nullopt}));
           },
           "A pass over the next epoch of this dataset (0, 1, 2, ...): reshuffled each time.")
      .def("iterate", &start_pass, py::arg("epoch"),
           "A pass over epoch `epoch` (its shuffle order).");

  py::class_<ElementIterator>(m, "_ElementIterator")
      .def("__iter__", [](py::object self) { return self; })
      .def("__next__", &ElementIterator::next);
}

// The GPU this rank trains on, as the engine picks it (the world's local
// rank over the visible GPUs), or none: no GPU, or TNT_USE_GPU=false
// (--no-gpu).
namespace {
std::optional<torch::Device> rank_training_gpu(const comm::ProcessGroup& group) {
  const int local = group.valid() ? group.world_local_rank()
                                  : (is_initialized() ? world().world_local_rank() : 0);
  const auto gpu = comm::rank_training_gpu(current_config().use_gpu.value_or(true), local);
  if (!gpu) return std::nullopt;
  return torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(*gpu));
}
}  // namespace

void bind_distribution(py::module_& m) {
  py::class_<data::BatchShare, std::shared_ptr<data::BatchShare>>(
      m, "BatchShare",
      "This rank's share of the current global batch, written by a loader and read by a "
      "DistributedOptimizer to weight gradients by n_r / B.")
      .def(py::init<>())
      .def("set", &data::BatchShare::set, py::arg("local"), py::arg("global_size"))
      .def("get", &data::BatchShare::get, "(samples on this rank, samples in the global batch)");

  py::class_<data::DistributedDataset>(m, "DistributedDataset")
      .def(py::init([](const Dataset& ds, const comm::ProcessGroup& group, bool pin_memory) {
             data::DistributeOptions options;
             if (group.valid()) options.group(group);
             if (pin_memory) {
               if (const auto gpu = rank_training_gpu(group)) {
                 options.pin_memory(true).pin_memory_device(*gpu);
               }
             }
             py::gil_scoped_release no_gil;
             return data::DistributedDataset(ds, options);
           }),
           py::arg("dataset"), py::arg("group") = comm::ProcessGroup(),
           py::arg("pin_memory") = false,
           "pin_memory: where this rank trains on a GPU, collate each micro-batch into "
           "page-locked memory for it, on a background thread ahead of the loop")
      .def("cardinality", &data::DistributedDataset::cardinality)
      .def_property_readonly("global_batch_size", &data::DistributedDataset::global_batch_size)
      .def_property_readonly("rank", &data::DistributedDataset::rank)
      .def_property_readonly("size", &data::DistributedDataset::size)
      .def("describe", &data::DistributedDataset::describe)
      .def(
          "iterate",
          [](const data::DistributedDataset& ds, std::int64_t epoch,
             std::shared_ptr<data::BatchShare> share) {
            std::shared_ptr<DistributedPass> pass;
            {
              py::gil_scoped_release no_gil;
              pass = std::make_shared<DistributedPass>(DistributedPass{ds, ds.iterate(epoch), share});
            }
            return std::make_unique<ElementIterator>(pass);
          },
          py::arg("epoch"), py::arg("share") = nullptr,
          "This rank's micro-batches of epoch `epoch`; each one's share goes to `share`.");

  m.def("micro_batch_range", &data::micro_batch_range, py::arg("batch"), py::arg("size"),
        py::arg("rank"), py::arg("granularity") = 1,
        "[begin, end) of `rank`'s samples in a batch of `batch` samples over `size` ranks.");
  m.def("loader_order", &data::detail::loader_order, py::arg("size"), py::arg("shuffle"),
        py::arg("seed"), py::arg("epoch"),
        "The sample order of a loader's epoch (the same on every rank).");
  m.def(
      "dataset_from_python",
      [](const py::object& x, const py::object& y, std::optional<std::int64_t> batch_size,
         bool shuffle, std::uint64_t seed) {
        return dataset_from_python(x, y, batch_size, shuffle, seed);
      },
      py::arg("x"), py::arg("y") = py::none(), py::arg("batch_size") = py::none(),
      py::arg("shuffle") = false, py::arg("seed") = data::kDefaultShuffleSeed,
      "What fit/evaluate/predict accept, as a batched Dataset (GLOBAL batch size).");
}

void bind_datasets(py::module_& m) {
  py::module_ sub = m.def_submodule("datasets", "Ready-made datasets.");
  sub.attr("FASHION_MNIST_DIR") = data::datasets::kFashionMnistDir;
  sub.def("fashion_mnist", &data::datasets::fashion_mnist, py::arg("split"),
          py::arg("dir") = std::string(data::datasets::kFashionMnistDir),
          "Fashion-MNIST 'train' or 'test': (image float32 [1, 28, 28] in [0, 1], label int64).");
  sub.def("mnist_format", &data::datasets::mnist_format, py::arg("images_path"),
          py::arg("labels_path"));
}

}  // namespace

void bind_data(py::module_& m) {
  bind_dataset(m);
  bind_distribution(m);
  bind_datasets(m);
}

}  // namespace tnt::python
