// prefetch: a background thread reads the input stream ahead into a bounded
// queue, from the first next() on (a skip() before it reaches the input
// unread). The thread belongs to the pass (PrefetchStream): destroying the pass
// stops it and joins it, also when the consumer stops early; the wait is at
// most the element being computed. An exception on the thread reaches the
// consumer in order, after the elements produced before it.
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <optional>
#include <thread>

#include <tarantella/base/argument_error.h>
#include <tarantella/base/error.h>

#include "base/stack_dump.h"
#include "base/threads.h"
#include "data/pipeline/element_ops.h"
#include "data/pipeline/nodes.h"

namespace tnt::data::detail {
namespace {

class PrefetchStream final : public EagerStream {
 public:
  PrefetchStream(StreamPtr input, std::int64_t capacity, Pinning pin)
      : input_(std::move(input)), capacity_(static_cast<std::size_t>(capacity)), pin_(std::move(pin)) {}
  ~PrefetchStream() override {
    if (!thread_.joinable()) return;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    space_.notify_all();
    thread_.join();
  }
  std::optional<Element> next() override {
    if (!thread_.joinable()) thread_ = std::thread([this] { produce(); });
    std::unique_lock<std::mutex> lock(mutex_);
    ready_.wait(lock, [&] { return !queue_.empty() || finished_; });
    if (!queue_.empty()) {
      Element e = std::move(queue_.front().element);
      global_size_ = queue_.front().global_size;
      queue_.pop_front();
      lock.unlock();
      space_.notify_one();
      return e;
    }
    if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
    return std::nullopt;
  }
  // Before the first element the thread has not started: the input skips
  // (without reading, where it can) and reading ahead begins after the gap.
  std::int64_t skip(std::int64_t n) override {
    if (!thread_.joinable()) return input_->skip(n);
    return Stream::skip(n);
  }
  std::int64_t global_size() const override { return global_size_; }

 private:
  void produce() {
    ::tnt::detail::ThreadRole role("prefetch");  // named in a stuck rank's report while busy
    try {
      // Page-locked collation checks the pinned blocks' CUDA events: on the
      // rank's GPU, not GPU 0 (base/threads.h).
      if (pin_.device) ::tnt::detail::adopt_device(*pin_.device);
      for (;;) {
        {
          std::unique_lock<std::mutex> lock(mutex_);
          space_.wait(lock, [&] { return stopping_ || queue_.size() < capacity_; });
          if (stopping_) return;
        }
        std::optional<Element> e;
        {
          ::tnt::detail::ThreadRole::Busy busy(role);
          e = input_->next();
        }
        if (!e) break;
        // Pinning read-ahead (pin_memory): what the steps above the
        // collation made (a map's new tensors, a cache's, a strided view)
        // is pinned here, not on the training thread (once: a pinned
        // collation passes through).
        if (pin_.on) {
          for (torch::Tensor& t : *e) t = pinned_dense(t);
        }
        const std::int64_t global_size = input_->global_size();
        {
          std::lock_guard<std::mutex> lock(mutex_);
          queue_.push_back(Ready{std::move(*e), global_size});
        }
        ready_.notify_one();  // after unlocking: the woken consumer finds the mutex free
      }
    } catch (...) {
      std::lock_guard<std::mutex> lock(mutex_);
      error_ = std::current_exception();
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      finished_ = true;
    }
    ready_.notify_one();
  }

  StreamPtr input_;  // used by the producer thread only
  std::size_t capacity_;
  Pinning pin_;
  std::mutex mutex_;
  std::condition_variable ready_;  // consumer: an element, or the end
  std::condition_variable space_;  // producer: room in the queue, or stop
  // An element read ahead, with its global size (see node.h).
  struct Ready {
    Element element;
    std::int64_t global_size;
  };
  std::deque<Ready> queue_;
  std::exception_ptr error_;
  bool finished_ = false;
  bool stopping_ = false;
  std::thread thread_;                    // started by the first next()
  std::int64_t global_size_ = kNotSplit;  // consumer: of the element handed out last
};

class PrefetchNode final : public Node {
 public:
  PrefetchNode(NodePtr input, std::int64_t capacity, Pinning pin)
      : input_(std::move(input)), capacity_(capacity), pin_(std::move(pin)) {}
  std::string name() const override { return "prefetch(" + std::to_string(capacity_) + ")"; }
  std::vector<NodePtr> inputs() const override { return {input_}; }
  std::int64_t cardinality() const override { return input_->cardinality(); }
  // Random access (a batch or shuffle above, or distribution) bypasses the
  // thread: it has nothing to read ahead. Sequential reads above use it.
  bool is_indexed() const override { return input_->is_indexed(); }
  bool streams_itself() const override { return true; }
  IndexedPtr indexed(PassKey key) const override { return input_->indexed(key); }
  StreamPtr stream(PassKey key) const override {
    return std::make_unique<PrefetchStream>(input_->stream(key), capacity_, pin_);
  }
  Batching batching() const override { return pass_through_batching(input_); }
  // A user's prefetch above the collation reads pinned micro-batches ahead:
  // its thread adopts the rank's GPU (base/threads.h) and pins as above.
  NodePtr split(const SplitSpec& spec) const override {
    return std::make_shared<PrefetchNode>(input_->split(spec), capacity_,
                                          pin_.on ? pin_ : spec.pin);
  }

 private:
  NodePtr input_;
  std::int64_t capacity_;
  Pinning pin_;
};

}  // namespace

NodePtr make_prefetch(NodePtr input, std::int64_t buffer_size, Pinning pin) {
  TNT_CHECK_ARG(buffer_size >= 1, "prefetch: buffer_size ", buffer_size, " is invalid: use at least 1");
  return std::make_shared<PrefetchNode>(std::move(input), buffer_size, std::move(pin));
}

}  // namespace tnt::data::detail
