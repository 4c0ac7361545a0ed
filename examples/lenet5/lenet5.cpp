// LeNet-5 on Fashion-MNIST, trained data-parallel with tnt::Model.
//
//   tarantella -n 2 -- ./lenet5 --epochs 8 --batch-size 64
//
// Compared with a serial LibTorch program, two lines differ: the runtime is
// started, and the network is wrapped in tnt::Model. --batch-size is the
// GLOBAL batch size, whatever the number of ranks.
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <memory>

#include <CLI/CLI.hpp>
#include <torch/torch.h>

#include <tarantella/tarantella.h>

#include "lenet5_model.h"

namespace {

using tnt_examples::LeNet5;

struct Args {
  std::int64_t epochs = 8;
  std::int64_t batch_size = 64;
  double learning_rate = 0.1;
  std::int64_t train_size = 55000;
  std::int64_t val_size = 5000;
  std::int64_t test_size = 10000;
  std::uint64_t seed = 42;
  bool no_shuffle = false;
  std::string init_weights;
  std::string save_weights;
  std::string data_dir = "/usr/share/datasets/fashion-mnist";
  std::string csv_log;
  std::string tensorboard;
  std::string checkpoint_dir;
  bool resume = false;
  std::string backup_dir;
  std::int64_t backup_every = 0;
  bool backup_in_background = false;
  std::string step_log;
  std::string precision = "float32";
  std::int64_t deterministic = 0;
  int verbose = 1;
};

// One line per optimizer step, "step EPOCH BATCH attempt N" (1-based epoch,
// batch within the epoch, N = TNT_RESTART_COUNT), appended and flushed at
// once, so a kill -9 loses no line of a finished step. The chaos test
// (tests/chaos) counts steps across restarts with it.
tnt::callbacks::CallbackPtr step_logger(const std::string& path) {
  struct State {
    std::FILE* file = nullptr;
    std::int64_t epoch = 0;
    ~State() {
      if (file) std::fclose(file);
    }
  };
  auto state = std::make_shared<State>();
  const char* restart = std::getenv("TNT_RESTART_COUNT");
  const std::string attempt = restart ? restart : "0";
  auto logger = std::make_shared<tnt::callbacks::LambdaCallback>();
  logger->run_on_all_ranks = false;  // one line per step: the master rank's
  logger->on_train_begin([state, path](const tnt::callbacks::Logs&) {
    if (!state->file) state->file = std::fopen(path.c_str(), "a");
    if (!state->file) throw tnt::Error("--step-log: cannot open " + path + ": " + std::strerror(errno));
  });
  logger->on_epoch_begin([state](std::int64_t epoch, const tnt::callbacks::Logs&) {
    state->epoch = epoch + 1;
  });
  logger->on_batch_end([state, attempt](std::int64_t batch, const tnt::callbacks::Logs&) {
    std::fprintf(state->file, "step %lld %lld attempt %s\n", static_cast<long long>(state->epoch),
                 static_cast<long long>(batch), attempt.c_str());
    std::fflush(state->file);
  });
  return logger;
}

}  // namespace

