// The per-pixel loops of pixel_kernels.h.
#include "data/pixel_kernels.h"

#include <torch/torch.h>

namespace tnt::data::detail {
namespace {

constexpr float kRoundMagic = 8388608.0f;  // 2^23: floats above have no fraction

// Writes one output row from `level(x)` (x already flipped where asked).
template <typename LevelOf>
void write_row(float* out, std::int64_t width, bool flip, LevelOf level) {
  if (flip) {
    for (std::int64_t x = 0; x < width; ++x) out[x] = level(width - 1 - x);
  } else {
    for (std::int64_t x = 0; x < width; ++x) out[x] = level(x);
  }
}

void check_chw(const torch::Tensor& image, torch::Dtype dtype, const char* what) {
  TORCH_CHECK(image.dim() == 3 && image.scalar_type() == dtype, what, ": expected a [C, H, W] ",
              dtype, " image, got ", image.sizes(), " ", image.scalar_type());
}

}  // namespace

torch::Tensor planar_rgb(const std::uint8_t* hwc, std::int64_t height, std::int64_t width) {
  const std::int64_t plane = height * width;
  torch::Tensor chw = torch::empty({3, height, width}, torch::kUInt8);
  std::uint8_t* r = chw.data_ptr<std::uint8_t>();
  std::uint8_t* g = r + plane;
  std::uint8_t* b = g + plane;
  for (std::int64_t i = 0; i < plane; ++i) {
    r[i] = hwc[3 * i];
    g[i] = hwc[3 * i + 1];
    b[i] = hwc[3 * i + 2];
  }
  return chw;
}

torch::Tensor widen_uint8(const torch::Tensor& chw) {
  check_chw(chw, torch::kUInt8, "widen_uint8");
  const std::int64_t c = chw.size(0), h = chw.size(1), w = chw.size(2);
  const std::int64_t sc = chw.stride(0), sh = chw.stride(1), sw = chw.stride(2);
  torch::Tensor out = torch::empty({c, h, w}, torch::kFloat);
  const std::uint8_t* in = chw.data_ptr<std::uint8_t>();
  float* o = out.data_ptr<float>();
  for (std::int64_t k = 0; k < c; ++k) {
    for (std::int64_t y = 0; y < h; ++y, o += w) {
      const std::uint8_t* row = in + k * sc + y * sh;
      if (sw == 1) {  // the usual crop of a CHW image: a loop the compiler vectorises
        for (std::int64_t x = 0; x < w; ++x) o[x] = static_cast<float>(row[x]);
      } else {
        for (std::int64_t x = 0; x < w; ++x) o[x] = static_cast<float>(row[x * sw]);
      }
    }
  }
  return out;
}

torch::Tensor normalized_levels(const torch::Tensor& mean, const torch::Tensor& std) {
  // Exactly to_float() then normalize() of transforms.cpp, on every level.
  const torch::Tensor v = torch::arange(256, torch::kInt64).to(torch::kUInt8).view({1, 1, 256});
  const torch::Tensor x = v.to(torch::kFloat).div_(255);
  return ((x - mean.to(x.dtype())) / std.to(x.dtype())).reshape({mean.size(0), 256}).contiguous();
}

torch::Tensor lookup_levels(const torch::Tensor& image, const torch::Tensor& levels, bool flip) {
  check_chw(image, torch::kUInt8, "lookup_levels");
  const std::int64_t c = image.size(0), h = image.size(1), w = image.size(2);
  const std::int64_t sc = image.stride(0), sh = image.stride(1), sw = image.stride(2);
  torch::Tensor out = torch::empty({c, h, w}, torch::kFloat);
  const std::uint8_t* in = image.data_ptr<std::uint8_t>();
  float* o = out.data_ptr<float>();
  for (std::int64_t k = 0; k < c; ++k) {
    const float* level = levels.data_ptr<float>() + k * 256;
    for (std::int64_t y = 0; y < h; ++y, o += w) {
      const std::uint8_t* row = in + k * sc + y * sh;
      write_row(o, w, flip, [&](std::int64_t x) { return level[row[x * sw]]; });
    }
  }
  return out;
}

torch::Tensor lookup_rounded_levels(const torch::Tensor& image, const torch::Tensor& levels,
                                    bool flip) {
  check_chw(image, torch::kFloat, "lookup_rounded_levels");
  const torch::Tensor in = image.contiguous();
  const std::int64_t c = in.size(0), h = in.size(1), w = in.size(2);
  torch::Tensor out = torch::empty({c, h, w}, torch::kFloat);
  const float* src = in.data_ptr<float>();
  float* o = out.data_ptr<float>();
  bool in_range = true;
  for (std::int64_t k = 0; k < c; ++k) {
    const float* level = levels.data_ptr<float>() + k * 256;
    for (std::int64_t y = 0; y < h; ++y, o += w, src += w) {
      const float* row = src;
      write_row(o, w, flip, [&](std::int64_t x) {
        // torch.round rounds half to even. Within [-0.5, 255.5) adding and
        // subtracting 2^23 does the same in float's default rounding mode
        // (without a libm call); -0.5 and anything rounding to -0 give 0.
        const float v = row[x];
        const bool ok = v >= -0.5f && v < 255.5f;  // false for NaN too
        in_range = in_range && ok;
        const float r = ((ok ? v : 0.0f) + kRoundMagic) - kRoundMagic;
        return level[static_cast<int>(r)];
      });
    }
  }
  return in_range ? out : torch::Tensor();
}

}  // namespace tnt::data::detail
