// The background checkpoint writer (train/checkpoint_writer.h): the file it
// writes is the one a synchronous write makes, byte for byte; the snapshot
// is independent of the training tensors it was taken from; at most one
// write is in flight; a failed write is rethrown on the caller's thread
// and leaves the previous file as it was.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include <unistd.h>

#include <torch/torch.h>

#include <tarantella/base/error.h>
#include <tarantella/comm/in_process.h>
#include <tarantella/keras/losses.h>
#include <tarantella/keras/optimizers.h>

#include "../support/weights.h"
#include "train/checkpoint_writer.h"
#include "train/persistence.h"

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
