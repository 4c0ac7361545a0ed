// Pipeline stages over MPI ranks (mpi.pipeline.nN): at every layout the
// job's size allows (P = 2, 3 or 4 dividing N, D = N / P), a
// torch::nn::Sequential cut into stages trains as it does alone on one
// rank: after an epoch each rank's stage weights, evaluate's loss and
// predict's outputs are within 1e-5 of that run, with 1F1B and GPipe, the
// shards of a sharded optimizer within each stage, accumulation, clipping
// by norm and loss scaling (mixed precision: to bfloat16's precision); in
// deterministic mode they are the same bits. A checkpoint saved at every
// layout loads into the unsplit model, with the saved weights exactly, and
// trains on as the pipelined model does; so do checkpoints of an optimizer
// built over a permuted parameter list, into stages and out of them.
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <tarantella/base/torch_compat.h>
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

struct Trained {
  std::map<std::string, torch::Tensor> weights;
  double loss = 0;
  torch::Tensor outputs;
};

Trained train(tnt::Model& model, const tnt::CompileOptions& compile, int accumulate) {
  model.compile(tnt::CompileOptions(compile).aggregation_frequency(accumulate));
  model.fit(examples().batch(24 / accumulate), tnt::FitOptions().epochs(1).verbose(0));
  Trained r;
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
                                const std::string& schedule, double tolerance = 1e-5,
                                const std::function<torch::nn::Sequential(bool)>& net = mlp) {
  const int n = tnt::get_size();
  for (int p : {2, 3, 4}) {
    if (n % p != 0) continue;
    // The reference: the whole Sequential alone on this rank (with the
    // SplitPoint, an identity there, that shifts the names after it).
    tnt::Model alone(net(p == 2), tnt::world().split(tnt::get_rank()));
    const Trained serial = train(alone, compile, accumulate);
    tnt::Model staged(net(p == 2), tnt::PipelineOptions().stages(p).micro_batches(4).schedule(schedule));
    const Trained run = train(staged, compile, accumulate);
    const std::string what = std::to_string(p) + " stages x " + std::to_string(n / p) +
                             " replicas, " + schedule;
    ASSERT_FALSE(run.weights.empty()) << what;
    for (const auto& [name, w] : run.weights) {
      EXPECT_LE(relative(serial.weights.at(name), w), tolerance) << what << ": " << name;
    }
    EXPECT_NEAR(serial.loss, run.loss, tolerance * serial.loss) << what;
    EXPECT_LE(relative(serial.outputs, run.outputs), tolerance) << what;
  }
}

// On the host: a model on a GPU (the device check's run) holds device memory.
bool same_bits(const torch::Tensor& a, const torch::Tensor& b) {
  if (a.sizes() != b.sizes() || a.dtype() != b.dtype()) return false;
  const torch::Tensor x = a.cpu().contiguous();
  const torch::Tensor y = b.cpu().contiguous();
  return std::memcmp(x.data_ptr(), y.data_ptr(), x.nbytes()) == 0;
}

// Deterministic mode: at every layout, the bits of the whole model on one
// rank without stages. The network draws random numbers before and after
// every cut (Dropout: a chunk's random stream travels with its activations)
// and has running statistics (BatchNorm: each stage averages its own); the
// first step refits the exponents (the prediction starts empty), which
// replays it through every stage.
// Clipping by norm and loss scaling too: the norm is over every stage's
// gradients, an overflow skips the step on every stage.
TEST(Pipeline, DeterministicEveryLayoutIsBitwiseOneRank) {
  const int n = tnt::get_size();
  for (const auto& [schedule, compile] :
       {std::pair{"1f1b", sgd().deterministic(4)},
        std::pair{"gpipe", sgd().deterministic(4).clip_norm(0.05).loss_scaling(true)}}) {
    for (int p : {2, 3, 4}) {
      if (n % p != 0) continue;
      tnt::Model alone(tnt_test::stages_net(p == 2, true), tnt::world().split(tnt::get_rank()));
      const Trained serial = train(alone, compile, 1);
      tnt::Model staged(tnt_test::stages_net(p == 2, true),
                        tnt::PipelineOptions().stages(p).schedule(schedule));
      const Trained run = train(staged, compile, 1);
      const std::string what = std::to_string(p) + " stages x " + std::to_string(n / p) +
                               " replicas, " + schedule + ", deterministic" +
                               (compile.clip_norm() ? ", clip_norm, loss scaling" : "");
      ASSERT_FALSE(run.weights.empty()) << what;
      for (const auto& [name, w] : run.weights) {
        EXPECT_TRUE(same_bits(serial.weights.at(name), w))
            << what << ": " << name << " differs by " << relative(serial.weights.at(name), w);
      }
      std::map<std::string, torch::Tensor> alone_buffers;
      for (const auto& [name, b] : alone.named_buffers()) alone_buffers[name] = b;
      for (const auto& [name, b] : staged.named_buffers()) {
        ASSERT_EQ(alone_buffers.count(name), 1u) << what << ": buffer " << name;
        EXPECT_TRUE(same_bits(alone_buffers[name], b)) << what << ": buffer " << name;
      }
      EXPECT_EQ(serial.loss, run.loss) << what;
      EXPECT_TRUE(same_bits(serial.outputs, run.outputs)) << what;
    }
  }
}

