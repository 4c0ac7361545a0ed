// The TensorBoard callback at N ranks: the event files are read back by the
// tests' own reader (record framing, both CRCs, the protobuf Event decoded by
// hand) and every tag, step and value must equal what fit() returned. By
// default only the master writes; the TensorBoardAllDevices tests run with
// TNT_TENSORBOARD_ON_ALL_DEVICES=true, where every rank writes its own
// values into its own folder.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "event_file_reader.h"
#include "training_fixture.h"

namespace {

namespace fs = std::filesystem;
using tnt::callbacks::Logs;
using tnt::callbacks::TensorBoard;
using tnt::callbacks::TensorBoardOptions;
using tnt_test::ScalarSeries;

bool is_validation(const std::string& name) { return name.rfind("val_", 0) == 0; }

// The series the epoch logs should produce in train/ (validation = false)
// or validation/ (true): tag "epoch_<name>" at step = epoch.
ScalarSeries expected_epoch_series(const std::vector<std::pair<std::int64_t, Logs>>& epochs,
                                   bool validation) {
  ScalarSeries out;
  for (const auto& [epoch, logs] : epochs) {
    for (const auto& [name, value] : logs) {
      if (is_validation(name) != validation) continue;
      const std::string tag = "epoch_" + (validation ? name.substr(4) : name);
      out[tag].emplace_back(epoch, static_cast<float>(value));
    }
  }
  return out;
}

std::vector<std::pair<std::int64_t, Logs>> epochs_of(const tnt::callbacks::History& history) {
  std::vector<std::pair<std::int64_t, Logs>> out;
  for (std::size_t i = 0; i < history.epochs.size(); ++i) {
    Logs logs;
    for (const auto& [name, values] : history.history) logs[name] = values.at(i);
    out.emplace_back(history.epochs[i], logs);
  }
  return out;
}

// Only the series whose tags start with `prefix`.
ScalarSeries with_prefix(const ScalarSeries& all, const std::string& prefix) {
  ScalarSeries out;
  for (const auto& [tag, points] : all) {
    if (tag.rfind(prefix, 0) == 0) out[tag] = points;
  }
  return out;
}

std::string describe(const ScalarSeries& s) {
  std::string out;
  for (const auto& [tag, points] : s) {
    out += tag + ":";
    for (const auto& [step, value] : points) {
      out += " (" + std::to_string(step) + ", " + std::to_string(value) + ")";
    }
    out += "\n";
  }
  return out;
}

// The single event file in `dir`, checked to start with the version event.
std::vector<tnt_test::DecodedEvent> only_event_file(const fs::path& dir) {
  const auto files = tnt_test::event_files(dir);
  EXPECT_EQ(files.size(), 1u) << "event files in " << dir;
  if (files.size() != 1) return {};
  const auto events = tnt_test::read_event_file(files[0]);
  EXPECT_FALSE(events.empty());
  if (events.empty()) return {};
  EXPECT_EQ(events[0].file_version.value_or("(none)"), "brain.Event:2") << files[0];
  return events;
}

std::set<std::string> entries(const fs::path& dir) {
  std::set<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.insert(e.path().filename().string());
  return names;
}

class TensorBoardMpi : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(tnt::config().tensorboard_on_all_devices)
        << "these tests check the default; run them without TNT_TENSORBOARD_ON_ALL_DEVICES";
  }
};

TEST_F(TensorBoardMpi, EpochScalarsEqualTheHistoryAndOnlyTheMasterWrites) {
  const fs::path dir = tnt_test::shared_temp_dir("tb_epoch");
  auto tb = std::make_shared<TensorBoard>(TensorBoardOptions(dir.string()));
  EXPECT_FALSE(tb->run_on_all_ranks);
  EXPECT_TRUE(tb->aggregate_logs);
  tnt::Model model = tnt_test::make_model();
  const auto history =
      model.fit(tnt_test::train_set(), tnt::FitOptions()
                                           .epochs(3)
                                           .verbose(0)
                                           .validation_data(tnt_test::validation_set())
                                           .callbacks({tb}));
  ASSERT_EQ(history.epochs, (std::vector<std::int64_t>{0, 1, 2}));
  ASSERT_TRUE(history.history.count("val_loss"));
  EXPECT_EQ(tb->rank_log_dir(), tnt::is_master_rank() ? dir.string() : "");
  tnt::comm::barrier();
  // One writer in the whole job: train/ and validation/ with one file each.
  EXPECT_EQ(entries(dir), (std::set<std::string>{"train", "validation"}));
  auto train = tnt_test::scalar_series(only_event_file(dir / "train"));
  const auto validation = tnt_test::scalar_series(only_event_file(dir / "validation"));
  // The straggler report's figures (a window of 20 steps passes in this
  // fit) go to train/ too; mpi.straggler_report checks them. Here: the
  // epoch values.
  for (auto it = train.begin(); it != train.end();) {
    it = it->first.rfind("straggler/", 0) == 0 ? train.erase(it) : std::next(it);
  }
  const auto expected_train = expected_epoch_series(epochs_of(history), false);
  const auto expected_validation = expected_epoch_series(epochs_of(history), true);
  EXPECT_EQ(expected_train.size(), 2u);  // loss and accuracy
  EXPECT_EQ(train, expected_train) << "got\n"
                                   << describe(train) << "expected\n"
                                   << describe(expected_train);
  EXPECT_EQ(validation, expected_validation) << "got\n"
                                             << describe(validation) << "expected\n"
                                             << describe(expected_validation);
  tnt_test::remove_shared_dir(dir);
}

