// The gradient engine against serial training written in plain LibTorch:
// N ranks, each with its micro-batch of every global batch (the first B mod
// N ranks one sample more, possibly none), must end with the weights of one
// process training on the whole batch.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include <torch/torch.h>

#include <tarantella/dp/gradient_sync.h>
#include <tarantella/base/torch_compat.h>
#include <tarantella/dp/state_sync.h>
#include <tarantella/tarantella.h>

namespace {

struct NetImpl : torch::nn::Module {
  NetImpl() {
    fc1 = register_module("fc1", torch::nn::Linear(6, 32));
    fc2 = register_module("fc2", torch::nn::Linear(32, 32));
    fc3 = register_module("fc3", torch::nn::Linear(32, 4));
    unused = register_module("unused", torch::nn::Linear(3, 3));  // never in forward
  }
  torch::Tensor forward(const torch::Tensor& x) {
    return fc3(torch::tanh(fc2(torch::tanh(fc1(x)))));
  }
  torch::nn::Linear fc1{nullptr}, fc2{nullptr}, fc3{nullptr}, unused{nullptr};
};
TORCH_MODULE(Net);

Net make_net() {
  torch::manual_seed(7);  // same initial weights everywhere
  return Net();
}

std::vector<torch::Tensor> trainable(Net& net) { return net->parameters(); }

// The global batch of step s (B samples), the same on every rank.
std::pair<torch::Tensor, torch::Tensor> global_batch(int step, std::int64_t b) {
  torch::Generator g = at::detail::createCPUGenerator(1000 + step);
  return {torch::randn({b, 6}, g), torch::randint(0, 4, {b}, g)};
}

// This rank's slice under the micro-batch rule.
std::pair<std::int64_t, std::int64_t> my_slice(std::int64_t b) {
  const int n = tnt::get_size(), r = tnt::get_rank();
  const std::int64_t base = b / n, extra = b % n;
  const std::int64_t start = r * base + std::min<std::int64_t>(r, extra);
  return {start, base + (r < extra ? 1 : 0)};
}

torch::Tensor loss_of(Net& net, const torch::Tensor& x, const torch::Tensor& y) {
  return torch::nn::functional::cross_entropy(net->forward(x), y);
}

// Serial reference: one process, whole batches, plain LibTorch.
std::vector<torch::Tensor> serial(const std::vector<std::int64_t>& batches, double lr) {
  Net net = make_net();
  torch::optim::SGD opt(net->parameters(), torch::optim::SGDOptions(lr).momentum(0.9));
  for (std::size_t s = 0; s < batches.size(); ++s) {
    auto [x, y] = global_batch(static_cast<int>(s), batches[s]);
    opt.zero_grad();
    loss_of(net, x, y).backward();
    opt.step();
  }
  return net->parameters();
}

std::vector<torch::Tensor> distributed(const std::vector<std::int64_t>& batches, double lr,
                                       tnt::dp::SyncOptions options,
                                       std::vector<double>* extras_out = nullptr) {
  Net net = make_net();
  torch::optim::SGD opt(net->parameters(), torch::optim::SGDOptions(lr).momentum(0.9));
  tnt::dp::GradientSynchronizer sync(tnt::world(), trainable(net), options.extras_numel(2));
  for (std::size_t s = 0; s < batches.size(); ++s) {
    auto [x, y] = global_batch(static_cast<int>(s), batches[s]);
    auto [start, n] = my_slice(batches[s]);
    torch::Tensor loss;
    torch::Tensor extras = torch::zeros({2}, torch::kFloat64);
    if (n > 0) {
      loss = loss_of(net, x.narrow(0, start, n), y.narrow(0, start, n));
      extras = torch::tensor({loss.item<double>() * n, double(n)}, torch::kFloat64);
    }
    sync.begin_step(double(n) / double(batches[s]), true, extras);
    if (loss.defined()) loss.backward();
    const torch::Tensor global = sync.finish();
    if (extras_out) extras_out->assign(global.data_ptr<double>(), global.data_ptr<double>() + 2);
    opt.step();
  }
  return net->parameters();
}

double max_rel_diff(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b) {
  double worst = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double scale = std::max(1.0, a[i].abs().max().item<double>());
    worst = std::max(worst, (a[i] - b[i]).abs().max().item<double>() / scale);
  }
  return worst;
}

const std::vector<std::int64_t> kBatches = {8, 7, 13, 5, 2, 1};  // uneven; 2 and 1 < N at N=3,4

