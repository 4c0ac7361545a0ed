// Private: where a rank that did not arrive at a collective is, asked of the
// rank itself over MPI.
//
// How it works. Every rank of a job (with MPI_THREAD_MULTIPLE and more than
// one rank) runs a StackService: a thread that checks a communicator of its
// own for requests every 50 ms (MPI_Iprobe; nothing else, so training never
// waits for it) and a StackDumper (base/stack_dump.h) for the thread that
// started the runtime. When a collective times out, each rank that reports
// the timeout calls where_are() for the missing ranks: it sends each one a
// request and waits, bounded, for the answer. The missing rank's service
// thread takes its main thread's stack (a signal; the Python stack too, for
// a Python rank), and those of the data pipeline's threads that are busy,
// summarizes them in one line on its own host (where the Python source files
// are: "X (the thread that started the runtime); its data pipeline thread
// 'prefetch' is in Y") and sends the line and the whole dump back. The
// dump is taken once and given to every rank that asks within a few seconds.
// A rank that is stopped (SIGSTOP), dead or hung does not answer; the
// report then says so instead of waiting.
//
// Why MPI and not the launcher: the launcher reaches the ranks of other
// hosts only through mpirun, whose one channel there (forwarding SIGUSR1/2)
// reaches every process of the job alike and carries no answer back; MPI
// already connects each reporting rank with the missing one, on any host,
// under the launcher, a plain mpirun or srun. See docs/architecture.md.
#pragma once

#include <mpi.h>

#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/stack_dump.h"

namespace tnt::comm {

class StackService {
 public:
  /// Collective over `world` (duplicated). Call on the thread that runs the
  /// user's code: its stack is the one given out.
  explicit StackService(MPI_Comm world);
  /// Stops the thread and frees the communicator (before MPI_Finalize).
  ~StackService();
  StackService(const StackService&) = delete;
  StackService& operator=(const StackService&) = delete;

  /// What a rank said about itself.
  struct Where {
    bool answered = false;  ///< false: no answer within the time
    bool known = false;     ///< answered with a stack
    std::string summary;    ///< "stuck.py line 10 (time.sleep) ← train() ← <module>"
    std::string dump;       ///< the whole dump, as its handlers wrote it
    std::string host;       ///< the host that answered
  };
  /// Asks `ranks` (of the world) where they are; waits at most `seconds` in
  /// all. One entry per rank, in order. Thread-safe.
  std::vector<Where> where_are(const std::vector<int>& ranks, double seconds) const;

 private:
  void serve();
  void answer(int requester, int budget_ms);

  MPI_Comm comm_ = MPI_COMM_NULL;
  ::tnt::detail::StackDumper dumper_;
  mutable std::mutex ask_mutex_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::string last_reply_;  ///< the service thread's: reused for a few seconds
  std::chrono::steady_clock::time_point last_reply_time_{};
  std::thread thread_;
};

/// How long a report waits for the missing ranks' stacks: a fifth of the
/// collective timeout, 2 to 3 s (a rank's service looks every 50 ms, but
/// a busy host can take a second to run it and the signalled thread).
double stack_wait_seconds(double timeout_seconds);

/// The report's sentence for `rank` (a rank of the group that timed out;
/// `host` from its table, used when it did not answer):
///   "rank 1 (host vm) is in stuck.py line 10 (time.sleep) ← train() ← <module>"
///   "the stack of rank 1 (host vm) is not available: it did not answer within 2 s ..."
std::string where_sentence(int rank, const std::string& host, const StackService::Where& where,
                           double seconds);

}  // namespace tnt::comm
