// Augmentation with map_seeded: a sample's augmented tensor depends only on
// (seed, epoch, its position), never on the rank count, the worker count or
// how the samples are requested; epochs differ. Checked bitwise on a
// generated image folder at 1, 2 and 3 ranks (computed in this process) and
// 1 and 3 workers.
#include <ATen/CPUGeneratorImpl.h>
#include <tarantella/data/images.h>
#include <tarantella/data/transforms.h>

#include "image_test_util.h"
#include "test_util.h"

namespace {

using namespace tnt_test;
namespace T = tnt::data::transforms;
using tnt::data::ImageOptions;
using tnt::data::MapOptions;

constexpr std::int64_t kAugmentImages = 14, kBatch = 5;

class Augment : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir("augment");
    write_image_folder(dir_->str(), 2, kAugmentImages / 2);
  }
  static void TearDownTestSuite() { delete dir_; }

  // The Goyal training transforms at 16x16, shuffled.
  static Dataset augmented(int workers, std::uint64_t seed = 11) {
    return tnt::data::from_image_folder(dir_->str(), ImageOptions().num_workers(workers))
        .shuffle(kAugmentImages, 5)
        .map_seeded(T::compose({T::random_resized_crop(16), T::random_horizontal_flip(),
                                T::to_float(), T::normalize(T::kImageNetMean, T::kImageNetStd)}),
                    seed, MapOptions().num_workers(workers));
  }
  static TempDir* dir_;
};
TempDir* Augment::dir_ = nullptr;

// The global batches of one epoch, put together from the ranks' micro-batches.
std::vector<Element> joined_batches(const Dataset& batched, int size, std::int64_t epoch) {
  std::vector<std::vector<Element>> parts;
  for (int rank = 0; rank < size; ++rank) {
    auto dist =
        tnt::data::distribute(batched, tnt::data::DistributeOptions().rank(rank).size(size));
    auto it = dist.iterate(epoch);
    for (std::size_t step = 0; auto mb = it.next(); ++step) {
      if (parts.size() <= step) parts.resize(step + 1);
      parts[step].push_back(mb->tensors);
    }
  }
  std::vector<Element> out;
  for (auto& step : parts) {
    Element joined;
    for (std::size_t c = 0; c < step.front().size(); ++c) {
      std::vector<torch::Tensor> column;
      for (auto& p : step) column.push_back(p[c]);
      joined.push_back(torch::cat(column));
    }
    out.push_back(std::move(joined));
  }
  return out;
}

TEST_F(Augment, SameTensorsAtAnyRankAndWorkerCount) {
  for (std::int64_t epoch : {0, 1}) {
    const auto serial = collect(augmented(1).batch(kBatch), epoch);
    ASSERT_EQ(serial.size(), 3u);
    for (int workers : {1, 3}) {
      for (int size : {1, 2, 3}) {
        SCOPED_TRACE("epoch " + std::to_string(epoch) + ", " + std::to_string(size) + " ranks, " +
                     std::to_string(workers) + " workers");
        const auto joined = joined_batches(augmented(workers).batch(kBatch), size, epoch);
        ASSERT_EQ(joined.size(), serial.size());
        for (std::size_t s = 0; s < serial.size(); ++s) EXPECT_ELEMENT_EQ(joined[s], serial[s]);
      }
    }
  }
}

TEST_F(Augment, ElementByElementEqualsBatched) {
  const auto batches = collect(augmented(3).batch(kAugmentImages));
  const auto samples = collect(augmented(1));
  ASSERT_EQ(samples.size(), static_cast<std::size_t>(kAugmentImages));
  for (std::int64_t i = 0; i < kAugmentImages; ++i) {
    EXPECT_ELEMENT_EQ(samples[i], (Element{batches[0][0][i], batches[0][1][i]}));
  }
}

TEST_F(Augment, ASequentialPipelineDrawsTheSame) {
  const auto indexed = collect(augmented(1));
  auto sequential =
      tnt::data::from_image_folder(dir_->str())
          .shuffle(kAugmentImages, 5)
          .filter([](const Element&) { return true; })
          .map_seeded(T::compose({T::random_resized_crop(16), T::random_horizontal_flip(),
                                  T::to_float(), T::normalize(T::kImageNetMean, T::kImageNetStd)}),
                      11);
  const auto streamed = collect(sequential);
  ASSERT_EQ(streamed.size(), indexed.size());
  for (std::size_t i = 0; i < indexed.size(); ++i) EXPECT_ELEMENT_EQ(streamed[i], indexed[i]);
}

// Without a shuffle the same image sits at the same position in both
// epochs, so any difference comes from the draws.
TEST_F(Augment, EpochsAndSeedsDrawDifferently) {
  auto unshuffled = [&](std::uint64_t seed) {
    return tnt::data::from_image_folder(dir_->str())
        .map_seeded(T::compose({T::random_resized_crop(16), T::random_horizontal_flip()}), seed);
  };
  const auto e0 = collect(unshuffled(11), 0), e1 = collect(unshuffled(11), 1);
  const auto other_seed = collect(unshuffled(12), 0), again = collect(unshuffled(11), 0);
  int epoch_diffs = 0, seed_diffs = 0;
  for (std::int64_t i = 0; i < kAugmentImages; ++i) {
    EXPECT_ELEMENT_EQ(again[i], e0[i]);
    epoch_diffs += !torch::equal(e0[i][0], e1[i][0]);
    seed_diffs += !torch::equal(e0[i][0], other_seed[i][0]);
  }
  EXPECT_GE(epoch_diffs, kAugmentImages - 1) << "epoch 1 repeated epoch 0's augmentation";
  EXPECT_GE(seed_diffs, kAugmentImages - 1) << "another seed repeated the augmentation";
}

