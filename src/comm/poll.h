// Private: waiting on non-blocking MPI requests against a deadline, because
// a blocking MPI call cannot be timed out (the handshake and the payload of
// every collective wait this way).
#pragma once

#include <algorithm>
#include <chrono>
#include <thread>

#ifdef __linux__
#include <sys/prctl.h>
#endif

namespace tnt::comm {

using PollClock = std::chrono::steady_clock;

/// Makes this thread's short sleeps last about as long as asked (Linux
/// otherwise lets a sleep overrun by its 50 us default timer slack). Once per
/// thread; a no-op elsewhere.
inline void lower_timer_slack() {
#ifdef __linux__
  thread_local const bool done = [] {
    prctl(PR_SET_TIMERSLACK, 1000UL, 0UL, 0UL, 0UL);  // 1 us
    return true;
  }();
  (void)done;
#endif
}

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

/// The engine's wait for its peers and for a payload's messages (replacing
/// OpenMPI's job-wide mpi_yield_when_idle, which slowed every blocking
/// collective), in three phases:
/// * polls without yielding for 20 us: a peer that is right there, a small
///   message's round trip over shared memory (1-3 us);
/// * then polls with a yield between tries, up to 20 ms: the core goes to a
///   training thread that wants it (2 ranks on 2 cores: each core has a
///   rank's training thread), and comes straight back when nobody does, so
///   OpenMPI's TCP progress keeps being driven (while this thread naps
///   nobody drives it: with naps after 30 us a 4 KiB allreduce between two
///   simulated 10 Gbit/s hosts took 142 us against raw MPI's 40). Naps this
///   early cost more: every wake-up pre-empts the training thread. A 2-rank
///   LeNet-5 A/B (8 rounds of 200 steps) gave +14 % with this phase at
///   200 us or 20 ms against the former 200 us of spinning then naps;
/// * then naps doubling from 10 us up to 50 us, so a long wait (a rank far
///   behind) costs this rank's core little and is noticed within 50 us.
/// Naps this short need the thread's timer slack lowered (Linux lets a
/// sleep overrun by 50 us by default), which the first call does for its
/// thread.
template <typename Done, typename OnSlow>
bool wait_on_peers(Done done, PollClock::time_point deadline, PollClock::time_point slow_after,
                   OnSlow on_slow) {
  lower_timer_slack();
  const auto start = PollClock::now();
  const auto spin_until = start + std::chrono::microseconds(20);
  const auto yield_until = start + std::chrono::milliseconds(20);
  for (;;) {
    if (done()) return true;
    const auto now = PollClock::now();
    if (now >= yield_until) break;
    if (now >= spin_until) std::this_thread::yield();
  }
  return poll_until(done, deadline, std::chrono::microseconds(0), std::chrono::microseconds(50),
                    slow_after, on_slow);
}

/// How a rank waits on a neighbour (a point-to-point transfer: a pipeline
/// stage waiting for the previous stage's activations, for as long as that
/// stage computes). Unlike a collective's wait (wait_on_peers), whose peers
/// are usually a few microseconds away, this one is often long, and it
/// must give its core up: on a shared or oversubscribed node the rank it
/// waits for may need that very core. Between tries:
/// * nothing for the first 20 us: a small message's round trip over shared
///   memory (1-3 us) is caught at once;
/// * a yield up to 200 us: the core goes to anyone who wants it, and comes
///   back at once otherwise;
/// * then naps doubling from 10 us up to kMaxNeighbourNap (500 us): a long
///   wait costs about 2,000 wake-ups a second, and sees its message at most
///   that much late.
/// `progress()` starts the policy again: a piece of a large message has
/// arrived, so the rest follows at the link's speed and is polled closely
/// (MPI moves a message only while it is polled).
class NeighbourWait {
 public:
  static constexpr std::chrono::microseconds kSpin{20};
  static constexpr std::chrono::microseconds kYield{200};
  static constexpr std::chrono::microseconds kFirstNap{10};
  static constexpr std::chrono::microseconds kMaxNeighbourNap{500};

  NeighbourWait() : start_(PollClock::now()) { lower_timer_slack(); }
  /// Call after a try that found something done: the policy starts again.
  void progress() {
    start_ = PollClock::now();
    nap_ = kFirstNap;
  }
  /// Call between tries: spins, yields or naps, by how long this has waited.
  void pause() {
    const auto waited = PollClock::now() - start_;
    if (waited < kSpin) return;
    if (waited < kYield) {
      std::this_thread::yield();
      return;
    }
    std::this_thread::sleep_for(nap_);
    nap_ = std::min(nap_ * 2, kMaxNeighbourNap);
  }

 private:
  PollClock::time_point start_;
  std::chrono::microseconds nap_ = kFirstNap;
};

/// The stall warning's moment: half the timeout, at most a minute (Horovod's
/// stall inspector warns after 60 s).
inline double stall_warning_seconds(double timeout_seconds) {
  return std::min(60.0, timeout_seconds / 2);
}

}  // namespace tnt::comm
