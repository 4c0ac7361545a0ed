// The training engine's loop (train/engine/engine.h, train/loop/fit_loop.h) driven
// directly on the in-process backend, 1 to 4 ranks as threads, no MPI and no
// tnt::Model: its control paths (resume at a step and at an epoch, the stop
// vote when one rank asks, validation frequency, accumulation) and its step
// strategies (deterministic, sharded), plus every engine switch set through
// EngineOptions alone.
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <map>
#include <mutex>

#include <torch/torch.h>

#include <tarantella/base/argument_error.h>
#include <tarantella/base/error.h>
#include <tarantella/callbacks/builtins.h>
#include <tarantella/comm/in_process.h>
#include <tarantella/data/dataset.h>
#include <tarantella/keras/losses.h>
#include <tarantella/keras/metrics.h>
#include <tarantella/keras/optimizers.h>

#include "../support/test_host.h"
#include "../support/weights.h"
#include "model/model_impl.h"
#include "train/engine/engine.h"
#include "train/engine/engine_state.h"
#include "train/loop/fit_loop.h"
#include "train/step/train_step.h"

namespace {

using tnt::comm::ProcessGroup;
using tnt::comm::run_in_process;
using tnt::train::Engine;
using tnt::train::EngineOptions;
using tnt::train::EngineState;
using tnt::train::TrainingPosition;
using tnt_test::max_rel_diff;
using Logs = tnt::callbacks::Logs;

using tnt_test::TestHostOf;
using TestHost = TestHostOf<Engine>;

// 22 samples: global batches of 8 are 8, 8, 6 (uneven shares at 3 and 4 ranks).
constexpr std::int64_t kSamples = 22;
tnt::data::Dataset samples() {
  torch::Generator g = at::detail::createCPUGenerator(11);
  return tnt::data::Dataset::from_tensor_slices(
      {torch::randn({kSamples, 6}, g), torch::randint(0, 4, {kSamples}, g)});
}

std::mutex g_seed;  // the global generator gives every engine the same start
std::shared_ptr<tnt::ModuleAdapter> fresh_net() {
  std::lock_guard<std::mutex> lock(g_seed);
  torch::manual_seed(3);
  return tnt::make_adapter(tnt_test::SmallNet());
}

tnt::CompileOptions sgd() {
  return tnt::CompileOptions()
      .optimizer(tnt::optimizers::SGD(0.1, 0.5))
      .loss(tnt::losses::SparseCategoricalCrossentropy())
      .metrics({tnt::metrics::SparseCategoricalAccuracy()});
}

EngineOptions quiet() { return EngineOptions().use_gpu(false); }

struct Trained {
  std::vector<torch::Tensor> weights;
  tnt::callbacks::History history;
};

// Trains on `ranks` in-process ranks; rank 0's result.
Trained train(int ranks, tnt::CompileOptions compile, tnt::FitOptions fit,
          EngineOptions options = quiet(),
          std::function<void(Engine&, TestHost&)> before = nullptr) {
  Trained out;
  std::mutex m;
  run_in_process(ranks, [&](const ProcessGroup& g) {
    Engine e(fresh_net(), g, options);
    TestHost host(e);
    e.compile(compile);
    if (before) before(e, host);
    auto history = e.fit(samples().batch(8), fit, {&host, nullptr});
    if (g.rank() == 0) {
      std::lock_guard<std::mutex> lock(m);
      out = {TestHost::weights_of(e), history};
    }
  });
  return out;
}

tnt::FitOptions epochs(std::int64_t n) { return tnt::FitOptions().epochs(n).verbose(0); }

// Records the hooks it sees, per rank.
struct Recorder : tnt::callbacks::Callback {
  std::vector<std::int64_t> epochs_begun, batches_begun;
  std::map<std::int64_t, Logs> epoch_logs;
  // fit()'s validation: the epochs whose validation ran the test hooks, the
  // test batches each saw, and the logs at on_test_end.
  std::vector<std::int64_t> tests_begun;
  std::map<std::int64_t, std::int64_t> test_batches;
  std::map<std::int64_t, Logs> test_logs;
  void on_test_begin(const Logs&) override { tests_begun.push_back(epochs_begun.back()); }
  void on_test_batch_end(std::int64_t, const Logs&) override {
    ++test_batches[epochs_begun.back()];
  }
  void on_test_end(const Logs& logs) override { test_logs[epochs_begun.back()] = logs; }
  void on_epoch_begin(std::int64_t e, const Logs&) override { epochs_begun.push_back(e); }
  void on_train_batch_begin(std::int64_t b, const Logs&) override { batches_begun.push_back(b); }
  void on_epoch_end(std::int64_t e, const Logs& logs) override { epoch_logs[e] = logs; }
};

TEST(EngineCycles, AccumulationCyclesEndWhereTheyShould) {
  using tnt::train::cycle_at;
  // k = 3 over 7 steps: cycles [0,3), [3,6), [6,7) (the last one short).
  EXPECT_FALSE(cycle_at(0, 3, 7).reduce);
  EXPECT_TRUE(cycle_at(2, 3, 7).reduce);
  EXPECT_EQ(cycle_at(4, 3, 7).start, 3);
  EXPECT_EQ(cycle_at(4, 3, 7).length, 3);
  EXPECT_EQ(cycle_at(6, 3, 7).length, 1);
  EXPECT_TRUE(cycle_at(6, 3, 7).reduce);
  // Unknown epoch length: full cycles only.
  EXPECT_EQ(cycle_at(6, 3, -1).length, 3);
  EXPECT_FALSE(cycle_at(6, 3, -1).reduce);
  EXPECT_TRUE(cycle_at(5, 1, -1).reduce);
}

TEST(Engine, AnyRankCountTrainsLikeOneRank) {
  const Trained one = train(1, sgd(), epochs(2));
  for (int n : {2, 3, 4}) {
    const Trained many = train(n, sgd(), epochs(2));
    EXPECT_LT(max_rel_diff(one.weights, many.weights), 1e-5) << n << " ranks";
    EXPECT_NEAR(one.history.history.at("loss").back(), many.history.history.at("loss").back(),
                1e-5)
        << n << " ranks";
  }
}

// Accumulating k = 2 micro-steps of global batch 4 is one step of batch 8
// when every cycle is full: 16 samples (the first 16 of the data set).
TEST(Engine, AccumulationEqualsTheLargerBatch) {
  auto run = [](int ranks, int k, std::int64_t batch) {
    std::vector<torch::Tensor> w;
    std::mutex m;
    run_in_process(ranks, [&](const ProcessGroup& g) {
      Engine e(fresh_net(), g, quiet());
      TestHost host(e);
      e.compile(sgd().aggregation_frequency(k));
      e.fit(samples().take(16).batch(batch), epochs(2), {&host, nullptr});
      std::lock_guard<std::mutex> lock(m);
      if (g.rank() == 0) w = TestHost::weights_of(e);
    });
    return w;
  };
  const auto reference = run(1, 1, 8);
  for (int n : {1, 2, 3}) {
    EXPECT_LT(max_rel_diff(reference, run(n, 2, 4)), 1e-5) << n << " ranks";
  }
}

// A dataset of unknown size (a filter before batch) trains as the same
// data of known size with accumulation: the epoch's last cycle, cut short
// (3 batches, cycles of 2), reduces at the epoch's end, averaged over its
// one step. It used to wait for the next epoch's first batch (its loss
// missing from its epoch's logs, its gradient in the next epoch's update).
TEST(Engine, AccumulationClosesTheLastCycleOfADatasetOfUnknownSize) {
  auto run = [](int ranks, bool known) {
    Trained out;
    std::mutex m;
    run_in_process(ranks, [&](const ProcessGroup& g) {
      Engine e(fresh_net(), g, quiet());
      TestHost host(e);
      e.compile(sgd().aggregation_frequency(2));
      auto data = known ? samples() : samples().filter([](const tnt::data::Element&) { return true; });
      auto history = e.fit(data.batch(8), epochs(2), {&host, nullptr});
      std::lock_guard<std::mutex> lock(m);
      if (g.rank() == 0) out = {TestHost::weights_of(e), history};
    });
    return out;
  };
  for (int n : {1, 2}) {
    const Trained known = run(n, true);
    const Trained unknown = run(n, false);
    EXPECT_LT(max_rel_diff(known.weights, unknown.weights), 1e-6) << n << " ranks";
    for (const auto& [name, values] : known.history.history) {
      ASSERT_EQ(values.size(), unknown.history.history.at(name).size()) << name;
      for (std::size_t i = 0; i < values.size(); ++i) {
        EXPECT_NEAR(values[i], unknown.history.history.at(name)[i], 1e-9) << name << " epoch " << i;
      }
    }
  }
}

// One rank asks to stop at the end of epoch 1 (its own logs); the vote
// stops every rank there.
TEST(Engine, StopVoteStopsEveryRankWhenOneAsks) {
  for (int n : {2, 3, 4}) {
    std::atomic<int> finished_after_two{0};
    run_in_process(n, [&](const ProcessGroup& g) {
      Engine e(fresh_net(), g, quiet());
      TestHost host(e);
      e.compile(sgd());
      struct StopOnLastRank : tnt::callbacks::Callback {
        void on_epoch_end(std::int64_t epoch, const Logs&) override {
          if (epoch == 1 && host()->group().rank() == host()->group().size() - 1) {
            host()->request_stop();
          }
        }
      };
      auto recorder = std::make_shared<Recorder>();
      e.fit(samples().batch(8),
            epochs(5).callbacks({std::make_shared<StopOnLastRank>(), recorder}), {&host, nullptr});
      if (recorder->epochs_begun == std::vector<std::int64_t>{0, 1} && host.stop_requested()) {
        ++finished_after_two;
      }
    });
    EXPECT_EQ(finished_after_two.load(), n) << n << " ranks";
  }
}

TEST(Engine, ValidationRunsEveryValidationFreqEpochs) {
  for (int n : {1, 3}) {
    auto recorder = std::make_shared<Recorder>();
    std::mutex m;
    run_in_process(n, [&](const ProcessGroup& g) {
      Engine e(fresh_net(), g, quiet());
      TestHost host(e);
      e.compile(sgd());
      auto mine = std::make_shared<Recorder>();
      e.fit(samples().batch(8),
            epochs(5).validation_data(samples().take(10).batch(4)).validation_freq(2).callbacks(
                {mine}),
            {&host, nullptr});
      std::lock_guard<std::mutex> lock(m);
      if (g.rank() == 0) recorder = mine;
    });
    for (std::int64_t epoch = 0; epoch < 5; ++epoch) {
      const bool validated = recorder->epoch_logs.at(epoch).count("val_loss") > 0;
      EXPECT_EQ(validated, epoch == 1 || epoch == 3) << "epoch " << epoch << ", " << n << " ranks";
    }
    // As in Keras, the validation runs the fit's callbacks' test hooks: once
    // per validation, a batch hook per micro-batch (10 samples in global
    // batches of 4: 3 steps), and on_test_end's logs are the val_ values.
    EXPECT_EQ(recorder->tests_begun, (std::vector<std::int64_t>{1, 3})) << n << " ranks";
    for (std::int64_t epoch : {1, 3}) {
      EXPECT_EQ(recorder->test_batches[epoch], 3) << "epoch " << epoch << ", " << n << " ranks";
      EXPECT_EQ(recorder->test_logs.at(epoch).at("loss"),
                recorder->epoch_logs.at(epoch).at("val_loss"));
    }
  }
}

// validation_steps(n): each validation reads only the first n batches of
// the validation data, so its val_loss is evaluate() over those n batches
// (with steps(n), or on the dataset cut to them), not over all of them.
TEST(Engine, ValidationStepsEvaluatesTheFirstBatchesOnly) {
  for (int n : {1, 3}) {
    std::map<std::string, double> seen;  // rank 0's
    std::int64_t batches = 0;
    std::mutex m;
    run_in_process(n, [&](const ProcessGroup& g) {
      Engine e(fresh_net(), g, quiet());
      TestHost host(e);
      e.compile(sgd());
      const tnt::data::Dataset val = samples().batch(4);  // 6 batches: 4, 4, 4, 4, 4, 2
      auto mine = std::make_shared<Recorder>();
      e.fit(samples().batch(8), epochs(1).validation_data(val).validation_steps(2).callbacks({mine}),
            {&host, nullptr});
      const auto eval = [&](const tnt::data::Dataset& d, std::int64_t steps) {
        return e.evaluate(d, tnt::EvaluateOptions().steps(steps), {&host, nullptr}).at("loss");
      };
      const double steps_two = eval(val, 2), cut = eval(samples().take(8).batch(4), 0),
                   all = eval(val, 0);
      std::lock_guard<std::mutex> lock(m);
      if (g.rank() != 0) return;
      batches = mine->test_batches[0];
      seen = {{"val_loss", mine->epoch_logs.at(0).at("val_loss")}, {"steps_two", steps_two},
              {"cut", cut}, {"all", all}};
    });
    EXPECT_EQ(batches, 2) << n << " ranks";
    EXPECT_EQ(seen.at("val_loss"), seen.at("steps_two")) << n << " ranks";
    EXPECT_EQ(seen.at("val_loss"), seen.at("cut")) << n << " ranks";
    EXPECT_NE(seen.at("val_loss"), seen.at("all")) << n << " ranks";
  }
}

TEST(Engine, NegativeValidationStepsIsAnArgumentError) {
  run_in_process(1, [&](const ProcessGroup& g) {
    Engine e(fresh_net(), g, quiet());
    TestHost host(e);
    e.compile(sgd());
    try {
      e.fit(samples().batch(8), epochs(1).validation_data(samples().batch(4)).validation_steps(-1),
            {&host, nullptr});
      ADD_FAILURE() << "validation_steps(-1) trained";
    } catch (const tnt::ArgumentError& err) {
      EXPECT_NE(std::string(err.what()).find("validation_steps=-1"), std::string::npos)
          << err.what();
    }
  });
}

// Validation every 2 epochs: callbacks that watch a val_ value skip the
// epochs without one, as Keras's do (they stopped the training with
// "'val_loss' is not in the logs ... pass validation_data").
TEST(Engine, CallbacksOnValValuesSkipEpochsWithoutValidation) {
  run_in_process(1, [&](const ProcessGroup& g) {
    Engine e(fresh_net(), g, quiet());
    TestHost host(e);
    e.compile(sgd());
    namespace cb = tnt::callbacks;
    auto stopper = std::make_shared<cb::EarlyStopping>(
        cb::EarlyStoppingOptions().monitor("val_loss").patience(1).min_delta(100.0));
    auto plateau = std::make_shared<cb::ReduceLROnPlateau>(
        cb::ReduceLROnPlateauOptions().monitor("val_loss").patience(1).min_delta(100.0));
    auto step = std::make_shared<Recorder>();
    e.fit(samples().batch(8),
          epochs(6).validation_data(samples().batch(8)).validation_freq(2).callbacks(
              {stopper, plateau, step}),
          {&host, nullptr});
    // Validated after epochs 1 and 3 (0-based): improved once, then not:
    // patience 1 stops after epoch 3, and the rate is lowered once there
    // (the epochs without validation count for neither).
    EXPECT_EQ(step->epochs_begun, (std::vector<std::int64_t>{0, 1, 2, 3}));
    EXPECT_NEAR(e.learning_rate(), 0.1 * 0.1, 1e-12);
    // A fit that fails with `text` (each on a host of its own: the stop
    // asked above stays with its host).
    const auto fails_with = [&](tnt::FitOptions fit, const std::string& text) {
      TestHost fresh(e);
      try {
        e.fit(samples().batch(8), fit, {&fresh, nullptr});
        ADD_FAILURE() << "trained, expected: " << text;
      } catch (const tnt::Error& error) {
        EXPECT_NE(std::string(error.what()).find(text), std::string::npos) << error.what();
      }
    };
    const auto watching = [](const char* key) -> std::vector<tnt::callbacks::CallbackPtr> {
      return {std::make_shared<cb::EarlyStopping>(cb::EarlyStoppingOptions().monitor(key))};
    };
    // A misspelled key, at an epoch that validated, is still an error.
    fails_with(epochs(2).validation_data(samples().batch(8)).validation_freq(2).callbacks(
                   watching("val_acc")),
               "'val_acc'");
    // Without validation_data the missing value is still an error.
    fails_with(epochs(1).callbacks(watching("val_loss")), "pass validation_data");
  });
}

// fit called again from epoch 0 (Keras's `for e in ...: fit(epochs=1)`)
// reads the next epoch's order each time, as one fit over all the epochs
// does, and so does a continuation with initial_epoch. (Each call started
// over at epoch 0's order: one permutation, and one set of deterministic
// mode's seeds, repeated every time.)
TEST(Engine, FitCalledAgainReadsTheNextEpochsOrder) {
  using Orders = std::vector<std::vector<float>>;
  // The first feature of every sample, in the order each epoch reads them.
  const auto orders_of = [](const std::vector<tnt::FitOptions>& calls) {
    Orders orders;
    run_in_process(1, [&](const ProcessGroup& g) {
      Engine e(fresh_net(), g, quiet());
      TestHost host(e);
      e.compile(sgd());
      auto seen = std::make_shared<std::vector<float>>();
      const auto data = samples()
                            .shuffle(kSamples, /*seed=*/5)
                            .map([seen](tnt::data::Element x) {
                              seen->push_back(x[0][0].item<float>());
                              return x;
                            })
                            .batch(8);
      struct EachEpoch : tnt::callbacks::Callback {
        EachEpoch(std::shared_ptr<std::vector<float>> s, Orders& o) : seen(std::move(s)), out(o) {}
        void on_epoch_end(std::int64_t, const Logs&) override {
          out.push_back(*seen);
          seen->clear();
        }
        std::shared_ptr<std::vector<float>> seen;
        Orders& out;
      };
      for (auto fit : calls) {
        auto callbacks = fit.callbacks();
        callbacks.push_back(std::make_shared<EachEpoch>(seen, orders));
        try {
          e.fit(data, fit.callbacks(callbacks), {&host, nullptr});
        } catch (const std::exception&) {
          seen->clear();  // the failed epoch's reads
          continue;
        }
        EXPECT_EQ(e.counters().epochs_done, fit.epochs());  // the epochs shown stay Keras's
      }
    });
    return orders;
  };
  const Orders one_fit = orders_of({epochs(3)});
  ASSERT_EQ(one_fit.size(), 3u);
  EXPECT_NE(one_fit[0], one_fit[1]);
  EXPECT_NE(one_fit[1], one_fit[2]);
  EXPECT_EQ(orders_of({epochs(1), epochs(1), epochs(1)}), one_fit);
  EXPECT_EQ(orders_of({epochs(1), epochs(3).initial_epoch(1)}), one_fit);
  // An epoch that ends in an error (Ctrl-C in a notebook) is not counted:
  // run again from epochs_done, it reads its own order again.
  struct FailAtBatch1 : tnt::callbacks::Callback {
    void on_train_batch_end(std::int64_t b, const Logs&) override {
      if (b == 1) throw std::runtime_error("interrupted");
    }
  };
  EXPECT_EQ(orders_of({epochs(1), epochs(2).initial_epoch(1).callbacks({std::make_shared<FailAtBatch1>()}),
                       epochs(3).initial_epoch(1)}),
            one_fit);
}

// A position given on train_begin (what BackupAndRestore does) moves the
// loop: mid-epoch it starts at the next step with the saved logs' state, at
// an epoch boundary at the next epoch.
TEST(Engine, ResumesAtAStepAndAtAnEpoch) {
  struct ResumeAt : tnt::callbacks::Callback {
    explicit ResumeAt(TrainingPosition p) : at(std::move(p)) {}
    void on_train_begin(const Logs&) override { host()->resume_from(at); }
    TrainingPosition at;
  };
  for (int n : {1, 2, 4}) {
    run_in_process(n, [&](const ProcessGroup& g) {
      Engine e(fresh_net(), g, quiet());
      TestHost host(e);
      e.compile(sgd());
      // Epoch 1 after step 2 of 3, with the state of 16 samples at loss 0.5
      // and accuracy 0.25 (loss sum, samples, hits, count).
      TrainingPosition mid{1, 2, {8.0, 16.0, 4.0, 16.0}, 8, 1};
      auto step = std::make_shared<Recorder>();
      e.fit(samples().batch(8), epochs(3).callbacks({std::make_shared<ResumeAt>(mid), step}),
            {&host, nullptr});
      EXPECT_EQ(step->epochs_begun, (std::vector<std::int64_t>{1, 2}));
      EXPECT_EQ(step->batches_begun, (std::vector<std::int64_t>{2, 0, 1, 2}));
      EXPECT_EQ(e.counters().epochs_done, 3);
      // The resumed epoch's logs include the 16 samples done before.
      const double acc = step->epoch_logs.at(1).at("sparse_categorical_accuracy");
      EXPECT_LT(acc, 0.25 * 16 / 22 + 6.0 / 22 + 1e-9);
      EXPECT_GT(acc, 0.25 * 16 / 22 - 1e-9);

      TrainingPosition boundary{2, 0, {}, 8, 3};
      auto epoch = std::make_shared<Recorder>();
      e.fit(samples().batch(8),
            epochs(4).callbacks({std::make_shared<ResumeAt>(boundary), epoch}), {&host, nullptr});
      EXPECT_EQ(epoch->epochs_begun, (std::vector<std::int64_t>{2, 3}));
      EXPECT_EQ(epoch->batches_begun.size(), 6u);

      TrainingPosition other_batch{0, 1, {}, 16, 1};
      try {
        e.fit(samples().batch(8), epochs(1).callbacks({std::make_shared<ResumeAt>(other_batch)}),
              {&host, nullptr});
        ADD_FAILURE() << "a backup of another global batch size was accepted";
      } catch (const tnt::Error& error) {
        EXPECT_NE(std::string(error.what()).find("global batch size 16"), std::string::npos)
            << error.what();
      }
    });
  }
}

TEST(Engine, DeterministicStepIsBitwiseTheSameAtAnyRankCount) {
  const Trained one = train(1, sgd().deterministic(2), epochs(2));
  for (int n : {2, 3, 4}) {
    const Trained many = train(n, sgd().deterministic(2), epochs(2));
    for (std::size_t i = 0; i < one.weights.size(); ++i) {
      EXPECT_TRUE(torch::equal(one.weights[i], many.weights[i])) << "tensor " << i << ", " << n;
    }
    EXPECT_EQ(one.history.history.at("loss"), many.history.history.at("loss")) << n << " ranks";
  }
}

TEST(Engine, ShardedStepMatchesTheWholeStep) {
  auto adam = [] {
    return tnt::CompileOptions()
        .optimizer(tnt::optimizers::Adam(0.01))
        .loss(tnt::losses::SparseCategoricalCrossentropy());
  };
  for (int n : {2, 4}) {
    const Trained whole = train(n, adam(), epochs(2));
    const Trained shards = train(n, adam().shard_optimizer(true), epochs(2));
    bool sharded = true;
    run_in_process(n, [&](const ProcessGroup& g) {
      EngineState e(fresh_net(), g, quiet());
      e.compile(adam().shard_optimizer(true));
      e.gradients().synchronizer();
      if (g.rank() == 0) sharded = e.gradients().shards() != nullptr;
    });
    EXPECT_TRUE(sharded) << n << " ranks";
    EXPECT_LT(max_rel_diff(whole.weights, shards.weights), 1e-6) << n << " ranks";
  }
}

// The update strategy is decided once, from the compiled options: bucket
// by bucket where the optimizer allows it and no rule needs every gradient
// first; and it trains as the update after the last bucket does.
TEST(Engine, StepUpdateIsChosenOnceFromTheOptions) {
  using tnt::train::Update;
  auto update_of = [](int ranks, EngineOptions o, tnt::CompileOptions c) {
    Update u = Update::kAfterSync;
    run_in_process(ranks, [&](const ProcessGroup& g) {
      EngineState e(fresh_net(), g, o);
      e.compile(c);
      const Update mine = tnt::train::TrainStep(e.step_context()).update();
      if (g.rank() == 0) u = mine;
    });
    return u;
  };
  const EngineOptions per_bucket = quiet().overlap_optimizer(true);
  EXPECT_EQ(update_of(2, per_bucket, sgd()), Update::kPerBucket);
  EXPECT_EQ(update_of(2, quiet(), sgd()), Update::kAfterSync);
  EXPECT_EQ(update_of(1, per_bucket, sgd()), Update::kAfterSync);  // nothing to overlap
  EXPECT_EQ(update_of(2, per_bucket, sgd().clip_norm(1.0)), Update::kAfterSync);
  EXPECT_EQ(update_of(2, quiet(), sgd().shard_optimizer(true)), Update::kPerBucket);
  EXPECT_EQ(update_of(2, quiet(), sgd().shard_optimizer(true).clip_value(0.5)),
            Update::kAfterSync);
  for (int n : {2, 3}) {
    const Trained after = train(n, sgd(), epochs(2));
    const Trained bucketwise = train(n, sgd(), epochs(2), per_bucket);
    EXPECT_LT(max_rel_diff(after.weights, bucketwise.weights), 1e-6) << n << " ranks";
    EXPECT_EQ(after.history.history.at("loss").size(), 2u);
  }
}

// Every engine switch through EngineOptions alone (nothing from the
// environment): bucket size, overlap, per-bucket optimizer steps,
// auto-tuning, the timeline, the device.
TEST(EngineOptions, EverySwitchTakesEffectThroughTheStruct) {
  const auto timeline = std::filesystem::temp_directory_path() / "tnt_engine_options_timeline.json";
  std::filesystem::remove(timeline);
  run_in_process(2, [&](const ProcessGroup& g) {
    auto buckets = [&](EngineOptions o) {
      EngineState e(fresh_net(), g, o);
      e.compile(sgd());
      return e.gradients().synchronizer().buckets().size();
    };
    EXPECT_EQ(buckets(quiet().fusion_threshold_bytes(0)), 4u);  // one per tensor
    EXPECT_EQ(buckets(quiet().fusion_threshold_bytes(1 << 20)), 1u);

    EngineState no_overlap(fresh_net(), g, quiet().overlap(false).overlap_optimizer(true));
    no_overlap.compile(sgd());
    EXPECT_FALSE(no_overlap.gradients().synchronizer().options().overlap());
    EXPECT_NE(no_overlap.gradients().bucket_steps(), nullptr);
    EngineState plain(fresh_net(), g, quiet());
    plain.compile(sgd());
    EXPECT_TRUE(plain.gradients().synchronizer().options().overlap());
    EXPECT_EQ(plain.gradients().bucket_steps(), nullptr);
    EXPECT_EQ(plain.device(), torch::Device(torch::kCPU));

    EngineState tuned(fresh_net(), g, quiet().autotune(true).timeline_path(timeline.string()));
    TestHostOf<EngineState> host(tuned);
    tuned.compile(sgd());
    tnt::train::fit(tuned.loop_context("fit()"), samples().batch(8), epochs(1), {&host, nullptr});
    EXPECT_NE(tuned.gradients().autotuner(), nullptr);
  });
  EXPECT_TRUE(std::filesystem::exists(timeline));
  std::filesystem::remove(timeline);
}

}  // namespace

