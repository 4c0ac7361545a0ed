#include "callbacks/event_writer.h"

#include "base/threads.h"

#include <tarantella/base/logging.h>

#include <chrono>

#include "callbacks/event_file.h"
#include "callbacks/tensorboard_proto.h"

namespace tnt::callbacks::detail {
namespace {

double now_seconds() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

}  // namespace

EventWriter::EventWriter(const std::string& dir, const std::string& suffix)
    : file_(std::make_unique<EventFile>(dir, suffix, now_seconds())), thread_([this] { run(); }) {}

EventWriter::~EventWriter() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_one();
  thread_.join();
  if (failure_ && !failure_reported_) {
    try {
      std::rethrow_exception(failure_);
    } catch (const std::exception& e) {
      log::warning(e.what());
    } catch (...) {
    }
  }
}

const std::string& EventWriter::path() const { return file_->path(); }

void EventWriter::add_scalar(const std::string& tag, double value, std::int64_t step) {
  tensorboard::proto::Event event;
  event.set_wall_time(now_seconds());
  event.set_step(step);
  auto* summary_value = event.mutable_summary()->add_value();
  summary_value->set_tag(tag);
  summary_value->set_simple_value(static_cast<float>(value));
  Item item;
  item.serialized_event = event.SerializeAsString();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    rethrow_failure();
    queue_.push_back(std::move(item));
  }
  wake_.notify_one();
}

std::future<void> EventWriter::enqueue_flush() {
  std::future<void> done;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    rethrow_failure();
    queue_.emplace_back();
    queue_.back().is_flush = true;
    done = queue_.back().flushed.get_future();
  }
  wake_.notify_one();
  return done;
}

void EventWriter::request_flush() { enqueue_flush(); }

void EventWriter::flush() {
  std::future<void> done = enqueue_flush();
  try {
    done.get();  // rethrows what the writer thread set
  } catch (...) {
    std::lock_guard<std::mutex> lock(mutex_);
    failure_reported_ = true;
    throw;
  }
}

// Called with mutex_ held.
void EventWriter::rethrow_failure() {
  if (!failure_) return;
  failure_reported_ = true;
  std::rethrow_exception(failure_);
}

void EventWriter::record_failure(std::exception_ptr failure) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!failure_) failure_ = std::move(failure);
}

// The writer thread: drains the queue in order; on stop, writes what is
// left and flushes once more.
void EventWriter::run() {
  tnt::detail::name_this_thread("tnt-events");
  for (;;) {
    Item item;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) break;  // stopping, and nothing left to write
      item = std::move(queue_.front());
      queue_.pop_front();
    }
    write(item);
  }
  Item last;
  last.is_flush = true;
  write(last);
}

// Runs on the writer thread. After a failure, events are dropped and every
// flush request gets the failure.
void EventWriter::write(Item& item) {
  std::exception_ptr failure;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    failure = failure_;
  }
  if (!failure) {
    try {
      if (item.is_flush) {
        file_->flush();
      } else {
        file_->append(item.serialized_event);
      }
    } catch (...) {
      failure = std::current_exception();
      record_failure(failure);
    }
  }
  if (!item.is_flush) return;
  if (failure) {
    item.flushed.set_exception(failure);
  } else {
    item.flushed.set_value();
  }
}

}  // namespace tnt::callbacks::detail
