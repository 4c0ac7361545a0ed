// tnt::Model at N ranks against serial training in plain LibTorch on the
// same global batches: weights, loss/metric logs, evaluate and predict must
// agree up to float rounding, for batches not divisible by N and a short last
// batch with fewer samples than ranks. The serial run is on the model's
// device (a GPU where the launcher gave one: tiny_training.h).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>

#include <torch/torch.h>

#include <tarantella/data/dataset.h>
#include <tarantella/model/torchscript.h>
#include "tiny_training.h"
#include <tarantella/tarantella.h>

namespace {

using namespace tnt_test;
namespace data = tnt::data;

TEST(Model, FitMatchesSerialTrainingAtAnyRankCount) {
  for (bool shuffle : {false, true}) {
    const data::Dataset train = train_set(8, shuffle);
    tnt::Model model(make_net());
    const Reference ref = serial(train, 2, nullptr, model.device());
    model.compile(options());
    const auto history = model.fit(train, tnt::FitOptions().epochs(2).verbose(0));
    EXPECT_LE(max_rel_diff(ref.weights, params_of(model)), 1e-5) << "shuffle=" << shuffle;
    // Logs are the exact global values, as in the serial run.
    for (int e = 0; e < 2; ++e) {
      EXPECT_NEAR(history.history.at("loss")[e], ref.epoch_loss[e], 1e-5);
      EXPECT_NEAR(history.history.at("sparse_categorical_accuracy")[e], ref.epoch_accuracy[e], 1e-9);
    }
  }
}

TEST(Model, WeightsAreBitwiseIdenticalOnAllRanksAfterTraining) {
  tnt::Model model(make_net());
  model.compile(options());
  model.fit(train_set(8, true), tnt::FitOptions().epochs(2).verbose(0));
  for (const auto& p : params_of(model)) {
    const torch::Tensor all = tnt::comm::allgather(p.unsqueeze(0).contiguous());
    for (int r = 1; r < tnt::get_size(); ++r) ASSERT_TRUE(torch::equal(all[r], all[0]));
  }
}

TEST(Model, StartsFromTheMastersWeightsWhateverEachRankInitialized) {
  // Every rank but the master starts from different random weights.
  tnt::Model model(make_net(tnt::is_master_rank() ? 5 : 100 + tnt::get_rank()));
  const Reference ref = serial(train_set(8, false), 1, nullptr, model.device());  // from seed 5
  model.compile(options());
  model.fit(train_set(8, false), tnt::FitOptions().epochs(1).verbose(0));
  EXPECT_LE(max_rel_diff(ref.weights, params_of(model)), 1e-5);
}

TEST(Model, EvaluateEqualsSerialEvaluation) {
  Mlp reference = make_net();
  tnt::Model model(make_net());
  reference->to(model.device());
  model.compile(options());
  const auto results = model.evaluate(train_set(7, false));
  torch::NoGradGuard no_grad;
  auto all = samples().batch(kSamples).iterate(0).next();
  const torch::Tensor y = (*all)[1].to(model.device());
  const torch::Tensor out = reference->forward((*all)[0].to(model.device()));
  EXPECT_NEAR(results.at("loss"), torch::nn::functional::cross_entropy(out, y).item<double>(),
              1e-5);
  EXPECT_DOUBLE_EQ(results.at("sparse_categorical_accuracy"),
                   out.argmax(-1).eq(y).sum().item<double>() / kSamples);
}

TEST(Model, PredictReturnsEveryOutputInDatasetOrder) {
  Mlp reference = make_net();
  tnt::Model model(make_net());
  reference->to(model.device());
  model.compile(options());
  const torch::Tensor got =
      model.predict(train_set(9, false), tnt::PredictOptions().on_all_ranks(true));
  torch::NoGradGuard no_grad;
  auto all = samples().batch(kSamples).iterate(0).next();
  const torch::Tensor expected = reference->forward((*all)[0].to(model.device())).cpu();
  ASSERT_EQ(got.sizes(), expected.sizes());
  EXPECT_TRUE(torch::allclose(got.cpu(), expected, 1e-6, 1e-6));
  // Only the master gets it by default.
  const torch::Tensor master_only = model.predict(train_set(9, false));
  EXPECT_EQ(master_only.defined(), tnt::is_master_rank());
}

TEST(Model, GradientAccumulationOfTwoEqualsOneStepOnTheDoubledBatch) {
  // Batches of 5 accumulated in pairs == batches of 10 (50 samples: 5 steps).
  tnt::Model model(make_net());
  const Reference ref = serial(train_set(10, false), 1, nullptr, model.device());
  model.compile(options().aggregation_frequency(2));
  model.fit(train_set(5, false), tnt::FitOptions().epochs(1).verbose(0));
  EXPECT_LE(max_rel_diff(ref.weights, params_of(model)), 1e-5);
}

TEST(Model, ValidationLogsAreReported) {
  tnt::Model model(make_net());
  model.compile(options());
  const auto history = model.fit(
      train_set(8, false),
      tnt::FitOptions().epochs(2).verbose(0).validation_data(samples().batch(16)));
  ASSERT_EQ(history.history.at("val_loss").size(), 2u);
  EXPECT_GT(history.history.at("val_sparse_categorical_accuracy")[1], 0.0);
}

TEST(Model, SaveAndLoadWeightsRoundTrip) {
  const std::string path = "/tmp/tnt_model_test_weights_" + std::to_string(::getpid()) + ".pt";
  // getpid differs per rank: agree on the master's name.
  torch::Tensor id = torch::tensor({static_cast<std::int64_t>(::getpid())});
  tnt::comm::broadcast(id, 0);
  const std::string shared = "/tmp/tnt_model_test_" + std::to_string(id.item<std::int64_t>()) + ".pt";
  tnt::Model a(make_net(1));
  a.save_weights(shared);
  tnt::Model b(make_net(2));
  b.load_weights(shared);
  EXPECT_EQ(max_rel_diff(params_of(a), params_of(b)), 0.0);
  tnt::comm::barrier();
  if (tnt::is_master_rank()) {
    // Truncate it: every rank must get an error naming the file.
    std::ofstream(shared, std::ios::binary | std::ios::trunc) << "PK\x03\x04 truncated";
  }
  try {
    b.load_weights(shared);
    ADD_FAILURE() << "a truncated file loaded on rank " << tnt::get_rank();
  } catch (const tnt::Error& e) {
    EXPECT_NE(std::string(e.what()).find(shared), std::string::npos) << e.what();
  }
  tnt::comm::barrier();
  if (tnt::is_master_rank()) std::remove(shared.c_str());
}

TEST(Model, ModelsThatDifferBetweenRanksFailOnEveryRank) {
  if (tnt::get_size() < 2) GTEST_SKIP() << "needs 2 ranks";
  torch::manual_seed(1);
  torch::nn::Sequential net(torch::nn::Linear(6, tnt::get_rank() == 1 ? 8 : 16),
                            torch::nn::Linear(tnt::get_rank() == 1 ? 8 : 16, 4));
  tnt::Model model(net);
  model.compile(options());
  try {
    model.fit(train_set(8, false), tnt::FitOptions().epochs(1).verbose(0));
    ADD_FAILURE() << "rank " << tnt::get_rank() << " trained a model that differs between ranks";
  } catch (const tnt::Error& e) {
    EXPECT_NE(std::string(e.what()).find("differ between ranks"), std::string::npos) << e.what();
  }
}

}  // namespace

namespace {

TEST(Model, TorchScriptModelTrainsLikeItsCppTwin) {
  const char* path = std::getenv("TNT_TEST_TORCHSCRIPT");
  if (path == nullptr || !std::ifstream(path).good()) {
    GTEST_SKIP() << "no TorchScript model (python3-torch absent? tests/mpi/make_torchscript.py "
                    "writes it when python3-torch is installed)";
  }
  tnt::Model scripted = tnt::load_torchscript(path);
  // The C++ twin starts from the scripted model's weights.
  Mlp twin = make_net();
  {
    torch::NoGradGuard no_grad;
    const auto source = scripted.named_parameters();
    const auto target = twin->named_parameters();
    ASSERT_EQ(source.size(), target.size());
    for (const auto& [name, t] : source) target[name].copy_(t);
  }
  tnt::Model cpp{twin};
  for (tnt::Model* m : {&scripted, &cpp}) {
    m->compile(options());
    m->fit(train_set(8, true), tnt::FitOptions().epochs(2).verbose(0));
  }
  EXPECT_LE(max_rel_diff(params_of(scripted), params_of(cpp)), 1e-6);
}

}  // namespace
