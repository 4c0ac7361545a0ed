// Pipeline stages over MPI ranks (mpi.pipeline.nN): at every layout the
// job's size allows (P = 2, 3 or 4 dividing N, D = N / P), a
// torch::nn::Sequential cut into stages trains as it does alone on one
// rank: after an epoch each rank's stage weights, evaluate's loss and
// predict's outputs are within 1e-5 of that run, with 1F1B and GPipe, the
// shards of a sharded optimizer within each stage, and accumulation.
#include <map>
#include <optional>
#include <string>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <tarantella/data/dataset.h>
#include <tarantella/keras/losses.h>
#include <tarantella/keras/optimizers.h>
#include <tarantella/model/model.h>
#include <tarantella/model/pipeline.h>
#include <tarantella/runtime/runtime.h>

#include "../support/stages_net.h"

namespace {

tnt::data::Dataset examples() { return tnt_test::stages_samples(48); }

torch::nn::Sequential mlp(bool split_point) { return tnt_test::stages_net(split_point); }

struct Run {
  std::map<std::string, torch::Tensor> weights;
  double loss = 0;
  torch::Tensor outputs;
};

Run train(tnt::Model& model, const tnt::CompileOptions& compile, int accumulate) {
  model.compile(tnt::CompileOptions(compile).aggregation_frequency(accumulate));
  model.fit(examples().batch(24 / accumulate), tnt::FitOptions().epochs(1).verbose(0));
  Run r;
  for (const auto& [name, t] : model.named_parameters()) r.weights[name] = t.detach().clone();
  r.loss = model.evaluate(examples().batch(24)).at("loss");
  r.outputs = model.predict(examples().batch(24), tnt::PredictOptions().on_all_ranks(true));
  return r;
}

double relative(const torch::Tensor& a, const torch::Tensor& b) {
  return (a - b).abs().max().item<double>() / std::max(a.abs().max().item<double>(), 1e-12);
}

tnt::CompileOptions sgd() {
  return tnt::CompileOptions()
      .optimizer(tnt::optimizers::SGD(0.1, 0.5))
      .loss(tnt::losses::SparseCategoricalCrossentropy());
}

void expect_alone_equals_staged(const tnt::CompileOptions& compile, int accumulate,
                                const std::string& schedule) {
  const int n = tnt::get_size();
  for (int p : {2, 3, 4}) {
    if (n % p != 0) continue;
    // The reference: the whole Sequential alone on this rank (with the
    // SplitPoint, an identity there, that shifts the names after it).
    tnt::Model alone(mlp(p == 2), tnt::world().split(tnt::get_rank()));
    const Run serial = train(alone, compile, accumulate);
    tnt::Model staged(mlp(p == 2), tnt::PipelineOptions().stages(p).micro_batches(4).schedule(schedule));
    const Run run = train(staged, compile, accumulate);
    const std::string what = std::to_string(p) + " stages x " + std::to_string(n / p) +
                             " replicas, " + schedule;
    ASSERT_FALSE(run.weights.empty()) << what;
    for (const auto& [name, w] : run.weights) {
      EXPECT_LT(relative(serial.weights.at(name), w), 1e-5) << what << ": " << name;
    }
    EXPECT_NEAR(serial.loss, run.loss, 1e-5 * serial.loss) << what;
    EXPECT_LT(relative(serial.outputs, run.outputs), 1e-5) << what;
  }
}

TEST(Pipeline, EveryLayoutTrainsAsOneRankDoes) { expect_alone_equals_staged(sgd(), 1, "1f1b"); }

TEST(Pipeline, GPipeAccumulationAndShardsWithinAStage) {
  expect_alone_equals_staged(sgd(), 2, "gpipe");
  expect_alone_equals_staged(sgd().shard_optimizer(true), 1, "1f1b");
}

// Model::pipeline(): rank r holds stage r % P of pipeline r / P; a model
// without stages has no position.
TEST(Pipeline, EveryRankKnowsItsStageAndReplica) {
  const int n = tnt::get_size(), rank = tnt::get_rank();
  EXPECT_FALSE(tnt::Model(mlp(false)).pipeline().has_value());
  EXPECT_FALSE(tnt::Model(mlp(true), tnt::PipelineOptions().stages(1)).pipeline().has_value());
  for (int p : {2, 3, 4}) {
    if (n % p != 0) continue;
    const tnt::Model staged(mlp(p == 2), tnt::PipelineOptions().stages(p));
    const std::optional<tnt::PipelinePosition> where = staged.pipeline();
    ASSERT_TRUE(where.has_value()) << p << " stages";
    EXPECT_EQ(where->stage, rank % p) << p << " stages";
    EXPECT_EQ(where->stages, p);
    EXPECT_EQ(where->replica, rank / p) << p << " stages";
    EXPECT_EQ(where->replicas, n / p);
  }
}

}  // namespace
