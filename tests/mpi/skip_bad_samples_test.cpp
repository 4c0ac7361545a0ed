// Training on images with bad files skipped (OnBadSample::skip) at N ranks
// equals serial training in plain LibTorch on the batches that remain: each
// rank drops the bad samples among its own rows, so micro-batches shrink
// (some to nothing, one global batch entirely), and fit() must weight every
// step by the real global count, not the nominal batch size. The skipped
// count is summed over ranks, once per epoch, and so is evaluate's loss.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>

#include <torch/torch.h>

#include <tarantella/data/image_io.h>
#include <tarantella/data/images.h>
#include <tarantella/tarantella.h>

#include "tiny_training.h"

namespace {

using namespace tnt_test;
namespace data = tnt::data;

constexpr int kImages = 40;  // batch 8: five global batches
// Batch 0 loses one sample; batch 1 its first two (rank 0's whole share at
// N = 4); batch 3 every sample (no step at all); batch 4 its last three.
const std::set<int> kBad = {3, 8, 9, 24, 25, 26, 27, 28, 29, 30, 31, 37, 38, 39};

// <dir>/img<i>.png: 2x1 RGB images, 6 values each, label i % 4; the bad
// ones truncated or not images at all. Written by the master.
data::ImageList write_images(const std::string& dir) {
  data::ImageList list;
  torch::Generator g = at::detail::createCPUGenerator(91);
  const torch::Tensor pixels = torch::randint(0, 256, {kImages, 6}, g, torch::kUInt8);
  for (int i = 0; i < kImages; ++i) {
    char name[32];
    std::snprintf(name, sizeof name, "img%02d.png", i);
    list.paths.push_back(dir + "/" + name);
    list.labels.push_back(i % 4);
    if (!tnt::is_master_rank()) continue;
    data::RgbImage image{2, 1, {}};
    for (int k = 0; k < 6; ++k) image.pixels.push_back(pixels[i][k].item<std::uint8_t>());
    data::write_image(list.paths.back(), image);
    if (kBad.count(i) && i % 2 == 0) {
      std::filesystem::resize_file(list.paths.back(), 20);
    } else if (kBad.count(i)) {
      std::ofstream(list.paths.back(), std::ios::trunc) << "not an image";
    }
  }
  tnt::comm::barrier();
  return list;
}

// {float [6], label}: the image's 6 values scaled to [0, 1].
data::Dataset image_set(const data::ImageList& list, bool shuffle) {
  data::Dataset d = data::from_image_files(list, data::ImageOptions().on_error(data::OnBadSample::skip));
  if (shuffle) d = d.shuffle(kImages, 17);
  return d.map([](data::Element e) {
    e[0] = e[0].reshape({6}).to(torch::kFloat32).div(255);
    return e;
  });
}

TEST(SkipBadSamples, FitWeightsEachStepByTheSamplesThatRemain) {
  const std::string dir = shared_dir("skip");
  const data::ImageList list = write_images(dir);
  for (bool shuffle : {false, true}) {
    SCOPED_TRACE(shuffle ? "shuffled" : "in order");
    const data::Dataset train = image_set(list, shuffle).batch(8);
    tnt::Model model(make_net());
    const Reference ref = serial(train, 2, nullptr, model.device());  // on the model's device
    model.compile(options());
    const auto history = model.fit(train, tnt::FitOptions().epochs(2).verbose(0));
    EXPECT_LE(max_rel_diff(ref.weights, params_of(model)), 1e-6);
    for (int e = 0; e < 2; ++e) {
      EXPECT_NEAR(history.history.at("loss")[e], ref.epoch_loss[e], 1e-6) << "epoch " << e;
      EXPECT_NEAR(history.history.at("sparse_categorical_accuracy")[e], ref.epoch_accuracy[e],
                  1e-9);
      // In order, no rank computes a sample of another to learn shapes, so
      // each bad file is read (and counted) exactly once per epoch.
      if (!shuffle) {
        EXPECT_EQ(history.history.at("skipped_samples")[e], static_cast<double>(kBad.size()));
      }
    }
  }
  remove_dir(dir);
}

TEST(SkipBadSamples, EvaluateAveragesOverTheSamplesThatRemain) {
  const std::string dir = shared_dir("skip_eval");
  const data::ImageList list = write_images(dir);
  Mlp reference = make_net();
  tnt::Model model(make_net());
  reference->to(model.device());
  model.compile(options());
  const auto results = model.evaluate(image_set(list, false).batch(8));
  torch::NoGradGuard no_grad;
  auto all = image_set(list, false).batch(kImages).iterate(0).next();
  ASSERT_EQ((*all)[1].size(0), kImages - static_cast<std::int64_t>(kBad.size()));
  const torch::Tensor out = reference->forward((*all)[0].to(model.device()));
  const torch::Tensor labels = (*all)[1].to(model.device());
  EXPECT_NEAR(results.at("loss"),
              torch::nn::functional::cross_entropy(out, labels).item<double>(), 1e-6);
  remove_dir(dir);
}

// Deterministic mode's chunks of the global batch are fixed: it refuses a
// dataset that may skip, on every rank alike, before any collective.
TEST(SkipBadSamples, DeterministicModeRefusesASkippingDataset) {
  const std::string dir = shared_dir("skip_det");
  const data::ImageList list = write_images(dir);
  tnt::Model model(make_net());
  model.compile(options().deterministic(2));
  for (int what = 0; what < 2; ++what) {
    try {
      if (what == 0) {
        model.fit(image_set(list, false).batch(8), tnt::FitOptions().epochs(1).verbose(0));
      } else {
        model.evaluate(image_set(list, false).batch(8));
      }
      ADD_FAILURE() << (what == 0 ? "fit" : "evaluate") << " accepted a skipping dataset";
    } catch (const tnt::Error& e) {
      const std::string message = e.what();
      EXPECT_NE(message.find("deterministic mode cannot skip bad samples"), std::string::npos)
          << message;
      EXPECT_NE(message.find("OnBadSample::raise"), std::string::npos) << message;
    }
  }
  remove_dir(dir);
}

}  // namespace
