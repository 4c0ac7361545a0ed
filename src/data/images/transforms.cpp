// The image transformations of transforms.h. Where torchvision defines the
// behaviour (output sizes, rounding, the order and kind of random draws), it
// is followed step by step, so that results can be compared with it. A
// uint8 image is resized as Pillow resizes it (torchvision's PIL path, bit
// for bit: pixel_kernels.h); a float image by LibTorch's antialiased
// bilinear interpolation (torchvision's tensor path).
//
// Note: fusion. Step by step, the Goyal training chain on a uint8 image is
// crop, resize, flip, widen to float, divide by 255, subtract the mean,
// divide by the std: five tensors per sample. compose() recognises the steps
// made here (each is a named function object, found with
// std::function::target) and runs a tail of [random_resized_crop]
// [random_horizontal_flip] to_float normalize as one FusedTail: the same
// random draws in the same order, the same resize, then one table lookup per
// pixel (exact, pixel_kernels.h says why). Inputs the fast path does not
// cover (float images, a channel count normalize refuses) take the
// step-by-step path.
#include <tarantella/base/error.h>
#include <tarantella/data/transforms.h>
#include <torch/torch.h>

#include <cmath>
#include <optional>

#include "data/images/pixel_kernels.h"

namespace tnt::data::transforms {
namespace {

namespace F = torch::nn::functional;

torch::Tensor& image_of(Element& e, const char* what) {
  TNT_CHECK(!e.empty() && e[0].defined() && e[0].dim() == 3, what,
            ": the first tensor of an element must be an image [C, H, W], got ",
            e.empty() || !e[0].defined() ? std::string("none") : std::to_string(e[0].dim()) + "-D",
            ": decode images first (from_image_folder) and apply transforms before batch");
  // Transforms run on the pipeline's threads, on host memory.
  TNT_CHECK(e[0].device().is_cpu(), what, ": the image is on ", e[0].device(),
            ", but image transforms work on host memory: build the dataset from CPU tensors "
            "(fit copies each batch to the GPU itself, pinned and without waiting)");
  return e[0];
}

// The antialiased bilinear interpolation of a float [C, H, W] image.
torch::Tensor interpolate_float(const torch::Tensor& x, std::int64_t h, std::int64_t w) {
  return F::interpolate(x.unsqueeze(0), F::InterpolateFuncOptions()
                                            .size(std::vector<std::int64_t>{h, w})
                                            .mode(torch::kBilinear)
                                            .align_corners(false)
                                            .antialias(true))
      .squeeze(0);
}

// Bilinear, antialiased: a uint8 image as Pillow, a float one as LibTorch.
torch::Tensor resize_to(const torch::Tensor& chw, std::int64_t h, std::int64_t w) {
  if (chw.size(1) == h && chw.size(2) == w) return chw;
  if (chw.scalar_type() == torch::kUInt8) return detail::resize_uint8(chw, h, w);
  return interpolate_float(chw, h, w);
}

torch::Tensor crop(const torch::Tensor& chw, const CropBox& b) {
  return chw.slice(1, b.top, b.top + b.height).slice(2, b.left, b.left + b.width);
}

void check_positive(const char* what, double value) {
  TNT_CHECK(value > 0, what, " ", value, " is invalid: use a positive size");
}

// The central crop torchvision falls back to after 10 failed tries.
CropBox fallback_box(std::int64_t height, std::int64_t width, std::pair<double, double> ratio) {
  const double in_ratio = static_cast<double>(width) / static_cast<double>(height);
  std::int64_t w = width, h = height;
  if (in_ratio < std::min(ratio.first, ratio.second)) {
    h = static_cast<std::int64_t>(std::nearbyint(w / std::min(ratio.first, ratio.second)));
  } else if (in_ratio > std::max(ratio.first, ratio.second)) {
    w = static_cast<std::int64_t>(std::nearbyint(h * std::max(ratio.first, ratio.second)));
  }
  return {(height - h) / 2, (width - w) / 2, h, w};
}

// One draw of torch.empty(1).uniform_(lo, hi).item(): float32, widened.
double uniform_draw(double lo, double hi, at::Generator& gen) {
  return torch::empty({1}).uniform_(lo, hi, gen).item<double>();
}

void check_crop_options(const RandomResizedCropOptions& o) {
  check_positive("random_resized_crop: size", o.size());
  TNT_CHECK(o.scale().first > 0 && o.scale().first <= o.scale().second,
            "random_resized_crop: ", "scale range (", o.scale().first, ", ", o.scale().second,
            ") is invalid: use 0 < lo <= hi, e.g. (0.08, 1.0)");
  TNT_CHECK(o.ratio().first > 0 && o.ratio().first <= o.ratio().second,
            "random_resized_crop: ", "ratio range (", o.ratio().first, ", ", o.ratio().second,
            ") is invalid: use 0 < lo <= hi, e.g. (0.75, 1.3333)");
}

// The steps compose() can fuse are function objects of these types.
struct RandomResizedCropStep {
  RandomResizedCropOptions options;
  Element operator()(Element e, at::Generator& gen) const {
    torch::Tensor& image = image_of(e, "random_resized_crop");
    const CropBox box = random_resized_crop_box(image.size(1), image.size(2), options, gen);
    image = resize_to(crop(image, box), options.size(), options.size()).contiguous();
    return e;
  }
};

struct FlipStep {
  double p;
  bool draw(at::Generator& gen) const { return torch::rand({1}, gen).item<double>() < p; }
  Element operator()(Element e, at::Generator& gen) const {
    torch::Tensor& image = image_of(e, "random_horizontal_flip");
    if (draw(gen)) image = image.flip({2});
    return e;
  }
};

struct ToFloatStep {
  Element operator()(Element e, at::Generator&) const {
    torch::Tensor& image = image_of(e, "to_float");
    if (image.scalar_type() == torch::kUInt8) image = image.to(torch::kFloat).div_(255);
    return e;
  }
};

struct NormalizeStep {
  torch::Tensor mean, std;  // float [C, 1, 1]
  Element operator()(Element e, at::Generator&) const {
    torch::Tensor& image = image_of(e, "normalize");
    TNT_CHECK(image.is_floating_point(), "normalize: the image is ", image.scalar_type(),
              ": convert it with to_float() first");
    TNT_CHECK(image.size(0) == mean.size(0), "normalize: the image has ", image.size(0),
              " channels but ", mean.size(0), " means were given");
    image = (image - mean.to(image.dtype())) / std.to(image.dtype());
    return e;
  }
};

// [random_resized_crop] [random_horizontal_flip] to_float normalize in one
// pass after the interpolation (see the note at the top).
struct FusedTail {
  std::optional<RandomResizedCropStep> crop;
  std::optional<FlipStep> flip;
  NormalizeStep normalize;
  torch::Tensor levels;  // normalize(to_float(v)), float [C, 256]

