#include "data/pipeline/worker_pool.h"

#include <string>

#include "base/stack_dump.h"

namespace tnt::data::detail {

WorkerPool::WorkerPool(int threads) {
  for (int i = 1; i < threads; ++i) threads_.emplace_back([this, i] { worker_loop(i); });
}

WorkerPool::~WorkerPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (auto& t : threads_) t.join();
}

// Takes indices one at a time until none are left (or a call failed).
void WorkerPool::work_on_current_job() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (next_index_ < n_ && !error_) {
    const std::int64_t i = next_index_++;
    lock.unlock();
    std::exception_ptr failure;
    try {
      (*fn_)(i);
    } catch (...) {
      failure = std::current_exception();
    }
    lock.lock();
    if (failure && (error_index_ < 0 || i < error_index_)) {
      error_index_ = i;
      error_ = failure;
    }
  }
}

void WorkerPool::worker_loop(int index) {
  // Named in a stuck rank's report while it works on a job.
  ::tnt::detail::ThreadRole role("map worker " + std::to_string(index));
  std::uint64_t seen = 0;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || generation_ != seen; });
      if (stopping_) return;
      seen = generation_;
    }
    {
      ::tnt::detail::ThreadRole::Busy busy(role);
      work_on_current_job();
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ++workers_done_;
    }
    finished_.notify_one();
  }
}

void WorkerPool::run(std::int64_t n, const std::function<void(std::int64_t)>& fn) {
  if (threads_.empty() || n <= 1) {
    for (std::int64_t i = 0; i < n; ++i) fn(i);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    fn_ = &fn;
    n_ = n;
    next_index_ = 0;
    workers_done_ = 0;
    error_index_ = -1;
    error_ = nullptr;
    ++generation_;
  }
  wake_.notify_all();
  work_on_current_job();
  std::exception_ptr error;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    finished_.wait(lock, [&] { return workers_done_ == static_cast<int>(threads_.size()); });
    fn_ = nullptr;
    error = error_;
  }
  if (error) std::rethrow_exception(error);
}

}  // namespace tnt::data::detail
