// A fixed set of threads for map(..., num_workers(k)): run(n, fn) spreads
// fn(0..n-1) over the workers and the calling thread and returns when all
// are done. Nothing runs between calls, so stopping a pass early leaves no
// work behind; the destructor joins the threads.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace tnt::data::detail {

class WorkerPool {
 public:
  /// `threads` counts the caller: threads - 1 background threads are started.
  explicit WorkerPool(int threads);
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  /// Runs fn(i) for i in [0, n). If calls throw, rethrows the exception of
  /// the lowest failing index after every started call has finished.
  void run(std::int64_t n, const std::function<void(std::int64_t)>& fn);

 private:
  void worker_loop(int index);
  void work_on_current_job();

  std::mutex mutex_;
  std::condition_variable wake_;      // workers: a new job or stop
  std::condition_variable finished_;  // caller: a worker finished the job
  const std::function<void(std::int64_t)>* fn_ = nullptr;
  std::int64_t n_ = 0;
  std::int64_t next_index_ = 0;
  std::uint64_t generation_ = 0;
  int workers_done_ = 0;
  std::int64_t error_index_ = -1;
  std::exception_ptr error_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;  // last: started after the state exists
};

}  // namespace tnt::data::detail
