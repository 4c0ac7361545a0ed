#include "train/persist/checkpoint_writer.h"

#include <memory>

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
  auto shared = std::make_shared<const CheckpointSnapshot>(std::move(snapshot));
  submit([shared, path = std::move(path)] { write_checkpoint(*shared, path); });
}

void CheckpointWriter::submit(std::function<void()> write) {
  wait();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    job_ = std::move(write);
  }
  changed_.notify_all();
}

void CheckpointWriter::wait() {
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait(lock, [&] { return !job_; });
  if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
}

void CheckpointWriter::run() {
  // At the process's own priority. A lower one (nice 19, tried) starves the
  // writer on cores that CPU training keeps busy: the write then outlasts
  // the interval between backups, and the next backup waits for it. Its CPU
  // work costs training the same at any priority (performance.md,
  // "Background backups").
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    changed_.wait(lock, [&] { return stop_ || job_; });
    if (!job_) return;  // stop_, nothing left to write
    lock.unlock();
    std::exception_ptr error;
    try {
      job_();  // job_ is left alone until reset below
    } catch (...) {
      error = std::current_exception();
    }
    lock.lock();
    error_ = error;
    job_ = nullptr;
    changed_.notify_all();
  }
}

}  // namespace tnt::train