TEST(GradientSync, MatchesSerialTrainingWithUnevenAndEmptyMicroBatches) {
  const auto expected = serial(kBatches, 0.1);
  const auto got = distributed(kBatches, 0.1, tnt::dp::SyncOptions());
  EXPECT_LE(max_rel_diff(expected, got), 1e-5) << "ranks=" << tnt::get_size();
}

TEST(GradientSync, WeightsAreBitwiseIdenticalOnAllRanks) {
  const auto got = distributed(kBatches, 0.1, tnt::dp::SyncOptions());
  for (const auto& p : got) {
    const torch::Tensor all = tnt::comm::allgather(p.detach().unsqueeze(0).contiguous());
    for (int r = 1; r < tnt::get_size(); ++r) ASSERT_TRUE(torch::equal(all[r], all[0]));
  }
}

TEST(GradientSync, LossStateRidesAlongAndIsTheGlobalSum) {
  std::vector<double> extras;
  distributed({9}, 0.1, tnt::dp::SyncOptions(), &extras);
  Net net = make_net();
  auto [x, y] = global_batch(0, 9);
  const double serial_loss = loss_of(net, x, y).item<double>();
  EXPECT_DOUBLE_EQ(extras[1], 9.0);
  EXPECT_NEAR(extras[0] / extras[1], serial_loss, 1e-5);
}

TEST(GradientSync, FusionThresholdDoesNotChangeTheResult) {
  const auto none = distributed(kBatches, 0.1, tnt::dp::SyncOptions().fusion_threshold_bytes(0));
  const auto dflt = distributed(kBatches, 0.1, tnt::dp::SyncOptions());
  const auto huge = distributed(kBatches, 0.1, tnt::dp::SyncOptions().fusion_threshold_bytes(1 << 30));
  if (tnt::get_size() <= 2) {
    // Two summands: a + b is the same whatever MPI's algorithm.
    for (std::size_t i = 0; i < none.size(); ++i) {
      EXPECT_TRUE(torch::equal(none[i], dflt[i]));
      EXPECT_TRUE(torch::equal(none[i], huge[i]));
    }
  } else {
    // With 3+ ranks MPI may add in a different order for different message
    // sizes: equal up to float rounding.
    EXPECT_LE(max_rel_diff(none, dflt), 1e-6);
    EXPECT_LE(max_rel_diff(none, huge), 1e-6);
  }
}

TEST(GradientSync, AccumulationOfTwoHalvesEqualsOneStepOnTheWholeBatch) {
  const std::int64_t b = 12;
  const auto expected = serial({b}, 0.1);
  Net net = make_net();
  torch::optim::SGD opt(net->parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));
  tnt::dp::GradientSynchronizer sync(tnt::world(), trainable(net), tnt::dp::SyncOptions());
  auto [x, y] = global_batch(0, b);
  for (int half = 0; half < 2; ++half) {
    // Each micro-step is a global batch of 6 samples; weights n_r / (6 * 2).
    const torch::Tensor xh = x.narrow(0, half * 6, 6), yh = y.narrow(0, half * 6, 6);
    auto [start, n] = my_slice(6);
    torch::Tensor loss;
    if (n > 0) loss = loss_of(net, xh.narrow(0, start, n), yh.narrow(0, start, n));
    sync.begin_step(double(n) / (6.0 * 2.0), /*reduce=*/half == 1);
    if (loss.defined()) loss.backward();
    sync.finish();
  }
  opt.step();
  EXPECT_LE(max_rel_diff(expected, net->parameters()), 1e-5);
}

TEST(GradientSync, CompressedGradientsStayCloseToUncompressed) {
  const auto exact = distributed(kBatches, 0.1, tnt::dp::SyncOptions());
  for (auto c : {tnt::dp::Compression::Float16, tnt::dp::Compression::BFloat16}) {
    const auto compressed = distributed(kBatches, 0.1, tnt::dp::SyncOptions().compression(c));
    // Stated tolerance: bfloat16 keeps 8 significant bits (rel. error 2^-8 per
    // value), float16 11 bits; after 6 steps of lr 0.1 the weights move by
    // far less than that bound.
    EXPECT_LE(max_rel_diff(exact, compressed), c == tnt::dp::Compression::BFloat16 ? 5e-3 : 1e-3);
    EXPECT_GT(max_rel_diff(exact, compressed), 0.0) << "compression had no effect at all";
  }
}

