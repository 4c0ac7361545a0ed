// StageLink's transfers between two stages on the in-process backend: a
// step's activations carry a shape header only with micro-batch 0 when
// they are batch-major, so micro-batches of different sizes (uneven
// splits, a short last batch) must still arrive whole and in order, a new
// step may change the shape past the first dimension, outputs that are not
// batch-major carry their shape every time, gradients take the shape of
// the output they belong to, and an output that changes its shape within a
// step is a clear error on the sending stage. A later stage's backward
// (backward_on_stage) sends its input's gradient before it computes its
// weights' gradients, with the plain backward's bits.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <tarantella/base/error.h>
#include <tarantella/comm/in_process.h>
#include <tarantella/keras/module_adapter.h>

#include "stages/layout.h"
#include "train/step/stage_forward.h"
#include "train/step/stage_link.h"

namespace {

using tnt::comm::ProcessGroup;
using tnt::train::StageLink;

StageLink link_of(const ProcessGroup& g) {
  return StageLink(g, tnt::stages::stage_layout(2, g.rank(), 2), torch::kCPU);
}

// One step of micro-batches of `samples` samples: stage 0 sends
// `output(i, n)` forward, stage 1 checks it and sends a gradient back of the
// same shape (its values 100 + i), which stage 0 checks.
template <typename Output>
void step(StageLink& link, const std::vector<std::int64_t>& samples, Output output) {
  std::vector<torch::Tensor> sent;
  for (std::size_t i = 0; i < samples.size(); ++i) {
    const int micro = static_cast<int>(i);
    const torch::Tensor out = output(micro, samples[i]);
    if (link.layout().first_stage()) {
      link.send_activation(out, micro, samples[i]);
      sent.push_back(out);
    } else {
      const torch::Tensor in = link.recv_activation(micro, samples[i]);
      EXPECT_EQ(in.sizes(), out.sizes()) << "micro-batch " << i;
      EXPECT_TRUE(torch::equal(in, out)) << "micro-batch " << i;
      link.send_gradient(torch::full_like(in, 100.0 + micro), micro);
    }
  }
  for (std::size_t i = 0; i < sent.size(); ++i) {
    const int micro = static_cast<int>(i);
    const torch::Tensor g = link.recv_gradient(sent[i], micro);
    EXPECT_TRUE(torch::equal(g, torch::full_like(sent[i], 100.0 + micro))) << "gradient " << i;
  }
  link.finish_sends();
}

TEST(pipeline_stage_link, UnevenMicroBatchesArriveWholeAndANewStepMayChangeTheShape) {
  tnt::comm::run_in_process(2, [](const ProcessGroup& g) {
    StageLink link = link_of(g);
    link.trace(true);
    for (std::int64_t width : {3, 7}) {
      step(link, {6, 6, 5, 5}, [&](int i, std::int64_t n) {
        return torch::arange(n * width, torch::kFloat32).reshape({n, width}) + 1000 * i;
      });
    }
    step(link, {1, 1}, [](int i, std::int64_t n) {
      return torch::full({n, 2, 2}, i, torch::kFloat64);
    });
    std::vector<std::string> names;
    for (const StageLink::Event& e : link.take_events()) names.push_back(e.name);
    const std::string expected = g.rank() == 0 ? "send activations 3 (to stage 1)"
                                               : "receive activations 3 (from stage 0)";
    EXPECT_EQ(std::count(names.begin(), names.end(), expected), 2) << expected;
  });
}

TEST(pipeline_stage_link, OutputsThatAreNotBatchMajorCarryTheirShapeEachTime) {
  tnt::comm::run_in_process(2, [](const ProcessGroup& g) {
    StageLink link = link_of(g);
    // The samples laid along the second dimension: [1, 3n].
    step(link, {4, 3, 3}, [](int i, std::int64_t n) {
      return torch::full({1, 3 * n}, i, torch::kFloat32);
    });
  });
}

TEST(pipeline_stage_link, AnOutputThatChangesItsShapeWithinAStepIsAClearError) {
  tnt::comm::run_in_process(2, [](const ProcessGroup& g) {
    StageLink link = link_of(g);
    if (g.rank() == 0) {
      link.send_activation(torch::zeros({4, 3}), 0, 4);
      try {
        link.send_activation(torch::zeros({4, 5}), 1, 4);
        ADD_FAILURE() << "no error for a shape that changed within a step";
      } catch (const tnt::Error& e) {
        EXPECT_NE(std::string(e.what()).find("of shape [4, 5], but micro-batch 0 of this step "
                                             "sent Float of shape [samples, 3]"),
                  std::string::npos)
            << e.what();
      }
    } else {
      link.recv_activation(0, 4);
    }
    link.finish_sends();
  });
}

torch::nn::Sequential stage_layers() {
  torch::manual_seed(3);
  return torch::nn::Sequential(torch::nn::Linear(6, 8), torch::nn::ReLU(),
                               torch::nn::BatchNorm1d(8), torch::nn::Linear(8, 3));
}

// Stage 1 runs stage_layers() layer by layer and backward_on_stage; a hook
// on its first layer's weight (whose gradient is the last one computed)
// waits until stage 0 holds the input's gradient. A backward that computed
// every weight's gradient before sending the input's would make the hook
// wait in vain (30 s), and the test fail. The gradients, weights' and
// input's, are those of a plain backward of the same layers, bit for bit.
TEST(pipeline_stage_link, ALaterStageSendsItsInputsGradientBeforeItComputesItsWeights) {
  // Made before the two stages' threads start (they share the generator).
  torch::manual_seed(4);
  const torch::Tensor x = torch::randn({5, 6});
  torch::nn::Sequential plain = stage_layers();
  const torch::Tensor leaf = x.clone().requires_grad_(true);
  plain->forward(leaf).pow(2).sum().backward();
  torch::nn::Sequential layers = stage_layers();
  std::atomic<bool> received{false};
  tnt::comm::run_in_process(2, [&](const ProcessGroup& g) {
    StageLink link = link_of(g);
    if (g.rank() == 0) {
      link.send_activation(x, 0, 5);
      const torch::Tensor grad = link.recv_gradient(x, 0);
      received = true;
      link.finish_sends();
      EXPECT_TRUE(torch::equal(grad, leaf.grad())) << "the input's gradient";
      return;
    }
    bool sent_first = false;
    layers[0]->as<torch::nn::Linear>()->weight.register_hook([&](const torch::Tensor&) {
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
      while (!received && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      sent_first = received;
    });
    tnt::train::StageForward f;
    f.input = link.recv_activation(0, 5).requires_grad_(true);
    f.output = tnt::make_adapter(layers)->forward_by_layer({f.input}, f.layers);
    ASSERT_TRUE(f.output.defined()) << "a Sequential runs layer by layer";
    EXPECT_EQ(f.layers.size(), 4U);
    const tnt::train::StageBackward b =
        tnt::train::backward_on_stage(f, f.output.pow(2).sum(), &link, 0);
    link.finish_sends();
    EXPECT_TRUE(b.weights.has_value()) << "the backward was not split";
    EXPECT_TRUE(sent_first) << "the weights' gradients were computed before the input's was sent";
    const auto mine = layers->named_parameters();
    for (const auto& p : plain->named_parameters()) {
      EXPECT_TRUE(torch::equal(p.value().grad(), mine[p.key()].grad())) << p.key();
    }
  });
}

TEST(pipeline_stage_link, ASharedLayerOrAModuleThatIsNoSequentialRunsWhole) {
  std::vector<tnt::LayerOutput> kept;
  torch::nn::Linear twice(4, 4);
  torch::nn::Sequential shared(twice, torch::nn::ReLU(), twice);
  EXPECT_FALSE(tnt::make_adapter(shared)->forward_by_layer({torch::ones({2, 4})}, kept).defined());
  EXPECT_FALSE(tnt::make_adapter(torch::nn::Linear(4, 4))
                   ->forward_by_layer({torch::ones({2, 4})}, kept)
                   .defined());
  EXPECT_TRUE(kept.empty());
}

}  // namespace
