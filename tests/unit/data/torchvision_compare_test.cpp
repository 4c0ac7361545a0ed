// The transforms against torchvision (Debian's python3-torchvision and
// python3-pil, the same LibTorch build): under the same seed,
// random_resized_crop_box equals RandomResizedCrop.get_params, and the
// training composition (random resized crop, flip, to float, normalize) and
// resize + center crop give bitwise the tensors of torchvision's PIL path
// (ImageFolder's); torchvision's tensor path, whose float interpolation
// rounds differently, is within one uint8 level. Skipped when torchvision is
// not installed.
#include <ATen/CPUGeneratorImpl.h>
#include <sys/wait.h>
#include <tarantella/data/images.h>
#include <tarantella/data/transforms.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <sstream>

#include "data/images/pixel_kernels.h"
#include "image_test_util.h"
#include "test_util.h"

namespace {

using namespace tnt_test;
namespace T = tnt::data::transforms;

constexpr int kSeeds = 24;

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

torch::Tensor tensor_from(const std::string& bytes, std::int64_t offset, torch::Dtype dtype,
                          std::vector<std::int64_t> shape) {
  return torch::from_blob(const_cast<char*>(bytes.data()) + offset, shape, dtype).clone();
}

at::Generator seeded(std::uint64_t seed) { return at::make_generator<at::CPUGeneratorImpl>(seed); }

// Runs the Python reference once for the suite (importing torch is slow).
class Torchvision : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir("torchvision");
    image_ = new torch::Tensor(tnt::data::image_to_tensor(pattern_image(37, 29, 4)));  // [3,29,37]
    std::ofstream((*dir_ / "in.bin").string(), std::ios::binary)
        .write(reinterpret_cast<const char*>(image_->data_ptr()), image_->numel());
    out_ = (*dir_ / "out").string();
    std::ostringstream cmd;
    cmd << TNT_TEST_PYTHON << " " << TNT_TORCHVISION_REFERENCE << " " << (*dir_ / "in.bin").string()
        << " 3 29 37 " << kSeeds << " " << out_;
    command_ = cmd.str();
    status_ = std::system(command_.c_str());
  }
  static void TearDownTestSuite() {
    delete image_;
    delete dir_;
  }
  void SetUp() override {
    if (WIFEXITED(status_) && WEXITSTATUS(status_) == 3) GTEST_SKIP() << "no torchvision";
    ASSERT_EQ(status_, 0) << command_;
  }
  static TempDir* dir_;
  static torch::Tensor* image_;
  static std::string out_, command_;
  static int status_;
};
TempDir* Torchvision::dir_ = nullptr;
torch::Tensor* Torchvision::image_ = nullptr;
std::string Torchvision::out_, Torchvision::command_;
int Torchvision::status_ = -1;

void expect_boxes_equal(const std::string& out) {
  std::ifstream boxes(out + ".txt");
  std::int64_t seed, top, left, height, width;
  int seen = 0;
  while (boxes >> seed >> top >> left >> height >> width) {
    at::Generator gen = seeded(seed);
    const auto box = T::random_resized_crop_box(29, 37, T::RandomResizedCropOptions(16), gen);
    EXPECT_EQ(std::vector<std::int64_t>({box.top, box.left, box.height, box.width}),
              std::vector<std::int64_t>({top, left, height, width}))
        << "seed " << seed;
    ++seen;
  }
  EXPECT_EQ(seen, kSeeds);
}

void expect_training_equal(const std::string& out, const torch::Tensor& image) {
  const std::string bytes = read_all(out + ".bin");
  const std::int64_t one = 3 * 16 * 16 * 4;
  ASSERT_EQ(static_cast<std::int64_t>(bytes.size()), kSeeds * one);
  const auto train = T::compose({T::random_resized_crop(16), T::random_horizontal_flip(),
                                 T::to_float(), T::normalize(T::kImageNetMean, T::kImageNetStd)});
  for (int seed = 0; seed < kSeeds; ++seed) {
    at::Generator gen = seeded(seed);
    const Element ours = train({image}, gen);
    SCOPED_TRACE("seed " + std::to_string(seed));
    EXPECT_ELEMENT_EQ(ours, (Element{tensor_from(bytes, seed * one, torch::kFloat, {3, 16, 16})}));
  }
}

