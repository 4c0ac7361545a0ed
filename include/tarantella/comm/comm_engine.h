// The communication engine: one background thread that runs requests in the
// order they were enqueued and hands each result (or exception) back through
// a Handle. It knows nothing of MPI: a request is a named callable. A group's
// requests run one at a time in one order (async ones on this thread, a
// blocking one on its caller's thread when the engine is idle: run()), which
// MPI requires of a communicator, and async ones let communication overlap
// with computation on the caller's thread.
//
// The thread sleeps on a condition variable when the queue is empty: a
// busy-polling progress thread would steal a core from training.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <deque>
#include <functional>
#include <future>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include <torch/types.h>

namespace tnt::comm {

/// The pending result of an enqueued request.
///
/// Example:
///   auto h = tnt::comm::allreduce_async(grad);
///   ...                      // more computation
///   h.wait();                // grad now holds the sum over ranks
class Handle {
 public:
  using Clock = std::chrono::steady_clock;
  /// When the engine started and finished running a request (nanoseconds of
  /// Clock since its epoch; 0 = not yet). Used to measure overlap.
  struct Times {
    std::atomic<std::int64_t> started_ns{0};
    std::atomic<std::int64_t> finished_ns{0};
  };

  /// Drives a request that no engine thread runs (a point-to-point
  /// transfer, posted at once): wait() calls it with `block` true and it
  /// returns once the result is set; ready() calls it with false.
  using Drive = std::function<void(bool block)>;

  Handle() = default;
  Handle(std::shared_future<torch::Tensor> result, std::string name,
         std::shared_ptr<const Times> times, Drive drive = {});
  /// Blocks until the request has run; returns its result tensor, or
  /// rethrows the exception it raised on the engine thread.
  torch::Tensor wait() const;
  /// Whether the request has finished (successfully or not).
  bool ready() const;
  /// Whether this handle refers to a request at all.
  bool valid() const { return result_.valid(); }
  /// The request's name, e.g. "allreduce(sum)".
  const std::string& name() const { return name_; }
  /// When the engine started running the request, if it has.
  std::optional<Clock::time_point> started() const;
  /// When the request finished, if it has.
  std::optional<Clock::time_point> finished() const;

 private:
  std::shared_future<torch::Tensor> result_;
  std::string name_;
  std::shared_ptr<const Handle::Times> times_;
  Drive drive_;
};

/// Runs requests on one owned thread, in enqueue order.
///
/// Example:
///   tnt::comm::CommEngine engine;
///   auto h = engine.enqueue("double", [t] { return t.mul_(2); });
///   h.wait();
class CommEngine {
 public:
  using Work = std::function<torch::Tensor()>;

  CommEngine();
  /// Runs every request still queued, then joins the thread.
  ~CommEngine();
  CommEngine(const CommEngine&) = delete;
  CommEngine& operator=(const CommEngine&) = delete;

  /// Queues `work`; it runs after every request enqueued before it. With
  /// `device` (a GPU tensor's), the engine thread makes it its current
  /// device for good before it runs `work` (base/threads.h, adopt_device).
  Handle enqueue(std::string name, Work work, std::optional<c10::Device> device = std::nullopt);
  /// Runs `work` and returns its result (or rethrows its exception), in the
  /// same order as enqueue: after every request enqueued before it, before
  /// any enqueued after it. When the engine is idle, `work` runs on the
  /// calling thread, which would only wait anyway: a blocking collective then
  /// pays no hand-off to the engine thread and back (two thread wake-ups,
  /// tens of microseconds on a busy machine, more than a 4 KiB allreduce).
  /// The engine thread sleeps meanwhile, so calls stay serialized.
  torch::Tensor run(std::string name, Work work, std::optional<c10::Device> device = std::nullopt);
  /// Number of requests queued or running.
  std::size_t pending() const;

 private:
  struct Request {
    std::string name;
    Work work;
    std::promise<torch::Tensor> result;
    std::shared_ptr<Handle::Times> times;
    std::optional<c10::Device> device;
  };
  void loop();

  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Request> queue_;
  std::size_t running_ = 0;  ///< on the engine thread, or on a caller in run()
  bool stopping_ = false;
  std::thread thread_;  // last member: started after the others exist
};

}  // namespace tnt::comm