int main(int argc, char** argv) {
  tnt::Runtime runtime(argc, argv);  // 1. start the runtime

  Args a;
  CLI::App app{"LeNet-5 on Fashion-MNIST, data-parallel with Tarantella"};
  app.add_option("--epochs", a.epochs, "epochs to train (0: only evaluate)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--batch-size", a.batch_size, "GLOBAL batch size")->check(CLI::PositiveNumber);
  app.add_option("--learning-rate", a.learning_rate, "SGD learning rate")->check(CLI::PositiveNumber);
  app.add_option("--train-size", a.train_size, "first S samples of the training file")
      ->check(CLI::Range(1, 60000));
  app.add_option("--val-size", a.val_size, "the V training samples after them")
      ->check(CLI::Range(0, 59999));
  app.add_option("--test-size", a.test_size, "first T samples of the test file")
      ->check(CLI::Range(1, 10000));
  app.add_option("--seed", a.seed, "seed of weights and shuffling");
  app.add_flag("--no-shuffle", a.no_shuffle, "train in file order");
  app.add_option("--init-weights", a.init_weights, "start from these weights (torch.save format)");
  app.add_option("--save-weights", a.save_weights, "write the trained weights (torch.save format)");
  app.add_option("--data-dir", a.data_dir, "Fashion-MNIST directory");
  app.add_option("--csv-log", a.csv_log, "write epoch results to this CSV file");
  app.add_option("--tensorboard", a.tensorboard, "write TensorBoard event files under this directory");
  app.add_option("--checkpoint-dir", a.checkpoint_dir, "save a checkpoint after every epoch here");
  app.add_flag("--resume", a.resume, "continue from the newest checkpoint in --checkpoint-dir");
  app.add_option("--backup-dir", a.backup_dir,
                 "keep a backup here (BackupAndRestore): a restarted run continues where it stopped");
  app.add_option("--backup-every", a.backup_every,
                 "also back up every K optimizer steps, not only at epoch ends (needs --backup-dir)")
      ->check(CLI::NonNegativeNumber);
  app.add_flag("--backup-in-background", a.backup_in_background,
               "write each backup on a background thread while training goes on");
  app.add_option("--step-log", a.step_log,
                 "append a line 'step EPOCH BATCH attempt N' after every optimizer step (master "
                 "rank), to count steps across restarts");
  app.add_option("--precision", a.precision,
                 "float32, or bfloat16: mixed precision (forward under autocast, float32 weights)")
      ->check(CLI::IsMember({"float32", "bfloat16"}));
  app.add_option("--deterministic", a.deterministic,
                 "train in deterministic mode with chunks of K samples: bitwise the same at any "
                 "number of ranks (0: normal mode)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--verbose", a.verbose, "0 silent, 1 progress bar, 2 a line per epoch");
  CLI11_PARSE(app, argc, argv);
  if (a.train_size + a.val_size > 60000) {
    std::cerr << "--train-size " << a.train_size << " plus --val-size " << a.val_size
              << " exceeds the 60000 training samples: lower one of them\n";
    return 2;
  }

  tnt::set_seed(a.seed);  // weights, shuffling, deterministic algorithms: reruns are bitwise equal
  namespace data = tnt::data;
  const data::Dataset train_file = data::datasets::fashion_mnist("train", a.data_dir);
  data::Dataset train = train_file.take(a.train_size);
  if (!a.no_shuffle) train = train.shuffle(a.train_size, a.seed);
  train = train.batch(a.batch_size);
  const data::Dataset val = train_file.skip(a.train_size).take(a.val_size).batch(a.batch_size);
  const data::Dataset test =
      data::datasets::fashion_mnist("test", a.data_dir).take(a.test_size).batch(a.batch_size);

  tnt::Model model{LeNet5()};  // 2. wrap the network
  if (!a.init_weights.empty()) model.load_weights(a.init_weights);
  tnt::CompileOptions options;
  options.optimizer(tnt::optimizers::SGD(a.learning_rate))
      .loss(tnt::losses::SparseCategoricalCrossentropy())
      .metrics({tnt::metrics::SparseCategoricalAccuracy()});
  if (a.precision == "bfloat16") options.mixed_precision(tnt::MixedPrecision::BFloat16);
  if (a.deterministic > 0) options.deterministic(a.deterministic);
  model.compile(options);
  if (a.verbose > 0) model.summary();

  if (a.resume && a.checkpoint_dir.empty()) {
    std::cerr << "--resume needs --checkpoint-dir DIR\n";
    return 2;
  }
  tnt::FitOptions fit;
  fit.epochs(a.epochs).verbose(a.verbose);
  if (a.val_size > 0) fit.validation_data(val);
  std::vector<tnt::callbacks::CallbackPtr> callbacks;
  if (!a.csv_log.empty()) {
    callbacks.push_back(std::make_shared<tnt::callbacks::CSVLogger>(a.csv_log, ',', a.resume));
  }
  if (!a.tensorboard.empty()) {
    callbacks.push_back(std::make_shared<tnt::callbacks::TensorBoard>(
        tnt::callbacks::TensorBoardOptions(a.tensorboard)));
  }
  if (!a.checkpoint_dir.empty()) {
    callbacks.push_back(std::make_shared<tnt::callbacks::ModelCheckpoint>(
        tnt::callbacks::ModelCheckpointOptions(a.checkpoint_dir + "/epoch-{epoch:04d}.pt")));
    if (a.resume) {
      // The newest checkpoint that loads; a damaged one is passed over with a warning.
      const std::string loaded = tnt::load_latest_checkpoint(model, a.checkpoint_dir);
      if (!loaded.empty()) {
        fit.initial_epoch(model.epochs_done());
        if (tnt::is_master_rank()) std::cout << "resuming from " << loaded << "\n";
      }
    }
  }
  if (a.backup_every > 0 && a.backup_dir.empty()) {
    std::cerr << "--backup-every needs --backup-dir DIR\n";
    return 2;
  }
  // Before BackupAndRestore: a step is in the log before a backup holds it.
  if (!a.step_log.empty()) callbacks.push_back(step_logger(a.step_log));
  if (!a.backup_dir.empty()) {
    auto backup = std::make_shared<tnt::callbacks::BackupAndRestore>(a.backup_dir, a.backup_every);
    backup->write_in_background(a.backup_in_background);
    callbacks.push_back(backup);
  }
  fit.callbacks(callbacks);
  if (fit.initial_epoch() < a.epochs) model.fit(train, fit);

  const auto results = model.evaluate(test);
  if (tnt::is_master_rank()) {
    std::cout << "test loss: " << results.at("loss")
              << "  test accuracy: " << results.at("sparse_categorical_accuracy") << " ("
              << tnt::get_size() << " ranks, global batch " << a.batch_size << ")\n";
  }
  if (!a.save_weights.empty()) model.save_weights(a.save_weights);
  return 0;
}
