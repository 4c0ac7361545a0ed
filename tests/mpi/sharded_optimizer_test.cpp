// The sharded optimizer, CompileOptions().shard_optimizer(true) (ZeRO stage
// 1), at N ranks: the same weights as the unsharded
// optimizer, 1/N of its state per rank, checkpoints in full form that load
// with or without sharding, and the agreed decisions (clipping norm, loss
// scaling's overflow) taken over all shards.
#include <gtest/gtest.h>

#include <limits>
#include <memory>

#include <tarantella/base/torch_compat.h>
#include "tiny_training.h"

namespace {

using namespace tnt_test;

// Elements held in the optimizer's state tensors on this rank (counted from
// torch::optim's own state objects, not from the library's bookkeeping).
std::int64_t state_elements(torch::optim::Optimizer& optimizer) {
  std::int64_t n = 0;
  for (const auto& [key, state] : optimizer.state()) {
    std::vector<torch::Tensor> fields;
    if (auto* a = dynamic_cast<torch::optim::AdamParamState*>(state.get())) {
      fields = {a->exp_avg(), a->exp_avg_sq(), a->max_exp_avg_sq()};
    } else if (auto* s = dynamic_cast<torch::optim::SGDParamState*>(state.get())) {
      fields = {s->momentum_buffer()};
    }
    for (const auto& f : fields) n += f.defined() ? f.numel() : 0;
  }
  return n;
}

std::int64_t sum_over_ranks(std::int64_t v) {
  torch::Tensor t = torch::tensor({v});
  tnt::comm::allreduce(t, tnt::comm::ReduceOp::Sum);
  return t.item<std::int64_t>();
}

struct Variant {
  const char* name;
  tnt::CompileOptions options;
};

std::vector<Variant> variants() {
  auto base = [] { return options(); };
  return {
      {"Adam", base().optimizer(tnt::optimizers::Adam(0.01))},
      {"Adam, a bucket per tensor (slices of 4 elements or fewer)",
       base().optimizer(tnt::optimizers::Adam(0.01)).fusion_threshold_bytes(0)},
      {"SGD with momentum, clip_norm", base().clip_norm(0.5)},
      {"AdamW, clip_value, accumulation of 2",
       base().optimizer(tnt::optimizers::AdamW(0.01)).clip_value(0.05).aggregation_frequency(2)},
      {"RMSprop with momentum", base().optimizer(tnt::optimizers::RMSprop(0.01, 0.9, 0.5))},
      {"Adagrad", base().optimizer(tnt::optimizers::Adagrad(0.05, 0.1))},
  };
}

TEST(ShardedOptimizer, WeightsEqualTheUnshardedOptimizersWithin1e6) {
  for (const Variant& v : variants()) {
    tnt::Model plain{make_net()};
    plain.compile(v.options);
    plain.fit(train_set(8, true), tnt::FitOptions().epochs(3).verbose(0));
    tnt::Model sharded{make_net()};
    sharded.compile(tnt::CompileOptions(v.options).shard_optimizer(true));
    sharded.fit(train_set(8, true), tnt::FitOptions().epochs(3).verbose(0));
    const double diff = max_rel_diff(params_of(plain), params_of(sharded));
    EXPECT_LT(diff, 1e-6) << v.name << " at " << tnt::get_size() << " ranks";
    // Every rank holds the same weights after the allgather.
    for (const auto& p : params_of(sharded)) {
      const torch::Tensor all = tnt::comm::allgather(p.unsqueeze(0).contiguous());
      for (int r = 1; r < tnt::get_size(); ++r) {
        EXPECT_TRUE(torch::equal(all[r], all[0])) << v.name << ": rank " << r << " differs";
      }
    }
    // The training moved the weights (the comparison is not of two
    // untouched models).
    EXPECT_GT(max_rel_diff(params_of(plain), params_of(tnt::Model{make_net()})), 1e-3) << v.name;
  }
}

TEST(ShardedOptimizer, CompressedGradientsAreShardedToo) {
  // float16 on the wire: the reduce-scatter sums in float16, as the
  // allreduce does; the result stays within compression's tolerance.
  tnt::Model plain{make_net()};
  plain.compile(options().optimizer(tnt::optimizers::Adam(0.01)));
  plain.fit(train_set(8, true), tnt::FitOptions().epochs(2).verbose(0));
  tnt::Model sharded{make_net()};
  sharded.compile(options()
                      .optimizer(tnt::optimizers::Adam(0.01))
                      .compression(tnt::dp::Compression::Float16)
                      .shard_optimizer(true));
  sharded.fit(train_set(8, true), tnt::FitOptions().epochs(2).verbose(0));
  EXPECT_LT(max_rel_diff(params_of(plain), params_of(sharded)), 5e-3);
}

TEST(ShardedOptimizer, EachRankHoldsItsShareOfTheState) {
  tnt::Model plain{make_net()};
  plain.compile(options().optimizer(tnt::optimizers::Adam(0.01)));
  plain.fit(train_set(8, false), tnt::FitOptions().epochs(1).verbose(0));
  tnt::Model sharded{make_net()};
  sharded.compile(options().optimizer(tnt::optimizers::Adam(0.01)).shard_optimizer(true));
  sharded.fit(train_set(8, false), tnt::FitOptions().epochs(1).verbose(0));
  const std::int64_t full = state_elements(plain.optimizer());
  const std::int64_t mine = state_elements(sharded.optimizer());
  EXPECT_EQ(full, 2 * 180) << "Adam: two moments of the 180 parameters";
  EXPECT_EQ(sum_over_ranks(mine), full) << "the shards add up to the whole state, no copies";
  const std::int64_t n = tnt::get_size();
  EXPECT_LE(mine, 2 * ((180 + n - 1) / n)) << "rank " << tnt::get_rank() << " holds more than 1/N";
}

TEST(ShardedOptimizer, CheckpointsHoldTheWholeStateAndLoadEitherWay) {
  const std::string dir = shared_dir("shard");
  const auto adam = [] { return options().optimizer(tnt::optimizers::Adam(0.01)); };
  // Two epochs sharded, saved; the same two unsharded, saved.
  tnt::Model sharded{make_net()};
  sharded.compile(adam().shard_optimizer(true));
  sharded.fit(train_set(8, true), tnt::FitOptions().epochs(2).verbose(0));
  sharded.save(dir + "/sharded.pt");
  tnt::Model plain{make_net()};
  plain.compile(adam());
  plain.fit(train_set(8, true), tnt::FitOptions().epochs(2).verbose(0));

  // The sharded file loads into an unsharded model: its optimizer state is
  // the unsharded run's.
  tnt::Model into_plain{make_net()};
  into_plain.compile(adam());
  into_plain.load(dir + "/sharded.pt");
  EXPECT_EQ(state_elements(into_plain.optimizer()), state_elements(plain.optimizer()));
  // Compare moment by moment, in parameter order.
  auto moments = [](tnt::Model& m) {
    std::vector<torch::Tensor> out;
    for (const auto& p : m.optimizer().param_groups()[0].params()) {
      const auto& s = static_cast<torch::optim::AdamParamState&>(
          *m.optimizer().state().at(tnt::compat::optimizer_state_key(p)));
      out.push_back(s.exp_avg());
      out.push_back(s.exp_avg_sq());
      EXPECT_EQ(s.step(), 14) << "2 epochs of 7 steps";
    }
    return out;
  };
  EXPECT_LT(max_rel_diff(moments(into_plain), moments(plain)), 1e-6);

  // Training on from the file, sharded or not, gives the same weights as
  // the unsharded run going on.
  plain.fit(train_set(8, true), tnt::FitOptions().epochs(3).initial_epoch(2).verbose(0));
  into_plain.fit(train_set(8, true), tnt::FitOptions().epochs(3).initial_epoch(2).verbose(0));
  tnt::Model resharded{make_net(9)};
  resharded.compile(adam().shard_optimizer(true));
  resharded.load(dir + "/sharded.pt");
  resharded.fit(train_set(8, true), tnt::FitOptions().epochs(3).initial_epoch(2).verbose(0));
  EXPECT_LT(max_rel_diff(params_of(into_plain), params_of(plain)), 1e-6);
  EXPECT_LT(max_rel_diff(params_of(resharded), params_of(plain)), 1e-6);
  // A save in the middle of sharded training does not disturb it.
  sharded.fit(train_set(8, true), tnt::FitOptions().epochs(3).initial_epoch(2).verbose(0));
  EXPECT_LT(max_rel_diff(params_of(sharded), params_of(plain)), 1e-6);
  remove_dir(dir);
}

TEST(ShardedOptimizer, SetWeightsBetweenFitsIsKept) {
  tnt::Model a{make_net()};
  a.compile(options().optimizer(tnt::optimizers::Adam(0.01)).shard_optimizer(true));
  a.fit(train_set(8, false), tnt::FitOptions().epochs(1).verbose(0));
  tnt::Model b{make_net()};
  b.compile(options().optimizer(tnt::optimizers::Adam(0.01)));
  b.fit(train_set(8, false), tnt::FitOptions().epochs(1).verbose(0));
  // New weights from outside: the shards must start from them, not from
  // their own copies.
  const std::vector<torch::Tensor> fresh = tnt::Model{make_net(3)}.get_weights();
  a.set_weights(fresh);
  b.set_weights(fresh);
  a.fit(train_set(8, false), tnt::FitOptions().epochs(1).verbose(0));
  b.fit(train_set(8, false), tnt::FitOptions().epochs(1).verbose(0));
  EXPECT_LT(max_rel_diff(params_of(a), params_of(b)), 1e-6);
}

TEST(ShardedOptimizer, AnOverflowInOneShardSkipsTheStepOnEveryRank) {
  // At its 3rd step the last rank's gradient of fc2.bias[3] becomes
  // infinite. The buckets hold the parameters last to first, so that element
  // lies in rank 0's slice only: rank 0 alone sees the overflow, and every
  // rank must skip with it.
  const int victim = tnt::get_size() - 1;
  Mlp net = make_net();
  auto calls = std::make_shared<int>(0);
  net->fc2->bias.register_hook([calls, victim](torch::Tensor grad) {
    if (tnt::get_rank() != victim || ++*calls != 3) return grad;
    grad = grad.clone();
    grad[3] = std::numeric_limits<float>::infinity();
    return grad;
  });
  tnt::Model model{net};
  model.compile(options().loss_scaling(true).shard_optimizer(true));
  model.fit(train_set(8, false), tnt::FitOptions().epochs(1).steps_per_epoch(3).verbose(0));
  EXPECT_EQ(model.skipped_steps(), 1) << "rank " << tnt::get_rank();
  tnt::Model two{make_net()};
  two.compile(options().loss_scaling(true));
  two.fit(train_set(8, false), tnt::FitOptions().epochs(1).steps_per_epoch(2).verbose(0));
  const auto a = params_of(model), b = params_of(two);
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_TRUE(torch::isfinite(a[i]).all().item<bool>());
    EXPECT_LT(max_rel_diff({a[i]}, {b[i]}), 1e-6) << "parameter " << i;
    const torch::Tensor all = tnt::comm::allgather(a[i].unsqueeze(0).contiguous());
    for (int r = 1; r < tnt::get_size(); ++r) EXPECT_TRUE(torch::equal(all[r], all[0]));
  }
}

