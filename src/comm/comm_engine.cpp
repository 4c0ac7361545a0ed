#include <tarantella/comm/comm_engine.h>

#include <tarantella/runtime/error.h>

namespace tnt::comm {

Handle::Handle(std::shared_future<torch::Tensor> result, std::string name)
    : result_(std::move(result)), name_(std::move(name)) {}

torch::Tensor Handle::wait() const {
  TNT_CHECK(result_.valid(), "wait() on an empty Handle: use the Handle an *_async call returned");
  return result_.get();
}

bool Handle::ready() const {
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

Handle CommEngine::enqueue(std::string name, Work work) {
  Request request{name, std::move(work), {}};
  Handle handle(request.result.get_future().share(), std::move(name));
  {
    std::lock_guard<std::mutex> lock(mutex_);
    TNT_CHECK(!stopping_, "request '", handle.name(),
              "' enqueued on a communication engine that is shutting down");
    queue_.push_back(std::move(request));
  }
  wake_.notify_one();
  return handle;
}

std::size_t CommEngine::pending() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return queue_.size() + running_;
}

void CommEngine::loop() {
  for (;;) {
    Request request;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, and everything queued has run
      request = std::move(queue_.front());
      queue_.pop_front();
      ++running_;
    }
    try {
      request.result.set_value(request.work());
    } catch (...) {
      request.result.set_exception(std::current_exception());
    }
    std::lock_guard<std::mutex> lock(mutex_);
    --running_;
  }
}

}  // namespace tnt::comm
