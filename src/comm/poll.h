// Private: waiting on non-blocking MPI requests against a deadline, because
// a blocking MPI call cannot be timed out (the handshake and the payload of
// every collective wait this way).
#pragma once

#include <algorithm>
#include <chrono>
#include <thread>

namespace tnt::comm {

using PollClock = std::chrono::steady_clock;

inline PollClock::time_point deadline_after(double seconds) {
  return PollClock::now() + std::chrono::duration_cast<PollClock::duration>(
                                std::chrono::duration<double>(seconds));
}

/// Polls `done` until it returns true or `deadline` passes; returns whether it
/// was done. Yields for the first `spin` (the common case: the peers are right
/// there, or the transfer is short), then sleeps with a growing interval
/// capped at `max_nap`, so a long wait costs little CPU. `on_slow` runs once
/// when `slow_after` passes (a stall warning), if that comes before the deadline.
template <typename Done, typename OnSlow>
bool poll_until(Done done, PollClock::time_point deadline, std::chrono::microseconds spin,
                std::chrono::microseconds max_nap, PollClock::time_point slow_after,
                OnSlow on_slow) {
  const auto start = PollClock::now();
  auto nap = std::chrono::microseconds(10);
  bool warned = false;
  for (;;) {
    if (done()) return true;
    const auto now = PollClock::now();
    if (now >= deadline) return false;
    if (!warned && now >= slow_after) {
      warned = true;
      on_slow();
    }
    if (now - start < spin) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(nap);
      nap = std::min(nap * 2, max_nap);
    }
  }
}

/// The stall warning's moment: half the timeout, at most a minute (Horovod's
/// stall inspector warns after 60 s).
inline double stall_warning_seconds(double timeout_seconds) {
  return std::min(60.0, timeout_seconds / 2);
}

}  // namespace tnt::comm
