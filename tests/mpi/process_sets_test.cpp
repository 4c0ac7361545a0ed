// Process sets under the launcher at 4 ranks: two tnt::Models train at the
// same time on the disjoint groups {0,1} and {2,3}, each with its own data,
// and each ends with the weights of its own serial run; a group of three
// ranks trains while the fourth does other work; a rank outside a group
// that uses it gets a clear error instead of a hang.
#include <gtest/gtest.h>

#include <torch/torch.h>

#include <tarantella/tarantella.h>

#include "../support/weights.h"

namespace {

using Net = tnt_test::SmallNet;
using tnt_test::max_rel_diff;

Net make_net(std::uint64_t seed) {
  torch::manual_seed(seed);
  return Net();
}

// Each group's own data set, from its own seed.
tnt::data::Dataset data_of(std::uint64_t seed) {
  torch::Generator g = at::detail::createCPUGenerator(seed);
  const torch::Tensor x = torch::randn({50, 6}, g);
  const torch::Tensor y = torch::randint(0, 4, {50}, g);
  return tnt::data::Dataset::from_tensor_slices({x, y}).shuffle(50, seed).batch(12);
}

constexpr std::int64_t kEpochs = 2;
constexpr double kLr = 0.05;

std::vector<torch::Tensor> serial(std::uint64_t seed) {
  Net net = make_net(seed);
  torch::optim::SGD opt(net->parameters(), torch::optim::SGDOptions(kLr));
  const auto ds = data_of(seed);
  for (std::int64_t epoch = 0; epoch < kEpochs; ++epoch) {
    auto it = ds.iterate(epoch);
    while (auto e = it.next()) {
      opt.zero_grad();
      torch::nn::functional::cross_entropy(net->forward((*e)[0]), (*e)[1]).backward();
      opt.step();
    }
  }
  return net->parameters();
}

std::vector<torch::Tensor> train_on(const tnt::comm::ProcessGroup& group, std::uint64_t seed) {
  tnt::Model model(make_net(seed), group);
  model.compile(tnt::CompileOptions()
                    .optimizer(tnt::optimizers::SGD(kLr))
                    .loss(tnt::losses::SparseCategoricalCrossentropy()));
  model.fit(data_of(seed), tnt::FitOptions().epochs(kEpochs).verbose(0));
  std::vector<torch::Tensor> w;
  for (const auto& [name, t] : model.named_parameters()) w.push_back(t.detach().clone());
  return w;
}


class ProcessSets : public ::testing::Test {
 protected:
  void SetUp() override {
    if (tnt::get_size() != 4) GTEST_SKIP() << "process sets are tested at 4 ranks";
  }
};

TEST_F(ProcessSets, TwoModelsTrainSideBySideOnDisjointPairs) {
  const tnt::comm::ProcessGroup low = tnt::world().subgroup({0, 1});   // collective over world
  const tnt::comm::ProcessGroup high = tnt::world().subgroup({2, 3});
  const bool in_low = tnt::get_rank() < 2;
  const tnt::comm::ProcessGroup& mine = in_low ? low : high;
  ASSERT_TRUE(mine.is_member());
  ASSERT_FALSE((in_low ? high : low).is_member());
  EXPECT_EQ(mine.size(), 2);
  EXPECT_EQ(mine.rank(), tnt::get_rank() % 2);
  EXPECT_EQ(mine.world_ranks(), in_low ? (std::vector<int>{0, 1}) : (std::vector<int>{2, 3}));
  const std::uint64_t seed = in_low ? 11 : 22;
  const auto got = train_on(mine, seed);
  EXPECT_LE(max_rel_diff(serial(seed), got), 1e-5) << "world rank " << tnt::get_rank();
  // The two models differ: they trained on different data from different starts.
  const auto other = serial(in_low ? 22 : 11);
  EXPECT_GT(max_rel_diff(other, got), 1e-3);
  tnt::world().barrier();
}

TEST_F(ProcessSets, ThreeRanksTrainWhileTheFourthDoesOtherWork) {
  const tnt::comm::ProcessGroup three = tnt::world().subgroup({0, 1, 2});
  if (tnt::get_rank() < 3) {
    const auto got = train_on(three, 33);
    EXPECT_LE(max_rel_diff(serial(33), got), 1e-5) << "world rank " << tnt::get_rank();
  } else {
    // Other work, no communication: a few matrix products.
    torch::Tensor m = torch::randn({64, 64});
    for (int i = 0; i < 50; ++i) m = torch::tanh(m.matmul(m) / 64);
    EXPECT_TRUE(torch::isfinite(m).all().item<bool>());
  }
  tnt::world().barrier();
}

TEST_F(ProcessSets, UsingAGroupFromOutsideIsAClearError) {
  const tnt::comm::ProcessGroup three = tnt::world().subgroup({0, 1, 2});
  if (tnt::get_rank() == 3) {
    try {
      three.allreduce(torch::ones({1}));
      ADD_FAILURE() << "a collective of a group this rank is not in must throw";
    } catch (const tnt::Error& e) {
      EXPECT_NE(std::string(e.what()).find("not a member"), std::string::npos) << e.what();
    }
    try {
      tnt::Model model(make_net(1), three);
      ADD_FAILURE() << "a model on a group this rank is not in must throw";
    } catch (const tnt::Error& e) {
      EXPECT_NE(std::string(e.what()).find("world ranks 0,1,2"), std::string::npos) << e.what();
    }
  }
  tnt::world().barrier();
}

}  // namespace