// Batch values every 3 batches: step = batches finished so far (3, 6, ...),
// value = the logs that batch's callbacks saw (the epoch's running values).
TEST_F(TensorBoardMpi, BatchScalarsEveryNBatchesEqualTheBatchLogs) {
  for (const std::int64_t every : {std::int64_t{1}, std::int64_t{3}}) {
    const fs::path dir = tnt_test::shared_temp_dir("tb_batch");
    auto tb = std::make_shared<TensorBoard>(TensorBoardOptions(dir.string()).update_freq(every));
    auto recorder = std::make_shared<tnt_test::LogRecorder>();
    tnt::Model model = tnt_test::make_model();
    const auto history = model.fit(
        tnt_test::train_set(), tnt::FitOptions().epochs(2).verbose(0).callbacks({tb, recorder}));
    tnt::comm::barrier();
    ASSERT_EQ(recorder->batch_logs.size(), static_cast<std::size_t>(2 * tnt_test::kStepsPerEpoch));
    ScalarSeries expected_batches;
    for (std::size_t i = 0; i < recorder->batch_logs.size(); ++i) {
      const auto step = static_cast<std::int64_t>(i + 1);
      if (step % every != 0) continue;
      for (const auto& [name, value] : recorder->batch_logs[i]) {
        expected_batches["batch_" + name].emplace_back(step, static_cast<float>(value));
      }
    }
    const auto train = tnt_test::scalar_series(only_event_file(dir / "train"));
    EXPECT_EQ(with_prefix(train, "batch_"), expected_batches)
        << "every " << every << "; got\n"
        << describe(with_prefix(train, "batch_"));
    EXPECT_EQ(with_prefix(train, "epoch_"), expected_epoch_series(epochs_of(history), false));
    EXPECT_FALSE(fs::exists(dir / "validation")) << "no validation data, no validation folder";
    tnt_test::remove_shared_dir(dir);
  }
}

// Each fit() gets a new file; a resumed run writes at its real epochs.
TEST_F(TensorBoardMpi, ResumedTrainingWritesANewFileAtTheResumedEpochs) {
  const fs::path dir = tnt_test::shared_temp_dir("tb_resume");
  auto tb = std::make_shared<TensorBoard>(
      TensorBoardOptions(dir.string()).write_steps_per_second(true).filename_suffix(".v2"));
  tnt::Model model = tnt_test::make_model();
  model.fit(tnt_test::train_set(), tnt::FitOptions().epochs(2).verbose(0).callbacks({tb}));
  const auto resumed =
      model.fit(tnt_test::train_set(),
                tnt::FitOptions().initial_epoch(2).epochs(4).verbose(0).callbacks({tb}));
  tnt::comm::barrier();
  const auto files = tnt_test::event_files(dir / "train");
  ASSERT_EQ(files.size(), 2u);
  for (const auto& f : files)
    EXPECT_EQ(f.filename().string().substr(f.filename().string().size() - 3), ".v2");
  // Which file is the second fit's: the one holding step 2.
  std::vector<ScalarSeries> series;
  for (const auto& f : files)
    series.push_back(tnt_test::scalar_series(tnt_test::read_event_file(f)));
  const bool second_is_1 = series[1].at("epoch_loss").front().first == 2;
  const ScalarSeries& first = series[second_is_1 ? 0 : 1];
  const ScalarSeries& second = series[second_is_1 ? 1 : 0];
  EXPECT_EQ(first.at("epoch_loss").size(), 2u);
  EXPECT_EQ(first.at("epoch_loss").front().first, 0);
  ScalarSeries logged = second;
  logged.erase("epoch_steps_per_second");
  EXPECT_EQ(logged, expected_epoch_series(epochs_of(resumed), false)) << describe(second);
  ASSERT_EQ(second.count("epoch_steps_per_second"), 1u);
  const auto& sps = second.at("epoch_steps_per_second");
  ASSERT_EQ(sps.size(), 2u);
  for (const auto& [step, value] : sps) EXPECT_GT(value, 0.0f) << "step " << step;
  EXPECT_EQ(sps[0].first, 2);
  EXPECT_EQ(sps[1].first, 3);
  tnt_test::remove_shared_dir(dir);
}

