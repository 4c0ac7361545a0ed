// Keep your own loop: a torch::data dataset with transforms through
// tnt::data::make_data_loader and a tnt::DistributedOptimizer, driven by the
// textbook zero_grad/backward/step loop, at 1..4 in-process ranks (no MPI),
// against the same loop in plain LibTorch: same weights (1e-5 relative), for
// uneven and empty shares of a short last batch, shuffled or not.
#include <gtest/gtest.h>

#include <mutex>

#include <torch/torch.h>

#include <tarantella/tarantella.h>

#include "../support/weights.h"

namespace {

using tnt_test::max_rel_diff;

// A torch::data dataset of its own, as a user writes one.
struct Pairs : torch::data::datasets::Dataset<Pairs> {
  Pairs() {
    torch::Generator g = at::detail::createCPUGenerator(5);
    x = torch::randn({kSize, 6}, g);
    y = torch::randint(0, 4, {kSize}, g);
  }
  torch::data::Example<> get(size_t i) override { return {x[i], y[i]}; }
  torch::optional<size_t> size() const override { return kSize; }
  static constexpr std::int64_t kSize = 38;  // batches of 12: 12, 12, 12, 2
  torch::Tensor x, y;
};

auto pipeline() {
  return Pairs()
      .map(torch::data::transforms::TensorLambda<>(
          [](torch::Tensor x) { return (x - 0.5) / 2.0; }))
      .map(torch::data::transforms::Stack<>());
}

struct Net : torch::nn::Module {
  Net() : fc1(6, 16), fc2(16, 4) {
    register_module("fc1", fc1);
    register_module("fc2", fc2);
  }
  torch::Tensor forward(torch::Tensor x) {
    return torch::log_softmax(fc2->forward(torch::tanh(fc1->forward(x))), 1);
  }
  torch::nn::Linear fc1, fc2;
};

std::mutex g_seed;  // manual_seed and construction share the global generator

// After each step, a backward that is not to count (a GAN's generator loss
// through the discriminator): the next zero_grad() drops it. (Not a sum of
// probabilities: that is constant, its gradient 0.)
void stray_backward(Net& model, const torch::Tensor& x) {
  (model.forward(x).sum() * 100).backward();
}

std::vector<torch::Tensor> plain_loop(bool shuffle, bool stray = false) {
  std::unique_lock<std::mutex> lock(g_seed);
  torch::manual_seed(1);
  Net model;
  lock.unlock();
  torch::optim::SGD optimizer(model.parameters(), torch::optim::SGDOptions(0.1).momentum(0.5));
  // The order a one-rank distributed loader uses: plain LibTorch has no way
  // to share a seeded order, so the reference takes it from the bridge at 1 rank.
  auto loader = tnt::data::make_data_loader(
      pipeline(), tnt::data::DataLoaderOptions(12).shuffle(shuffle).group(
                      tnt::comm::make_in_process_group(1).front()));
  for (int epoch = 0; epoch < 2; ++epoch) {
    for (auto& batch : *loader) {
      optimizer.zero_grad();
      torch::nll_loss(model.forward(batch.data), batch.target).backward();
      optimizer.step();
      if (stray) stray_backward(model, batch.data);
    }
  }
  return model.parameters();
}


class KeepYourLoop : public ::testing::TestWithParam<std::tuple<int, bool>> {};

// The textbook loop with a DistributedOptimizer at n in-process ranks
// (different starting weights: the broadcast must fix them); each rank's
// weights at the end.
std::vector<std::vector<torch::Tensor>> distributed_loop(int n, bool shuffle, bool stray) {
  std::vector<std::vector<torch::Tensor>> got(static_cast<std::size_t>(n));
  tnt::comm::run_in_process(n, [&](const tnt::comm::ProcessGroup& g) {
    std::unique_lock<std::mutex> lock(g_seed);
    torch::manual_seed(100 + g.rank());  // different starts: the broadcast must fix them
    Net model;
    lock.unlock();
    auto loader = tnt::data::make_data_loader(
        pipeline(), tnt::data::DataLoaderOptions(12).shuffle(shuffle).group(g));
    if (g.rank() == 0) {  // rank 0 starts where the plain loop starts
      std::lock_guard<std::mutex> again(g_seed);
      torch::manual_seed(1);
      Net reference;
      torch::NoGradGuard no_grad;
      for (std::size_t i = 0; i < model.parameters().size(); ++i) {
        model.parameters()[i].copy_(reference.parameters()[i]);
      }
    }
    tnt::DistributedOptimizer optimizer(
        torch::optim::SGD(model.parameters(), torch::optim::SGDOptions(0.1).momentum(0.5)),
        tnt::dp::DistributedOptimizerOptions().share(loader->share()).group(g));
    for (int epoch = 0; epoch < 2; ++epoch) {
      std::int64_t steps = 0;
      for (auto& batch : *loader) {
        optimizer.zero_grad();  // works after a step: .grad is not a view
        torch::nll_loss(model.forward(batch.data), batch.target).backward();
        optimizer.step();
        if (stray) stray_backward(model, batch.data);
        ++steps;
      }
      EXPECT_EQ(steps, 4);  // every rank runs every step, also with an empty share
    }
    got[static_cast<std::size_t>(g.rank())] = model.parameters();
  });
  return got;
}

TEST_P(KeepYourLoop, EqualsThePlainLoop) {
  const auto [n, shuffle] = GetParam();
  const auto expected = plain_loop(shuffle);
  const auto got = distributed_loop(n, shuffle, false);
  for (int r = 0; r < n; ++r) {
    EXPECT_LE(max_rel_diff(expected, got[static_cast<std::size_t>(r)]), 1e-5)
        << "rank " << r << " of " << n << (shuffle ? ", shuffled" : "");
  }
}

// A backward after step() (its buckets may already be on the wire) is
// dropped by zero_grad(), as in the plain loop; it used to be summed into
// the next step at 2 ranks and more (1 rank hid it).
TEST(KeepYourLoopZeroGrad, DropsABackwardThatIsNotToCount) {
  const auto expected = plain_loop(false, /*stray=*/true);
  for (int n : {1, 2, 3}) {
    const auto got = distributed_loop(n, false, /*stray=*/true);
    for (int r = 0; r < n; ++r) {
      EXPECT_LE(max_rel_diff(expected, got[static_cast<std::size_t>(r)]), 1e-5)
          << "rank " << r << " of " << n;
    }
  }
}

// A parameter frozen when the optimizer was wrapped and unfrozen later has
// no hook: step() refuses it on every rank, rather than stepping each
// rank's own gradient (the ranks would drift apart silently).
TEST(KeepYourLoopZeroGrad, AParameterUnfrozenAfterWrappingIsRefused) {
  tnt::comm::run_in_process(2, [](const tnt::comm::ProcessGroup& g) {
    std::unique_lock<std::mutex> lock(g_seed);
    torch::manual_seed(1);
    Net model;
    lock.unlock();
    model.fc1->weight.set_requires_grad(false);
    tnt::DistributedOptimizer optimizer(
        torch::optim::SGD(model.parameters(), torch::optim::SGDOptions(0.1)),
        tnt::dp::DistributedOptimizerOptions().group(g));
    model.fc1->weight.set_requires_grad(true);
    optimizer.zero_grad();
    torch::nll_loss(model.forward(torch::randn({4, 6})), torch::zeros({4}, torch::kLong))
        .backward();
    try {
      optimizer.step();
      ADD_FAILURE() << "no error on rank " << g.rank();
    } catch (const tnt::Error& e) {
      EXPECT_NE(std::string(e.what()).find("did not require one when the optimizer was wrapped"),
                std::string::npos)
          << e.what();
    }
    // The refused step started the next cycle: with the parameter frozen
    // again, the next step sums every rank's gradient (different data per
    // rank, the same weights after).
    model.fc1->weight.set_requires_grad(false);
    model.fc1->weight.mutable_grad() = torch::Tensor();
    optimizer.zero_grad();
    torch::Generator gen = at::detail::createCPUGenerator(10 + g.rank());
    torch::nll_loss(model.forward(torch::randn({4, 6}, gen)), torch::zeros({4}, torch::kLong))
        .backward();
    optimizer.step();
    const torch::Tensor all = g.allgather(model.fc2->weight.detach().clone().unsqueeze(0));
    EXPECT_TRUE(torch::equal(all[0], all[1])) << "rank " << g.rank();
  });
}

INSTANTIATE_TEST_SUITE_P(Ranks, KeepYourLoop,
                         ::testing::Combine(::testing::Values(1, 2, 3, 4), ::testing::Bool()),
                         [](const auto& info) {
                           return std::to_string(std::get<0>(info.param)) + "ranks" +
                                  (std::get<1>(info.param) ? "Shuffled" : "Sequential");
                         });

TEST(KeepYourLoopLoader, SplitsEveryGlobalBatchByTheMicroBatchRule) {
  tnt::comm::run_in_process(4, [](const tnt::comm::ProcessGroup& g) {
    auto loader =
        tnt::data::make_data_loader(pipeline(), tnt::data::DataLoaderOptions(12).group(g));
    EXPECT_EQ(loader->size(), 4);
    std::vector<std::int64_t> rows;
    for (auto& batch : *loader) {
      rows.push_back(batch.data.size(0));
      const auto [local, global] = loader->share()->get();
      EXPECT_EQ(local, batch.data.size(0));
      EXPECT_EQ(global, rows.size() < 4 ? 12 : 2);
    }
    // 12 = 3+3+3+3; the last batch of 2: ranks 0 and 1 one sample, 2 and 3 none.
    const std::int64_t last = g.rank() < 2 ? 1 : 0;
    EXPECT_EQ(rows, (std::vector<std::int64_t>{3, 3, 3, last}));
  });
}

// LibTorch's sampler argument keeps its meaning: none (RandomSampler, its
// default) shuffles, SequentialSampler keeps the file order (the bridge
// read in order whatever the user had); an unseeded shuffle follows
// tnt::set_seed (it had a fixed seed of its own).
TEST(KeepYourLoopLoader, TheSamplerArgumentKeepsLibTorchsMeaning) {
  const auto first_epoch = [](auto& loader) {
    std::vector<float> firsts;  // the first feature of every sample, in order
    for (auto& batch : *loader) {
      for (std::int64_t i = 0; i < batch.data.size(0); ++i) {
        firsts.push_back(batch.data[i][0].template item<float>());
      }
    }
    return firsts;
  };
  const auto one = tnt::comm::make_in_process_group(1).front();
  auto sequential = tnt::data::make_data_loader<torch::data::samplers::SequentialSampler>(
      pipeline(), tnt::data::DataLoaderOptions(12).group(one));
  auto in_order = first_epoch(sequential);
  const torch::Tensor x = (Pairs().x.select(1, 0) - 0.5) / 2.0;
  for (std::int64_t i = 0; i < Pairs::kSize; ++i) {
    EXPECT_EQ(in_order[static_cast<std::size_t>(i)], x[i].item<float>()) << i;
  }
  const std::uint64_t before = tnt::data::default_shuffle_seed();
  auto random = tnt::data::make_data_loader(pipeline(), tnt::data::DataLoaderOptions(12).group(one));
  const auto shuffled = first_epoch(random);
  EXPECT_NE(shuffled, in_order);
  auto explicit_random = tnt::data::make_data_loader<torch::data::samplers::RandomSampler>(
      pipeline(), tnt::data::DataLoaderOptions(12).group(one));
  EXPECT_EQ(first_epoch(explicit_random), shuffled);
  // shuffle(false) given wins over the default sampler.
  auto unshuffled =
      tnt::data::make_data_loader(pipeline(), tnt::data::DataLoaderOptions(12).shuffle(false).group(one));
  EXPECT_EQ(first_epoch(unshuffled), in_order);
  tnt::data::set_default_shuffle_seed(before + 1);
  auto reseeded = tnt::data::make_data_loader(pipeline(), tnt::data::DataLoaderOptions(12).group(one));
  EXPECT_NE(first_epoch(reseeded), shuffled);
  tnt::data::set_default_shuffle_seed(before);
}

// The other route: the same torch::data pipeline as a tnt::data source for
// tnt::Model::fit, with NLLLoss for the log_softmax network.
TEST(FromTorch, FitOnATorchDatasetEqualsThePlainLoop) {
  const auto expected = plain_loop(/*shuffle=*/false);
  const auto train = tnt::data::from_torch(pipeline()).batch(12);
  EXPECT_EQ(train.cardinality(), 4);
  std::vector<std::vector<torch::Tensor>> got(3);
  tnt::comm::run_in_process(3, [&](const tnt::comm::ProcessGroup& g) {
    std::unique_lock<std::mutex> lock(g_seed);
    torch::manual_seed(1);
    tnt::Model model(Net(), g);
    lock.unlock();
    model.compile(tnt::CompileOptions()
                      .optimizer(tnt::optimizers::SGD(0.1, 0.5))
                      .loss(tnt::losses::NLLLoss()));
    model.fit(train, tnt::FitOptions().epochs(2).verbose(0));
    for (const auto& [name, t] : model.named_parameters()) {
      got[static_cast<std::size_t>(g.rank())].push_back(t.detach().clone());
    }
  });
  for (int r = 0; r < 3; ++r) EXPECT_LE(max_rel_diff(expected, got[r]), 1e-5) << "rank " << r;
}

}  // namespace
