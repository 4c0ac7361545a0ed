// The built-in callbacks at N ranks against a serial run of the same
// training (on the model's device: tiny_training.h): the logs they see are
// the serial values, and the decisions they take (stop, learning rate, save)
// happen at the same epoch on every rank.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "tiny_training.h"

namespace {

using namespace tnt_test;
namespace cb = tnt::callbacks;

tnt::FitOptions fit(int epochs) { return tnt::FitOptions().epochs(epochs).verbose(0); }

TEST(Callbacks, CsvLoggerWritesTheSerialValuesOnTheMasterOnly) {
  const std::string dir = shared_dir("csv");
  tnt::Model model{make_net()};
  const Reference ref = serial(train_set(8, false), 3, nullptr, model.device());
  model.compile(options());
  model.fit(train_set(8, false),
            fit(3).callbacks({std::make_shared<cb::CSVLogger>(dir + "/log.csv")}));
  tnt::comm::barrier();
  if (tnt::is_master_rank()) {
    std::ifstream in(dir + "/log.csv");
    std::string header;
    std::getline(in, header);
    EXPECT_EQ(header, "epoch,loss,sparse_categorical_accuracy");
    for (int e = 0; e < 3; ++e) {
      std::string line;
      ASSERT_TRUE(static_cast<bool>(std::getline(in, line)));
      int epoch = -1;
      double loss = 0, acc = 0;
      ASSERT_EQ(std::sscanf(line.c_str(), "%d,%lf,%lf", &epoch, &loss, &acc), 3) << line;
      EXPECT_EQ(epoch, e);
      EXPECT_NEAR(loss, ref.epoch_loss[e], 1e-5);
      EXPECT_NEAR(acc, ref.epoch_accuracy[e], 1e-9);
    }
  }
  remove_dir(dir);
}

TEST(Callbacks, EarlyStoppingStopsEveryRankAtTheSerialEpoch) {
  tnt::Model model{make_net()};
  const Reference ref = serial(train_set(8, false), 6, nullptr, model.device());
  // Stop as soon as the loss improves by less than 0.05: decide from the
  // serial losses which epoch that is.
  std::int64_t expected_epochs = 6;
  for (int e = 1; e < 6; ++e) {
    if (ref.epoch_loss[e] > ref.epoch_loss[e - 1] - 0.05) {
      expected_epochs = e + 1;
      break;
    }
  }
  model.compile(options());
  const auto stopper = std::make_shared<cb::EarlyStopping>(
      cb::EarlyStoppingOptions().monitor("loss").min_delta(0.05).patience(0));
  const auto history = model.fit(train_set(8, false), fit(6).callbacks({stopper}));
  EXPECT_EQ(static_cast<std::int64_t>(history.epochs.size()), expected_epochs);
  torch::Tensor n = torch::tensor({static_cast<std::int64_t>(history.epochs.size())});
  tnt::comm::allreduce(n, tnt::comm::ReduceOp::Max);
  EXPECT_EQ(n.item<std::int64_t>(), static_cast<std::int64_t>(history.epochs.size()));
}

TEST(Callbacks, EarlyStoppingRestoresTheBestWeights) {
  tnt::Model model{make_net()};
  model.compile(options());
  auto stopper = std::make_shared<cb::EarlyStopping>(
      cb::EarlyStoppingOptions().monitor("loss").patience(1).min_delta(10.0).restore_best_weights(true));
  const auto history = model.fit(train_set(8, false), fit(4).callbacks({stopper}));
  // min_delta 10 means "never improved" after the first epoch: with
  // patience 1 training stops after epoch 2 (Keras's count) and the first
  // epoch's weights come back.
  EXPECT_EQ(history.epochs.size(), 2u);
  const Reference first = serial(train_set(8, false), 1, nullptr, model.device());
  EXPECT_LE(max_rel_diff(first.weights, params_of(model)), 1e-5);
}

TEST(Callbacks, LearningRateSchedulerMatchesSerialTrainingWithTheSameSchedule) {
  auto lr_of = [](int epoch) { return 0.1 * std::pow(0.5, epoch); };
  tnt::Model model{make_net()};
  const Reference ref = serial(train_set(8, true), 3, lr_of, model.device());
  model.compile(options());
  model.fit(train_set(8, true),
            fit(3).callbacks({std::make_shared<cb::LearningRateScheduler>(
                [&](std::int64_t e, double) { return lr_of(static_cast<int>(e)); })}));
  EXPECT_LE(max_rel_diff(ref.weights, params_of(model)), 1e-5);
}

TEST(Callbacks, ReduceLROnPlateauLowersTheRateOnEveryRank) {
  tnt::Model model{make_net()};
  model.compile(options());
  // Improvement by 10 is impossible: after `patience` epochs the rate drops.
  model.fit(train_set(8, false),
            fit(3).callbacks({std::make_shared<cb::ReduceLROnPlateau>(
                cb::ReduceLROnPlateauOptions().monitor("loss").patience(1).min_delta(10).factor(0.5))}));
  const double lr = model.optimizer().param_groups().front().options().get_lr();
  EXPECT_DOUBLE_EQ(lr, 0.1 * 0.5 * 0.5);
  torch::Tensor all = tnt::comm::allgather(torch::tensor({lr}, torch::kFloat64));
  for (int r = 0; r < tnt::get_size(); ++r) EXPECT_DOUBLE_EQ(all[r].item<double>(), lr);
}

TEST(Callbacks, TerminateOnNaNStopsAtTheSameBatchEverywhere) {
  tnt::Model model{make_net()};
  int calls = 0;
  model.compile(options().loss(tnt::losses::Loss("nan_after_3", [&](auto& p, auto& t) {
    const torch::Tensor l = torch::nn::functional::cross_entropy(p, t);
    return ++calls > 3 ? l * std::numeric_limits<float>::quiet_NaN() : l;
  })));
  std::int64_t batches = 0;
  auto counter = std::make_shared<cb::LambdaCallback>();
  counter->on_batch_end([&](std::int64_t, const cb::Logs&) { ++batches; });
  model.fit(train_set(8, false),
            fit(3).callbacks({counter, std::make_shared<cb::TerminateOnNaN>()}));
  // Ranks with an empty micro-batch never call the loss; the NaN reaches
  // every rank through the global loss of the 4th batch.
  EXPECT_EQ(batches, 4);
  torch::Tensor all = tnt::comm::allgather(torch::tensor({batches}));
  for (int r = 0; r < tnt::get_size(); ++r) EXPECT_EQ(all[r].item<std::int64_t>(), batches);
}

TEST(Callbacks, RankLocalLogsWhenNotAggregated) {
  if (tnt::get_size() < 2) GTEST_SKIP() << "needs 2 ranks";
  double global = 0, local = 0;
  auto g = std::make_shared<cb::LambdaCallback>();
  g->on_epoch_end([&](std::int64_t, const cb::Logs& logs) { global = logs.at("loss"); });
  auto l = cb::wrap(std::make_shared<cb::LambdaCallback>(), cb::WrapOptions().aggregate_logs(false));
  static_cast<cb::LambdaCallback&>(*l).on_epoch_end(
      [&](std::int64_t, const cb::Logs& logs) { local = logs.at("loss"); });
  tnt::Model model{make_net()};
  model.compile(options());
  model.fit(train_set(8, false), fit(1).callbacks({g, l}));
  // The global loss is the sample-weighted mean of the ranks' local losses.
  torch::Tensor parts = tnt::comm::allgather(torch::tensor({local}, torch::kFloat64));
  EXPECT_NE(parts[0].item<double>(), parts[1].item<double>());
  const Reference ref = serial(train_set(8, false), 1, nullptr, model.device());
  EXPECT_NEAR(global, ref.epoch_loss[0], 1e-5);
}

TEST(Callbacks, ModelCheckpointWritesFilesNamedFromTheLogs) {
  const std::string dir = shared_dir("ckpt");
  tnt::Model model{make_net()};
  model.compile(options());
  const auto history = model.fit(
      train_set(8, false),
      fit(2).callbacks({std::make_shared<cb::ModelCheckpoint>(
          cb::ModelCheckpointOptions(dir + "/w.{epoch:02d}-{loss:.3f}.pt").save_weights_only(true))}));
  for (int e = 0; e < 2; ++e) {
    const std::string name = cb::format_filepath(dir + "/w.{epoch:02d}-{loss:.3f}.pt", e,
                                                 {{"loss", history.history.at("loss")[e]}});
    EXPECT_TRUE(std::filesystem::exists(name)) << name;
  }
  tnt::Model other{make_net(9)};
  other.compile(options());
  other.load_weights(cb::format_filepath(dir + "/w.{epoch:02d}-{loss:.3f}.pt", 1,
                                         {{"loss", history.history.at("loss")[1]}}));
  EXPECT_EQ(max_rel_diff(params_of(model), params_of(other)), 0.0);
  remove_dir(dir);
}

// `background`: ModelCheckpoint's files written by a thread while training
// goes on (its default), or before it goes on.
void check_resume_from_checkpoint(bool background) {
  const std::string dir = shared_dir(background ? "resume_bg" : "resume");
  auto compile = [](tnt::Model& m) {
    m.compile(tnt::CompileOptions()
                  .optimizer(tnt::optimizers::Adam(0.01))
                  .loss(tnt::losses::SparseCategoricalCrossentropy())
                  .schedule(tnt::schedules::ExponentialDecay(0.01, 5, 0.5)));
  };
  tnt::Model straight{make_net()};
  compile(straight);
  straight.fit(train_set(8, true),
               fit(4).callbacks({std::make_shared<cb::ModelCheckpoint>(
                   cb::ModelCheckpointOptions(dir + "/ckpt-{epoch}.pt")
                       .write_in_background(background))}));
  // A new process would do this: build, compile, load the epoch-2
  // checkpoint, continue with initial_epoch = 2.
  tnt::Model resumed{make_net(123)};
  compile(resumed);
  const std::int64_t done = resumed.load(dir + "/ckpt-2.pt");
  EXPECT_EQ(done, 2);
  resumed.fit(train_set(8, true), fit(4).initial_epoch(done));
  const auto a = params_of(straight), b = params_of(resumed);
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(torch::equal(a[i], b[i])) << i;
  remove_dir(dir);
}

TEST(Callbacks, ResumeFromACheckpointIsBitwiseEqualToAnUninterruptedRun) {
  check_resume_from_checkpoint(true);
}

TEST(Callbacks, ResumeFromASynchronouslyWrittenCheckpointToo) {
  check_resume_from_checkpoint(false);
}

// The tiny network with dropout: a resumed run must also continue every
// rank's random stream where the backup left it (on a GPU, that GPU's
// generator: scripts/device-check.sh's gpu_resume step).
struct DropMlpImpl : torch::nn::Module {
  DropMlpImpl() {
    fc1 = register_module("fc1", torch::nn::Linear(6, 16));
    drop = register_module("drop", torch::nn::Dropout(0.3));
    fc2 = register_module("fc2", torch::nn::Linear(16, 4));
  }
  torch::Tensor forward(torch::Tensor x) { return fc2(drop(torch::tanh(fc1(x)))); }
  torch::nn::Linear fc1{nullptr}, fc2{nullptr};
  torch::nn::Dropout drop{nullptr};
};
TORCH_MODULE(DropMlp);

DropMlp make_drop_net(int seed) {
  torch::manual_seed(static_cast<std::uint64_t>(seed));
  return DropMlp();
}

// Throws on every rank after global batch `batch` of `epoch`: a crash that
// leaves BackupAndRestore's last backup behind.
struct Crash : cb::Callback {
  Crash(std::int64_t epoch, std::int64_t batch) : epoch_(epoch), batch_(batch) {}
  void on_epoch_begin(std::int64_t epoch, const cb::Logs&) override { now_ = epoch; }
  void on_train_batch_end(std::int64_t batch, const cb::Logs&) override {
    if (now_ == epoch_ && batch == batch_) throw std::runtime_error("simulated crash");
  }
  std::int64_t epoch_, batch_, now_ = -1;
};

void compile_adam(tnt::Model& m) {
  m.compile(tnt::CompileOptions()
                .optimizer(tnt::optimizers::Adam(0.01))
                .loss(tnt::losses::SparseCategoricalCrossentropy())
                .metrics({tnt::metrics::SparseCategoricalAccuracy()}));
}

// `background`: each backup written by a thread while training goes on;
// the crash comes while the last one may still be in flight, and the
// model's destruction waits for it.
void check_mid_epoch_resume(bool background) {
  const std::string dir = shared_dir(background ? "backup_bg" : "backup");
  auto backup_of = [&](std::int64_t freq) {
    auto b = std::make_shared<cb::BackupAndRestore>(dir, freq);
    b->write_in_background(background);
    return b;
  };
  const auto train = train_set(8, true);  // 7 steps per epoch, the last one short
  tnt::Model straight{make_drop_net(5)};
  compile_adam(straight);
  const auto expected = straight.fit(train, fit(3));

  // Backups at epoch ends and every 2 optimizer steps, counted across
  // epochs: the last one before the crash (after the 6th step of epoch 2)
  // is the one after its 5th step (12 steps in all), so a step is redone.
  {
    tnt::Model crashing{make_drop_net(5)};
    compile_adam(crashing);
    auto backup = backup_of(2);
    EXPECT_THROW(crashing.fit(train, fit(3).callbacks({backup, std::make_shared<Crash>(1, 5)})),
                 std::runtime_error);
  }
  const std::string path = dir + "/backup.pt";
  EXPECT_TRUE(std::filesystem::exists(path) || !tnt::is_master_rank()) << "the backup stays";

  tnt::Model resumed{make_drop_net(123)};  // other initial weights: the backup's win
  compile_adam(resumed);
  const auto history = resumed.fit(train, fit(3).callbacks({backup_of(2)}));
  const auto a = params_of(straight), b = params_of(resumed);
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(torch::equal(a[i], b[i])) << "parameter " << i;
  // The resumed epoch's logs include the batches done before the crash.
  ASSERT_EQ(history.epochs.front(), 1) << "resumed inside epoch 2 (index 1)";
  for (const char* name : {"loss", "sparse_categorical_accuracy"}) {
    EXPECT_EQ(history.history.at(name).back(), expected.history.at(name).back()) << name;
    EXPECT_EQ(history.history.at(name).front(), expected.history.at(name).at(1)) << name;
  }
  EXPECT_FALSE(std::filesystem::exists(path)) << "removed when training completed";
  remove_dir(dir);
}

TEST(BackupAndRestore, MidEpochResumeIsBitwiseEqualToAnUninterruptedRun) {
  check_mid_epoch_resume(false);
}

TEST(BackupAndRestore, BackgroundWritesResumeBitwiseToo) { check_mid_epoch_resume(true); }

// Resume on another rank count: the backup of the whole group continues on
// a process set of one rank fewer (the global batch stays); equal up to float
// rounding (no dropout: its masks depend on the split anyway).
TEST(BackupAndRestore, ABackupContinuesOnAnotherRankCount) {
  if (tnt::get_size() < 2) GTEST_SKIP() << "needs 2 ranks";
  const std::string dir = shared_dir("backup_ranks");
  const auto train = train_set(8, true);
  tnt::Model straight{make_net()};
  compile_adam(straight);
  straight.fit(train, fit(3));
  {
    tnt::Model crashing{make_net()};
    compile_adam(crashing);
    EXPECT_THROW(crashing.fit(train, fit(3).callbacks({std::make_shared<cb::BackupAndRestore>(dir, 3),
                                                       std::make_shared<Crash>(1, 4)})),
                 std::runtime_error);
  }
  std::vector<int> fewer;
  for (int r = 0; r + 1 < tnt::get_size(); ++r) fewer.push_back(r);
  const tnt::comm::ProcessGroup group = tnt::world().subgroup(fewer);
  if (group.is_member()) {
    tnt::Model resumed{make_net(123), group};
    compile_adam(resumed);
    resumed.fit(train, fit(3).callbacks({std::make_shared<cb::BackupAndRestore>(dir, 3)}));
    EXPECT_LE(max_rel_diff(params_of(straight), params_of(resumed)), 1e-5);
  }
  remove_dir(dir);
}

// Deterministic mode removes the rounding: a backup resumed on another rank
// count (here one rank fewer, with dropout) ends bitwise equal to the
// uninterrupted run — its seed and fixed-point exponents are in the backup.
TEST(BackupAndRestore, DeterministicModeResumesBitwiseOnAnotherRankCount) {
  if (tnt::get_size() < 2) GTEST_SKIP() << "needs 2 ranks";
  const std::string dir = shared_dir("backup_det");
  const auto train = train_set(8, true);
  auto compile = [](tnt::Model& m) {
    m.compile(tnt::CompileOptions()
                  .optimizer(tnt::optimizers::Adam(0.01))
                  .loss(tnt::losses::SparseCategoricalCrossentropy())
                  .metrics({tnt::metrics::SparseCategoricalAccuracy()})
                  .deterministic(2));
  };
  tnt::Model straight{make_drop_net(5)};
  compile(straight);
  const auto expected = straight.fit(train, fit(3));
  {
    tnt::Model crashing{make_drop_net(5)};
    compile(crashing);
    EXPECT_THROW(crashing.fit(train, fit(3).callbacks({std::make_shared<cb::BackupAndRestore>(dir, 2),
                                                       std::make_shared<Crash>(1, 5)})),
                 std::runtime_error);
  }
  std::vector<int> fewer;
  for (int r = 0; r + 1 < tnt::get_size(); ++r) fewer.push_back(r);
  const tnt::comm::ProcessGroup group = tnt::world().subgroup(fewer);
  if (group.is_member()) {
    tnt::Model resumed{make_drop_net(123), group};
    compile(resumed);
    const auto history = resumed.fit(train, fit(3).callbacks({std::make_shared<cb::BackupAndRestore>(dir, 2)}));
    const auto a = params_of(straight), b = params_of(resumed);
    for (std::size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(torch::equal(a[i], b[i])) << "parameter " << i;
    EXPECT_EQ(history.history.at("loss").back(), expected.history.at("loss").back());
  }
  remove_dir(dir);
}

TEST(BackupAndRestore, ABackupOfAnotherGlobalBatchIsRefusedWithTheFix) {
  const std::string dir = shared_dir("backup_batch");
  {
    tnt::Model crashing{make_net()};
    compile_adam(crashing);
    EXPECT_THROW(crashing.fit(train_set(8, false), fit(2).callbacks({std::make_shared<cb::BackupAndRestore>(dir, 1),
                                                                    std::make_shared<Crash>(0, 2)})),
                 std::runtime_error);
  }
  tnt::Model other{make_net()};
  compile_adam(other);
  try {
    other.fit(train_set(10, false), fit(2).callbacks({std::make_shared<cb::BackupAndRestore>(dir, 1)}));
    ADD_FAILURE() << "resumed with another global batch size";
  } catch (const tnt::Error& e) {
    EXPECT_NE(std::string(e.what()).find("global batch size 8, this run's is 10"), std::string::npos)
        << e.what();
  }
  remove_dir(dir);
}

TEST(Callbacks, LoadLatestCheckpointFallsBackToAnOlderFileWithAWarning) {
  const std::string dir = shared_dir("fallback");
  tnt::Model model{make_net()};
  compile_adam(model);
  model.fit(train_set(8, false), fit(2).callbacks({std::make_shared<cb::ModelCheckpoint>(
                                      cb::ModelCheckpointOptions(dir + "/epoch-{epoch}.pt"))}));
  if (tnt::is_master_rank()) {  // the newest one is cut short, as by a full disk
    std::filesystem::resize_file(dir + "/epoch-2.pt", 100);
  }
  tnt::comm::barrier();
  tnt::Model resumed{make_net(123)};
  compile_adam(resumed);
  testing::internal::CaptureStderr();
  const std::string loaded = tnt::load_latest_checkpoint(resumed, dir);
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(loaded, dir + "/epoch-1.pt");
  EXPECT_EQ(resumed.epochs_done(), 1);
  if (tnt::is_master_rank()) {
    EXPECT_NE(err.find("WARNING: checkpoint '" + dir + "/epoch-2.pt' cannot be loaded"), std::string::npos) << err;
    EXPECT_NE(err.find("trying the older '" + dir + "/epoch-1.pt'"), std::string::npos) << err;
  }
  if (tnt::is_master_rank()) std::filesystem::resize_file(dir + "/epoch-1.pt", 50);
  tnt::comm::barrier();
  try {
    tnt::load_latest_checkpoint(resumed, dir);
    ADD_FAILURE() << "loaded from damaged files only";
  } catch (const tnt::Error& e) {
    EXPECT_NE(std::string(e.what()).find("none of the 2 checkpoints"), std::string::npos) << e.what();
  }
  EXPECT_EQ(tnt::load_latest_checkpoint(resumed, dir + "/none"), "");
  remove_dir(dir);
}

TEST(Callbacks, LoadingACorruptCheckpointFailsOnEveryRankNamingTheFile) {
  const std::string dir = shared_dir("corrupt");
  const std::string path = dir + "/bad.pt";
  if (tnt::is_master_rank()) std::ofstream(path) << "not a checkpoint";
  tnt::Model model{make_net()};
  model.compile(options());
  try {
    model.load(path);
    ADD_FAILURE() << "loaded a corrupt file";
  } catch (const tnt::Error& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
  remove_dir(dir);
}

}  // namespace