// load_model of a file from a float16 GPU run, on a machine without a GPU:
// compiled in full precision with a warning, not refused (compile() refuses
// float16 on the CPU); on a GPU, or another precision, as saved.
namespace {
TEST(Engine, LoadModelTurnsAGpusFloat16IntoFullPrecisionOnTheCpu) {
  const auto saved = tnt::CompileOptions().mixed_precision(tnt::MixedPrecision::Float16).loss_scaling(true);
  const tnt::CompileOptions cpu = tnt::runnable_on(saved, torch::Device(torch::kCPU), "m.pt");
  EXPECT_EQ(cpu.mixed_precision(), tnt::MixedPrecision::None);
  EXPECT_FALSE(cpu.loss_scaling().has_value());
  const tnt::CompileOptions gpu = tnt::runnable_on(saved, torch::Device(torch::kCUDA, 0), "m.pt");
  EXPECT_EQ(gpu.mixed_precision(), tnt::MixedPrecision::Float16);
  EXPECT_EQ(gpu.loss_scaling(), std::optional<bool>(true));
  const auto bf16 = tnt::CompileOptions().mixed_precision(tnt::MixedPrecision::BFloat16);
  EXPECT_EQ(tnt::runnable_on(bf16, torch::Device(torch::kCPU), "m.pt").mixed_precision(),
            tnt::MixedPrecision::BFloat16);
}
}  // namespace

