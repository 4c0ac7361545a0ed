// Whole models at N ranks: load_model rebuilds architecture, compile
// configuration, weights and optimizer state from Model::save's file, so that
// training continued from the loaded model is bitwise equal to training
// continued from the original; clone_model and the JSON round trip; the
// errors for what cannot be rebuilt, on every rank.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>
#include <torch/script.h>
#include <torch/torch.h>

#include <tarantella/model/torchscript.h>
#include <tarantella/tarantella.h>
#include "tiny_training.h"

namespace {

using namespace tnt_test;
namespace L = tnt::layers;

// A file name the master chose, the same on every rank.
std::string shared_path(const std::string& stem) {
  torch::Tensor id = torch::tensor({static_cast<std::int64_t>(::getpid())});
  tnt::comm::broadcast(id, 0);
  return "/tmp/tnt_models_test_" + stem + "_" + std::to_string(id.item<std::int64_t>()) + ".pt";
}

void remove_on_master(const std::string& path) {
  tnt::comm::barrier();
  if (tnt::is_master_rank()) std::remove(path.c_str());
}

L::Sequential registry_net() {
  return L::Sequential({L::Dense(6, 16, "tanh"), L::LayerNorm({16}), L::Dropout(0.0),
                        L::Dense(16, 4)});
}

tnt::CompileOptions rich_options() {
  return tnt::CompileOptions()
      .optimizer(tnt::optimizers::Adam(0.01))
      .loss(tnt::losses::SparseCategoricalCrossentropy())
      .metrics({tnt::metrics::SparseCategoricalAccuracy(), tnt::metrics::TopKCategoricalAccuracy(2)})
      .schedule(tnt::schedules::WarmUp(tnt::schedules::ExponentialDecay(0.01, 5, 0.9), 3));
}

bool bitwise_equal(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (!torch::equal(a[i], b[i])) return false;
  }
  return true;
}

template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const tnt::Error& e) {
    return e.what();
  }
  return "";
}

TEST(Models, LoadModelRestoresEverythingAndTrainingContinuesBitwiseEqual) {
  const std::string path = shared_path("whole");
  const data::Dataset train = train_set(8, true);
  torch::manual_seed(3);
  tnt::Model original(registry_net());
  original.compile(rich_options());
  original.fit(train, tnt::FitOptions().epochs(2).verbose(0));
  original.save(path);

  tnt::Model loaded = tnt::models::load_model(path);
  ASSERT_TRUE(loaded.is_compiled());
  EXPECT_EQ(loaded.epochs_done(), 2);
  EXPECT_EQ(loaded.to_json(), original.to_json());
  EXPECT_EQ(loaded.get_compile_config(), original.get_compile_config());
  EXPECT_TRUE(bitwise_equal(params_of(loaded), params_of(original)));

  // The optimizer state, the schedule's step and the metrics came back too:
  // one more epoch from each is bitwise equal, logs included.
  const auto h1 = original.fit(train, tnt::FitOptions().initial_epoch(2).epochs(3).verbose(0));
  const auto h2 = loaded.fit(train, tnt::FitOptions().initial_epoch(2).epochs(3).verbose(0));
  EXPECT_TRUE(bitwise_equal(params_of(loaded), params_of(original)));
  EXPECT_EQ(h1.history.at("top_2_accuracy"), h2.history.at("top_2_accuracy"));
  EXPECT_EQ(h1.history.at("loss"), h2.history.at("loss"));

  // Without compile: architecture and weights only.
  tnt::Model bare = tnt::models::load_model(path, /*compile=*/false);
  EXPECT_FALSE(bare.is_compiled());
  EXPECT_EQ(bare.epochs_done(), 2);
  remove_on_master(path);
}

TEST(Models, UncompiledModelSavesAndLoadsUncompiled) {
  const std::string path = shared_path("uncompiled");
  tnt::Model original(registry_net());
  original.save(path);
  tnt::Model loaded = tnt::models::load_model(path);
  EXPECT_FALSE(loaded.is_compiled());
  EXPECT_TRUE(bitwise_equal(params_of(loaded), params_of(original)));
  remove_on_master(path);
}

TEST(Models, UserDefinedCompilePartsAreAClearErrorOnEveryRank) {
  const std::string path = shared_path("custom");
  tnt::Model model(registry_net());
  model.compile(tnt::CompileOptions()
                    .optimizer(tnt::optimizers::custom([](const std::vector<torch::Tensor>& p) {
                      return std::make_unique<torch::optim::SGD>(p, torch::optim::SGDOptions(0.1));
                    }))
                    .loss(tnt::losses::MeanSquaredError()));
  EXPECT_TRUE(model.get_compile_config().at("optimizer").is_null());
  model.save(path);
  const std::string error = error_of([&] { tnt::models::load_model(path); });
  EXPECT_NE(error.find("user-defined optimizer"), std::string::npos) << error;
  EXPECT_NE(error.find(path), std::string::npos) << error;
  EXPECT_NE(error.find("compile=*/false"), std::string::npos) << error;
  // The documented way out works.
  tnt::Model loaded = tnt::models::load_model(path, /*compile=*/false);
  EXPECT_TRUE(bitwise_equal(params_of(loaded), params_of(model)));
  remove_on_master(path);
}

