// The real Fashion-MNIST from Debian's dataset-fashion-mnist package, and the
// error when it is missing.
#include <cstdio>
#include <filesystem>
#include <sstream>

#include "test_util.h"

namespace {

using namespace tnt_test;

void expect_fashion_mnist(const std::string& split, std::int64_t expected_count) {
  const auto ds = tnt::data::datasets::fashion_mnist(split);
  ASSERT_EQ(ds.cardinality(), expected_count);
  const auto all = collect(ds.batch(expected_count));
  ASSERT_EQ(all.size(), 1u);
  const auto& images = all[0][0];
  const auto& labels = all[0][1];
  EXPECT_EQ(images.sizes(), (std::vector<std::int64_t>{expected_count, 1, 28, 28}));
  EXPECT_EQ(images.scalar_type(), torch::kFloat32);
  EXPECT_GE(images.min().item<float>(), 0.0f);
  EXPECT_LE(images.max().item<float>(), 1.0f);
  EXPECT_EQ(images.max().item<float>(), 1.0f) << "some pixel is 255";
  EXPECT_EQ(labels.sizes(), (std::vector<std::int64_t>{expected_count}));
  EXPECT_EQ(labels.scalar_type(), torch::kInt64);
  const auto counts = torch::bincount(labels);
  ASSERT_EQ(counts.size(0), 10) << "labels are 0..9";
  EXPECT_EQ(counts.min().item<std::int64_t>(), expected_count / 10) << "Fashion-MNIST is balanced";
  std::ostringstream shape;
  shape << images.sizes();
  std::printf(
      "[ fashion  ] %s: %ld samples, images %s float32 in [%g, %g], labels int64 %ld..%ld, %ld per "
      "class\n",
      split.c_str(), static_cast<long>(ds.cardinality()), shape.str().c_str(),
      images.min().item<double>(), images.max().item<double>(),
      static_cast<long>(labels.min().item<std::int64_t>()),
      static_cast<long>(labels.max().item<std::int64_t>()),
      static_cast<long>(counts.min().item<std::int64_t>()));
}

TEST(FashionMnist, RealTrainAndTestSplits) {
  if (!std::filesystem::exists(tnt::data::datasets::kFashionMnistDir)) {
    GTEST_SKIP() << "Debian's dataset-fashion-mnist is not installed ("
                 << tnt::data::datasets::kFashionMnistDir << ")";
  }
  expect_fashion_mnist("train", 60000);
  expect_fashion_mnist("test", 10000);
}

TEST(FashionMnist, MissingFilesNameTheDirectoryAndThePackage) {
  expect_error([] { tnt::data::datasets::fashion_mnist("train", "/nonexistent/fmnist"); },
               {"/nonexistent/fmnist", "dataset-fashion-mnist", "train-images-idx3-ubyte"});
  expect_error([] { tnt::data::datasets::fashion_mnist("validation"); },
               {"'validation'", "\"train\" or \"test\""});
}

}  // namespace
