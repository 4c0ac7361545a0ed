#include "train/checkpoint_writer.h"

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
