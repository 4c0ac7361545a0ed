// The stacks of missing ranks, asked over MPI (see stack_service.h).
#include "comm/check/stack_service.h"

#include "base/waiting_on.h"

#include <tarantella/base/error.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "comm/poll.h"

namespace tnt::comm {
namespace {

constexpr int kAskTag = 301;
constexpr int kReplyTag = 302;
/// A reply's most bytes: the summary and the first part of the dump.
constexpr int kMaxReply = 60 * 1024;
constexpr auto kServePeriod = std::chrono::milliseconds(50);
/// A dump is given again to ranks that ask within this time.
constexpr auto kReuseReply = std::chrono::seconds(5);

std::string this_host() {
  char host[256] = {};
  ::gethostname(host, sizeof(host) - 1);
  return host;
}

// "K\nHOST\nSUMMARY\nDUMP": K is 1 when the dump is complete.
std::string encode(bool known, const std::string& summary, const std::string& dump) {
  std::string out =
      std::string(known ? "1" : "0") + "\n" + this_host() + "\n" + summary + "\n" + dump;
  if (out.size() > static_cast<std::size_t>(kMaxReply)) out.resize(kMaxReply);
  return out;
}

StackService::Where decode(const std::string& reply) {
  StackService::Where where;
  where.answered = true;
  const auto a = reply.find('\n');
  const auto b = a == std::string::npos ? a : reply.find('\n', a + 1);
  const auto c = b == std::string::npos ? b : reply.find('\n', b + 1);
  if (c == std::string::npos) return where;
  where.known = reply.compare(0, a, "1") == 0;
  where.host = reply.substr(a + 1, b - a - 1);
  where.summary = reply.substr(b + 1, c - b - 1);
  where.dump = reply.substr(c + 1);
  where.known = where.known && !where.summary.empty();
  return where;
}

}  // namespace

StackService::StackService(MPI_Comm world) {
  if (MPI_Comm_dup(world, &comm_) != MPI_SUCCESS) {
    comm_ = MPI_COMM_NULL;
    return;
  }
  MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
  thread_ = std::thread([this] { serve(); });
}

namespace {

// The runtime's thread, then each busy data pipeline thread:
//   "train.py line 9 (model.fit) ← <module> (the thread that started the
//    runtime); its data pipeline thread 'prefetch' is in train.py line 4
//    (time.sleep) ← slow()"
std::string summarize_dump(const ::tnt::detail::StackDumper::Dump& dump, const std::string& text) {
  std::string out = ::tnt::detail::summarize_stack(text);
  if (out.empty()) return out;
  out += " (the thread that started the runtime)";
  for (const auto& thread : dump.threads) {
    const std::string where =
        thread.complete ? ::tnt::detail::summarize_thread(
                              text, thread.id, ::tnt::detail::symbolize_dump(thread.text))
                        : std::string();
    out += "; its data pipeline thread '" + thread.name + "' is in " +
           (where.empty() ? std::string("a place it did not report in time") : where);
  }
  return out;
}

}  // namespace

StackService::~StackService() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
}

void StackService::serve() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stopping_) {
    lock.unlock();
    int flag = 0;
    MPI_Status status;
    if (MPI_Iprobe(MPI_ANY_SOURCE, kAskTag, comm_, &flag, &status) == MPI_SUCCESS && flag) {
      int budget_ms = 0;
      MPI_Recv(&budget_ms, 1, MPI_INT, status.MPI_SOURCE, kAskTag, comm_, MPI_STATUS_IGNORE);
      answer(status.MPI_SOURCE, budget_ms);
      lock.lock();
      continue;
    }
    lock.lock();
    wake_.wait_for(lock, kServePeriod, [this] { return stopping_; });
  }
}

