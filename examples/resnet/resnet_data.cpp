#include "resnet_data.h"

#include <ATen/CPUGeneratorImpl.h>
#include <tarantella/data/datasets.h>
#include <tarantella/data/images.h>
#include <tarantella/data/transforms.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace resnet_example {
namespace {

namespace data = tnt::data;
namespace F = torch::nn::functional;
namespace T = tnt::data::transforms;

// Channel statistics the inputs are normalized with.
constexpr double kFashionMnistMean = 0.2860;
constexpr double kFashionMnistStd = 0.3530;

// Scales [C, H, W] so that its shorter side is `size` (bilinear, antialiased
// when shrinking), then cuts out the central size x size square.
torch::Tensor resize_center_crop(torch::Tensor chw, int size) {
  const std::int64_t h = chw.size(1), w = chw.size(2);
  const double scale = static_cast<double>(size) / static_cast<double>(std::min(h, w));
  const std::int64_t nh = std::max<std::int64_t>(size, std::llround(h * scale));
  const std::int64_t nw = std::max<std::int64_t>(size, std::llround(w * scale));
  if (nh != h || nw != w) {
    chw = F::interpolate(chw.unsqueeze(0), F::InterpolateFuncOptions()
                                               .size(std::vector<std::int64_t>{nh, nw})
                                               .mode(torch::kBilinear)
                                               .align_corners(false)
                                               .antialias(scale < 1.0))
              .squeeze(0);
  }
  const std::int64_t top = (nh - size) / 2, left = (nw - size) / 2;
  return chw.slice(1, top, top + size).slice(2, left, left + size);
}

std::optional<data::Dataset> optional_split(std::int64_t size, const data::Dataset& ds) {
  if (size == 0) return std::nullopt;
  return ds;
}

// Fashion-MNIST, 28x28 gray, resized to S and replicated to three channels
// so that the same RGB networks train on it.
Data fashion_mnist_data(const DataOptions& o) {
  const int size = o.image_size;
  data::MapFunction prepare = [size](data::Element e) {
    torch::Tensor gray = resize_center_crop(e[0], size);
    gray = (gray - kFashionMnistMean) / kFashionMnistStd;
    return data::Element{gray.expand({3, size, size}).contiguous(), e[1]};
  };
  const auto map_options = data::MapOptions().num_workers(o.workers);
  data::Dataset train = data::datasets::fashion_mnist("train", o.fashion_mnist_dir);
  if (o.train_size > 0) train = train.take(o.train_size);
  const std::int64_t val_size = o.val_size < 0 ? 10000 : o.val_size;
  const data::Dataset val =
      data::datasets::fashion_mnist("test", o.fashion_mnist_dir).take(val_size);
  Data d{train.map(prepare, map_options), optional_split(val_size, val.map(prepare, map_options)),
         10,
         "Fashion-MNIST resized to " + std::to_string(size) + "x" + std::to_string(size) +
             ", 3 channels (validation: the test split)",
         nullptr};
  return d;
}

// Random ImageNet-shaped images and labels, generated where they are used.
// Sample i comes from its own generator seeded with (seed, i): the same
// data at any rank count, and no generator shared between threads.
Data synthetic_data(const DataOptions& o) {
  const int size = o.image_size, classes = o.num_classes;
  const std::uint64_t seed = o.seed;
  data::MapFunction generate = [size, classes, seed](data::Element e) {
    const auto i = static_cast<std::uint64_t>(e[0].item<std::int64_t>());
    auto gen = at::make_generator<at::CPUGeneratorImpl>(seed ^ (0x9E3779B97F4A7C15ULL * (i + 1)));
    torch::Tensor image = torch::randn({3, size, size}, gen);
    torch::Tensor label = torch::randint(classes, {}, gen, torch::kLong);
    return data::Element{image, label};
  };
  const auto map_options = data::MapOptions().num_workers(o.workers);
  const std::int64_t train_size = o.train_size > 0 ? o.train_size : 1280;
  const std::int64_t val_size = std::max<std::int64_t>(o.val_size, 0);
  Data d{data::Dataset::range(train_size).map(generate, map_options),
         optional_split(
             val_size,
             data::Dataset::range(train_size, train_size + val_size).map(generate, map_options)),
         classes,
         "synthetic " + std::to_string(size) + "x" + std::to_string(size) + " images, " +
             std::to_string(classes) + " classes",
         nullptr};
  return d;
}

// An image folder through the library: the source lists names only and
// decodes an image where its element is asked for, below the batch, so each
// rank decodes only its own samples of every global batch. Training uses the
// Goyal et al. recipe (random resized crop and flip, full-size decode);
// validation resizes and center-crops (JPEGs DCT-scaled towards the size).
data::Dataset decoded_images(const data::ImageList& images, const DataOptions& o, bool train,
                             const std::shared_ptr<std::atomic<std::int64_t>>& decoded) {
  // [snippet:resnet_decode_after_distribution]
  const int size = o.image_size;
  auto source = data::ImageOptions().num_workers(o.workers).decoded_counter(decoded);
  if (!train) source.decode_short_side(size);
  const T::Transform transform =
      train ? T::compose({T::random_resized_crop(size), T::random_horizontal_flip(), T::to_float(),
                          T::normalize(T::kImageNetMean, T::kImageNetStd)})
            : T::compose({T::resize(size), T::center_crop(size), T::to_float(),
                          T::normalize(T::kImageNetMean, T::kImageNetStd)});
  // Random draws seeded by (seed, epoch, sample): the same at any rank count.
  return data::from_image_files(images, source)
      .map_seeded(transform, o.seed, data::MapOptions().num_workers(o.workers));
  // [end]
}

Data image_folder_data(const DataOptions& o) {
  if (o.train_dir.empty()) {
    throw std::invalid_argument("--data images needs --train-dir DIR (DIR/<class>/<image>)");
  }
  const data::ImageList train = data::list_image_folder(o.train_dir);
  auto decoded = std::make_shared<std::atomic<std::int64_t>>(0);
  Data d{decoded_images(train, o, /*train=*/true, decoded), std::nullopt,
         static_cast<int>(train.classes.size()), "", decoded};
  std::string val_text = "no validation folder";
  if (!o.val_dir.empty()) {
    const data::ImageList val = data::list_image_folder(o.val_dir, train.classes);
    d.val = decoded_images(val, o, /*train=*/false, decoded);
    val_text = std::to_string(val.paths.size()) + " validation images";
  }
  d.description = std::to_string(train.paths.size()) + " images of " +
                  std::to_string(train.classes.size()) + " classes in " + o.train_dir + ", " +
                  val_text + ", random resized crops of " + std::to_string(o.image_size) + "x" +
                  std::to_string(o.image_size) +
                  " and flips (validation: resized and center-cropped)";
  return d;
}

}  // namespace

Data load_data(const DataOptions& options) {
  if (options.source == "fashion-mnist") return fashion_mnist_data(options);
  if (options.source == "synthetic") return synthetic_data(options);
  if (options.source == "images") return image_folder_data(options);
  throw std::invalid_argument("unknown --data '" + options.source +
                              "': use fashion-mnist, images or synthetic");
}

}  // namespace resnet_example
