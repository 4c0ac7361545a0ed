// A training step makes no host synchronisation at the defaults (fp32, no
// clipping, not deterministic): every read of a device value by the loop
// goes through train/observe/host_reads.h (scripts/check_host_sync.py keeps it so),
// which counts them. On the CPU a read costs nothing, but the count is the
// same as on a GPU, where each one makes the host wait for the device.
//   - verbose 0: no read in any step; one per epoch, for its logs;
//   - a live progress bar under a fake clock that advances 100 ms per step:
//     a read only at the steps where the bar is redrawn (at most every
//     ProgressBar::kRedrawInterval, 250 ms: every third step);
//   - the loss scaler: one read per step, its verdict;
//   - clipping by norm: none (LibTorch's clip_grad_norm_ returns the norm as
//     a number; the step clips with the same kernels and reads nothing).
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <mutex>
#include <vector>

#include <torch/torch.h>

#include <tarantella/comm/in_process.h>
#include <tarantella/data/dataset.h>
#include <tarantella/keras/losses.h>
#include <tarantella/keras/metrics.h>
#include <tarantella/keras/optimizers.h>
#include <tarantella/train/progbar_logger.h>

#include "../support/weights.h"
#include "train/engine/engine.h"
#include "train/persist/engine_host.h"
#include "train/observe/host_reads.h"
#include "train/step/clip_norm.h"
#include "train/step/mixed_precision.h"
#include "train/observe/progress_bar.h"

