// The per-pixel loops of pixel_kernels.h.
#include "data/images/pixel_kernels.h"

#include <torch/torch.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
#include <memory>
#include <vector>

namespace tnt::data::detail {
namespace {

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
  // These kernels read the pixels on the host.
  TORCH_CHECK(image.device().is_cpu(), what, ": expected an image in host memory, got one on ",
              image.device());
}

// Pillow's resampling (libImaging/Resample.c, the 8-bit path), which
// torchvision's PIL path runs for Resize and RandomResizedCrop with
// BILINEAR: the triangle filter widened by the scale when shrinking, weights
// computed in double, normalised, then rounded to fixed point with 22
// fraction bits; each pass adds half a unit, shifts and clamps to 0..255.
// Integer sums do not depend on their order, so any loop order gives
// Pillow's bits.
constexpr int kPrecisionBits = 32 - 8 - 2;

// The hot loops are also compiled for AVX2 and picked at run time (GCC's
// function multi-versioning): the default x86-64 target has no 32-bit
// vector multiply.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define TNT_VECTOR_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define TNT_VECTOR_CLONES
#endif

struct Taps {
  int size = 0;                      // taps per output pixel (zero-padded)
  std::vector<int> first;            // first input pixel of each output pixel
  std::vector<int> count;            // its taps actually used
  std::vector<std::int32_t> weight;  // [out][size]
};

Taps taps_for(int in_size, int out_size) {
  const double scale = static_cast<double>(in_size) / out_size;
  const double filter_scale = std::max(scale, 1.0);
  const double support = 1.0 * filter_scale;  // the bilinear filter's support is 1
  Taps t;
  t.size = static_cast<int>(std::ceil(support)) * 2 + 1;
  t.first.resize(out_size);
  t.count.resize(out_size);
  t.weight.assign(static_cast<std::size_t>(out_size) * t.size, 0);
  std::vector<double> w(t.size);
  for (int o = 0; o < out_size; ++o) {
    const double center = (o + 0.5) * scale;
    const double inv = 1.0 / filter_scale;
    int lo = static_cast<int>(center - support + 0.5);
    if (lo < 0) lo = 0;
    int hi = static_cast<int>(center + support + 0.5);
    if (hi > in_size) hi = in_size;
    const int n = hi - lo;
    double sum = 0.0;
    for (int x = 0; x < n; ++x) {
      const double d = std::abs((x + lo - center + 0.5) * inv);
      w[x] = d < 1.0 ? 1.0 - d : 0.0;
      sum += w[x];
    }
    std::int32_t* k = &t.weight[static_cast<std::size_t>(o) * t.size];
    for (int x = 0; x < n; ++x) {
      const double v = sum != 0.0 ? w[x] / sum : w[x];
      k[x] = static_cast<std::int32_t>(v < 0 ? -0.5 + v * (1 << kPrecisionBits)
                                             : 0.5 + v * (1 << kPrecisionBits));
    }
    t.first[o] = lo;
    t.count[o] = n;
  }
  return t;
}

inline std::uint8_t clip8(std::int32_t v) {
  const std::int32_t s = v >> kPrecisionBits;
  return static_cast<std::uint8_t>(s < 0 ? 0 : s > 255 ? 255 : s);
}

// The taps of a horizontal pass moved so that every output pixel has the
// same number, `size` (the most any has: Pillow's kernel size is an upper
// bound about twice as large), all inside the row, with zero weights where
// Pillow has none: one loop length for every output pixel, no bounds checks.
struct RowTaps {
  int size = 0;
  std::vector<int> first;
  std::vector<std::int32_t> weight;  // [out][size]
};

RowTaps row_taps(const Taps& t, int in_size) {
  RowTaps r;
  r.size = *std::max_element(t.count.begin(), t.count.end());
  const auto out_size = t.first.size();
  r.first.resize(out_size);
  r.weight.assign(out_size * static_cast<std::size_t>(r.size), 0);
  for (std::size_t o = 0; o < out_size; ++o) {
    r.first[o] = std::min(t.first[o], in_size - r.size);
    const int shift = t.first[o] - r.first[o];
    for (int x = 0; x < t.count[o]; ++x) {
      r.weight[o * r.size + shift + x] = t.weight[o * t.size + x];
    }
  }
  return r;
}

// Horizontal pass, one row at a time (the rows left over after the strips
// below): rows [row0, row0 + rows) of each input plane (row stride
// `stride`, unit pixel stride) to rows [row0 - out_row0, ...) of the
// contiguous planes `out` (width out_w).
void resample_rows_one_by_one(const std::uint8_t* const* in, int channels, std::int64_t stride,
                              std::int64_t row0, std::int64_t rows, const RowTaps& t,
                              std::uint8_t* const* out, std::int64_t out_row0, int out_w) {
  for (int c = 0; c < channels; ++c) {
    for (std::int64_t y = 0; y < rows; ++y) {
      const std::uint8_t* row = in[c] + (row0 + y) * stride;
      std::uint8_t* dst = out[c] + (row0 + y - out_row0) * out_w;
      for (int o = 0; o < out_w; ++o) {
        const std::int32_t* k = &t.weight[static_cast<std::size_t>(o) * t.size];
        std::int32_t acc = 1 << (kPrecisionBits - 1);
        for (int x = 0; x < t.size; ++x) acc += row[t.first[o] + x] * k[x];
        dst[o] = clip8(acc);
      }
    }
  }
}

// Eight rows at a time: the strip's pixels stored column by column, eight
// int32 per column, so that one output pixel of eight rows is a sum of
// eight-wide vectors (the loops over r, which the compiler vectorises).
constexpr int kStrip = 8;

TNT_VECTOR_CLONES
void strip_columns(const std::uint8_t* in, std::int64_t stride, int w, std::int32_t* strip) {
  for (int r = 0; r < kStrip; ++r) {
    const std::uint8_t* row = in + r * stride;
    for (int x = 0; x < w; ++x) strip[x * kStrip + r] = row[x];
  }
}

// Eight int32 lanes (GCC/Clang vector extension), unaligned loads allowed.
typedef std::int32_t Lanes __attribute__((vector_size(32), aligned(4)));
static_assert(sizeof(Lanes) == kStrip * sizeof(std::int32_t));

TNT_VECTOR_CLONES
void strip_taps(const std::int32_t* strip, const RowTaps& t, int out_w, std::uint8_t* out,
                std::int64_t out_stride) {
  const int n = t.size;
  const Lanes half = Lanes{} + (1 << (kPrecisionBits - 1));
  for (int o = 0; o < out_w; ++o) {
    Lanes acc = half;
    const Lanes* col =
        reinterpret_cast<const Lanes*>(strip + static_cast<std::ptrdiff_t>(t.first[o]) * kStrip);
    const std::int32_t* k = &t.weight[static_cast<std::size_t>(o) * n];
    for (int x = 0; x < n; ++x) acc += col[x] * k[x];
    acc >>= kPrecisionBits;
    acc = acc < 0 ? Lanes{} : acc;
    acc = acc > 255 ? Lanes{} + 255 : acc;
    for (int r = 0; r < kStrip; ++r) out[r * out_stride + o] = static_cast<std::uint8_t>(acc[r]);
  }
}

void resample_rows(const std::uint8_t* const* in, int channels, std::int64_t stride,
                   std::int64_t row0, std::int64_t rows, const RowTaps& t, std::uint8_t* const* out,
                   int out_w, int in_w) {
  const std::int64_t strips = rows / kStrip;
  if (strips > 0) {
    std::unique_ptr<std::int32_t[]> strip(
        new std::int32_t[static_cast<std::size_t>(in_w) * kStrip]);
    for (int c = 0; c < channels; ++c) {
      for (std::int64_t s = 0; s < strips; ++s) {
        strip_columns(in[c] + (row0 + s * kStrip) * stride, stride, in_w, strip.get());
        strip_taps(strip.get(), t, out_w, out[c] + s * kStrip * out_w, out_w);
      }
    }
  }
  const std::int64_t done = strips * kStrip;
  resample_rows_one_by_one(in, channels, stride, row0 + done, rows - done, t, out, row0, out_w);
}

// Vertical pass: `in` (contiguous rows of width w, row 0 = input row
// `row0`) to `out` (out_h x w): per output row, weighted rows summed over
// the whole width, a loop the compiler vectorises.
TNT_VECTOR_CLONES
void resample_columns(const std::uint8_t* in, std::int64_t row0, std::int64_t w, const Taps& t,
                      int out_h, std::uint8_t* out, std::int32_t* acc) {
  for (int o = 0; o < out_h; ++o, out += w) {
    const std::int32_t* k = &t.weight[static_cast<std::size_t>(o) * t.size];
    for (std::int64_t x = 0; x < w; ++x) acc[x] = 1 << (kPrecisionBits - 1);
    for (int y = 0; y < t.count[o]; ++y) {
      const std::uint8_t* row = in + (t.first[o] + y - row0) * w;
      const std::int32_t ky = k[y];
      for (std::int64_t x = 0; x < w; ++x) acc[x] += row[x] * ky;
    }
    for (std::int64_t x = 0; x < w; ++x) out[x] = clip8(acc[x]);
  }
}

}  // namespace