TEST(Models, PlainCppModuleCannotBeRebuiltFromAFile) {
  const std::string path = shared_path("plain");
  tnt::Model model(make_net());
  model.save(path);
  const std::string error = error_of([&] { tnt::models::load_model(path); });
  EXPECT_NE(error.find("holds no architecture"), std::string::npos) << error;
  EXPECT_NE(error.find("model.load(path)"), std::string::npos) << error;
  EXPECT_NE(error_of([&] { model.to_json(); }).find("tnt::layers"), std::string::npos);
  remove_on_master(path);
}

TEST(Models, TorchScriptModelRoundTripsWhole) {
  const char* ts = std::getenv("TNT_TEST_TORCHSCRIPT");
  if (ts == nullptr) GTEST_SKIP() << "TNT_TEST_TORCHSCRIPT not set";
  const std::string path = shared_path("torchscript");
  tnt::Model model = tnt::load_torchscript(ts);
  model.compile(tnt::CompileOptions()
                    .optimizer(tnt::optimizers::SGD(0.05, 0.9))
                    .loss(tnt::losses::SparseCategoricalCrossentropy()));
  model.fit(train_set(8, false), tnt::FitOptions().epochs(1).verbose(0));
  model.save(path);
  tnt::Model loaded = tnt::models::load_model(path);
  EXPECT_TRUE(loaded.is_compiled());
  EXPECT_TRUE(bitwise_equal(params_of(loaded), params_of(model)));
  const torch::Tensor x = torch::randn({5, 6}, at::detail::createCPUGenerator(1));
  EXPECT_TRUE(torch::equal(loaded.forward({x}), model.forward({x})));
  // clone_model deep-copies a TorchScript module: equal now, independent after.
  tnt::Model copy = tnt::models::clone_model(model);
  EXPECT_TRUE(bitwise_equal(params_of(copy), params_of(model)));
  {
    torch::NoGradGuard no_grad;
    copy.named_parameters()[0].second.add_(1.0);
  }
  EXPECT_FALSE(bitwise_equal(params_of(copy), params_of(model)));
  remove_on_master(path);
}

TEST(Models, CloneAndJsonGiveTheSameArchitectureWithFreshWeights) {
  torch::manual_seed(1);
  tnt::Model model(registry_net());
  tnt::Model from_json = tnt::models::model_from_json(model.to_json());
  tnt::Model clone = tnt::models::clone_model(model);
  for (tnt::Model* m : {&from_json, &clone}) {
    EXPECT_EQ(m->get_config(), model.get_config());
    ASSERT_EQ(m->named_parameters().size(), model.named_parameters().size());
    for (std::size_t i = 0; i < model.named_parameters().size(); ++i) {
      EXPECT_EQ(m->named_parameters()[i].first, model.named_parameters()[i].first);
      EXPECT_EQ(m->named_parameters()[i].second.sizes(), model.named_parameters()[i].second.sizes());
    }
    // Keras semantics: a new model, newly initialized weights.
    EXPECT_FALSE(torch::equal(m->named_parameters()[0].second, model.named_parameters()[0].second));
  }
  // The clone trains at N ranks like any model, from the master's weights.
  clone.compile(options());
  clone.fit(train_set(8, false), tnt::FitOptions().epochs(1).verbose(0));
  torch::Tensor w = clone.named_parameters()[0].second.detach().clone();
  torch::Tensor master = w.clone();
  tnt::comm::broadcast(master, 0);
  EXPECT_TRUE(torch::equal(w, master));
}

TEST(Models, SaveOnAllDevicesWritesOnEveryRankDefaultOnlyOnTheMaster) {
  // A per-rank name, so that each rank's own write is visible.
  const std::string mine = shared_path("all_devices") + ".rank" + std::to_string(tnt::get_rank());
  tnt::Model model(registry_net());
  model.save(mine);  // default: master only
  EXPECT_EQ(std::ifstream(mine).good(), tnt::is_master_rank()) << mine;
  tnt::comm::barrier();
  std::remove(mine.c_str());
  tnt::comm::barrier();
  model.save(mine, /*all_ranks=*/true);
  EXPECT_TRUE(std::ifstream(mine).good()) << mine;
  tnt::comm::barrier();
  std::remove(mine.c_str());
}

TEST(Models, BatchNormWithSmallMicroBatchesIsWarnedAbout) {
  auto fit_and_capture = [](std::int64_t global_batch) {
    tnt::Model model(L::Sequential({L::Dense(6, 8), L::BatchNorm(8), L::Dense(8, 4)}));
    model.compile(options());
    testing::internal::CaptureStderr();
    model.fit(samples().batch(global_batch), tnt::FitOptions().epochs(1).verbose(0));
    return testing::internal::GetCapturedStderr();
  };
  const std::string small = fit_and_capture(8);  // micro-batches of 8 / N < 16
  const std::string large = fit_and_capture(16 * tnt::get_size());
  if (tnt::is_master_rank()) {  // warnings are logged by the master
    EXPECT_NE(small.find("BatchNorm layers"), std::string::npos) << small;
    EXPECT_NE(small.find("below 16 samples"), std::string::npos) << small;
  }
  EXPECT_EQ(large.find("BatchNorm layers"), std::string::npos) << large;
}