namespace {

using tnt::train::host_reads;
using Logs = tnt::callbacks::Logs;
using SyncClock = std::chrono::steady_clock;

constexpr std::int64_t kSyncSteps = 12;  // global batches of 8 per epoch

tnt::data::Dataset sync_test_data() {
  torch::Generator g = at::detail::createCPUGenerator(5);
  return tnt::data::Dataset::from_tensor_slices(
             {torch::randn({kSyncSteps * 8, 6}, g), torch::randint(0, 4, {kSyncSteps * 8}, g)})
      .batch(8);
}

// The host reads (of every rank: the counter is per process) between one
// step's batch begin and the next's, and the fake clock's ticks.
struct SyncReadsPerStep : tnt::callbacks::Callback {
  std::mutex* m = nullptr;
  SyncClock::time_point* fake_now = nullptr;
  std::int64_t last = 0;
  std::vector<std::int64_t> per_step;  // step k: the reads of step k-1 and its callbacks
  std::int64_t at_epoch_end = 0;
  bool wants_batch_logs(std::int64_t) const override { return false; }
  void on_epoch_begin(std::int64_t, const Logs&) override { last = host_reads(); }
  void on_train_batch_begin(std::int64_t batch, const Logs&) override {
    const std::int64_t now = host_reads();
    if (batch > 0) per_step.push_back(now - last);
    last = now;
    if (fake_now) *fake_now += std::chrono::milliseconds(100);
  }
  void on_epoch_end(std::int64_t, const Logs& logs) override {
    per_step.push_back(host_reads() - last);  // the last step, its batch end and the epoch's read
    at_epoch_end = host_reads();
    EXPECT_GT(logs.count("loss"), 0u);
    EXPECT_GT(logs.count("sparse_categorical_accuracy"), 0u);
  }
};

struct SyncReads {
  std::vector<std::int64_t> per_step;  // rank 0's windows
  std::int64_t total = 0;              // every rank's, the whole fit
};

// SmallNet on the CPU, compiled with SGD, cross-entropy and accuracy.
std::unique_ptr<tnt::train::EngineHost> compiled_engine(const tnt::comm::ProcessGroup& g) {
  torch::manual_seed(1);
  auto host = std::make_unique<tnt::train::EngineHost>(std::make_unique<tnt::train::Engine>(
      tnt::make_adapter(tnt_test::SmallNet()), g, tnt::train::EngineOptions().use_gpu(false)));
  host->engine().compile(tnt::CompileOptions()
                            .optimizer(tnt::optimizers::SGD(0.1, 0.9))
                            .loss(tnt::losses::SparseCategoricalCrossentropy())
                            .metrics({tnt::metrics::SparseCategoricalAccuracy()}));
  return host;
}

SyncReads reads_in_fit(int ranks, bool progress_bar) {
  SyncClock::time_point fake_now = SyncClock::now();
  SyncReads out;
  const std::int64_t before = host_reads();
  std::mutex m;
  tnt::comm::run_in_process(ranks, [&](const tnt::comm::ProcessGroup& g) {
    const auto owner = compiled_engine(g);
    tnt::train::EngineHost& host = *owner;
    tnt::train::Engine& e = host.engine();
    auto reads = std::make_shared<SyncReadsPerStep>();
    std::vector<tnt::callbacks::CallbackPtr> callbacks{reads};
    if (progress_bar) {
      auto bar = std::make_shared<tnt::callbacks::ProgbarLogger>(1, /*live=*/true);
      bar->set_clock([&] { return fake_now; });
      callbacks.push_back(bar);
    }
    // Only rank 0 ticks the clock and records: the counter is the process's.
    if (g.rank() == 0 && progress_bar) reads->fake_now = &fake_now;
    e.fit(sync_test_data(), tnt::FitOptions().epochs(1).verbose(0).callbacks(callbacks), host.driver());
    if (g.rank() == 0) {
      std::lock_guard<std::mutex> lock(m);
      out.per_step = reads->per_step;
    }
  });
  out.total = host_reads() - before;
  return out;
}

TEST(HostSync, NoReadInAStepAtTheDefaults) {
  for (int ranks : {1, 2}) {
    const SyncReads reads = reads_in_fit(ranks, false);
    ASSERT_EQ(reads.per_step.size(), static_cast<std::size_t>(kSyncSteps)) << ranks << " ranks";
    for (std::int64_t k = 0; k + 1 < kSyncSteps; ++k) {
      EXPECT_EQ(reads.per_step[static_cast<std::size_t>(k)], 0)
          << "step " << k << ", " << ranks << " ranks";
    }
    // In all: one read per rank, at the epoch's end, for its logs (global
    // and local together).
    EXPECT_EQ(reads.total, ranks) << ranks << " ranks";
  }
}

TEST(HostSync, TheProgressBarReadsOnlyWhenItDraws) {
  static_assert(tnt::detail::ProgressBar::kRedrawInterval == std::chrono::milliseconds(250),
                "the expected pattern below assumes a 250 ms interval");
  const SyncReads reads = reads_in_fit(1, true);
  ASSERT_EQ(reads.per_step.size(), static_cast<std::size_t>(kSyncSteps));
  // 100 ms per step: drawn at steps 0, 3, 6, 9 (250 ms or more since the last).
  for (std::int64_t k = 0; k + 1 < kSyncSteps; ++k) {
    EXPECT_EQ(reads.per_step[static_cast<std::size_t>(k)], k % 3 == 0 ? 1 : 0) << "step " << k;
  }
  EXPECT_EQ(reads.per_step.back(), 1);  // step 11 is not drawn; the epoch's read
  EXPECT_EQ(reads.total, 5);
}

// evaluate(): a batch's logs are read once for all the callbacks that ask
// for them (docs/callbacks.md), none when no callback asks.
struct WantsTestBatchLogs : tnt::callbacks::Callback {
  std::int64_t seen = 0;
  bool wants_batch_logs(std::int64_t) const override { return true; }
  void on_test_batch_end(std::int64_t, const Logs& logs) override {
    if (logs.count("loss") > 0) ++seen;
  }
};

std::int64_t reads_in_evaluate(int asking) {
  std::int64_t reads = 0;
  tnt::comm::run_in_process(1, [&](const tnt::comm::ProcessGroup& g) {
    const auto owner = compiled_engine(g);
    tnt::train::EngineHost& host = *owner;
    tnt::train::Engine& e = host.engine();
    std::vector<std::shared_ptr<WantsTestBatchLogs>> callbacks;
    std::vector<tnt::callbacks::CallbackPtr> list;
    for (int i = 0; i < asking; ++i) {
      callbacks.push_back(std::make_shared<WantsTestBatchLogs>());
      list.push_back(callbacks.back());
    }
    const std::int64_t before = host_reads();
    e.evaluate(sync_test_data(), tnt::EvaluateOptions().verbose(0).callbacks(list),
               host.driver());
    reads = host_reads() - before;
    for (const auto& c : callbacks) EXPECT_EQ(c->seen, kSyncSteps);
  });
  return reads;
}

TEST(HostSync, EvaluateReadsABatchsLogsOnceForEveryCallbackThatAsks) {
  // Without: the global logs and the local ones at the end (2). With: one
  // per batch, the last of which the end's local logs reuse.
  const std::int64_t none = reads_in_evaluate(0);
  EXPECT_EQ(none, 2);
  EXPECT_EQ(reads_in_evaluate(1), none + kSyncSteps - 1);
  EXPECT_EQ(reads_in_evaluate(3), none + kSyncSteps - 1);
}

TEST(HostSync, TheLossScalerReadsOnlyItsVerdict) {
  std::vector<torch::Tensor> params;
  for (int i = 0; i < 5; ++i) {
    torch::Tensor p = torch::zeros({3}, torch::requires_grad());
    p.mutable_grad() = torch::full({3}, 4.0);
    params.push_back(p);
  }
  tnt::train::LossScaler scaler(2.0);
  const std::int64_t before = host_reads();
  ASSERT_TRUE(scaler.unscale_or_skip(params));
  EXPECT_EQ(host_reads() - before, 1);
  EXPECT_TRUE(torch::equal(params[0].grad(), torch::full({3}, 2.0)));
}

// The step's clipping gives LibTorch's clip_grad_norm_'s bits without its
// closing .item() (scripts/check_host_sync.py keeps clip_grad_norm_ out of
// the step's files): clipped, not clipped, one gradient, a missing one.
TEST(HostSync, ClipNormIsLibTorchsWithoutReadingTheNorm) {
  torch::Generator g = at::detail::createCPUGenerator(3);
  auto make = [&](const std::vector<std::vector<std::int64_t>>& shapes, double scale) {
    std::vector<torch::Tensor> params;
    for (const auto& shape : shapes) {
      torch::Tensor p = torch::zeros(shape, torch::requires_grad());
      p.mutable_grad() = torch::randn(shape, g) * scale;
      params.push_back(p);
    }
    return params;
  };
  const std::vector<std::vector<std::int64_t>> shapes{{7, 5}, {5}, {3, 4, 2}, {1}};
  for (const double scale : {10.0, 1e-3}) {
    for (const auto& case_shapes : {shapes, std::vector<std::vector<std::int64_t>>{{6, 6}}}) {
      std::vector<torch::Tensor> ours = make(case_shapes, scale);
      std::vector<torch::Tensor> theirs;
      for (const auto& p : ours) {
        torch::Tensor q = torch::zeros(p.sizes(), torch::requires_grad());
        q.mutable_grad() = p.grad().clone();
        theirs.push_back(q);
      }
      if (ours.size() > 1) {
        ours[1].mutable_grad() = torch::Tensor();
        theirs[1].mutable_grad() = torch::Tensor();
      }
      const std::int64_t before = host_reads();
      tnt::train::clip_grad_norm_on_device(ours, 0.5);
      EXPECT_EQ(host_reads() - before, 0);
      torch::nn::utils::clip_grad_norm_(theirs, 0.5);
      for (std::size_t i = 0; i < ours.size(); ++i) {
        ASSERT_EQ(ours[i].grad().defined(), theirs[i].grad().defined());
        if (!ours[i].grad().defined()) continue;
        EXPECT_TRUE(torch::equal(ours[i].grad(), theirs[i].grad()))
            << "scale " << scale << ", gradient " << i;
      }
      // Clipped (scale 10) to the bound; untouched (scale 1e-3) otherwise.
      double norm = 0;
      for (const auto& p : ours) {
        if (p.grad().defined()) norm += p.grad().pow(2).sum().item<double>();
      }
      if (scale > 1) EXPECT_NEAR(std::sqrt(norm), 0.5, 1e-5);
      else EXPECT_LT(std::sqrt(norm), 0.5);
    }
  }
}

}  // namespace