TEST_F(Augment, SeededMapAfterBatchIsRefusedUnderDistribution) {
  auto ds = tnt::data::from_image_folder(dir_->str())
                .map_seeded(T::compose({T::resize(8), T::center_crop(8)}))
                .batch(4)
                .map_seeded([](Element e, at::Generator&) { return e; });
  expect_error([&] { tnt::data::distribute(ds, tnt::data::DistributeOptions().rank(0).size(2)); },
               {"map_seeded", "before batch"});
}

// compose() runs [random_resized_crop] [flip] to_float normalize as one
// fused step (transforms.cpp); applied one by one, the same transforms take
// the step-by-step path. Both must agree bitwise, at ImageNet size, for
// contiguous, channels-last and float images, and for a crop that needs no
// resize (scale and ratio 1 on a 224x224 image).
TEST(Transforms, FusedComposeEqualsStepByStep) {
  const auto chain = [](const std::vector<T::Transform>& steps) {
    return std::make_pair(T::compose(steps), steps);
  };
  const auto norm = T::normalize(T::kImageNetMean, T::kImageNetStd);
  const std::vector<std::pair<T::Transform, std::vector<T::Transform>>> chains = {
      chain({T::random_resized_crop(224), T::random_horizontal_flip(), T::to_float(), norm}),
      chain({T::resize(256), T::center_crop(224), T::to_float(), norm}),
      chain({T::random_resized_crop(T::RandomResizedCropOptions(224).scale(1, 1).ratio(1, 1)),
             T::random_horizontal_flip(), T::to_float(), norm})};
  const torch::Tensor photo = tnt::data::image_to_tensor(pattern_image(500, 375, 3));
  const torch::Tensor square = tnt::data::image_to_tensor(pattern_image(224, 224, 4));
  const auto hwc = [](const torch::Tensor& chw) { return chw.permute({1, 2, 0}).contiguous(); };
  const std::vector<torch::Tensor> images = {photo, hwc(photo).permute({2, 0, 1}),
                                             photo.to(torch::kFloat), square};
  for (std::size_t c = 0; c < chains.size(); ++c) {
    for (std::size_t i = 0; i < images.size(); ++i) {
      for (int seed = 0; seed < 16; ++seed) {
        SCOPED_TRACE("chain " + std::to_string(c) + ", image " + std::to_string(i) + ", seed " +
                     std::to_string(seed));
        at::Generator fused_gen = at::make_generator<at::CPUGeneratorImpl>(seed);
        at::Generator step_gen = at::make_generator<at::CPUGeneratorImpl>(seed);
        const Element fused = chains[c].first({images[i], torch::scalar_tensor(1)}, fused_gen);
        Element stepped = {images[i], torch::scalar_tensor(1)};
        for (const auto& step : chains[c].second) stepped = step(std::move(stepped), step_gen);
        EXPECT_ELEMENT_EQ(fused, stepped);
      }
    }
  }
}

TEST(Transforms, ImageToTensorIsThePermutedPixels) {
  const tnt::data::RgbImage image = pattern_image(37, 29, 5);
  const torch::Tensor hwc =
      torch::from_blob(const_cast<std::uint8_t*>(image.pixels.data()), {29, 37, 3}, torch::kUInt8);
  EXPECT_TRUE(torch::equal(tnt::data::image_to_tensor(image), hwc.permute({2, 0, 1})));
}

TEST(Transforms, BadArgumentsAndInputsAreErrors) {
  expect_error([] { T::resize(0); }, {"resize", "0"});
  expect_error([] { T::random_resized_crop(T::RandomResizedCropOptions(8).scale(0.5, 0.1)); },
               {"scale range (0.5, 0.1)"});
  expect_error([] { T::random_horizontal_flip(2); }, {"probability 2"});
  expect_error([] { T::normalize({0.5}, {0.5, 0.5}); }, {"1 means but 2"});
  at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(1);
  expect_error(
      [&] {
        T::center_crop(10)({torch::zeros({3, 4, 20}, torch::kUInt8)}, gen);
      },
      {"only 4x20", "resize it first"});
  expect_error(
      [&] {
        T::normalize({0.5}, {0.5})({torch::zeros({1, 4, 4}, torch::kUInt8)}, gen);
      },
      {"to_float() first"});
  expect_error([&] { T::to_float()({torch::zeros({4, 4})}, gen); }, {"[C, H, W]", "2-D"});
  // compose() runs these as one fused step, which names the first of them.
  expect_error(
      [&] {
        T::compose({T::to_float(), T::normalize({0.5}, {0.5})})({torch::zeros({4, 4})}, gen);
      },
      {"to_float", "2-D"});
}

}  // namespace
