// Pipeline stages on in-process ranks (threads as ranks): a Sequential cut
// into stages trains as the same Sequential does on one rank. After an
// epoch the weights, evaluate's loss and predict's outputs agree within
// 1e-5 (max |difference| / max |value|) at (P, D) = (2, 1), (2, 2) and
// (4, 1), with either schedule, with SplitPoints and with the automatic
// cut; save_weights writes the whole model's weights under the
// Sequential's names. And each rank keeps only its stage's parameters; the
// errors name the counts involved.
#include <filesystem>
#include <map>
#include <mutex>
#include <string>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <tarantella/base/argument_error.h>
#include <tarantella/comm/in_process.h>
#include <tarantella/data/dataset.h>
#include <tarantella/keras/losses.h>
#include <tarantella/keras/metrics.h>
#include <tarantella/keras/optimizers.h>
#include <tarantella/model/model.h>
#include <tarantella/model/pipeline.h>

#include "../support/stages_net.h"

namespace {

using tnt::comm::ProcessGroup;
using tnt::comm::run_in_process;

// 40 samples in global batches of 16: 16, 16, 8 (a short last batch, and
// uneven micro-batches of replicas' shares).
tnt::data::Dataset pipeline_samples() { return tnt_test::stages_samples(40); }

torch::nn::Sequential pipeline_net(bool split_points) { return tnt_test::stages_net(split_points); }

tnt::CompileOptions pipeline_compile() {
  return tnt::CompileOptions()
      .optimizer(tnt::optimizers::SGD(0.1, 0.5))
      .loss(tnt::losses::SparseCategoricalCrossentropy())
      .metrics({tnt::metrics::SparseCategoricalAccuracy()});
}

struct Outcome {
  std::map<std::string, torch::Tensor> weights;  // by the Sequential's names
  std::map<std::string, torch::Tensor> saved;    // save_weights's file, read by one rank
  double loss = 0;
  torch::Tensor predicted;
  std::map<int, std::int64_t> parameters_per_rank;
};

Outcome run(int ranks, const tnt::PipelineOptions& pipeline, bool split_points) {
  Outcome out;
  std::mutex m;
  run_in_process(ranks, [&](const ProcessGroup& g) {
    tnt::Model model(pipeline_net(split_points), pipeline, g);
    model.compile(pipeline_compile());
    model.fit(pipeline_samples().batch(16), tnt::FitOptions().epochs(1).verbose(0));
    const auto logs = model.evaluate(pipeline_samples().batch(16));
    const torch::Tensor predicted =
        model.predict(pipeline_samples().batch(16), tnt::PredictOptions().on_all_ranks(true));
    const std::string file = std::filesystem::temp_directory_path() /
                             ("tnt_pipeline_" + std::to_string(ranks) + ".pt");
    model.save_weights(file);  // the master writes every stage's weights
    std::lock_guard<std::mutex> lock(m);
    std::int64_t count = 0;
    for (const auto& [name, t] : model.named_parameters()) {
      out.weights[name] = t.detach().clone();
      count += t.numel();
    }
    out.parameters_per_rank[g.rank()] = count;
    if (g.rank() == 0) {
      out.loss = logs.at("loss");
      out.predicted = predicted;
    }
  });
  // Read by the same Sequential on one rank, all of it.
  run_in_process(1, [&](const ProcessGroup& g) {
    tnt::Model whole(pipeline_net(split_points), g);
    whole.load_weights(std::filesystem::temp_directory_path() /
                       ("tnt_pipeline_" + std::to_string(ranks) + ".pt"));
    for (const auto& [name, t] : whole.named_parameters()) out.saved[name] = t.detach().clone();
  });
  return out;
}

double relative_difference(const torch::Tensor& a, const torch::Tensor& b) {
  const double scale = std::max(a.abs().max().item<double>(), 1e-12);
  return (a - b).abs().max().item<double>() / scale;
}

void expect_as_serial(const Outcome& serial, const Outcome& staged, const std::string& what) {
  ASSERT_EQ(serial.weights.size(), staged.weights.size()) << what;
  ASSERT_EQ(serial.weights.size(), staged.saved.size()) << what << ": the saved file";
  for (const auto& [name, w] : serial.weights) {
    ASSERT_TRUE(staged.weights.count(name)) << what << ": no " << name;
    EXPECT_LT(relative_difference(w, staged.weights.at(name)), 1e-5) << what << ": " << name;
    EXPECT_LT(relative_difference(w, staged.saved.at(name)), 1e-5) << what << ": saved " << name;
  }
  EXPECT_NEAR(serial.loss, staged.loss, 1e-5 * std::abs(serial.loss)) << what;
  ASSERT_TRUE(staged.predicted.defined()) << what;
  EXPECT_LT(relative_difference(serial.predicted, staged.predicted), 1e-5) << what;
}

TEST(pipeline_training, WeightsLossAndOutputsAreTheSerialOnesAtEveryLayout) {
  const Outcome serial = run(1, tnt::PipelineOptions(), false);
  // The same network with a SplitPoint at 1 stage, where it is an identity
  // (its index shifts the names of the layers after it).
  const Outcome with_split_point = run(1, tnt::PipelineOptions(), true);
  EXPECT_NEAR(serial.loss, with_split_point.loss, 1e-12);
  expect_as_serial(with_split_point,
                   run(2, tnt::PipelineOptions().stages(2).micro_batches(4), true),
                   "(P, D) = (2, 1), 1F1B");
  expect_as_serial(with_split_point,
                   run(2, tnt::PipelineOptions().stages(2).micro_batches(3).schedule("gpipe"), true),
                   "(P, D) = (2, 1), GPipe");
  expect_as_serial(with_split_point, run(4, tnt::PipelineOptions().stages(2).micro_batches(2), true),
                   "(P, D) = (2, 2)");
  expect_as_serial(serial, run(4, tnt::PipelineOptions().stages(4).micro_batches(4), false),
                   "(P, D) = (4, 1), cut by parameter count");
}

TEST(pipeline_training, EachRankKeepsOnlyItsStagesParameters) {
  const Outcome staged = run(4, tnt::PipelineOptions().stages(4).micro_batches(4), false);
  // Linear(6,24) 168, Linear(24,24) 600, Linear(24,16) 400, Linear(16,4) 68.
  EXPECT_EQ(staged.parameters_per_rank, (std::map<int, std::int64_t>{{0, 168}, {1, 600},
                                                                      {2, 400}, {3, 68}}));
}

std::string pipeline_error(int ranks, const tnt::PipelineOptions& pipeline, bool split_points,
                           int batch = 16) {
  std::string message = "(no error)";
  std::mutex m;
  run_in_process(ranks, [&](const ProcessGroup& g) {
    try {
      tnt::Model model(pipeline_net(split_points), pipeline, g);
      model.compile(pipeline_compile());
      model.fit(pipeline_samples().batch(batch), tnt::FitOptions().epochs(1).verbose(0));
    } catch (const std::exception& e) {
      std::lock_guard<std::mutex> lock(m);
      if (g.rank() == 0) message = e.what();
    }
  });
  return message;
}

TEST(pipeline_training, ClearErrorsForLayoutsCutsAndMicroBatches) {
  EXPECT_NE(pipeline_error(3, tnt::PipelineOptions().stages(2), true)
                .find("3 ranks cannot run 2 pipeline stages: the number of ranks must be a "
                      "multiple of 2"),
            std::string::npos);
  EXPECT_NE(pipeline_error(3, tnt::PipelineOptions().stages(3), true)
                .find("the Sequential has 1 SplitPoint, which make 2 stages, but "
                      "pipeline_stages=3"),
            std::string::npos);
  EXPECT_NE(pipeline_error(2, tnt::PipelineOptions().stages(2).micro_batches(8), true, 4)
                .find("micro_batches=8 would leave 4 of them empty"),
            std::string::npos);
  EXPECT_NE(pipeline_error(2, tnt::PipelineOptions().stages(2).schedule("zigzag"), true)
                .find("schedule='zigzag' is not a pipeline schedule"),
            std::string::npos);
}

}  // namespace
