// The image sources (images.h): random access to files that are read and
// decoded only when their element is asked for. A request for many indices
// (one micro-batch) is decoded on the source's own worker threads.
#include <tarantella/base/error.h>
#include <tarantella/data/images.h>
#include <torch/torch.h>

#include "data/image_samples.h"
#include "data/pixel_kernels.h"
#include "data/worker_pool.h"

namespace tnt::data {

torch::Tensor image_to_tensor(const RgbImage& image) {
  const std::size_t plane = static_cast<std::size_t>(image.width) * image.height;
  TNT_CHECK(image.pixels.size() == plane * 3, "image_to_tensor: a ", image.width, "x", image.height,
            " RGB image needs ", plane * 3, " bytes of pixels, got ", image.pixels.size());
  return detail::planar_rgb(image.pixels.data(), image.height, image.width);
}

namespace detail {
namespace {

class ImageSamplesView final : public Indexed {
 public:
  explicit ImageSamplesView(std::shared_ptr<const ImageSamples> samples)
      : samples_(std::move(samples)) {}
  std::int64_t size() const override { return static_cast<std::int64_t>(samples_->labels.size()); }
  Element get(std::int64_t index) override {
    TNT_CHECK(index >= 0 && index < size(), "internal error: image ", index, " out of range 0..",
              size() - 1);
    const RgbImage image = samples_->decode(index);
    if (samples_->options.decoded_counter()) ++*samples_->options.decoded_counter();
    return {image_to_tensor(image),
            torch::scalar_tensor(samples_->labels[static_cast<std::size_t>(index)], torch::kInt64)};
  }
  std::vector<Element> get_many(const std::vector<std::int64_t>& indices) override {
    const int workers = samples_->options.num_workers();
    if (workers <= 1 || indices.size() <= 1) return Indexed::get_many(indices);
    if (!pool_) pool_ = std::make_unique<WorkerPool>(workers);
    std::vector<Element> out(indices.size());
    pool_->run(static_cast<std::int64_t>(indices.size()), [&](std::int64_t k) {
      const auto j = static_cast<std::size_t>(k);
      out[j] = get(indices[j]);
    });
    return out;
  }

 private:
  std::shared_ptr<const ImageSamples> samples_;
  std::unique_ptr<WorkerPool> pool_;
};

class ImageSamplesNode final : public Node {
 public:
  explicit ImageSamplesNode(std::shared_ptr<const ImageSamples> samples)
      : samples_(std::move(samples)) {}
  std::string name() const override { return samples_->name; }
  std::int64_t cardinality() const override {
    return static_cast<std::int64_t>(samples_->labels.size());
  }
  bool is_indexed() const override { return true; }
  IndexedPtr indexed(PassKey) const override {
    return std::make_shared<ImageSamplesView>(samples_);
  }

 private:
  std::shared_ptr<const ImageSamples> samples_;
};

void check_image_files(const ImageList& list, const ImageOptions& options) {
  TNT_CHECK(list.paths.size() == list.labels.size(), "from_image_files: ", list.paths.size(),
            " paths but ", list.labels.size(), " labels: give one label per file");
  for (std::size_t i = 0; i < list.labels.size(); ++i) {
    TNT_CHECK(list.labels[i] >= 0, "from_image_files: label ", list.labels[i], " of ",
              list.paths[i], " is negative: labels are class indices 0, 1, ...");
  }
  check_image_options(options);
}

}  // namespace

void check_image_options(const ImageOptions& options) {
  TNT_CHECK(options.num_workers() >= 1, "image source: num_workers ", options.num_workers(),
            " is invalid: use 1 (the calling thread) or more");
  TNT_CHECK(options.decode_short_side() >= 0, "image source: decode_short_side ",
            options.decode_short_side(), " is invalid: use 0 (full size) or a positive length");
}

NodePtr make_image_samples(ImageSamples samples) {
  return std::make_shared<ImageSamplesNode>(
      std::make_shared<const ImageSamples>(std::move(samples)));
}

}  // namespace detail

Dataset from_image_files(const ImageList& list, const ImageOptions& options) {
  detail::check_image_files(list, options);
  auto paths = std::make_shared<const std::vector<std::string>>(list.paths);
  const int short_side = options.decode_short_side();
  detail::ImageSamples samples{"images(" + std::to_string(list.paths.size()) + ")", list.labels,
                               [paths, short_side](std::int64_t i) {
                                 return read_image((*paths)[static_cast<std::size_t>(i)],
                                                   short_side);
                               },
                               options};
  return Dataset(detail::make_image_samples(std::move(samples)));
}

Dataset from_image_folder(const std::string& dir, const ImageOptions& options,
                          const std::vector<std::string>& classes) {
  return from_image_files(list_image_folder(dir, classes), options);
}

}  // namespace tnt::data
