// The background checkpoint writer (train/persist/checkpoint_writer.h): the file it
// writes is the one a synchronous write makes, byte for byte; the snapshot
// is independent of the training tensors it was taken from; at most one
// write is in flight; a failed write is rethrown on the caller's thread
// and leaves the previous file as it was. The optimizer's state copy
// (dp::state_copy), serialized by the writer instead of the training
// thread, writes the bytes the optimizer itself writes.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

#include <unistd.h>

#include <torch/torch.h>

#include <tarantella/base/error.h>
#include <tarantella/base/torch_compat.h>
#include <tarantella/comm/in_process.h>
#include <tarantella/keras/losses.h>
#include <tarantella/keras/optimizers.h>

#include "../support/weights.h"
#include "dp/optimizer_state.h"
#include "train/persist/checkpoint_writer.h"
#include "train/persist/persistence.h"

namespace {

namespace fs = std::filesystem;
using tnt::train::CheckpointSnapshot;
using tnt::train::CheckpointWriter;

std::string bytes_of(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

struct Dir {
  fs::path path = fs::temp_directory_path() / ("tnt_writer_" + std::to_string(::getpid()));
  Dir() { fs::create_directories(path); }
  ~Dir() { fs::remove_all(path); }
};

// A compiled one-rank engine's checkpoint snapshot.
struct Snapshots {
  tnt::comm::ProcessGroup group = tnt::comm::make_in_process_group(1).front();
  tnt::train::Engine engine{tnt::make_adapter(tnt_test::SmallNet()), group,
                            tnt::train::EngineOptions().use_gpu(false)};
  Snapshots() {
    engine.compile(tnt::CompileOptions()
                       .optimizer(tnt::optimizers::SGD(0.1, 0.5))
                       .loss(tnt::losses::SparseCategoricalCrossentropy()));
  }
  CheckpointSnapshot take() { return *tnt::train::snapshot_checkpoint(engine, false); }
};

TEST(CheckpointWriter, WritesTheFileASynchronousWriteMakes) {
  Dir dir;
  Snapshots s;
  const CheckpointSnapshot snapshot = s.take();
  tnt::train::write_checkpoint(snapshot, (dir.path / "sync.pt").string());
  CheckpointWriter writer;
  writer.submit(snapshot, (dir.path / "async.pt").string());
  writer.wait();
  EXPECT_EQ(bytes_of(dir.path / "sync.pt"), bytes_of(dir.path / "async.pt"));
}

TEST(CheckpointWriter, TheSnapshotDoesNotFollowTheTraining) {
  Dir dir;
  Snapshots s;
  const CheckpointSnapshot snapshot = s.take();
  tnt::train::write_checkpoint(snapshot, (dir.path / "before.pt").string());
  {
    torch::NoGradGuard no_grad;  // "training" changes the weights after the snapshot
    for (const auto& [name, t] : s.engine.net().named_parameters()) t.add_(1.0);
  }
  CheckpointWriter writer;
  writer.submit(snapshot, (dir.path / "later.pt").string());
  writer.wait();
  EXPECT_EQ(bytes_of(dir.path / "before.pt"), bytes_of(dir.path / "later.pt"));
}

TEST(CheckpointWriter, TheOptimizerStateDoesNotFollowTheTrainingEither) {
  Dir dir;
  Snapshots s;
  {
    torch::NoGradGuard no_grad;  // momentum buffers, as after a step
    for (const auto& p : s.engine.optimizer().param_groups().at(0).params()) {
      auto state = std::make_unique<torch::optim::SGDParamState>();
      state->momentum_buffer(torch::full_like(p, 0.25));
      s.engine.optimizer().state()[tnt::compat::optimizer_state_key(p)] = std::move(state);
    }
  }
  const CheckpointSnapshot snapshot = s.take();
  // The built-in SGD's state is copied, to be serialized by the writer.
  ASSERT_TRUE(snapshot.engine.optimizer_copy);
  EXPECT_FALSE(snapshot.engine.optimizer);
  tnt::train::write_checkpoint(snapshot, (dir.path / "before.pt").string());
  for (auto& [key, state] : s.engine.optimizer().state()) {
    static_cast<torch::optim::SGDParamState&>(*state).momentum_buffer().add_(1.0);
  }
  CheckpointWriter writer;
  writer.submit(snapshot, (dir.path / "later.pt").string());
  writer.wait();
  EXPECT_EQ(bytes_of(dir.path / "before.pt"), bytes_of(dir.path / "later.pt"));
}

std::string saved(const torch::optim::Optimizer& optimizer) {
  torch::serialize::OutputArchive archive;
  optimizer.save(archive);
  std::ostringstream out;
  archive.save_to(out);
  return out.str();
}

torch::Tensor copy_of(const torch::Tensor& t) { return t.clone(); }

// Two groups, the second with options that equal the type's defaults where
// the first's do not (LibTorch 2.x's add_param_group would merge them), and
// a few steps so that every state tensor exists.
template <class O, class Options>
void check_state_copy(Options first, Options second) {
  torch::manual_seed(3);
  std::vector<torch::Tensor> a{torch::randn({3, 4}, torch::requires_grad()),
                               torch::randn({4}, torch::requires_grad())};
  std::vector<torch::Tensor> b{torch::randn({5}, torch::requires_grad())};
  std::vector<torch::optim::OptimizerParamGroup> groups;
  groups.emplace_back(a, std::make_unique<Options>(first));
  groups.emplace_back(b, std::make_unique<Options>(second));
  O optimizer(groups, first);  // through the constructor: Adagrad makes its state there
  optimizer.param_groups()[0].set_options(std::make_unique<Options>(first));
  optimizer.param_groups()[1].set_options(std::make_unique<Options>(second));
  const auto step = [&] {
    for (auto* group : {&a, &b}) {
      for (auto& p : *group) p.mutable_grad() = torch::randn_like(p);
    }
    optimizer.step();
  };
  step();
  step();
  const std::unique_ptr<torch::optim::Optimizer> copy = tnt::dp::state_copy(optimizer, copy_of);
  ASSERT_TRUE(copy) << typeid(O).name();
  const std::string now = saved(optimizer);
  EXPECT_EQ(saved(*copy), now) << typeid(O).name();
  step();  // training goes on; the copy keeps the state it was made with
  EXPECT_NE(saved(optimizer), now) << typeid(O).name();
  EXPECT_EQ(saved(*copy), now) << typeid(O).name();
}

TEST(OptimizerStateCopy, SavesWhatTheOptimizerSavedWhenCopied) {
  using namespace torch::optim;
  check_state_copy<SGD>(SGDOptions(0.1).momentum(0.9).weight_decay(0.01).nesterov(true),
                        SGDOptions(0.2));
  check_state_copy<Adam>(AdamOptions(0.01).amsgrad(true).weight_decay(0.1), AdamOptions(0.02));
  check_state_copy<AdamW>(AdamWOptions(0.01).amsgrad(true), AdamWOptions(0.02).weight_decay(0));
  check_state_copy<RMSprop>(RMSpropOptions(0.01).momentum(0.5).centered(true),
                            RMSpropOptions(0.02));
  check_state_copy<Adagrad>(AdagradOptions(0.1).lr_decay(0.01), AdagradOptions(0.2));
}

struct MySGD : torch::optim::SGD {
  using torch::optim::SGD::SGD;
};

TEST(OptimizerStateCopy, IsNoneForAnOptimizerItDoesNotKnow) {
  std::vector<torch::Tensor> p{torch::randn({3}, torch::requires_grad())};
  torch::optim::LBFGS lbfgs(p, torch::optim::LBFGSOptions(0.1));
  EXPECT_FALSE(tnt::dp::state_copy(lbfgs, copy_of));
  // A subclass may save more than its base: serialized at once instead.
  MySGD mine(p, torch::optim::SGDOptions(0.1));
  EXPECT_FALSE(tnt::dp::state_copy(mine, copy_of));
}

TEST(CheckpointWriter, OneWriteInFlightAndTheLastOneIsOnDiskAfterWait) {
  Dir dir;
  Snapshots s;
  CheckpointWriter writer;
  for (int i = 0; i < 5; ++i) {
    writer.submit(s.take(), (dir.path / ("c" + std::to_string(i) + ".pt")).string());
  }
  writer.wait();
  for (int i = 0; i < 5; ++i) {
    EXPECT_TRUE(fs::exists(dir.path / ("c" + std::to_string(i) + ".pt"))) << i;
  }
}

TEST(CheckpointWriter, AFailedWriteIsRethrownAndKeepsThePreviousFile) {
  Dir dir;
  Snapshots s;
  const fs::path good = dir.path / "backup.pt";
  CheckpointWriter writer;
  writer.submit(s.take(), good.string());
  writer.wait();
  const std::string before = bytes_of(good);
  // A directory in the way of the temporary file: the write fails.
  const fs::path blocked = dir.path / "missing" / "backup.pt";
  writer.submit(s.take(), blocked.string());
  try {
    writer.wait();
    ADD_FAILURE() << "a write into a missing folder did not fail";
  } catch (const tnt::Error& e) {
    EXPECT_NE(std::string(e.what()).find("missing"), std::string::npos) << e.what();
  }
  EXPECT_EQ(bytes_of(good), before);
  writer.submit(s.take(), good.string());  // the writer goes on after a failure
  EXPECT_NO_THROW(writer.wait());
}

}  // namespace