void StackService::answer(int requester, int budget_ms) {
  const auto now = std::chrono::steady_clock::now();
  if (last_reply_.empty() || now - last_reply_time_ > kReuseReply) {
    // Most of the asker's budget for the dump, the rest for the reply.
    const double seconds = std::max(0.2, 0.6 * budget_ms / 1000.0);
    const ::tnt::detail::StackDumper::Dump dump = dumper_.capture(seconds);
    std::string text = ::tnt::detail::symbolize_dump(dump.text);
    std::string summary = dump.complete ? summarize_dump(dump, text) : std::string();
    // A rank that itself waits on another says on whom (waiting_on.h).
    const std::string waits = ::tnt::detail::WaitingOn::now();
    if (!summary.empty() && !waits.empty()) summary += "; it waits for " + waits;
    for (const auto& thread : dump.threads) {
      char id[32];
      std::snprintf(id, sizeof(id), "0x%016lx", thread.id);
      text += "\n" + thread.name + " (thread " + id + "):\n" +
              ::tnt::detail::symbolize_dump(thread.text);
    }
    last_reply_ = encode(dump.complete, summary, text);
    last_reply_time_ = now;
  }
  MPI_Request request = MPI_REQUEST_NULL;
  if (MPI_Isend(last_reply_.data(), static_cast<int>(last_reply_.size()), MPI_CHAR, requester,
                kReplyTag, comm_, &request) != MPI_SUCCESS) {
    return;
  }
  // The asker posted its receive first; if it is gone, let MPI finish the
  // send without us.
  const bool sent = poll_until(
      [&] {
        int done = 0;
        MPI_Test(&request, &done, MPI_STATUS_IGNORE);
        return done != 0;
      },
      deadline_after(2.0), std::chrono::microseconds(100), std::chrono::microseconds(5000),
      deadline_after(1e9), [] {});
  if (!sent) MPI_Request_free(&request);
}

std::vector<StackService::Where> StackService::where_are(const std::vector<int>& ranks,
                                                         double seconds) const {
  std::lock_guard<std::mutex> lock(ask_mutex_);
  std::vector<Where> out(ranks.size());
  if (comm_ == MPI_COMM_NULL) return out;
  const int budget_ms = static_cast<int>(seconds * 1000);
  std::vector<std::vector<char>> replies(ranks.size(), std::vector<char>(kMaxReply));
  std::vector<MPI_Request> receives(ranks.size(), MPI_REQUEST_NULL);
  std::vector<MPI_Status> statuses(ranks.size());
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    if (MPI_Irecv(replies[i].data(), kMaxReply, MPI_CHAR, ranks[i], kReplyTag, comm_,
                  &receives[i]) != MPI_SUCCESS) {
      receives[i] = MPI_REQUEST_NULL;
      continue;
    }
    // One int, sent eagerly: completes whether or not the rank ever looks.
    MPI_Request ask = MPI_REQUEST_NULL;
    if (MPI_Isend(&budget_ms, 1, MPI_INT, ranks[i], kAskTag, comm_, &ask) == MPI_SUCCESS) {
      MPI_Request_free(&ask);
    }
  }
  std::vector<bool> done(ranks.size(), false);
  poll_until(
      [&] {
        bool all = true;
        for (std::size_t i = 0; i < ranks.size(); ++i) {
          if (done[i] || receives[i] == MPI_REQUEST_NULL) continue;
          int flag = 0;
          MPI_Test(&receives[i], &flag, &statuses[i]);
          done[i] = flag != 0;
          all = all && done[i];
        }
        return all;
      },
      deadline_after(seconds), std::chrono::microseconds(100), std::chrono::microseconds(5000),
      deadline_after(1e9), [] {});
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    if (done[i]) {
      int count = 0;
      MPI_Get_count(&statuses[i], MPI_CHAR, &count);
      out[i] = decode(std::string(replies[i].data(), static_cast<std::size_t>(std::max(0, count))));
    } else if (receives[i] != MPI_REQUEST_NULL) {
      MPI_Cancel(&receives[i]);
      MPI_Request_free(&receives[i]);
    }
  }
  return out;
}

double stack_wait_seconds(double timeout_seconds) {
  return std::clamp(0.2 * timeout_seconds, 2.0, 3.0);
}

std::string where_sentence(int rank, const std::string& host, const StackService::Where& where,
                           double seconds) {
  const std::string who = ::tnt::detail::concat(
      "rank ", rank, where.host.empty() && host.empty() ? "" : " (host ",
      where.host.empty() ? host : where.host, where.host.empty() && host.empty() ? "" : ")");
  if (where.known) return who + " is in " + where.summary;
  if (where.answered) {
    return "the stack of " + who +
           " is not available: it answered, but its main thread did not take the stack signal "
           "(SIGRTMIN+4) in time (it may block signals, or run without the handler)";
  }
  char wait[32];
  std::snprintf(wait, sizeof(wait), "%.0f", seconds);
  return "the stack of " + who + " is not available: it did not answer within " + wait +
         " s (it is stopped (SIGSTOP), dead, or its process hangs)";
}

}  // namespace tnt::comm