// SGD with learning rate 1 and no momentum moves the weights by exactly the
// (clipped) global gradient, so one step shows what clipping did.
std::vector<torch::Tensor> one_step_delta(tnt::CompileOptions options) {
  torch::manual_seed(4);
  tnt::Model model(registry_net());
  model.compile(options.optimizer(tnt::optimizers::SGD(1.0))
                    .loss(tnt::losses::SparseCategoricalCrossentropy()));
  model.set_weights(model.get_weights());  // the master's, everywhere
  const auto before = model.get_weights();  // copies (params_of shares storage)
  model.fit(train_set(8, false), tnt::FitOptions().epochs(1).steps_per_epoch(1).verbose(0));
  const auto after = model.get_weights();
  std::vector<torch::Tensor> delta;
  for (std::size_t i = 0; i < before.size(); ++i) delta.push_back(after[i] - before[i]);
  return delta;
}

double joint_norm(const std::vector<torch::Tensor>& ts) {
  double sq = 0;
  for (const auto& t : ts) sq += t.pow(2).sum().item<double>();
  return std::sqrt(sq);
}

TEST(Models, GradientClippingActsOnTheGlobalGradient) {
  const double unclipped = joint_norm(one_step_delta(tnt::CompileOptions()));
  ASSERT_GT(unclipped, 0.1);
  // clip_norm: the step's norm is exactly the bound, on every rank.
  EXPECT_NEAR(joint_norm(one_step_delta(tnt::CompileOptions().clip_norm(0.05))), 0.05, 1e-5);
  // A bound above the norm changes nothing.
  EXPECT_NEAR(joint_norm(one_step_delta(tnt::CompileOptions().clip_norm(1e6))), unclipped, 1e-6);
  // clip_value: no element moves by more than the bound.
  double largest = 0;
  for (const auto& d : one_step_delta(tnt::CompileOptions().clip_value(1e-3))) {
    largest = std::max(largest, d.abs().max().item<double>());
  }
  EXPECT_LE(largest, 1e-3 + 1e-7);  // float32 rounding of w - step
  EXPECT_GT(largest, 0.5e-3);
  // Part of the compile configuration that Model::save stores.
  tnt::Model model(registry_net());
  model.compile(options().clip_norm(2.5));
  EXPECT_EQ(model.get_compile_config().at("clip_norm"), 2.5);
  EXPECT_THROW(model.compile(options().clip_norm(0)), tnt::Error);
}

TEST(Models, LatestCheckpointIsTheHighestEpochOnEveryRank) {
  const std::string dir = shared_path("latest") + ".d";
  EXPECT_EQ(tnt::latest_checkpoint(dir), "");  // no directory yet
  if (tnt::is_master_rank()) {
    std::filesystem::create_directories(dir);
    for (const char* name : {"epoch-0002.pt", "epoch-0010.pt", "epoch-0009-loss-0.50.pt",
                             "epoch-0011.pt.tmp.4242", "notes.txt", "best.pt"}) {
      std::ofstream(dir + "/" + name) << "x";
    }
  }
  tnt::comm::barrier();
  EXPECT_EQ(tnt::latest_checkpoint(dir), dir + "/epoch-0010.pt");
  tnt::comm::barrier();
  // A number before the epoch's ("resnet50-epoch{epoch}.pt"): every number
  // counts, in order (the first alone tied at 50, and the name chose 9).
  if (tnt::is_master_rank()) {
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    for (const char* name : {"resnet50-epoch9.pt", "resnet50-epoch10.pt", "resnet50-epoch2.pt"}) {
      std::ofstream(dir + "/" + name) << "x";
    }
  }
  tnt::comm::barrier();
  EXPECT_EQ(tnt::latest_checkpoint(dir), dir + "/resnet50-epoch10.pt");
  tnt::comm::barrier();
  if (tnt::is_master_rank()) std::filesystem::remove_all(dir);
}

TEST(Models, CorruptArchitectureNamesTheLayer) {
  nlohmann::json config = tnt::Model(registry_net()).get_config();
  config["config"]["layers"][1]["class_name"] = "NoSuchLayer";
  std::string error = error_of([&] { tnt::models::model_from_config(config); });
  EXPECT_NE(error.find("layer 1"), std::string::npos) << error;
  EXPECT_NE(error.find("NoSuchLayer"), std::string::npos) << error;
  config = tnt::Model(registry_net()).get_config();
  config["config"]["layers"][0]["config"].erase("units");
  error = error_of([&] { tnt::models::model_from_config(config); });
  EXPECT_NE(error.find("\"units\""), std::string::npos) << error;
  EXPECT_NE(error_of([&] { tnt::models::model_from_json("{not json"); }).find("not valid JSON"),
            std::string::npos);
}

}  // namespace
