// The image sources (images.h): random access to files that are read and
// decoded only when their element is asked for. A request for many indices
// (one micro-batch) is decoded on the source's own worker threads. With
// OnBadSample::skip a sample that cannot be read or decoded becomes a
// dropped element (no tensors, element_ops.h), which the nodes above pass
// on and batching leaves out, so no image is ever paired with another's
// label.
#include <tarantella/base/error.h>
#include <tarantella/base/logging.h>
#include <tarantella/data/images.h>
#include <torch/torch.h>

#include <string_view>

#include "data/images/image_samples.h"
#include "data/images/pixel_kernels.h"
#include "data/pipeline/worker_pool.h"

namespace tnt::data {

torch::Tensor image_to_tensor(const RgbImage& image) {
  const std::size_t plane = static_cast<std::size_t>(image.width) * image.height;
  TNT_CHECK(image.pixels.size() == plane * 3, "image_to_tensor: a ", image.width, "x", image.height,
            " RGB image needs ", plane * 3, " bytes of pixels, got ", image.pixels.size());
  return detail::planar_rgb(image.pixels.data(), image.height, image.width);
}

namespace detail {
namespace {

// A source and the count of the samples it dropped (never null).
struct Source {
  ImageSamples samples;
  SkipCounter skipped;
};

// Counts and reports a dropped sample: one warning, on the rank that read it.
void drop(const Source& source, std::int64_t i, std::string_view reason) {
  // The warning line names the rank already; the error's own prefix goes.
  const std::size_t prefix_end = reason.find("] ");
  if (reason.substr(0, 11) == "[tarantella" && prefix_end != std::string_view::npos) {
    reason.remove_prefix(prefix_end + 2);
  }
  const ImageSamples& s = source.samples;
  ++*source.skipped;
  if (s.options.skipped_counter()) ++*s.options.skipped_counter();
  log::write_on_every_rank(
      LogLevel::Warning,
      tnt::detail::concat(s.name, ": skipped bad sample ", i, " (label ",
                          s.labels[static_cast<std::size_t>(i)], "): ", reason));
}

// Sample i's pixels, or nullopt when the skip policy drops it. Only the
// sample's own faults are skipped: a failure to read a shard (missing, or
// shorter than its index) is the dataset's and stays an error.
std::optional<RgbImage> decode_sample(const Source& source, std::int64_t i) {
  const ImageSamples& s = source.samples;
  std::optional<EncodedSample> encoded;
  if (!s.read_fault_is_the_samples) encoded = s.read(i);  // not caught
  try {
    if (!encoded) encoded = s.read(i);
    return decode_image(encoded->bytes.data(), encoded->bytes.size(), encoded->name,
                        s.options.decode_short_side());
  } catch (const std::exception& e) {
    if (s.options.on_error() != OnBadSample::skip) throw;
    drop(source, i, e.what());
    return std::nullopt;
  }
}

class ImageSamplesView final : public Indexed {
 public:
  explicit ImageSamplesView(std::shared_ptr<const Source> source) : source_(std::move(source)) {}
  std::int64_t size() const override {
    return static_cast<std::int64_t>(source_->samples.labels.size());
  }
  Element get(std::int64_t index) override {
    TNT_CHECK(index >= 0 && index < size(), "internal error: image ", index, " out of range 0..",
              size() - 1);
    const std::optional<RgbImage> image = decode_sample(*source_, index);
    if (!image) return {};  // dropped: never a sample with another's label
    const ImageOptions& options = source_->samples.options;
    if (options.decoded_counter()) ++*options.decoded_counter();
    return {image_to_tensor(*image),
            torch::scalar_tensor(source_->samples.labels[static_cast<std::size_t>(index)],
                                 torch::kInt64)};
  }
  std::vector<Element> get_many(const std::vector<std::int64_t>& indices) override {
    const int workers = source_->samples.options.num_workers();
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
  std::shared_ptr<const Source> source_;
  std::unique_ptr<WorkerPool> pool_;
};

class ImageSamplesNode final : public Node {
 public:
  explicit ImageSamplesNode(std::shared_ptr<const Source> source) : source_(std::move(source)) {}
  std::string name() const override {
    return source_->samples.name +
           (source_->samples.options.on_error() == OnBadSample::skip ? " [skips bad samples]" : "");
  }
  std::int64_t cardinality() const override {
    return static_cast<std::int64_t>(source_->samples.labels.size());
  }
  bool is_indexed() const override { return true; }
  IndexedPtr indexed(PassKey) const override { return std::make_shared<ImageSamplesView>(source_); }
  void skip_counters(std::vector<SkipCounter>& out) const override {
    if (source_->samples.options.on_error() == OnBadSample::skip) out.push_back(source_->skipped);
  }

 private:
  std::shared_ptr<const Source> source_;
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
  TNT_CHECK(options.on_error() == OnBadSample::raise || options.on_error() == OnBadSample::skip,
            "image source: on_error ", static_cast<int>(options.on_error()),
            " is invalid: use OnBadSample::raise or OnBadSample::skip");
  TNT_CHECK(options.decode_short_side() >= 0, "image source: decode_short_side ",
            options.decode_short_side(), " is invalid: use 0 (full size) or a positive length");
}

NodePtr make_image_samples(ImageSamples samples) {
  return std::make_shared<ImageSamplesNode>(std::make_shared<const Source>(
      Source{std::move(samples), std::make_shared<std::atomic<std::int64_t>>(0)}));
}

}  // namespace detail

Dataset from_image_files(const ImageList& list, const ImageOptions& options) {
  detail::check_image_files(list, options);
  auto paths = std::make_shared<const std::vector<std::string>>(list.paths);
  detail::ImageSamples samples{"images(" + std::to_string(list.paths.size()) + ")", list.labels,
                               [paths](std::int64_t i) {
                                 const std::string& path = (*paths)[static_cast<std::size_t>(i)];
                                 return detail::EncodedSample{read_file_bytes(path), path};
                               },
                               /*read_fault_is_the_samples=*/true, options};
  return Dataset(detail::make_image_samples(std::move(samples)));
}

Dataset from_image_folder(const std::string& dir, const ImageOptions& options,
                          const std::vector<std::string>& classes) {
  return from_image_files(list_image_folder(dir, classes), options);
}

}  // namespace tnt::data