  Element operator()(Element e, at::Generator& gen) const {
    // The first transform of the tail names itself in the error.
    torch::Tensor& image = image_of(e, crop   ? "random_resized_crop"
                                       : flip ? "random_horizontal_flip"
                                              : "to_float");
    if (image.scalar_type() != torch::kUInt8 || image.size(0) != levels.size(0)) {
      return step_by_step(std::move(e), gen);
    }
    torch::Tensor pixels = image;
    if (crop) {
      const CropBox box = random_resized_crop_box(image.size(1), image.size(2), crop->options, gen);
      const std::int64_t size = crop->options.size();
      pixels = resize_to(transforms::crop(image, box), size, size);
    }
    const bool flipped = flip && flip->draw(gen);
    image = detail::lookup_levels(pixels, levels, flipped);
    return e;
  }

  Element step_by_step(Element e, at::Generator& gen) const {
    if (crop) e = (*crop)(std::move(e), gen);
    if (flip) e = (*flip)(std::move(e), gen);
    return normalize(ToFloatStep()(std::move(e), gen), gen);
  }
};

template <typename Step>
const Step* as(const Transform& t) {
  return t.target<Step>();
}

// The longest fusable tail starting at steps[i], or nullopt; `used` is how
// many steps it replaces.
std::optional<FusedTail> fuse_at(const std::vector<Transform>& steps, std::size_t i,
                                 std::size_t& used) {
  FusedTail tail;
  std::size_t k = i;
  if (k < steps.size() && as<RandomResizedCropStep>(steps[k])) {
    tail.crop = *as<RandomResizedCropStep>(steps[k++]);
  }
  if (k < steps.size() && as<FlipStep>(steps[k])) tail.flip = *as<FlipStep>(steps[k++]);
  if (k + 1 >= steps.size() || !as<ToFloatStep>(steps[k]) || !as<NormalizeStep>(steps[k + 1])) {
    return std::nullopt;
  }
  tail.normalize = *as<NormalizeStep>(steps[k + 1]);
  tail.levels = detail::normalized_levels(tail.normalize.mean, tail.normalize.std);
  used = k + 2 - i;
  return tail;
}

std::vector<Transform> fused(const std::vector<Transform>& steps) {
  std::vector<Transform> out;
  for (std::size_t i = 0; i < steps.size();) {
    std::size_t used = 0;
    if (auto tail = fuse_at(steps, i, used)) {
      out.emplace_back(std::move(*tail));
      i += used;
    } else {
      out.push_back(steps[i++]);
    }
  }
  return out;
}

}  // namespace

Transform compose(std::vector<Transform> steps) {
  for (std::size_t i = 0; i < steps.size(); ++i) {
    TNT_CHECK(steps[i], "compose: transform ", i, " is empty");
  }
  return [steps = fused(steps)](Element e, at::Generator& gen) {
    for (const auto& step : steps) e = step(std::move(e), gen);
    return e;
  };
}

Transform resize(int shorter_side) {
  check_positive("resize: shorter side", shorter_side);
  return [shorter_side](Element e, at::Generator&) {
    torch::Tensor& image = image_of(e, "resize");
    const std::int64_t h = image.size(1), w = image.size(2);
    const std::int64_t short_side = std::min(h, w), long_side = std::max(h, w);
    const auto new_long =
        static_cast<std::int64_t>(static_cast<double>(shorter_side) *
                                  static_cast<double>(long_side) / static_cast<double>(short_side));
    image = w <= h ? resize_to(image, new_long, shorter_side)
                   : resize_to(image, shorter_side, new_long);
    return e;
  };
}

Transform center_crop(int size) {
  check_positive("center_crop: size", size);
  return [size](Element e, at::Generator&) {
    torch::Tensor& image = image_of(e, "center_crop");
    const std::int64_t h = image.size(1), w = image.size(2);
    TNT_CHECK(h >= size && w >= size, "center_crop(", size, "): the image is only ", h, "x", w,
              ": resize it first, e.g. resize(", size, ") before center_crop(", size, ")");
    const auto top = static_cast<std::int64_t>(std::nearbyint((h - size) / 2.0));
    const auto left = static_cast<std::int64_t>(std::nearbyint((w - size) / 2.0));
    image = crop(image, {top, left, size, size}).contiguous();
    return e;
  };
}

CropBox random_resized_crop_box(std::int64_t height, std::int64_t width,
                                const RandomResizedCropOptions& options, at::Generator& gen) {
  const double area = static_cast<double>(height * width);
  const auto log_ratio = torch::log(torch::tensor({options.ratio().first, options.ratio().second},
                                                  torch::TensorOptions(torch::kFloat)));
  const double log_lo = log_ratio[0].item<double>(), log_hi = log_ratio[1].item<double>();
  for (int attempt = 0; attempt < 10; ++attempt) {
    const double target_area =
        area * uniform_draw(options.scale().first, options.scale().second, gen);
    const double aspect =
        torch::exp(torch::empty({1}).uniform_(log_lo, log_hi, gen)).item<double>();
    const auto w = static_cast<std::int64_t>(std::nearbyint(std::sqrt(target_area * aspect)));
    const auto h = static_cast<std::int64_t>(std::nearbyint(std::sqrt(target_area / aspect)));
    if (0 < w && w <= width && 0 < h && h <= height) {
      const auto top = torch::randint(0, height - h + 1, {1}, gen).item<std::int64_t>();
      const auto left = torch::randint(0, width - w + 1, {1}, gen).item<std::int64_t>();
      return {top, left, h, w};
    }
  }
  return fallback_box(height, width, options.ratio());
}

Transform random_resized_crop(const RandomResizedCropOptions& options) {
  check_crop_options(options);
  return RandomResizedCropStep{options};
}

Transform random_resized_crop(int size) {
  return random_resized_crop(RandomResizedCropOptions(size));
}

Transform random_horizontal_flip(double p) {
  TNT_CHECK(p >= 0 && p <= 1, "random_horizontal_flip: probability ", p, " is invalid: use 0..1");
  return FlipStep{p};
}

Transform to_float() { return ToFloatStep(); }

Transform normalize(std::vector<double> mean, std::vector<double> std) {
  TNT_CHECK(!mean.empty() && mean.size() == std.size(), "normalize: ", mean.size(), " means but ",
            std.size(), " standard deviations: give one of each per channel");
  for (double s : std) TNT_CHECK(s > 0, "normalize: standard deviation ", s, " must be positive");
  const auto shape = std::vector<std::int64_t>{static_cast<std::int64_t>(mean.size()), 1, 1};
  return NormalizeStep{torch::tensor(mean, torch::kFloat).view(shape),
                       torch::tensor(std, torch::kFloat).view(shape)};
}

}  // namespace tnt::data::transforms