TEST(GradientSync, FirstBucketAllreduceStartsBeforeBackwardEnds) {
  if (tnt::get_size() < 2) GTEST_SKIP() << "overlap needs a peer";
  // A deep-ish model with many buckets: the last layers' buckets must be on
  // the wire while the first layer still computes its gradients. Backward
  // holds at the first layer (a hook on its output's gradient, which runs
  // before that layer's weight gradients) until an allreduce has started,
  // or 20 s: the check does not depend on how the OS schedules the
  // communication thread on a loaded machine, only on the buckets being
  // launched from backward (a synchronizer that sends them at finish()
  // never starts one there and fails).
  torch::manual_seed(3);
  torch::nn::Sequential net;
  for (int i = 0; i < 12; ++i) net->push_back(torch::nn::Linear(256, 256));
  tnt::dp::GradientSynchronizer sync(tnt::world(), net->parameters(),
                                     tnt::dp::SyncOptions().fusion_threshold_bytes(256 * 1024));
  ASSERT_GE(sync.buckets().size(), 6u);
  // Reads the handles from the hook: on the CPU, autograd runs the
  // synchronizer's gradient hooks and this one on this thread, in turn.
  const auto any_started = [&sync] {
    for (const auto& h : sync.last_handles())
      if (h.started().has_value()) return true;
    return false;
  };
  const torch::Tensor x = torch::randn({128, 256});
  torch::Tensor h = net[0]->as<torch::nn::Linear>()->forward(x);
  bool started_during_backward = false;
  h.register_hook([&](const torch::Tensor& g) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (!any_started() && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    started_during_backward = any_started();
    return g;
  });
  for (std::size_t i = 1; i < net->size(); ++i) h = net[i]->as<torch::nn::Linear>()->forward(h);
  const torch::Tensor loss = h.pow(2).mean();
  sync.begin_step(1.0 / tnt::get_size(), true);
  loss.backward();
  const auto backward_end = std::chrono::steady_clock::now();
  sync.finish();
  EXPECT_TRUE(started_during_backward)
      << "no bucket's allreduce started while the first layer's gradients were still to come";
  const auto first_start = sync.last_handles().front().started();
  ASSERT_TRUE(first_start.has_value());
  EXPECT_LT(*first_start, backward_end)
      << "the first bucket's allreduce did not start before backward ended";
}

TEST(GradientSync, DifferentModelsOnDifferentRanksFailEverywhere) {
  if (tnt::get_size() < 2) GTEST_SKIP() << "needs 2 ranks";
  torch::nn::Linear net(4, tnt::get_rank() == tnt::get_size() - 1 ? 5 : 6);
  tnt::dp::NamedTensors named;
  for (const auto& item : net->named_parameters()) named.emplace_back(item.key(), item.value());
  try {
    tnt::dp::check_same_structure(tnt::world(), named, "parameters");
    FAIL() << "no error on rank " << tnt::get_rank();
  } catch (const tnt::Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("differ between ranks"), std::string::npos) << m;
    EXPECT_NE(m.find("'weight'"), std::string::npos) << m;
    EXPECT_NE(m.find("[5, 4]"), std::string::npos) << m;
  }
}

TEST(StateSync, BroadcastMakesEveryRankHoldTheMastersWeightsAndOptimizerState) {
  torch::manual_seed(100 + tnt::get_rank());  // deliberately different
  Net net;
  torch::optim::Adam opt(net->parameters(), torch::optim::AdamOptions(0.01));
  net->forward(torch::randn({4, 6})).sum().backward();
  opt.step();  // creates rank-specific Adam state
  std::vector<torch::Tensor> all = net->parameters();
  tnt::dp::broadcast_tensors(tnt::world(), all);
  tnt::dp::broadcast_optimizer_state(tnt::world(), opt);
  for (const auto& p : net->parameters()) {
    const torch::Tensor g = tnt::comm::allgather(p.detach().unsqueeze(0).contiguous());
    for (int r = 1; r < tnt::get_size(); ++r) ASSERT_TRUE(torch::equal(g[r], g[0]));
  }
  // Adam's first moments are the master's too.
  int with_state = 0;
  for (const auto& p : net->parameters()) {
    auto it = opt.state().find(tnt::compat::optimizer_state_key(p));
    if (it == opt.state().end()) continue;  // the unused layer never got a gradient
    ++with_state;
    auto& state = static_cast<torch::optim::AdamParamState&>(*it->second);
    const torch::Tensor g = tnt::comm::allgather(state.exp_avg().unsqueeze(0).contiguous());
    for (int r = 1; r < tnt::get_size(); ++r) ASSERT_TRUE(torch::equal(g[r], g[0]));
  }
  EXPECT_EQ(with_state, 6);  // fc1..fc3 weights and biases
}

}  // namespace