TEST(Pipeline, EveryLayoutTrainsAsOneRankDoes) { expect_alone_equals_staged(sgd(), 1, "1f1b"); }

TEST(Pipeline, GPipeAccumulationAndShardsWithinAStage) {
  expect_alone_equals_staged(sgd(), 2, "gpipe");
  expect_alone_equals_staged(sgd().shard_optimizer(true), 1, "1f1b");
}

// clip_norm's norm is the whole model's (every stage's gradients), with and
// without shards; loss scaling skips or takes a step on every stage alike.
TEST(Pipeline, ClipNormAndLossScalingCoverEveryStage) {
  expect_alone_equals_staged(sgd().clip_norm(0.05).loss_scaling(true), 1, "1f1b");
  expect_alone_equals_staged(sgd().clip_norm(0.05).shard_optimizer(true), 1, "1f1b");
}

// Stages in different precisions: the first two layers in float64, the
// rest in float32. Each stage sends its gradients' norms with their dtype,
// and the norm of the norms is taken in the promoted one (float64), as
// LibTorch's clip_grad_norm_ does over the unsplit model: in deterministic
// mode the same bits (tolerance 0).
torch::nn::Sequential mixed_dtypes_net(bool split_point) {
  torch::nn::Sequential net = mlp(split_point);
  torch::nn::Sequential mixed;
  mixed->push_back(torch::nn::Functional([](const torch::Tensor& x) { return x.to(torch::kDouble); }));
  std::size_t i = 0;
  for (const torch::nn::AnyModule& layer : *net) {
    if (i == 3) {  // after the second Linear: back to float32
      mixed->push_back(
          torch::nn::Functional([](const torch::Tensor& x) { return x.to(torch::kFloat); }));
    }
    if (i++ < 3) layer.ptr()->to(torch::kDouble);
    mixed->push_back(layer);
  }
  return mixed;
}

TEST(Pipeline, ClipNormOverStagesInDifferentPrecisions) {
  expect_alone_equals_staged(sgd().clip_norm(0.05), 1, "1f1b", 1e-5, mixed_dtypes_net);
  expect_alone_equals_staged(sgd().clip_norm(0.05).deterministic(4), 1, "1f1b", 0,
                             mixed_dtypes_net);
}

// Mixed precision (bfloat16 on the CPU): each stage's forward runs under
// autocast and its output goes on in float32, so the values differ from
// the unsplit model's at the cut by bfloat16's rounding, no more.
TEST(Pipeline, MixedPrecisionTrainsAsOneRankDoesToBfloat16sPrecision) {
  expect_alone_equals_staged(sgd().mixed_precision(tnt::MixedPrecision::BFloat16), 1, "1f1b",
                             2e-2);
}

TEST(Pipeline, ACheckpointAtEveryLayoutLoadsUnsplitAndTrainsOnAlike) {
  const int n = tnt::get_size();
  const std::string path = tnt::world().broadcast_string(
      (std::filesystem::temp_directory_path() /
       ("tnt-pipeline-checkpoint-" + std::to_string(::getpid()) + ".pt"))
          .string());
  for (int p : {2, 3, 4}) {
    if (n % p != 0) continue;
    const std::string what = std::to_string(p) + " stages x " + std::to_string(n / p);
    tnt::Model staged(mlp(false), tnt::PipelineOptions().stages(p).micro_batches(4));
    staged.compile(sgd());  // with momentum: its state must come back too
    staged.fit(examples().batch(24), tnt::FitOptions().epochs(1).verbose(0));
    staged.save(path);
    tnt::Model alone(mlp(false), tnt::world().split(tnt::get_rank()));
    alone.compile(sgd());
    EXPECT_EQ(alone.load(path), 1) << what;
    std::map<std::string, torch::Tensor> loaded;
    for (const auto& [name, t] : alone.named_parameters()) loaded[name] = t;
    for (const auto& [name, w] : staged.named_parameters()) {
      EXPECT_TRUE(torch::equal(loaded.at(name), w)) << what << ": " << name;
    }
    staged.fit(examples().batch(24), tnt::FitOptions().epochs(1).verbose(0));
    alone.fit(examples().batch(24), tnt::FitOptions().epochs(1).verbose(0));
    for (const auto& [name, w] : staged.named_parameters()) {
      EXPECT_LT(relative(loaded.at(name), w), 1e-5) << what << ": " << name;
    }
    tnt::world().barrier();  // every rank read the file before the next layout writes it
  }
  if (tnt::get_rank() == 0) std::filesystem::remove(path);
}

