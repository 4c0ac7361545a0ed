// The image sources, tar shards and seeded transforms of tnt::data, for
// Python (tnt.data.from_image_folder, tnt.data.transforms, ...). The
// transforms stay C++ functions: Dataset.map_seeded runs them on the
// pipeline's worker threads without the GIL, each drawing from the
// generator seeded by (seed, epoch, sample position), so a Python script
// gets the same augmented tensors as the C++ library at any rank and worker
// count.
#include "python/bindings.h"

#include <tarantella/data/images.h>
#include <tarantella/data/shards.h>
#include <tarantella/data/transforms.h>

#include <ATen/CPUGeneratorImpl.h>

#include <optional>
#include <string>
#include <vector>

namespace tnt::python {

namespace {

namespace T = data::transforms;

// Holds a transform for Python. Not the std::function itself: pybind11's
// std::function caster (torch/extension.h includes it) would turn it into a
// Python callable, and the pipeline would call back into Python under the
// GIL for every sample.
struct PyTransform {
  T::Transform fn;
};

template <typename... Args, typename... Params>
void def_transform(py::module_& t, const char* name, T::Transform (*make)(Params...), Args&&... args) {
  t.def(
      name, [make](Params... params) { return PyTransform{make(params...)}; },
      std::forward<Args>(args)...);
}

// on_error is "raise" or "skip" (data::OnBadSample); anything else is a ValueError.
data::ImageOptions image_options(int num_workers, int decode_short_side,
                                 const std::string& on_error) {
  if (on_error != "raise" && on_error != "skip") {
    throw py::value_error("on_error '" + on_error +
                          "' is invalid: use 'raise' (a bad image is an error) or 'skip' (it is "
                          "dropped with a warning)");
  }
  return data::ImageOptions()
      .num_workers(num_workers)
      .decode_short_side(decode_short_side)
      .on_error(on_error == "skip" ? data::OnBadSample::skip : data::OnBadSample::raise);
}

void bind_transforms(py::module_& m) {
  py::module_ t = m.def_submodule(
      "transforms", "Seeded image transforms (tnt::data::transforms) for Dataset.map_seeded.");
  py::class_<PyTransform>(t, "Transform",
                           "A per-sample C++ transformation of an element's image (its first "
                           "tensor, [C, H, W]); the other tensors pass through.")
      .def(
          "__call__",
          [](const PyTransform& transform, const py::object& element, std::uint64_t seed) {
            data::Element in;
            if (py::isinstance<py::tuple>(element) || py::isinstance<py::list>(element)) {
              for (const auto& item : element) in.push_back(py::cast<at::Tensor>(item));
            } else {
              in.push_back(py::cast<at::Tensor>(element));
            }
            data::Element out;
            {
              py::gil_scoped_release no_gil;
              at::Generator generator = at::make_generator<at::CPUGeneratorImpl>(seed);
              out = transform.fn(std::move(in), generator);
            }
            py::tuple result(out.size());
            for (std::size_t i = 0; i < out.size(); ++i) result[i] = py::cast(out[i]);
            return result;
          },
          py::arg("element"), py::arg("seed") = 0,
          "Applies the transform to an image tensor or a tuple of tensors with a generator "
          "seeded by `seed` (for trying it out; in a pipeline use Dataset.map_seeded). "
          "Returns a tuple.");
  t.attr("IMAGENET_MEAN") = T::kImageNetMean;
  t.attr("IMAGENET_STD") = T::kImageNetStd;
  t.def(
      "compose",
      [](const std::vector<PyTransform>& steps) {
        std::vector<T::Transform> fns;
        for (const auto& step : steps) fns.push_back(step.fn);
        return PyTransform{T::compose(std::move(fns))};
      },
      py::arg("steps"), "The transforms applied in order, all drawing from the same generator.");
  def_transform(t, "resize", &T::resize, py::arg("shorter_side"));
  def_transform(t, "center_crop", &T::center_crop, py::arg("size"));
  t.def(
      "random_resized_crop",
      [](int size, std::pair<double, double> scale, std::pair<double, double> ratio) {
        return PyTransform{T::random_resized_crop(
            T::RandomResizedCropOptions(size).scale(scale.first, scale.second).ratio(ratio.first, ratio.second))};
      },
      py::arg("size"), py::arg("scale") = std::make_pair(0.08, 1.0),
      py::arg("ratio") = std::make_pair(3.0 / 4.0, 4.0 / 3.0));
  def_transform(t, "random_horizontal_flip", &T::random_horizontal_flip, py::arg("p") = 0.5);
  def_transform(t, "to_float", &T::to_float);
  def_transform(t, "normalize", &T::normalize, py::arg("mean"), py::arg("std"));
}

void bind_sources(py::module_& m) {
  m.def(
      "list_image_folder",
      [](const std::string& dir, const std::vector<std::string>& classes) {
        const data::ImageList list = data::list_image_folder(dir, classes);
        return py::make_tuple(list.paths, list.labels, list.classes);
      },
      py::arg("dir"), py::arg("classes") = std::vector<std::string>{},
      "(paths, labels, classes) of an ImageNet-layout folder, sorted by class, then file name.");
  m.def(
      "from_image_folder",
      [](const std::string& dir, int num_workers, int decode_short_side,
         const std::vector<std::string>& classes, const std::string& on_error) {
        return data::from_image_folder(
            dir, image_options(num_workers, decode_short_side, on_error), classes);
      },
      py::arg("dir"), py::arg("num_workers") = 1, py::arg("decode_short_side") = 0,
      py::arg("classes") = std::vector<std::string>{}, py::arg("on_error") = "raise");
  m.def(
      "from_image_files",
      [](const std::vector<std::string>& paths, const std::vector<std::int64_t>& labels,
         int num_workers, int decode_short_side, const std::string& on_error) {
        return data::from_image_files(data::ImageList{{}, paths, labels},
                                      image_options(num_workers, decode_short_side, on_error));
      },
      py::arg("paths"), py::arg("labels"), py::arg("num_workers") = 1,
      py::arg("decode_short_side") = 0, py::arg("on_error") = "raise");
  m.def(
      "from_image_shards",
      [](const std::vector<std::string>& shards, int num_workers, int decode_short_side,
         bool build_index, const std::string& on_error) {
        return data::from_image_shards(
            shards, image_options(num_workers, decode_short_side, on_error),
            build_index ? data::ShardIndexPolicy::Build : data::ShardIndexPolicy::Refuse);
      },
      py::arg("shards"), py::arg("num_workers") = 1, py::arg("decode_short_side") = 0,
      py::arg("build_index") = true, py::arg("on_error") = "raise");
  m.def(
      "pack_image_shards",
      [](const std::vector<std::string>& paths, const std::vector<std::int64_t>& labels,
         const std::string& prefix, std::int64_t samples_per_shard) {
        py::gil_scoped_release no_gil;
        return data::pack_image_shards(data::ImageList{{}, paths, labels}, prefix, samples_per_shard);
      },
      py::arg("paths"), py::arg("labels"), py::arg("prefix"), py::arg("samples_per_shard"));
  m.def("index_image_shard", &data::index_image_shard, py::arg("shard"),
        py::call_guard<py::gil_scoped_release>());
}

}  // namespace

void bind_images(py::module_& m) {
  bind_transforms(m);
  bind_sources(m);
  // Dataset is bound by bind_data (called before this); map_seeded joins it.
  auto dataset = py::reinterpret_borrow<py::class_<data::Dataset>>(m.attr("Dataset"));
  dataset.def(
      "map_seeded",
      [](const data::Dataset& ds, const PyTransform& transform, std::optional<std::uint64_t> seed,
         int num_workers) {
        return ds.map_seeded(transform.fn, seed, data::MapOptions().num_workers(num_workers));
      },
      py::arg("transform"), py::arg("seed") = py::none(), py::arg("num_workers") = 1,
      "Applies a tnt.data.transforms transform (C++, run without the GIL) to every element, "
      "drawing from a generator seeded by (seed, epoch, position): the same tensors at any "
      "rank and worker count. Place it before batch.");
}

}  // namespace tnt::python