namespace {

TNT_VECTOR_CLONES
void deinterleave(const std::uint8_t* hwc, std::int64_t plane, std::uint8_t* r, std::uint8_t* g,
                  std::uint8_t* b) {
  for (std::int64_t i = 0; i < plane; ++i) {
    r[i] = hwc[3 * i];
    g[i] = hwc[3 * i + 1];
    b[i] = hwc[3 * i + 2];
  }
}

}  // namespace

torch::Tensor planar_rgb(const std::uint8_t* hwc, std::int64_t height, std::int64_t width) {
  const std::int64_t plane = height * width;
  torch::Tensor chw = torch::empty({3, height, width}, torch::kUInt8);
  std::uint8_t* r = chw.data_ptr<std::uint8_t>();
  deinterleave(hwc, plane, r, r + plane, r + 2 * plane);
  return chw;
}

torch::Tensor resize_uint8(const torch::Tensor& image, std::int64_t height, std::int64_t width) {
  check_chw(image, torch::kUInt8, "resize_uint8");
  TORCH_CHECK(height > 0 && width > 0 && height <= INT32_MAX && width <= INT32_MAX,
              "resize_uint8: bad size ", height, "x", width);
  // Pillow's passes read a row's pixels one after another.
  const torch::Tensor in = image.stride(2) == 1 ? image : image.contiguous();
  const std::int64_t c = in.size(0), h = in.size(1), w = in.size(2);
  const bool horizontal = w != width, vertical = h != height;
  const Taps tx = taps_for(static_cast<int>(w), static_cast<int>(width));
  const Taps ty = taps_for(static_cast<int>(h), static_cast<int>(height));
  // The input rows the vertical pass reads (all of them without it).
  const std::int64_t row0 = vertical ? ty.first.front() : 0;
  const std::int64_t rows = vertical ? ty.first.back() + ty.count.back() - row0 : h;
  torch::Tensor out = torch::empty({c, height, width}, torch::kUInt8);
  const std::uint8_t* src = in.data_ptr<std::uint8_t>();
  std::uint8_t* dst = out.data_ptr<std::uint8_t>();
  std::vector<const std::uint8_t*> planes(static_cast<std::size_t>(c));
  std::vector<std::uint8_t*> outs(static_cast<std::size_t>(c));
  for (std::int64_t k = 0; k < c; ++k) {
    planes[k] = src + k * in.stride(0);
    outs[k] = dst + k * height * width;
  }
  const auto plane_rows = [&](const std::uint8_t* plane, std::int64_t stride,
                              std::uint8_t* rows_out, std::int64_t cols) {
    for (std::int64_t y = 0; y < rows; ++y) {
      std::memcpy(rows_out + y * cols, plane + (row0 + y) * stride, static_cast<std::size_t>(cols));
    }
  };
  std::vector<std::int32_t> acc(static_cast<std::size_t>(std::max(width, w)));
  if (!horizontal && !vertical) {
    for (std::int64_t k = 0; k < c; ++k) plane_rows(planes[k], in.stride(1), outs[k], w);
  } else if (!vertical) {
    resample_rows(planes.data(), static_cast<int>(c), in.stride(1), 0, h,
                  row_taps(tx, static_cast<int>(w)), outs.data(), static_cast<int>(width),
                  static_cast<int>(w));
  } else {
    // The rows the vertical pass reads: resampled, or copied when only the
    // vertical pass runs.
    const std::int64_t cols = horizontal ? width : w;
    std::unique_ptr<std::uint8_t[]> mid(
        new std::uint8_t[static_cast<std::size_t>(c * rows * cols)]);
    std::vector<std::uint8_t*> mids(static_cast<std::size_t>(c));
    for (std::int64_t k = 0; k < c; ++k) mids[k] = mid.get() + k * rows * cols;
    if (horizontal) {
      resample_rows(planes.data(), static_cast<int>(c), in.stride(1), row0, rows,
                    row_taps(tx, static_cast<int>(w)), mids.data(), static_cast<int>(width),
                    static_cast<int>(w));
    } else {
      for (std::int64_t k = 0; k < c; ++k) plane_rows(planes[k], in.stride(1), mids[k], w);
    }
    for (std::int64_t k = 0; k < c; ++k) {
      resample_columns(mids[k], row0, cols, ty, static_cast<int>(height), outs[k], acc.data());
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

}  // namespace tnt::data::detail