// Deterministic mode across layouts: a checkpoint written after one epoch
// at (P, D) = (2, 2) resumes at (4, 1) and at (1, 2) and ends the second
// epoch with the bits of an uninterrupted two-epoch run of the whole model
// on one rank (which every layout equals): the weights, the optimizer's
// momentum, the seed and the exponents (kept by name) come back.
TEST(Pipeline, DeterministicCheckpointResumesBitwiseAtAnotherLayout) {
  if (tnt::get_size() != 4) GTEST_SKIP() << "the layouts (2, 2), (4, 1) and (1, 2) need 4 ranks";
  const tnt::CompileOptions compile = sgd().deterministic(4);
  const std::string path = tnt::world().broadcast_string(
      (std::filesystem::temp_directory_path() /
       ("tnt-pipeline-det-" + std::to_string(::getpid()) + ".pt"))
          .string());
  tnt::Model alone(tnt_test::stages_net(false, true), tnt::world().split(tnt::get_rank()));
  alone.compile(compile);
  alone.fit(examples().batch(24), tnt::FitOptions().epochs(2).verbose(0));
  std::map<std::string, torch::Tensor> uninterrupted;
  for (const auto& [name, t] : alone.named_parameters()) uninterrupted[name] = t;
  for (const auto& [name, t] : alone.named_buffers()) uninterrupted[name] = t;

  {
    tnt::Model first(tnt_test::stages_net(false, true), tnt::PipelineOptions().stages(2));
    first.compile(compile);
    first.fit(examples().batch(24), tnt::FitOptions().epochs(1).verbose(0));
    first.save(path);
  }
  auto expect_resumes = [&](tnt::Model& model, const std::string& what) {
    model.compile(compile);
    ASSERT_EQ(model.load(path), 1) << what;
    model.fit(examples().batch(24), tnt::FitOptions().epochs(2).initial_epoch(1).verbose(0));
    auto all = model.named_parameters();
    for (const auto& b : model.named_buffers()) all.push_back(b);
    ASSERT_FALSE(all.empty()) << what;
    for (const auto& [name, t] : all) {
      EXPECT_TRUE(same_bits(uninterrupted.at(name), t))
          << what << ": " << name << " differs by " << relative(uninterrupted.at(name), t);
    }
  };
  tnt::Model four(tnt_test::stages_net(false, true), tnt::PipelineOptions().stages(4));
  expect_resumes(four, "resumed at 4 stages x 1 replica");
  tnt::Model two_replicas(tnt_test::stages_net(false, true), tnt::world().split(tnt::get_rank() / 2));
  expect_resumes(two_replicas, "resumed at 1 stage x 2 replicas");
  tnt::world().barrier();  // every rank read the file
  if (tnt::get_rank() == 0) std::filesystem::remove(path);
}

// A user's optimizer over a permuted parameter list (here reversed) keeps
// its state in that order, and torch::optim's bytes key it by position: an
// unsplit checkpoint of it loads into stages with every momentum buffer on
// its own parameter (mapped by the names the file keeps), and the stages'
// checkpoint loads unsplit. Deterministic mode: the momenta and weights are
// the bits of the unsplit run with the same optimizer.
tnt::optimizers::Factory reversed_sgd() {
  return [](const std::vector<torch::Tensor>& params) -> std::unique_ptr<torch::optim::Optimizer> {
    return std::make_unique<torch::optim::SGD>(
        std::vector<torch::Tensor>(params.rbegin(), params.rend()),
        torch::optim::SGDOptions(0.1).momentum(0.5));
  };
}

// The SGD momentum buffer of each parameter, by name.
std::map<std::string, torch::Tensor> momenta(tnt::Model& model) {
  std::map<std::string, torch::Tensor> out;
  auto& state = model.optimizer().state();
  for (const auto& [name, p] : model.named_parameters()) {
    const auto it = state.find(tnt::compat::optimizer_state_key(p));
    if (it == state.end()) continue;
    out[name] =
        static_cast<torch::optim::SGDParamState&>(*it->second).momentum_buffer().clone();
  }
  return out;
}