// run_on_all_ranks set by hand (the manual's wrapper): every rank writes,
// each into log_dir/rank_<R>, here with the global values.
TEST_F(TensorBoardMpi, WrappedToRunOnAllRanksWritesOneFolderPerRank) {
  const fs::path dir = tnt_test::shared_temp_dir("tb_wrapped");
  auto tb = tnt::callbacks::wrap(std::make_shared<TensorBoard>(TensorBoardOptions(dir.string())),
                                 tnt::callbacks::WrapOptions().run_on_all_ranks(true));
  tnt::Model model = tnt_test::make_model();
  const auto history =
      model.fit(tnt_test::train_set(), tnt::FitOptions().epochs(2).verbose(0).callbacks({tb}));
  tnt::comm::barrier();
  const fs::path mine = dir / ("rank_" + std::to_string(tnt::get_rank()));
  EXPECT_EQ(std::static_pointer_cast<TensorBoard>(tb)->rank_log_dir(), mine.string());
  EXPECT_EQ(tnt_test::scalar_series(only_event_file(mine / "train")),
            expected_epoch_series(epochs_of(history), false));
  std::set<std::string> expected_entries;
  for (int r = 0; r < tnt::get_size(); ++r) expected_entries.insert("rank_" + std::to_string(r));
  EXPECT_EQ(entries(dir), expected_entries);
  tnt_test::remove_shared_dir(dir);
}

// With TNT_TENSORBOARD_ON_ALL_DEVICES=true (set by the test's launcher
// command): each rank writes its rank-local values into log_dir/rank_<R>.
TEST(TensorBoardAllDevices, EveryRankWritesItsOwnValuesIntoItsOwnFolder) {
  ASSERT_TRUE(tnt::config().tensorboard_on_all_devices)
      << "run this test with TNT_TENSORBOARD_ON_ALL_DEVICES=true";
  const fs::path dir = tnt_test::shared_temp_dir("tb_all");
  auto tb = std::make_shared<TensorBoard>(TensorBoardOptions(dir.string()));
  EXPECT_TRUE(tb->run_on_all_ranks);
  EXPECT_FALSE(tb->aggregate_logs);
  auto local = tnt::callbacks::wrap(std::make_shared<tnt_test::LogRecorder>(),
                                    tnt::callbacks::WrapOptions().aggregate_logs(false));
  tnt::Model model = tnt_test::make_model();
  const auto history =
      model.fit(tnt_test::train_set(), tnt::FitOptions()
                                           .epochs(2)
                                           .verbose(0)
                                           .validation_data(tnt_test::validation_set())
                                           .callbacks({tb, local}));
  tnt::comm::barrier();
  const auto& local_epochs = std::static_pointer_cast<tnt_test::LogRecorder>(local)->epoch_logs;
  ASSERT_EQ(local_epochs.size(), 2u);
  const fs::path mine = dir / ("rank_" + std::to_string(tnt::get_rank()));
  EXPECT_EQ(tb->rank_log_dir(), mine.string());
  EXPECT_EQ(tnt_test::scalar_series(only_event_file(mine / "train")),
            expected_epoch_series(local_epochs, false));
  const auto expected_validation = expected_epoch_series(local_epochs, true);
  if (!expected_validation.empty()) {
    EXPECT_EQ(tnt_test::scalar_series(only_event_file(mine / "validation")), expected_validation);
  }
  std::set<std::string> expected_entries;
  for (int r = 0; r < tnt::get_size(); ++r) expected_entries.insert("rank_" + std::to_string(r));
  EXPECT_EQ(entries(dir), expected_entries) << "nothing but one folder per rank";
  // The files hold local values, not the global ones: with several ranks,
  // at least one rank's training loss differs from the global loss.
  if (tnt::get_size() > 1) {
    const bool differs = local_epochs[0].second.at("loss") != history.history.at("loss")[0];
    torch::Tensor any = torch::tensor({differs ? 1 : 0}, torch::kInt32);
    tnt::comm::allreduce(any, tnt::comm::ReduceOp::Max);
    EXPECT_EQ(any.item<int>(), 1) << "every rank's local loss equals the global loss";
  }
  tnt_test::remove_shared_dir(dir);
}

}  // namespace