// Per-bucket steps: the optimizer steps each bucket as soon as it is
// reduced. A clip_value too large to clip anything keeps the same arithmetic
// but needs every gradient first, so it takes the whole-step path: the two
// must agree bitwise, sharded or not.
TEST(OptimizerOverlap, BucketByBucketStepsAreBitwiseTheWholeStep) {
  // Unsharded, the per-bucket steps are opt-in: without the variable the
  // unsharded cases would compare the whole step with itself.
  ASSERT_TRUE(tnt::config().overlap_optimizer)
      << "run with TNT_OVERLAP_OPTIMIZER=true, as tests/mpi/CMakeLists.txt does";
  const std::vector<tnt::CompileOptions> cases = {
      options().fusion_threshold_bytes(0),
      options().optimizer(tnt::optimizers::Adam(0.01)).fusion_threshold_bytes(0),
      options().optimizer(tnt::optimizers::Adam(0.01)).fusion_threshold_bytes(0).shard_optimizer(true),
      options().optimizer(tnt::optimizers::RMSprop(0.01, 0.9, 0.5)).fusion_threshold_bytes(256),
  };
  for (std::size_t c = 0; c < cases.size(); ++c) {
    tnt::Model per_bucket{make_net()};
    per_bucket.compile(cases[c]);
    per_bucket.fit(train_set(8, true), tnt::FitOptions().epochs(2).verbose(0));
    tnt::Model whole{make_net()};
    whole.compile(tnt::CompileOptions(cases[c]).clip_value(1e30));
    whole.fit(train_set(8, true), tnt::FitOptions().epochs(2).verbose(0));
    const auto a = params_of(per_bucket), b = params_of(whole);
    for (std::size_t i = 0; i < a.size(); ++i) {
      EXPECT_TRUE(torch::equal(a[i], b[i])) << "case " << c << ", parameter " << i;
    }
  }
}

TEST(ShardedOptimizer, RefusesWhatItCannotShardWithTheFix) {
  tnt::Model model{make_net()};
  auto lbfgs = tnt::optimizers::custom(tnt::optimizers::Factory(
      [](const std::vector<torch::Tensor>& params) -> std::unique_ptr<torch::optim::Optimizer> {
        return std::make_unique<torch::optim::LBFGS>(params);
      },
      ""));
  try {
    model.compile(options().optimizer(lbfgs).shard_optimizer(true));
    ADD_FAILURE() << "sharded LBFGS";
  } catch (const tnt::Error& e) {
    EXPECT_NE(std::string(e.what()).find("LBFGS"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("without shard_optimizer"), std::string::npos) << e.what();
  }
  try {
    model.compile(options().deterministic(2).shard_optimizer(true));
    ADD_FAILURE() << "deterministic and sharded";
  } catch (const tnt::Error& e) {
    EXPECT_NE(std::string(e.what()).find("remove one"), std::string::npos) << e.what();
  }
}

}  // namespace
