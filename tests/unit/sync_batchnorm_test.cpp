// SyncBatchNorm without MPI: its arithmetic at 1-4 in-process ranks
// (threads) with uneven and empty micro-batches against LibTorch's
// BatchNorm over the whole batch; the registry layer's JSON round trip; the
// converter (what it replaces, what it refuses, that it changes nothing
// when it refuses); and tnt::Model handing its group to the layers.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include <tarantella/tarantella.h>

#include "../support/sync_batchnorm_check.h"

namespace {

namespace TL = tnt::layers;
using json = nlohmann::json;

struct SbnCase {
  std::int64_t batch;
  std::vector<std::int64_t> sample_shape;
};

TEST(SyncBatchNorm, InProcessRanksMatchSerialBatchNorm) {
  // 7 samples: uneven at 2-4 ranks (4,3 / 3,2,2 / 2,2,2,1); 3 samples at 4
  // ranks: rank 3 has none; 4 samples of [C] at 4 ranks: one each, whose
  // local variance is 0. (Not 2 values per channel: the input gradient is
  // then a cancellation to almost 0, with no relative precision to check.)
  const std::vector<SbnCase> cases = {
      {7, {3}}, {3, {3}}, {4, {3}}, {7, {2, 3, 3}}, {3, {2, 3, 3}}, {5, {4, 2, 2}}};
  for (int n = 1; n <= 4; ++n) {
    for (const SbnCase& c : cases) {
      tnt::comm::run_in_process(n, [&](const tnt::comm::ProcessGroup& g) {
        const tnt_test::SbnErrors e =
            tnt_test::sbn_check_against_serial(g, c.batch, c.sample_shape);
        EXPECT_LE(e.worst(), 1e-5) << n << " ranks, batch " << c.batch << ", rank " << g.rank()
                                   << ": " << e.describe();
        EXPECT_EQ(e.batches_tracked, 2);
      });
    }
  }
}

// Under autocast the input is bfloat16 (or float16): the normalisation is
// computed in float32 and rounded once, as LibTorch's kernels do, so a
// channel with a large mean (1000, std 10) is as exact as any other. Rounding
// scale and shift to bfloat16 first erred by about |mean| * invstd * 2^-9
// (0.2 here); the gradient likewise (dy * (x - mean) formed in float32).
TEST(SyncBatchNorm, LowPrecisionInputsAreNormalisedInFloat32) {
  torch::Generator gen = at::detail::createCPUGenerator(7);
  const torch::Tensor x = (torch::randn({8, 2}, gen) * 10 + torch::tensor({1000.0f, 0.0f}))
                              .to(torch::kBFloat16);
  const torch::Tensor dy = torch::randn({8, 2}, gen).to(torch::kBFloat16);
  // The reference in float32 on the same (bfloat16) values, over the whole batch.
  const torch::Tensor xf = x.to(torch::kFloat).requires_grad_(true);
  const torch::Tensor want = torch::batch_norm(xf, {}, {}, {}, {}, true, 0.1, 1e-5, false);
  want.backward(dy.to(torch::kFloat));
  // Without weights, and (the other absent input) without running stats.
  for (const bool running : {true, false}) tnt::comm::run_in_process(2, [&](const tnt::comm::ProcessGroup& g) {
    tnt::nn::SyncBatchNorm sync(
        tnt::nn::SyncBatchNormOptions(2).affine(false).track_running_stats(running), g);
    const torch::Tensor mine = x.narrow(0, 4 * g.rank(), 4).clone().requires_grad_(true);
    const torch::Tensor got = sync->forward(mine);
    EXPECT_EQ(got.scalar_type(), torch::kBFloat16);
    got.backward(dy.narrow(0, 4 * g.rank(), 4));
    const torch::Tensor out_err =
        (got.to(torch::kFloat) - want.detach().narrow(0, 4 * g.rank(), 4)).abs().max();
    const torch::Tensor grad_err =
        (mine.grad().to(torch::kFloat) - xf.grad().narrow(0, 4 * g.rank(), 4)).abs().max();
    // One bfloat16 rounding of values of order 1: 2^-8 relative.
    EXPECT_LE(out_err.item<float>(), 0.02f) << "rank " << g.rank() << ", running " << running;
    EXPECT_LE(grad_err.item<float>(), 0.02f) << "rank " << g.rank() << ", running " << running;
  });
}

TEST(SyncBatchNorm, OneValuePerChannelIsAnErrorOnEveryRank) {
  tnt::comm::run_in_process(2, [](const tnt::comm::ProcessGroup& g) {
    tnt::nn::SyncBatchNorm bn(tnt::nn::SyncBatchNormOptions(3), g);
    const torch::Tensor x = torch::randn({g.rank() == 0 ? 1 : 0, 3});
    try {
      bn->forward(x);
      ADD_FAILURE() << "no error on rank " << g.rank();
    } catch (const tnt::Error& e) {
      EXPECT_NE(std::string(e.what()).find("more than 1"), std::string::npos) << e.what();
    }
  });
}

TEST(SyncBatchNorm, WithoutAGroupOrRuntimeIsLibTorchsBatchNorm) {
  torch::manual_seed(3);
  tnt::nn::SyncBatchNorm ours(tnt::nn::SyncBatchNormOptions(4).momentum(std::nullopt));
  torch::nn::BatchNorm2d theirs(torch::nn::BatchNorm2dOptions(4).momentum(c10::nullopt));
  for (int step = 0; step < 3; ++step) {
    const torch::Tensor x = torch::randn({5, 4, 3, 3}) * 2 + 1;
    EXPECT_TRUE(torch::equal(ours->forward(x), theirs->forward(x)));
  }
  EXPECT_TRUE(torch::equal(ours->running_mean, theirs->running_mean));
  EXPECT_TRUE(torch::equal(ours->running_var, theirs->running_var));
  EXPECT_EQ(ours->num_batches_tracked.item<std::int64_t>(), 3);
  // Same names: a state dict of one loads into the other.
  EXPECT_EQ(ours->named_parameters().keys(), theirs->named_parameters().keys());
  EXPECT_EQ(ours->named_buffers().keys(), theirs->named_buffers().keys());
}

TEST(SyncBatchNorm, RegistryLayerRoundTripsAndMatchesBatchNorm) {
  const auto names = TL::registered_layers();
  EXPECT_NE(std::find(names.begin(), names.end(), "SyncBatchNorm"), names.end());
  TL::Sequential net({TL::Dense(4, 6), TL::SyncBatchNorm(6, 0.9, 1e-5), TL::Dense(6, 2)});
  const json config = net->get_config();
  EXPECT_EQ(config["config"]["layers"][1],
            json::parse(R"({"class_name": "SyncBatchNorm",
                            "config": {"num_features": 6, "momentum": 0.9, "epsilon": 1e-5}})"));
  auto rebuilt = TL::SequentialImpl::from_config(config);
  EXPECT_EQ(rebuilt->get_config(), config);
  EXPECT_EQ(rebuilt->named_buffers().keys(), net->named_buffers().keys());

  TL::Sequential local({TL::BatchNorm(6, 0.9, 1e-5)});
  TL::Sequential sync({TL::SyncBatchNorm(6, 0.9, 1e-5)});
  const torch::Tensor x = torch::randn({8, 6}) * 3 + 1;
  EXPECT_TRUE(torch::equal(sync->forward(x), local->forward(x)));
  EXPECT_TRUE(torch::equal(sync->named_buffers()["0.running_var"],
                           local->named_buffers()["0.running_var"]));
  const std::string bad = [] {
    try {
      TL::SyncBatchNorm(6, 1.5);
    } catch (const tnt::Error& e) {
      return std::string(e.what());
    }
    return std::string();
  }();
  EXPECT_NE(bad.find("SyncBatchNorm needs 0 <= momentum <= 1, got 1.5"), std::string::npos) << bad;
}

// A module of a user that keeps its layers in containers.
struct ContainerNetImpl : torch::nn::Module {
  ContainerNetImpl() {
    features = register_module(
        "features", torch::nn::Sequential(torch::nn::Conv2d(2, 4, 3), torch::nn::BatchNorm2d(4),
                                          torch::nn::ReLU()));
    heads = register_module("heads", torch::nn::ModuleList(torch::nn::BatchNorm1d(4)));
    named = register_module(
        "named", torch::nn::ModuleDict(std::vector<std::pair<std::string, std::shared_ptr<Module>>>{
                     {"norm", torch::nn::BatchNorm1d(4).ptr()}}));
  }
  torch::Tensor forward(const torch::Tensor& x) { return features->forward(x); }
  torch::nn::Sequential features{nullptr};
  torch::nn::ModuleList heads{nullptr};
  torch::nn::ModuleDict named{nullptr};
};
TORCH_MODULE(ContainerNet);

TEST(ConvertSyncBatchNorm, ReplacesInsideContainersKeepingStateAndNames) {
  torch::manual_seed(1);
  ContainerNet net;
  const auto old_bn = net->features[1];  // the old BatchNorm2d object
  {
    torch::NoGradGuard no_grad;
    net->features[1]->as<torch::nn::BatchNorm2d>()->running_mean.fill_(0.25);
    net->features[1]->as<torch::nn::BatchNorm2d>()->weight.fill_(2);
    net->features[1]->as<torch::nn::BatchNorm2d>()->num_batches_tracked.fill_(7);
  }
  const auto names_before = net->named_parameters().keys();
  const auto buffers_before = net->named_buffers().keys();

  EXPECT_EQ(tnt::nn::convert_sync_batchnorm(*net), 3u);
  EXPECT_EQ(net->named_parameters().keys(), names_before);
  EXPECT_EQ(net->named_buffers().keys(), buffers_before);
  auto* sync = net->features[1]->as<tnt::nn::SyncBatchNormImpl>();
  ASSERT_NE(sync, nullptr);
  EXPECT_EQ(net->features->named_children()["1"].get(), sync);  // registered child too
  EXPECT_TRUE(torch::equal(sync->running_mean, torch::full({4}, 0.25)));
  EXPECT_TRUE(torch::equal(sync->weight, torch::full({4}, 2.0)));
  EXPECT_TRUE(sync->weight.requires_grad());
  EXPECT_NE(net->heads[0]->as<tnt::nn::SyncBatchNormImpl>(), nullptr);
  EXPECT_NE(net->named["norm"]->as<tnt::nn::SyncBatchNormImpl>(), nullptr);

  // The containers call the new layer: its counter moves, the old one's not.
  net->forward(torch::randn({3, 2, 5, 5}));
  EXPECT_EQ(sync->num_batches_tracked.item<std::int64_t>(), 8);
  EXPECT_EQ(old_bn->as<torch::nn::BatchNorm2d>()->num_batches_tracked.item<std::int64_t>(), 7);
  EXPECT_EQ(tnt::nn::convert_sync_batchnorm(*net), 0u);  // nothing left to convert
}

// The usual C++ style: the BatchNorm lives in a member.
struct MemberNetImpl : torch::nn::Module {
  MemberNetImpl() {
    body = register_module("body", torch::nn::Sequential(torch::nn::Linear(3, 4),
                                                         torch::nn::BatchNorm1d(4)));
    bn = register_module("bn", torch::nn::BatchNorm1d(4));
  }
  torch::Tensor forward(const torch::Tensor& x) { return bn(body->forward(x)); }
  torch::nn::Sequential body{nullptr};
  torch::nn::BatchNorm1d bn{nullptr};
};
TORCH_MODULE(MemberNet);

TEST(ConvertSyncBatchNorm, RefusesMembersAndChangesNothing) {
  MemberNet net;
  std::string message;
  try {
    tnt::nn::convert_sync_batchnorm(*net);
  } catch (const tnt::Error& e) {
    message = e.what();
  }
  EXPECT_NE(message.find("'bn'"), std::string::npos) << message;
  EXPECT_NE(message.find("declare that member as tnt::nn::SyncBatchNorm"), std::string::npos)
      << message;
  EXPECT_NE(message.find("nothing was converted"), std::string::npos) << message;
  // The BatchNorm inside the Sequential, which could have been replaced, was not.
  EXPECT_NE(net->body[1]->as<torch::nn::BatchNorm1d>(), nullptr);

  std::string itself;
  try {
    torch::nn::BatchNorm2d bn(3);
    tnt::nn::convert_sync_batchnorm(*bn);
  } catch (const tnt::Error& e) {
    itself = e.what();
  }
  EXPECT_NE(itself.find("the module itself is a BatchNorm"), std::string::npos) << itself;
}

TEST(ConvertSyncBatchNorm, RegistryBatchNormBecomesRegistrySyncBatchNorm) {
  TL::Sequential net({TL::Dense(4, 6), TL::BatchNorm(6, 0.9, 1e-4), TL::Dense(6, 2)});
  {
    torch::NoGradGuard no_grad;
    net->named_buffers()["1.running_var"].fill_(3);
  }
  EXPECT_EQ(tnt::nn::convert_sync_batchnorm(*net), 1u);
  const json config = net->get_config();
  EXPECT_EQ(config["config"]["layers"][1]["class_name"], "SyncBatchNorm");
  EXPECT_EQ(config["config"]["layers"][1]["config"]["momentum"], 0.9);
  EXPECT_EQ(config["config"]["layers"][1]["config"]["epsilon"], 1e-4);
  EXPECT_TRUE(torch::equal(net->named_buffers()["1.running_var"], torch::full({6}, 3.0)));
  EXPECT_EQ(net->layers()[1]->class_name(), "SyncBatchNorm");  // what forward() calls
}

TEST(SyncBatchNorm, ModelGivesItsGroupToLayersWithoutOne) {
  auto groups = tnt::comm::make_in_process_group(1);
  auto other = tnt::comm::make_in_process_group(1);
  TL::Sequential net({TL::Dense(4, 6), TL::SyncBatchNorm(6), TL::Dense(6, 2)});
  tnt::nn::SyncBatchNorm given(tnt::nn::SyncBatchNormOptions(2), other[0]);
  auto* layer = dynamic_cast<tnt::nn::CollectiveModule*>(net->layers()[1].get());
  ASSERT_NE(layer, nullptr);
  {
    tnt::Model model(net, groups[0]);
    EXPECT_TRUE(layer->process_group() == groups[0]);
  }
  tnt::Model again(net, other[0]);  // a model's group is not a given one
  EXPECT_TRUE(layer->process_group() == other[0]);

  torch::nn::Sequential seq(torch::nn::Linear(4, 2), given);
  tnt::Model with_given(seq, groups[0]);
  EXPECT_TRUE(given->process_group() == other[0]);  // an explicit group stays
}

}  // namespace
