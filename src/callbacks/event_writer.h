// Private: an event file with its own writer thread, so that training never
// waits for the disk. The training thread only queues small Event messages;
// the thread serializes, frames and writes them in order. flush() waits until
// everything queued so far has reached the operating system and rethrows a
// failure of the thread (rule: no error lives only in a log line). The same
// split as TensorFlow's EventFileWriter and Horovod's timeline writer.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

namespace tnt::callbacks::detail {

class EventFile;

class EventWriter {
 public:
  /// Opens the file at once (a bad directory fails here, on the caller's
  /// thread) and starts the writer thread.
  EventWriter(const std::string& dir, const std::string& suffix);
  /// Writes what is still queued, then joins the thread. Never throws.
  ~EventWriter();
  EventWriter(const EventWriter&) = delete;
  EventWriter& operator=(const EventWriter&) = delete;

  /// Queues one scalar summary event {wall_time: now, step, summary{tag,
  /// value}}. Rethrows an earlier failure of the writer thread.
  void add_scalar(const std::string& tag, double value, std::int64_t step);
  /// Asks the thread to hand what is queued to the operating system, without
  /// waiting for it (TensorBoard then sees a running job's progress).
  void request_flush();
  /// Blocks until every event queued before the call is written and handed
  /// to the operating system; rethrows a failure of the writer thread.
  void flush();
  const std::string& path() const;

 private:
  struct Item {
    bool is_flush = false;  // a flush request rather than an event
    std::string serialized_event;
    std::promise<void> flushed;  // set once a flush request is done
  };
  void run();
  void write(Item& item);
  void record_failure(std::exception_ptr failure);
  void rethrow_failure();
  std::future<void> enqueue_flush();

  std::unique_ptr<EventFile> file_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Item> queue_;
  bool stopping_ = false;
  std::exception_ptr failure_;
  bool failure_reported_ = false;  // a caller has seen failure_
  std::thread thread_;             // last: starts after every other member exists
};

}  // namespace tnt::callbacks::detail
