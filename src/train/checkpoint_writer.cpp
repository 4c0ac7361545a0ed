#include "train/checkpoint_writer.h"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <fmt/format.h>

#include <tarantella/base/logging.h>

namespace tnt::train {

CheckpointWriter::CheckpointWriter() : thread_([this] { run(); }) {}

CheckpointWriter::~CheckpointWriter() {
  {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [&] { return !job_; });
    stop_ = true;
  }
  changed_.notify_all();
  thread_.join();
  if (error_) {
    try {
      std::rethrow_exception(error_);
    } catch (const std::exception& e) {
      log::error(fmt::format("a background checkpoint write failed: {}", e.what()));
    }
  }
}

void CheckpointWriter::submit(CheckpointSnapshot snapshot, std::string path) {
  wait();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    job_ = Job{std::move(snapshot), std::move(path)};
  }
  changed_.notify_all();
}

void CheckpointWriter::wait() {
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait(lock, [&] { return !job_; });
  if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
}

void CheckpointWriter::run() {
  // Serializing and checksumming a checkpoint is CPU work. Where training
  // keeps every core busy (CPU training), the writer yields to it: Linux
  // gives each thread its own nice value, so only this thread is lowered.
  // Where cores are idle (GPU training), it runs at full speed anyway. The
  // cost is a longer write, which only the next backup waits for.
  setpriority(PRIO_PROCESS, static_cast<id_t>(::syscall(SYS_gettid)), 19);
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    changed_.wait(lock, [&] { return stop_ || job_; });
    if (!job_) return;  // stop_, nothing left to write
    lock.unlock();
    std::exception_ptr error;
    try {
      write_checkpoint(job_->snapshot, job_->path);  // job_ is left alone until reset below
    } catch (...) {
      error = std::current_exception();
    }
    lock.lock();
    error_ = error;
    job_.reset();
    changed_.notify_all();
  }
}

}  // namespace tnt::train