// One uint8 level after normalize is 1 / 255 / std; the smallest ImageNet std
// is 0.224.
void expect_training_near_tensor_path(const std::string& out, const torch::Tensor& image) {
  const std::string bytes = read_all(out + "_tensor.bin");
  const std::int64_t one = 3 * 16 * 16 * 4;
  ASSERT_EQ(static_cast<std::int64_t>(bytes.size()), kSeeds * one);
  const auto train = T::compose({T::random_resized_crop(16), T::random_horizontal_flip(),
                                 T::to_float(), T::normalize(T::kImageNetMean, T::kImageNetStd)});
  const double level = 1.0 / 255 / 0.224;
  double worst = 0;
  for (int seed = 0; seed < kSeeds; ++seed) {
    at::Generator gen = seeded(seed);
    const torch::Tensor ours = train({image}, gen)[0];
    const torch::Tensor theirs = tensor_from(bytes, seed * one, torch::kFloat, {3, 16, 16});
    worst = std::max(worst, (ours - theirs).abs().max().item<double>());
  }
  EXPECT_LE(worst, level * 1.0001) << "largest difference " << worst / level << " levels";
  EXPECT_GT(worst, 0.0) << "the tensor path rounds differently from Pillow: equal everywhere "
                           "means this test compares the wrong outputs";
}

void expect_resize_crop_equal(const std::string& out, const torch::Tensor& image) {
  const std::string bytes = read_all(out + "_resize.bin");
  ASSERT_EQ(bytes.size(), 3u * 11 * 11);
  at::Generator gen = seeded(0);
  const Element ours = T::compose({T::resize(13), T::center_crop(11)})({image}, gen);
  EXPECT_ELEMENT_EQ(ours, (Element{tensor_from(bytes, 0, torch::kUInt8, {3, 11, 11})}));
}

// The sizes of torchvision_reference.py's SIZES.
void expect_pillow_resizes_equal(const std::string& out, const torch::Tensor& image) {
  const std::vector<std::pair<std::int64_t, std::int64_t>> sizes = {
      {16, 16}, {40, 51}, {29, 10}, {7, 37}, {58, 9}, {1, 1}, {29, 37}};
  const std::string bytes = read_all(out + "_sizes.bin");
  std::int64_t offset = 0;
  for (const auto& [h, w] : sizes) {
    SCOPED_TRACE("resize to " + std::to_string(h) + "x" + std::to_string(w));
    ASSERT_LE(offset + 3 * h * w, static_cast<std::int64_t>(bytes.size()));
    const torch::Tensor theirs = tensor_from(bytes, offset, torch::kUInt8, {3, h, w});
    EXPECT_TRUE(tnt::data::detail::resize_uint8(image, h, w).equal(theirs));
    // A view with other strides (an HWC buffer) gives the same.
    const torch::Tensor hwc_view = image.permute({1, 2, 0}).contiguous().permute({2, 0, 1});
    EXPECT_TRUE(tnt::data::detail::resize_uint8(hwc_view, h, w).equal(theirs));
    offset += 3 * h * w;
  }
  EXPECT_EQ(offset, static_cast<std::int64_t>(bytes.size()));
}

// One test, so that the Python reference (seconds to import torch) runs once.
TEST_F(Torchvision, CropBoxesTrainingAndEvaluationTransformsEqualBitwise) {
  {
    SCOPED_TRACE("random_resized_crop_box vs RandomResizedCrop.get_params");
    expect_boxes_equal(out_);
  }
  {
    SCOPED_TRACE("random_resized_crop, flip, to_float, normalize");
    expect_training_equal(out_, *image_);
  }
  {
    SCOPED_TRACE("the same against torchvision's tensor path");
    expect_training_near_tensor_path(out_, *image_);
  }
  {
    SCOPED_TRACE("resize(13), center_crop(11)");
    expect_resize_crop_equal(out_, *image_);
  }
  {
    SCOPED_TRACE("Pillow's resize, up, down and one axis only");
    expect_pillow_resizes_equal(out_, *image_);
  }
}

}  // namespace
