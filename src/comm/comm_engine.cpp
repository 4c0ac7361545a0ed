#include <tarantella/comm/comm_engine.h>

#include <tarantella/base/error.h>

#include "base/threads.h"

namespace tnt::comm {

namespace {
std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             Handle::Clock::now().time_since_epoch())
      .count();
}
std::optional<Handle::Clock::time_point> as_time(std::int64_t ns) {
  if (ns == 0) return std::nullopt;
  return Handle::Clock::time_point(std::chrono::nanoseconds(ns));
}
}  // namespace

Handle::Handle(std::shared_future<torch::Tensor> result, std::string name,
               std::shared_ptr<const Times> times, Drive drive)
    : result_(std::move(result)),
      name_(std::move(name)),
      times_(std::move(times)),
      drive_(std::move(drive)) {}

std::optional<Handle::Clock::time_point> Handle::started() const {
  return times_ ? as_time(times_->started_ns.load()) : std::nullopt;
}

std::optional<Handle::Clock::time_point> Handle::finished() const {
  return times_ ? as_time(times_->finished_ns.load()) : std::nullopt;
}

torch::Tensor Handle::wait() const {
  TNT_CHECK(result_.valid(), "wait() on an empty Handle: use the Handle an *_async call returned");
  if (drive_) drive_(true);
  return result_.get();
}

bool Handle::ready() const {
  if (result_.valid() && drive_) drive_(false);
  return result_.valid() &&
         result_.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
}

CommEngine::CommEngine() : thread_([this] { loop(); }) {}

CommEngine::~CommEngine() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_one();
  thread_.join();
}

Handle CommEngine::enqueue(std::string name, Work work, std::optional<c10::Device> device) {
  Request request{name, std::move(work), {}, std::make_shared<Handle::Times>(), device};
  Handle handle(request.result.get_future().share(), std::move(name), request.times);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    TNT_CHECK(!stopping_, "request '", handle.name(),
              "' enqueued on a communication engine that is shutting down");
    queue_.push_back(std::move(request));
  }
  wake_.notify_one();
  return handle;
}

torch::Tensor CommEngine::run(std::string name, Work work, std::optional<c10::Device> device) {
  {
    std::unique_lock<std::mutex> lock(mutex_);
    TNT_CHECK(!stopping_, "request '", name,
              "' run on a communication engine that is shutting down");
    if (!queue_.empty() || running_ != 0) {
      lock.unlock();
      return enqueue(std::move(name), std::move(work), device).wait();
    }
    ++running_;  // holds the engine thread off until we are done
  }
  struct Release {
    CommEngine& engine;
    ~Release() {
      bool queued = false;
      {
        std::lock_guard<std::mutex> lock(engine.mutex_);
        --engine.running_;
        queued = !engine.queue_.empty() || engine.stopping_;
      }
      // Requests enqueued meanwhile may start now. Otherwise the engine
      // thread sleeps on: waking it for nothing costs a context switch.
      if (queued) engine.wake_.notify_one();
    }
  } release{*this};
  return work();
}

std::size_t CommEngine::pending() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return queue_.size() + running_;
}

void CommEngine::loop() {
  tnt::detail::name_this_thread("tnt-comm");
  for (;;) {
    Request request;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      // running_ != 0 here only while a caller runs a request itself (run()).
      wake_.wait(lock, [this] { return (stopping_ || !queue_.empty()) && running_ == 0; });
      if (queue_.empty()) return;  // stopping, and everything queued has run
      request = std::move(queue_.front());
      queue_.pop_front();
      ++running_;
    }
    // Before the work, and for good: the request (and the c10::Event of its
    // ready mark) is destroyed at the end of this iteration, outside any
    // guard, and must not fall back to GPU 0.
    if (request.device) ::tnt::detail::adopt_device(*request.device);
    request.times->started_ns = now_ns();
    torch::Tensor result;
    std::exception_ptr error;
    try {
      result = request.work();
    } catch (...) {
      error = std::current_exception();
    }
    request.times->finished_ns = now_ns();
    {
      // Idle before the waiter wakes, so that a blocking call it makes next
      // finds the engine idle and runs on its own thread (run()).
      std::lock_guard<std::mutex> lock(mutex_);
      --running_;
    }
    if (error) {
      request.result.set_exception(error);
    } else {
      request.result.set_value(std::move(result));
    }
  }
}

}  // namespace tnt::comm
