// What Keras's fit/evaluate/predict accept, as a batched C++ pipeline: the
// bridge the Model binding uses to hand Python data to the training engine.
//
// A map-style dataset (torch.utils.data.Dataset, torchvision's included, or
// anything with __len__ and __getitem__) becomes a random-access source: the
// distribution asks each rank for its own samples of every global batch
// only, and the GIL is taken only while one sample is read.
#pragma once

#include <cstdint>
#include <optional>

#include <tarantella/data/dataset.h>

#include "python/bindings.h"

namespace tnt::python {

/// The default global batch size when none is given (Keras's).
inline constexpr std::int64_t kDefaultBatchSize = 32;

/// A batched tnt::data::Dataset (GLOBAL batch size) for `x` (and `y`):
///  * a tnt.data.Dataset: returned as it is (already batched by the user);
///    `y` must be None and `global_batch_size` unset;
///  * a torch.Tensor or numpy array, or a tuple/list of them (the components
///    of each sample), with an optional `y` (a tensor/array or a tuple/list
///    of them, appended as further components): sliced along dimension 0;
///  * a map-style dataset: anything with __len__ and __getitem__ whose items
///    are a tuple/list of tensors, numpy arrays or numbers (or one of them);
///    `y` must be None.
/// Then, unless it was a tnt.data.Dataset: with `shuffle`, a uniform shuffle
/// seeded with `seed` and reshuffled each epoch (the same order on every rank:
/// a pure function of seed and epoch), and batch(global_batch_size, default
/// 32), keeping a short last batch. Errors (tnt::Error) name the argument and
/// what is accepted. Call with the GIL held.
data::Dataset dataset_from_python(const py::object& x, const py::object& y,
                                  std::optional<std::int64_t> global_batch_size, bool shuffle,
                                  std::uint64_t seed);

/// dataset_from_python over the data as tnt.Model's fit/evaluate/predict
/// pass them: a tuple (x, y, global batch size or None, shuffle); shuffled
/// with the default shuffle seed (tnt.set_seed). So the batch size crosses
/// into C++ once, with the call that trains on it.
data::Dataset dataset_from_data(const py::tuple& data);

/// A random-access source over a map-style Python dataset: element i is
/// `dataset[i]` converted by to_element, read under the GIL.
data::Dataset from_map_style(const py::object& dataset);

}  // namespace tnt::python
