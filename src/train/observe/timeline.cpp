#include "train/observe/timeline.h"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "base/threads.h"
#include "base/writable.h"

#include <tarantella/base/config.h>
#include <tarantella/base/logging.h>

#include "io/atomic_file.h"

namespace tnt {
namespace {

std::int64_t micros(Timeline::Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count();
}

// Events kept per rank before recording stops (with a warning): ~150 bytes
// each, so at most ~300 MB of trace text.
constexpr std::size_t kMaxEvents = 2'000'000;

}  // namespace

struct Timeline::Impl {
  struct Event {
    Track track;
    std::string name;
    std::int64_t begin_us;
    std::int64_t end_us;  // < 0: an instant
    std::string args;     // a counter's values as a JSON object; empty otherwise
  };

  std::string path;
  comm::ProcessGroup group;
  int rank = 0;  // world rank: the trace's process id
  std::int64_t origin_us = 0;

  std::mutex mutex;
  std::condition_variable wake;
  std::condition_variable drained;
  std::deque<Event> queue;
  bool stopping = false;
  bool busy = false;
  std::size_t recorded = 0;
  bool stage_link_named = false;  // the writer thread's
  std::string text;  // formatted events of this rank, each followed by ",\n"
  std::thread writer;

  void push(Event e) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      if (recorded >= kMaxEvents) return;
      if (++recorded == kMaxEvents) {
        log::warning(fmt::format("timeline: {} events recorded on this rank; recording stops "
                                 "here (shorten the run to trace it whole)",
                                 kMaxEvents));
      }
      queue.push_back(std::move(e));
    }
    wake.notify_one();
  }

  void run() {
    tnt::detail::name_this_thread("tnt-timeline");
    std::unique_lock<std::mutex> lock(mutex);
    for (;;) {
      wake.wait(lock, [&] { return stopping || !queue.empty(); });
      if (queue.empty() && stopping) return;
      std::deque<Event> batch;
      batch.swap(queue);
      busy = true;
      lock.unlock();
      std::string out;
      for (const Event& e : batch) {
        if (e.track == kStageLink && !stage_link_named) {
          out += fmt::format(R"({{"name":"thread_name","ph":"M","pid":{},"tid":{},)"
                             R"("args":{{"name":"stage link"}}}},)"
                             "\n",
                             rank, static_cast<int>(kStageLink));
          stage_link_named = true;
        }
        out += format(e);
      }
      lock.lock();
      text += out;
      busy = false;
      if (queue.empty()) drained.notify_all();
    }
  }

  std::string format(const Event& e) const {
    const std::string name = nlohmann::json(e.name).dump();  // quoted and escaped
    if (!e.args.empty()) {
      return fmt::format(R"({{"name":{},"ph":"C","ts":{},"pid":{},"args":{}}},)"
                         "\n",
                         name, e.begin_us - origin_us, rank, e.args);
    }
    if (e.end_us < 0) {
      return fmt::format(R"({{"name":{},"ph":"i","s":"t","ts":{},"pid":{},"tid":{}}},)"
                         "\n",
                         name, e.begin_us - origin_us, rank, static_cast<int>(e.track));
    }
    return fmt::format(R"({{"name":{},"ph":"X","ts":{},"dur":{},"pid":{},"tid":{}}},)"
                       "\n",
                       name, e.begin_us - origin_us, std::max<std::int64_t>(e.end_us - e.begin_us, 0),
                       rank, static_cast<int>(e.track));
  }

  // This rank's events so far, formatted (waits for the writer to catch up).
  std::string snapshot() {
    std::unique_lock<std::mutex> lock(mutex);
    drained.wait(lock, [&] { return queue.empty() && !busy; });
    return text;
  }
};

Timeline::Timeline(comm::ProcessGroup group, std::string path) : impl_(std::make_unique<Impl>()) {
  Impl& s = *impl_;
  s.group = std::move(group);
  s.path = std::move(path);
  // Found when training starts rather than when the trace is written at the end.
  // Only the master rank writes it.
  if (s.group.is_master()) {
    ::tnt::detail::check_writable_file(s.path, "The timeline (TNT_TIMELINE, --timeline)");
  }
  s.rank = s.group.world_ranks()[static_cast<std::size_t>(s.group.rank())];
  torch::Tensor now = torch::tensor({micros(Clock::now())}, torch::kInt64);
  s.group.allreduce(now, comm::ReduceOp::Min);
  s.origin_us = now.item<std::int64_t>();
  s.writer = std::thread([this] { impl_->run(); });
}

Timeline::~Timeline() {
  {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    impl_->stopping = true;
  }
  impl_->wake.notify_all();
  if (impl_->writer.joinable()) impl_->writer.join();
}

void Timeline::slice(Track track, std::string name, Clock::time_point begin,
                     Clock::time_point end) {
  impl_->push({track, std::move(name), micros(begin), micros(end), {}});
}

void Timeline::instant(Track track, std::string name, Clock::time_point at) {
  impl_->push({track, std::move(name), micros(at), -1, {}});
}

void Timeline::counter(std::string name, Clock::time_point at,
                       const std::vector<std::pair<std::string, double>>& values) {
  nlohmann::json args = nlohmann::json::object();
  for (const auto& [key, value] : values) args[key] = value;
  impl_->push({kCompute, std::move(name), micros(at), -1, args.dump()});
}

void Timeline::write() {
  Impl& s = *impl_;
  const std::string mine = s.snapshot();
  torch::Tensor bytes =
      torch::from_blob(const_cast<char*>(mine.data()), {static_cast<std::int64_t>(mine.size())},
                       torch::kUInt8)
          .clone();
  const torch::Tensor all = s.group.allgatherv(bytes);
  if (!s.group.is_master()) return;
  std::string body(static_cast<const char*>(all.data_ptr()), static_cast<std::size_t>(all.numel()));
  std::string trace = "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n";
  for (int r : s.group.world_ranks()) {
    trace += fmt::format(
        R"({{"name":"process_name","ph":"M","pid":{0},"args":{{"name":"rank {0}"}}}},)"
        "\n"
        R"({{"name":"process_sort_index","ph":"M","pid":{0},"args":{{"sort_index":{0}}}}},)"
        "\n"
        R"({{"name":"thread_name","ph":"M","pid":{0},"tid":0,"args":{{"name":"compute"}}}},)"
        "\n"
        R"({{"name":"thread_name","ph":"M","pid":{0},"tid":1,"args":{{"name":"allreduce"}}}},)"
        "\n",
        r);
  }
  trace += body;
  // The last event ends with ",\n": close the array with an empty metadata event.
  trace += R"({"name":"trace_end","ph":"M","pid":0,"args":{}}]})";
  trace += "\n";
  write_atomically(s.path, std::vector<char>(trace.begin(), trace.end()));
}

void OverlapMeter::add(Timeline::Clock::time_point compute_begin,
                       Timeline::Clock::time_point compute_end,
                       Timeline::Clock::time_point started, Timeline::Clock::time_point finished) {
  using seconds = std::chrono::duration<double>;
  const double total = seconds(finished - started).count();
  if (total <= 0) return;
  const auto lo = std::max(compute_begin, started);
  const auto hi = std::min(compute_end, finished);
  total_s += total;
  if (hi > lo) hidden_s += seconds(hi - lo).count();
}

}  // namespace tnt