void expect_same(const std::map<std::string, torch::Tensor>& want,
                 const std::map<std::string, torch::Tensor>& got, const std::string& what) {
  EXPECT_EQ(want.size(), got.size()) << what;
  for (const auto& [name, t] : got) {
    ASSERT_EQ(want.count(name), 1u) << what << ": " << name;
    const torch::Tensor& w = want.at(name);
    EXPECT_TRUE(same_bits(w, t)) << what << ": " << name << " differs: "
                                 << (w.sizes() == t.sizes() ? std::to_string(relative(w, t))
                                                            : "its shape is another");
  }
}

std::map<std::string, torch::Tensor> weights_of(tnt::Model& model) {
  std::map<std::string, torch::Tensor> out;
  for (const auto& [name, t] : model.named_parameters()) out[name] = t.detach().clone();
  return out;
}

TEST(Pipeline, APermutedOptimizersCheckpointMapsByNameIntoAndOutOfStages) {
  if (tnt::get_size() % 2 != 0) GTEST_SKIP() << "2 stages need an even number of ranks";
  const tnt::CompileOptions compile = tnt::CompileOptions()
                                          .optimizer(reversed_sgd())
                                          .loss(tnt::losses::SparseCategoricalCrossentropy())
                                          .deterministic(4);
  const std::string base = tnt::world().broadcast_string(
      (std::filesystem::temp_directory_path() /
       ("tnt-pipeline-permuted-" + std::to_string(::getpid())))
          .string());
  // Each rank's unsplit model writes a file of its own (it is its group's master).
  const std::string unsplit = base + "-unsplit-" + std::to_string(tnt::get_rank()) + ".pt";
  const std::string staged_path = base + "-staged.pt";
  tnt::Model alone(tnt_test::stages_net(false, true), tnt::world().split(tnt::get_rank()));
  alone.compile(compile);
  alone.fit(examples().batch(24), tnt::FitOptions().epochs(1).verbose(0));
  alone.save(unsplit);
  const auto momenta_1 = momenta(alone);
  alone.fit(examples().batch(24), tnt::FitOptions().epochs(2).initial_epoch(1).verbose(0));
  const auto momenta_2 = momenta(alone);
  const auto weights_2 = weights_of(alone);
  ASSERT_EQ(momenta_1.size(), 10u);  // every parameter has momentum after a step

  tnt::Model staged(tnt_test::stages_net(false, true), tnt::PipelineOptions().stages(2));
  staged.compile(compile);
  ASSERT_EQ(staged.load(unsplit), 1);
  {
    SCOPED_TRACE("the unsplit checkpoint loaded into 2 stages");
    const auto mine = momenta(staged);
    ASSERT_FALSE(mine.empty());
    for (const auto& [name, m] : mine) {
      EXPECT_TRUE(same_bits(momenta_1.at(name), m)) << name;
    }
  }
  staged.fit(examples().batch(24), tnt::FitOptions().epochs(2).initial_epoch(1).verbose(0));
  for (const auto& [name, w] : weights_of(staged)) {
    EXPECT_TRUE(same_bits(weights_2.at(name), w)) << "resumed in 2 stages: " << name;
  }
  for (const auto& [name, m] : momenta(staged)) {
    EXPECT_TRUE(same_bits(momenta_2.at(name), m)) << "resumed in 2 stages: momentum of " << name;
  }
  staged.save(staged_path);

  tnt::Model again(tnt_test::stages_net(false, true), tnt::world().split(tnt::get_rank()));
  again.compile(compile);
  ASSERT_EQ(again.load(staged_path), 2);
  expect_same(weights_2, weights_of(again), "the stages' checkpoint loaded unsplit");
  expect_same(momenta_2, momenta(again), "the stages' checkpoint loaded unsplit: momenta");
  // Another model's stages (no BatchNorm, so other names) refuse the file,
  // naming a parameter, on every rank, before anything changes.
  tnt::Model other(tnt_test::stages_net(false, false), tnt::PipelineOptions().stages(2));
  other.compile(compile);
  try {
    other.load(unsplit);
    ADD_FAILURE() << "another model's stages loaded the reversed optimizer's file";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("the optimizer state in '"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("parameter '"), std::string::npos) << e.what();
  }
  // An unsplit model whose optimizer is in named_parameters() order loads
  // the reversed one's file by name too.
  tnt::Model in_order(tnt_test::stages_net(false, true), tnt::world().split(tnt::get_rank()));
  in_order.compile(sgd().deterministic(4));
  ASSERT_EQ(in_order.load(unsplit), 1);
  expect_same(momenta_1, momenta(in_order), "the reversed optimizer's file loaded in order");
  tnt::world().barrier();  // every rank read the files
  std::filesystem::remove(unsplit);
  if (tnt::get_rank() == 0) std::filesystem::remove(staged_path);
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