namespace {

// fit, evaluate and predict leave every module's training mode as they
// found it: a module in eval mode stays there (it used to leave fit in
// training mode, evaluate and predict in eval mode), and so does a
// submodule set apart (a frozen part).
TEST(Engine, FitEvaluateAndPredictLeaveTheModesAsTheyFoundThem) {
  run_in_process(1, [](const ProcessGroup& g) {
    torch::manual_seed(3);
    torch::nn::Sequential net(torch::nn::Linear(6, 8), torch::nn::Dropout(0.5),
                              torch::nn::Linear(8, 4));
    Engine e(tnt::make_adapter(net), g, quiet());
    TestHost host(e);
    e.compile(sgd());
    const auto modes = [&] {
      std::vector<bool> out;
      for (const auto& m : net->modules(/*include_self=*/true)) out.push_back(m->is_training());
      return out;
    };
    const auto data = samples().batch(8);
    for (const bool whole : {false, true}) {
      net->train(whole);
      net[1]->train(!whole);  // the Dropout set apart
      const std::vector<bool> before = modes();
      e.fit(data, epochs(1), {&host, nullptr});
      EXPECT_EQ(modes(), before) << "after fit, the net's mode " << whole;
      e.evaluate(data, tnt::EvaluateOptions().verbose(0), {&host, nullptr});
      EXPECT_EQ(modes(), before) << "after evaluate, the net's mode " << whole;
      e.predict(data, tnt::PredictOptions(), {&host, nullptr});
      EXPECT_EQ(modes(), before) << "after predict, the net's mode " << whole;
    }
  });
}

}  // namespace
