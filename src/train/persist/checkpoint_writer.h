// Private: writes checkpoint snapshots (train/persist/persistence.h) on a thread of
// its own, so that training goes on while a backup reaches the disk. At
// most one write is in flight: submit() first waits for the previous one,
// and that wait is the only stall training sees. A write's failure (a full
// disk, an unwritable folder) is kept and rethrown by the next submit() or
// wait() on the caller's thread; the file it was writing is left as it
// was, because write_checkpoint writes to a temporary name and renames.
// The destructor waits for the write in flight, so a process that ends
// normally ends with its last backup on disk.
#pragma once

#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "train/persist/persistence.h"

namespace tnt::train {

class CheckpointWriter {
 public:
  CheckpointWriter();
  /// Waits for the write in flight; never throws (a failure not yet
  /// reported is logged).
  ~CheckpointWriter();
  CheckpointWriter(const CheckpointWriter&) = delete;
  CheckpointWriter& operator=(const CheckpointWriter&) = delete;

  /// Waits for the write in flight (rethrowing its failure), then starts
  /// writing `snapshot` to `path` (write_checkpoint) in the background.
  void submit(CheckpointSnapshot snapshot, std::string path);
  /// The same for any write: `write` runs on the writer's thread.
  void submit(std::function<void()> write);
  /// Returns once the last write is on disk under its name; rethrows its
  /// failure if it failed.
  void wait();

 private:
  void run();

  std::mutex mutex_;
  std::condition_variable changed_;
  std::function<void()> job_;  ///< the write in flight, until it ends
  std::exception_ptr error_;
  bool stop_ = false;
  std::thread thread_;  ///< last: starts once the state above exists
};

}  // namespace tnt::train
