#include "comm/check/payload_watchdog.h"

#include "base/threads.h"

#include <algorithm>
#include <chrono>

namespace tnt::comm {
namespace {

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

PayloadWatchdog::PayloadWatchdog(double timeout_seconds, double warn_after_seconds,
                                 Callback on_warning, Callback on_timeout)
    : timeout_seconds_(timeout_seconds),
      warn_after_seconds_(warn_after_seconds),
      on_warning_(std::move(on_warning)),
      on_timeout_(std::move(on_timeout)) {}

PayloadWatchdog::~PayloadWatchdog() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void PayloadWatchdog::arm(std::int64_t seq, const char* kind, std::int64_t elements) {
  std::call_once(started_, [this] { thread_ = std::thread([this] { run(); }); });
  seq_.store(seq, std::memory_order_relaxed);
  kind_.store(kind, std::memory_order_relaxed);
  elements_.store(elements, std::memory_order_relaxed);
  since_ns_.store(std::max<std::int64_t>(1, now_ns()), std::memory_order_release);
}

void PayloadWatchdog::run() {
  tnt::detail::name_this_thread("tnt-watchdog");
  const double tick_seconds = std::clamp(timeout_seconds_ / 20, 0.01, 1.0);
  const auto tick = std::chrono::duration<double>(tick_seconds);
  std::int64_t warned_since = 0;
  std::int64_t frozen_since = 0;  // the payload `frozen_ns` belongs to
  std::int64_t frozen_ns = 0;
  std::int64_t last_tick = now_ns();
  std::unique_lock<std::mutex> lock(mutex_);
  while (!wake_.wait_for(lock, tick, [this] { return stopping_; })) {
    const std::int64_t now = now_ns();
    const std::int64_t gap = now - last_tick - static_cast<std::int64_t>(tick_seconds * 1e9);
    last_tick = now;
    const std::int64_t since = since_ns_.load(std::memory_order_acquire);
    if (since == 0) continue;
    if (frozen_since != since) {
      frozen_since = since;
      frozen_ns = 0;
    }
    // A tick that came far too late: this process was not running.
    if (gap > std::max<std::int64_t>(1'000'000'000, static_cast<std::int64_t>(2 * tick_seconds * 1e9))) {
      frozen_ns += std::min(gap, now - since);
    }
    Payload p;
    p.seq = seq_.load(std::memory_order_relaxed);
    p.what = std::string(kind_.load(std::memory_order_relaxed)) + " of " +
             std::to_string(elements_.load(std::memory_order_relaxed)) + " elements";
    // The same payload still in flight (not a new one armed meanwhile)?
    if (since_ns_.load(std::memory_order_acquire) != since) continue;
    p.seconds = static_cast<double>(now_ns() - since) * 1e-9;
    p.frozen_seconds = static_cast<double>(frozen_ns) * 1e-9;
    if (p.seconds >= timeout_seconds_) {
      lock.unlock();
      on_timeout_(p);  // ends the process
      lock.lock();
    } else if (p.seconds >= warn_after_seconds_ && warned_since != since) {
      warned_since = since;
      lock.unlock();
      on_warning_(p);
      lock.lock();
    }
  }
}

}  // namespace tnt::comm
