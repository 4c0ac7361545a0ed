// tnt's SGD (dp::ForeachSGD, multi-tensor kernels) against LibTorch's
// optim::SGD: the same parameters and momentum buffers to the bit after
// several steps, for every option, with two parameter groups and a
// parameter without a gradient; and its state is optim::SGD's (a
// checkpoint of one loads into the other).
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include <torch/torch.h>

#include <tarantella/base/torch_compat.h>

#include "dp/foreach_sgd.h"
#include "dp/optimizer_state.h"

namespace {

using torch::optim::SGDOptions;

std::vector<torch::Tensor> make_params() {
  torch::manual_seed(5);
  std::vector<torch::Tensor> out;
  for (const auto& shape : std::vector<std::vector<std::int64_t>>{{7, 3}, {3}, {4, 2, 2}, {5}}) {
    out.push_back(torch::randn(shape).requires_grad_(true));
  }
  return out;
}

// Gradients of step `step` (the last parameter gets none).
void set_grads(std::vector<torch::Tensor>& params, int step) {
  for (std::size_t i = 0; i + 1 < params.size(); ++i) {
    params[i].mutable_grad() =
        torch::sin(torch::arange(params[i].numel(), torch::kFloat32) * (step + 1) + static_cast<double>(i))
            .reshape(params[i].sizes());
  }
}

template <class Optimizer>
std::vector<torch::Tensor> run(const SGDOptions& options, int steps,
                               std::vector<torch::Tensor>* buffers) {
  std::vector<torch::Tensor> params = make_params();
  // Two groups: the first two parameters with the options, the rest with a
  // second learning rate.
  std::vector<torch::optim::OptimizerParamGroup> groups;
  groups.emplace_back(std::vector<torch::Tensor>{params[0], params[1]},
                      std::make_unique<SGDOptions>(options));
  SGDOptions second = options;
  second.lr(options.lr() * 0.5);
  groups.emplace_back(std::vector<torch::Tensor>{params[2], params[3]},
                      std::make_unique<SGDOptions>(second));
  Optimizer optimizer(groups, options);
  for (int s = 0; s < steps; ++s) {
    set_grads(params, s);
    optimizer.step();
  }
  for (const auto& p : params) {
    auto found = optimizer.state().find(tnt::compat::optimizer_state_key(p));
    buffers->push_back(found == optimizer.state().end()
                           ? torch::Tensor()
                           : static_cast<torch::optim::SGDParamState&>(*found->second)
                                 .momentum_buffer());
  }
  return params;
}

TEST(ForeachSGD, BitwiseLibTorchSGDForEveryOption) {
  const std::vector<std::pair<std::string, SGDOptions>> cases = {
      {"plain", SGDOptions(0.1)},
      {"momentum", SGDOptions(0.1).momentum(0.9)},
      {"dampening", SGDOptions(0.1).momentum(0.9).dampening(0.25)},
      {"nesterov", SGDOptions(0.1).momentum(0.9).nesterov(true)},
      {"weight decay", SGDOptions(0.1).momentum(0.5).weight_decay(0.01)},
      {"weight decay only", SGDOptions(0.05).weight_decay(0.1)},
  };
  for (const auto& [name, options] : cases) {
    SCOPED_TRACE(name);
    std::vector<torch::Tensor> ours_buffers, theirs_buffers;
    const auto ours = run<tnt::dp::ForeachSGD>(options, 4, &ours_buffers);
    const auto theirs = run<torch::optim::SGD>(options, 4, &theirs_buffers);
    ASSERT_EQ(ours.size(), theirs.size());
    for (std::size_t i = 0; i < ours.size(); ++i) {
      EXPECT_TRUE(torch::equal(ours[i], theirs[i])) << "parameter " << i;
      EXPECT_EQ(ours_buffers[i].defined(), theirs_buffers[i].defined()) << "buffer " << i;
      if (ours_buffers[i].defined()) {
        EXPECT_TRUE(torch::equal(ours_buffers[i], theirs_buffers[i])) << "buffer " << i;
      }
    }
    EXPECT_FALSE(ours_buffers.back().defined()) << "a parameter without a gradient has no state";
  }
}

TEST(ForeachSGD, ItsStateIsSGDsAndItsKindTooIsSGD) {
  std::vector<torch::Tensor> params = make_params();
  tnt::dp::ForeachSGD ours(params, SGDOptions(0.1).momentum(0.9));
  set_grads(params, 0);
  ours.step();
  std::ostringstream bytes;
  {
    torch::serialize::OutputArchive archive;
    ours.save(archive);
    archive.save_to(bytes);
  }
  torch::optim::SGD theirs(params, SGDOptions(0.1).momentum(0.9));
  std::istringstream in(bytes.str());
  torch::serialize::InputArchive archive;
  archive.load_from(in);
  theirs.load(archive);
  EXPECT_EQ(theirs.state().size(), ours.state().size());
  const tnt::dp::StateKind* kind = tnt::dp::state_kind(ours);
  ASSERT_NE(kind, nullptr);
  EXPECT_STREQ(kind->name, "SGD");
  EXPECT_TRUE(kind->exactly(ours));
  auto copy = tnt::dp::state_copy(ours, [](const torch::Tensor& t) { return t.clone(); });
  ASSERT_NE(copy, nullptr);
  EXPECT_NE(dynamic_cast<tnt::dp::ForeachSGD*>(copy.get()), nullptr);
}

}  // namespace
