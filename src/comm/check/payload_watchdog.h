// Private: the timeout of a collective's payload.
//
// The handshake makes every rank agree to a collective before its payload
// runs, so a payload that does not complete means a rank stopped on the way
// (SIGSTOP, a hung device, a dead link). The payload itself runs as a
// blocking MPI call (or as point-to-point messages waited on without a
// deadline: exchange.h): OpenMPI's non-blocking collectives (libnbc) measured
// about half the bandwidth of the blocking ones at 1-4 MiB, so waiting on
// MPI_Iallreduce with a deadline would cost every training step. Instead a
// watchdog thread watches the one payload in flight: arming and disarming
// are two atomic stores; the thread wakes every twentieth of the timeout (at
// most every second), warns once at the stall-warning moment, and calls
// `on_timeout` when the payload has run longer than the timeout. That
// callback must end the process: the blocked call cannot be unwound.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace tnt::comm {

class PayloadWatchdog {
 public:
  /// What is in flight, for the messages: "allreduce of 1024 elements".
  struct Payload {
    std::int64_t seq = 0;
    std::string what;
    double seconds = 0;  ///< how long it has run
    /// How much of that this process itself was not running (gaps between
    /// the watchdog's ticks: SIGSTOP, a stalled machine).
    double frozen_seconds = 0;
  };
  using Callback = std::function<void(const Payload&)>;

  PayloadWatchdog(double timeout_seconds, double warn_after_seconds, Callback on_warning,
                  Callback on_timeout);
  ~PayloadWatchdog();
  PayloadWatchdog(const PayloadWatchdog&) = delete;
  PayloadWatchdog& operator=(const PayloadWatchdog&) = delete;

  /// Marks payload `seq` (`kind` is a string literal) in flight; the thread
  /// starts on the first call.
  void arm(std::int64_t seq, const char* kind, std::int64_t elements);
  void disarm() noexcept { since_ns_.store(0, std::memory_order_release); }

 private:
  void run();

  const double timeout_seconds_;
  const double warn_after_seconds_;
  Callback on_warning_;
  Callback on_timeout_;
  std::atomic<std::int64_t> seq_{0};
  std::atomic<const char*> kind_{""};
  std::atomic<std::int64_t> elements_{0};
  std::atomic<std::int64_t> since_ns_{0};  ///< steady_clock ns when armed; 0: idle
  std::once_flag started_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread thread_;
};

/// Arms the watchdog for the lifetime of the object (one blocking MPI call).
class PayloadWatch {
 public:
  PayloadWatch(PayloadWatchdog& dog, std::int64_t seq, const char* kind, std::int64_t elements)
      : dog_(dog) {
    dog_.arm(seq, kind, elements);
  }
  ~PayloadWatch() { dog_.disarm(); }
  PayloadWatch(const PayloadWatch&) = delete;
  PayloadWatch& operator=(const PayloadWatch&) = delete;

 private:
  PayloadWatchdog& dog_;
};

}  // namespace tnt::comm
