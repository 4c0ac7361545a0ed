#include "comm/mpi_backend.h"

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>

#include <tarantella/base/error.h>
#include <tarantella/base/logging.h>

#include "comm/mpi_check.h"
#include "comm/poll.h"

namespace tnt::comm {
namespace {

MPI_Comm duplicate(MPI_Comm world) {
  MPI_Comm out = MPI_COMM_NULL;
  check_mpi(MPI_Comm_dup(world, &out), "MPI_Comm_dup");
  MPI_Comm_set_errhandler(out, MPI_ERRORS_RETURN);
  return out;
}

// Collectives run on host memory; tensors elsewhere are staged through it.
torch::Tensor to_host(const torch::Tensor& t) { return t.device().is_cpu() ? t : t.cpu(); }

void copy_back(torch::Tensor& target, const torch::Tensor& host) {
  if (!target.device().is_cpu()) target.copy_(host);
}

int as_count(std::int64_t n, const char* what) {
  TNT_CHECK(n <= INT_MAX, what, " of ", n, " elements exceeds MPI's limit of ", INT_MAX,
            ": split the tensor into smaller pieces");
  return static_cast<int>(n);
}

}  // namespace

MpiBackend::MpiBackend(MPI_Comm comm, double timeout_seconds, bool threads_multiple)
    : data_(duplicate(comm)),
      control_(duplicate(comm)),
      fast_(duplicate(comm)),
      timeout_seconds_(timeout_seconds),
      threads_multiple_(threads_multiple),
      handshake_(control_, fast_, 0, 1, timeout_seconds),
      watchdog_(
          timeout_seconds, stall_warning_seconds(timeout_seconds),
          [this](const PayloadWatchdog::Payload& p) {
            ::tnt::log::warning(::tnt::detail::concat(
                "collective #", p.seq, " (", p.what, ") has not completed after ",
                static_cast<int>(p.seconds), " s although every rank agreed to it; the job fails "
                "if it does not complete within ", timeout_seconds_, " s (TNT_COMM_TIMEOUT)"));
          },
          [this](const PayloadWatchdog::Payload& p) { payload_timed_out(p); }) {
  MPI_Comm_rank(data_, &rank_);
  MPI_Comm_size(data_, &size_);
  MPI_Comm local = MPI_COMM_NULL;
  check_mpi(MPI_Comm_split_type(data_, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &local),
            "MPI_Comm_split_type");
  MPI_Comm_rank(local, &local_rank_);
  MPI_Comm_size(local, &local_size_);
  MPI_Comm_free(&local);
  handshake_ = Handshake(control_, fast_, rank_, size_, timeout_seconds);
}

MpiBackend::~MpiBackend() {
  if (broken()) return;  // peers may still reference these; the job aborts
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;  // a group handle outlived the runtime: nothing to free
  if (data_ != MPI_COMM_NULL) MPI_Comm_free(&data_);
  if (control_ != MPI_COMM_NULL) MPI_Comm_free(&control_);
  if (fast_ != MPI_COMM_NULL) MPI_Comm_free(&fast_);
}

MpiBackend::Agreement MpiBackend::agree(Collective kind, const torch::Tensor* tensor,
                                        std::optional<ReduceOp> op, int root,
                                        const std::optional<std::string>& local_error,
                                        Handshake::Piggyback* small) {
  const Descriptor d = describe_call(seq_++, kind, tensor, op, root, local_error.has_value());
  // allgatherv needs every rank's count (the full table); shutdown and split
  // are rare. Every kind still takes part in the fingerprint exchange, with
  // 0, so that ranks calling different kinds all fall back together.
  const bool cacheable = !local_error && kind != Collective::Allgatherv &&
                         kind != Collective::Finalize && kind != Collective::Split;
  const std::uint64_t fp = cacheable ? fingerprint(d) : 0;
  if (handshake_.same_everywhere(cache_.contains(fp) ? fp : 0, d, small)) {
    return {{}, small != nullptr};
  }
  try {
    std::vector<Descriptor> table = handshake_.agree(d);
    if (cacheable) cache_.insert(fp);
    return {std::move(table), false};
  } catch (const MismatchError&) {
    if (local_error) throw Error(*local_error);
    throw;
  }
}

void MpiBackend::payload_timed_out(const PayloadWatchdog::Payload& payload) {
  // The engine thread is blocked inside the payload's MPI call, so the
  // control communicator is free; with MPI_THREAD_MULTIPLE this thread may
  // use it to find out who is gone.
  if (payload.frozen_seconds > timeout_seconds_ / 2) {
    // This process itself did not run (SIGSTOP, a stalled machine) and has
    // just been resumed: it is the culprit, and its peers have given up.
    std::fprintf(stderr,
                 "[tarantella rank %d] this rank did not run for %.0f s (stopped with SIGSTOP, or "
                 "its machine stalled) inside collective #%lld (%s); its peers timed out\n",
                 rank_, payload.frozen_seconds, static_cast<long long>(payload.seq),
                 payload.what.c_str());
    std::fflush(nullptr);
    std::_Exit(1);
  }
  std::string verdict = "the rank that stopped could not be determined (MPI without "
                        "MPI_THREAD_MULTIPLE)";
  if (threads_multiple_) {
    const std::vector<int> missing =
        handshake_.probe_missing(payload.seq, std::min(5.0, 0.5 + 0.1 * timeout_seconds_));
    verdict = missing.empty() ? std::string("every rank still answers, so MPI itself is stuck")
                              : ::tnt::detail::concat(rank_list(missing),
                                                      " stopped answering (stopped, hung, or cut off)");
  }
  const std::string message = ::tnt::detail::concat(
      "[tarantella rank ", rank_, "] collective #", payload.seq, " (", payload.what,
      ") did not complete within ", timeout_seconds_,
      " s (TNT_COMM_TIMEOUT) although every rank had agreed to it: ", verdict);
  std::fprintf(stderr, "%s\n", message.c_str());
  std::fflush(nullptr);
  // The blocked MPI call cannot be unwound: end the process; the launcher
  // then stops the job.
  std::_Exit(1);
}

bool MpiBackend::agree_carrying(torch::Tensor& tensor, ReduceOp op,
                                const std::optional<std::string>& error) {
  // A tensor too big, off the CPU or rejected goes without data (any rank
  // may), and its allreduce runs the usual way afterwards.
  const bool fits = handshake_.carries_payloads() && !error && tensor.device().is_cpu() &&
                    tensor.nbytes() <= (local_size_ < size_ ? Handshake::kMaxCarriedHosts
                                                            : Handshake::kMaxCarriedOneHost);
  if (!fits) {
    agree(Collective::Allreduce, &tensor, op, -1, error);
    return false;
  }
  // With one round (2 ranks) the tensor is touched only on success; with
  // more, partial sums land in a copy.
  const bool staged = handshake_.rounds() > 1;
  if (staged) {
    staging_.resize(Handshake::kMaxPiggybackBytes);
    std::memcpy(staging_.data(), tensor.data_ptr(), tensor.nbytes());
  }
  const DType dtype = dtype_of(tensor);
  Handshake::Piggyback small;
  small.data = staged ? staging_.data() : tensor.data_ptr();
  small.count = static_cast<int>(tensor.numel());
  small.bytes = tensor.nbytes();
  small.type = types_.datatype(dtype);
  small.op = types_.op(dtype, op);
  if (!agree(Collective::Allreduce, &tensor, op, -1, error, &small).payload_done) return false;
  if (staged) std::memcpy(tensor.data_ptr(), staging_.data(), tensor.nbytes());
  if (op == ReduceOp::Average) tensor.div_(size_);
  return true;
}

torch::Tensor MpiBackend::allreduce(torch::Tensor tensor, ReduceOp op) {
  const std::optional<std::string> error = validate(tensor, op);
  if (agree_carrying(tensor, op, error)) return tensor;
  torch::Tensor host = to_host(tensor);
  const DType dtype = dtype_of(host);
  const MPI_Datatype type = types_.datatype(dtype);
  const MPI_Op mpi_op = types_.op(dtype, op);
  auto* base = static_cast<char*>(host.data_ptr());
  // Power-of-two groups: our own exchange, in pieces of 1 MiB. Others:
  // MPI_Allreduce, in pieces of kMaxChunk elements.
  const bool exchange = handshake_.carries_payloads();
  const std::int64_t chunk =
      exchange ? static_cast<std::int64_t>(kMaxExchangedBytes / host.element_size()) : kMaxChunk;
  for (std::int64_t done = 0; done < host.numel(); done += chunk) {
    const auto n = static_cast<int>(std::min(chunk, host.numel() - done));
    const PayloadWatch watch(watchdog_, seq_ - 1, "allreduce", host.numel());
    if (exchange) {
      exchange_allreduce(base + done * host.element_size(), n, host.element_size(), type, mpi_op);
      continue;
    }
    check_mpi(MPI_Allreduce(MPI_IN_PLACE, base + done * host.element_size(), n, type, mpi_op,
                            data_),
              "MPI_Allreduce");
  }
  if (op == ReduceOp::Average && size_ > 1) host.div_(size_);
  copy_back(tensor, host);
  return tensor;
}

void MpiBackend::exchange_with(int partner, const char* send, int send_bytes, char* recv,
                               int recv_bytes) {
  constexpr int kExchangeTag = 201;  // data_ carries nothing else point to point
  MPI_Request reqs[2];
  check_mpi(MPI_Irecv(recv, recv_bytes, MPI_BYTE, partner, kExchangeTag, data_, &reqs[0]),
            "MPI_Irecv (allreduce)");
  check_mpi(MPI_Isend(send, send_bytes, MPI_BYTE, partner, kExchangeTag, data_, &reqs[1]),
            "MPI_Isend (allreduce)");
  // No deadline here: the payload watchdog ends a payload that hangs.
  wait_on_peers(
      [&] {
        int all = 0;
        check_mpi(MPI_Testall(2, reqs, &all, MPI_STATUSES_IGNORE), "MPI_Testall (allreduce)");
        return all != 0;
      },
      PollClock::time_point::max(), PollClock::time_point::max(), [] {});
}

void MpiBackend::exchange_allreduce(char* data, int count, std::size_t elem, MPI_Datatype type,
                                    MPI_Op op) {
  const std::size_t bytes = static_cast<std::size_t>(count) * elem;
  if (incoming_.size() < bytes) incoming_.resize(bytes);
  char* const theirs = incoming_.data();
  // mine := mine op theirs, with the lower rank's operand first. A sum is
  // the same either way round bit for bit (IEEE addition is commutative;
  // only a NaN's payload bits may differ), so it needs no copy.
  const auto combine = [&](char* mine, int n, int partner) {
    if (rank_ < partner && op != MPI_SUM) {
      check_mpi(MPI_Reduce_local(mine, theirs, n, type, op), "MPI_Reduce_local");
      std::memcpy(mine, theirs, static_cast<std::size_t>(n) * elem);
    } else {
      check_mpi(MPI_Reduce_local(theirs, mine, n, type, op), "MPI_Reduce_local");
    }
  };
  // Between hosts a round trip costs tens of microseconds, so whole
  // buffers go further there.
  const std::size_t doubled = local_size_ < size_ ? kMaxDoubledBytesHosts : kMaxDoubledBytes;
  if (bytes <= doubled || count < size_) {
    // Recursive doubling: whole buffers, one exchange per round.
    for (int step = 1; step < size_; step *= 2) {
      const int partner = rank_ ^ step;
      exchange_with(partner, data, static_cast<int>(bytes), theirs, static_cast<int>(bytes));
      combine(data, count, partner);
    }
    return;
  }
  // Recursive halving, then doubling (Rabenseifner): each round halves the
  // range a rank reduces, so every element is reduced by one rank and sent
  // back out; a rank sends about 2 (N-1)/N of the buffer in all, as a ring.
  struct Range {
    int lo, hi;
  };
  std::vector<Range> kept;  // per halving round: the range kept
  std::vector<Range> given;  // ... and the one handed to the partner
  Range mine{0, count};
  for (int step = size_ / 2; step >= 1; step /= 2) {
    const int partner = rank_ ^ step;
    const int mid = mine.lo + (mine.hi - mine.lo) / 2;
    const bool low = (rank_ & step) == 0;
    const Range keep = low ? Range{mine.lo, mid} : Range{mid, mine.hi};
    const Range give = low ? Range{mid, mine.hi} : Range{mine.lo, mid};
    exchange_with(partner, data + give.lo * elem, (give.hi - give.lo) * static_cast<int>(elem),
                  theirs, (keep.hi - keep.lo) * static_cast<int>(elem));
    combine(data + keep.lo * elem, keep.hi - keep.lo, partner);
    kept.push_back(keep);
    given.push_back(give);
    mine = keep;
  }
  for (int round = static_cast<int>(kept.size()) - 1, step = 1; round >= 0; --round, step *= 2) {
    const int partner = rank_ ^ step;
    const Range& keep = kept[round];
    const Range& give = given[round];
    exchange_with(partner, data + keep.lo * elem, (keep.hi - keep.lo) * static_cast<int>(elem),
                  data + give.lo * elem, (give.hi - give.lo) * static_cast<int>(elem));
  }
}

void MpiBackend::exchange_pieces(int partner, const char* send, std::int64_t send_bytes,
                                 char* recv, std::int64_t recv_bytes,
                                 const std::function<void(std::int64_t, std::int64_t)>& arrived,
                                 const char* kind, std::int64_t elements) {
  constexpr int kPiecesTag = 202;  // in order on every rank: one tag does
  constexpr auto kPiece = static_cast<std::int64_t>(kMaxExchangedBytes);
  const auto pieces = [](std::int64_t bytes) { return (bytes + kPiece - 1) / kPiece; };
  const std::int64_t n_recv = pieces(recv_bytes);
  const std::int64_t n_send = pieces(send_bytes);
  std::vector<MPI_Request> reqs(static_cast<std::size_t>(n_recv + n_send), MPI_REQUEST_NULL);
  for (std::int64_t i = 0; i < n_recv; ++i) {
    const std::int64_t at = i * kPiece;
    check_mpi(MPI_Irecv(recv + at, static_cast<int>(std::min(kPiece, recv_bytes - at)), MPI_BYTE,
                        partner, kPiecesTag, data_, &reqs[static_cast<std::size_t>(i)]),
              "MPI_Irecv");
  }
  for (std::int64_t i = 0; i < n_send; ++i) {
    const std::int64_t at = i * kPiece;
    check_mpi(MPI_Isend(send + at, static_cast<int>(std::min(kPiece, send_bytes - at)), MPI_BYTE,
                        partner, kPiecesTag, data_, &reqs[static_cast<std::size_t>(n_recv + i)]),
              "MPI_Isend");
  }
  std::int64_t next = 0;  // the first received piece not yet handed over
  const auto advance = [&] {
    bool moved = false;
    while (next < n_recv) {
      int done = 0;
      check_mpi(MPI_Test(&reqs[static_cast<std::size_t>(next)], &done, MPI_STATUS_IGNORE),
                "MPI_Test");
      if (done == 0) break;
      const std::int64_t at = next * kPiece;
      arrived(at, std::min(kPiece, recv_bytes - at));
      watchdog_.arm(seq_ - 1, kind, elements);  // progress: the clock starts again
      ++next;
      moved = true;
    }
    if (next < n_recv) return moved;
    int all = 0;
    check_mpi(MPI_Testall(static_cast<int>(n_send), reqs.data() + n_recv, &all,
                          MPI_STATUSES_IGNORE),
              "MPI_Testall");
    return moved || all != 0;
  };
  for (;;) {
    // No deadline here: the payload watchdog ends a payload that hangs.
    wait_on_peers(advance, PollClock::time_point::max(), PollClock::time_point::max(), [] {});
    if (next == n_recv) {
      int all = 0;
      check_mpi(MPI_Testall(static_cast<int>(n_send), reqs.data() + n_recv, &all,
                            MPI_STATUSES_IGNORE),
                "MPI_Testall");
      if (all != 0) return;
    }
  }
}

void MpiBackend::exchange_reduce_scatter(const char* in,
                                         const std::vector<std::int64_t>& block_start,
                                         std::size_t elem, MPI_Datatype type, MPI_Op op,
                                         char* out) {
  const auto e = static_cast<std::int64_t>(elem);
  const std::int64_t total = block_start[static_cast<std::size_t>(size_)];
  // Ranks [lo, hi) own the blocks this rank still reduces; their partial
  // results live in `mine` from element `base` on (first the input itself).
  int lo = 0;
  int hi = size_;
  const char* mine = in;
  std::int64_t base = 0;
  for (int step = size_ / 2; step >= 1; step /= 2) {
    const int partner = rank_ ^ step;
    const int mid = lo + (hi - lo) / 2;
    const bool low = (rank_ & step) == 0;
    const int keep_lo = low ? lo : mid, keep_hi = low ? mid : hi;
    const int give_lo = low ? mid : lo, give_hi = low ? hi : mid;
    const std::int64_t keep0 = block_start[static_cast<std::size_t>(keep_lo)];
    const std::int64_t keep_n = block_start[static_cast<std::size_t>(keep_hi)] - keep0;
    const std::int64_t give0 = block_start[static_cast<std::size_t>(give_lo)];
    const std::int64_t give_n = block_start[static_cast<std::size_t>(give_hi)] - give0;
    const char* keep_src = mine + (keep0 - base) * e;
    const bool first = mine == in;
    const bool last = step == 1;  // what is kept is this rank's block
    // The partner's part lands in `recv` and is reduced with `from` into
    // `into`. First and last round: it lands where the result goes (the
    // output in the last round, else reduced_), and this rank's own part
    // is reduced into it there, so the input stays as it is and at 2 ranks
    // nothing is allocated. Rounds in between (8 ranks and more): it lands
    // in incoming_ and is reduced into reduced_ in place.
    char* recv;
    const char* from;
    char* into;
    if (first || last) {
      if (!last && reduced_.size() < static_cast<std::size_t>(keep_n * e)) {
        reduced_.resize(static_cast<std::size_t>(keep_n * e));
      }
      recv = into = last ? out : reduced_.data();
      from = keep_src;
    } else {
      if (incoming_.size() < static_cast<std::size_t>(keep_n * e)) {
        incoming_.resize(static_cast<std::size_t>(keep_n * e));
      }
      recv = incoming_.data();
      from = recv;
      into = reduced_.data() + (keep0 - base) * e;
    }
    exchange_pieces(
        partner, mine + (give0 - base) * e, give_n * e, recv, keep_n * e,
        [&](std::int64_t at, std::int64_t bytes) {
          check_mpi(MPI_Reduce_local(from + at, into + at, static_cast<int>(bytes / e), type, op),
                    "MPI_Reduce_local");
        },
        "reduce_scatter", total);
    if (first) base = keep0;  // reduced_ starts at the first kept half
    mine = reduced_.data();
    lo = keep_lo;
    hi = keep_hi;
  }
}

void MpiBackend::exchange_allgather(char* out, const std::vector<std::int64_t>& block_start,
                                    std::size_t elem, const char* kind) {
  const auto e = static_cast<std::int64_t>(elem);
  const std::int64_t total = block_start[static_cast<std::size_t>(size_)];
  // Before the round of `step`, this rank holds the blocks of the `step`
  // ranks from rank & ~(step - 1) on, and its partner the next (or previous)
  // `step`.
  for (int step = 1; step < size_; step *= 2) {
    const int partner = rank_ ^ step;
    const int mine_lo = rank_ & ~(step - 1);
    const int theirs_lo = partner & ~(step - 1);
    const auto at = [&](int r) { return block_start[static_cast<std::size_t>(r)]; };
    exchange_pieces(partner, out + at(mine_lo) * e, (at(mine_lo + step) - at(mine_lo)) * e,
                    out + at(theirs_lo) * e, (at(theirs_lo + step) - at(theirs_lo)) * e,
                    [](std::int64_t, std::int64_t) {}, kind, total);
  }
}

torch::Tensor MpiBackend::broadcast(torch::Tensor tensor, int root) {
  std::optional<std::string> error = validate(tensor, std::nullopt);
  if (!error && (root < 0 || root >= size_)) {
    error = ::tnt::detail::concat("broadcast root ", root, " is not a rank of this job (0..", size_ - 1,
                           "): pass a root in that range");
  }
  agree(Collective::Broadcast, &tensor, std::nullopt, root, error);
  torch::Tensor host = to_host(tensor);
  const MPI_Datatype type = types_.datatype(dtype_of(host));
  auto* base = static_cast<char*>(host.data_ptr());
  for (std::int64_t done = 0; done < host.numel(); done += kMaxChunk) {
    const auto n = static_cast<int>(std::min(kMaxChunk, host.numel() - done));
    const PayloadWatch watch(watchdog_, seq_ - 1, "broadcast", host.numel());
    check_mpi(MPI_Bcast(base + done * host.element_size(), n, type, root, data_), "MPI_Bcast");
  }
  copy_back(tensor, host);
  return tensor;
}

torch::Tensor MpiBackend::allgather(torch::Tensor tensor) {
  std::optional<std::string> error = validate(tensor, std::nullopt);
  if (!error && tensor.dim() == 0) {
    error = "allgather needs a tensor with at least one dimension: use tensor.reshape({1})";
  }
  agree(Collective::Allgather, &tensor, std::nullopt, -1, error);
  const torch::Tensor host = to_host(tensor);
  std::vector<std::int64_t> shape = host.sizes().vec();
  shape[0] *= size_;
  torch::Tensor out = torch::empty(shape, host.options());
  if (host.numel() > 0) {
    const MPI_Datatype type = types_.datatype(dtype_of(host));
    const int n = as_count(host.numel(), "allgather");
    as_count(out.numel(), "allgather result");
    const PayloadWatch watch(watchdog_, seq_ - 1, "allgather", host.numel());
    if (handshake_.carries_payloads()) {
      std::vector<std::int64_t> block_start(static_cast<std::size_t>(size_) + 1);
      for (int r = 0; r <= size_; ++r) block_start[static_cast<std::size_t>(r)] = r * host.numel();
      std::memcpy(static_cast<char*>(out.data_ptr()) + rank_ * host.nbytes(), host.data_ptr(),
                  host.nbytes());
      exchange_allgather(static_cast<char*>(out.data_ptr()), block_start, host.element_size(),
                         "allgather");
    } else {
      check_mpi(MPI_Allgather(host.data_ptr(), n, type, out.data_ptr(), n, type, data_),
                "MPI_Allgather");
    }
  }
  return out.to(tensor.device());
}

torch::Tensor MpiBackend::allgatherv(torch::Tensor tensor) {
  std::optional<std::string> error = validate(tensor, std::nullopt);
  if (!error && tensor.dim() == 0) {
    error = "allgatherv needs a tensor with at least one dimension: use tensor.reshape({1})";
  }
  const auto table = agree(Collective::Allgatherv, &tensor, std::nullopt, -1, error).table;
  const torch::Tensor host = to_host(tensor);
  std::vector<int> counts(size_), displs(size_);
  std::int64_t rows = 0, offset = 0;
  for (int r = 0; r < size_; ++r) {
    counts[r] = as_count(table[r].numel, "allgatherv");
    displs[r] = as_count(offset, "allgatherv result");
    offset += table[r].numel;
    rows += table[r].sizes[0];
  }
  std::vector<std::int64_t> shape = host.sizes().vec();
  shape[0] = rows;
  torch::Tensor out = torch::empty(shape, host.options());
  if (out.numel() > 0) {
    const MPI_Datatype type = types_.datatype(dtype_of(host));
    const PayloadWatch watch(watchdog_, seq_ - 1, "allgatherv", out.numel());
    if (handshake_.carries_payloads()) {
      // Power-of-two groups: recursive doubling of our own, straight into
      // the result.
      std::vector<std::int64_t> block_start(static_cast<std::size_t>(size_) + 1, 0);
      for (int r = 0; r < size_; ++r) {
        block_start[static_cast<std::size_t>(r) + 1] =
            block_start[static_cast<std::size_t>(r)] + counts[static_cast<std::size_t>(r)];
      }
      std::memcpy(static_cast<char*>(out.data_ptr()) +
                      block_start[static_cast<std::size_t>(rank_)] * host.element_size(),
                  host.data_ptr(), host.nbytes());
      exchange_allgather(static_cast<char*>(out.data_ptr()), block_start, host.element_size(),
                         "allgatherv");
      return out.to(tensor.device());
    }
    // At most kMaxChunk elements per call in all (as allreduce and
    // broadcast move them): round k carries the k-th part of every rank's
    // block, sent from its place and received into its place.
    const std::int64_t part = std::max<std::int64_t>(1, kMaxChunk / size_);
    const std::int64_t longest = *std::max_element(counts.begin(), counts.end());
    const auto elem = static_cast<std::int64_t>(host.element_size());
    std::vector<int> round_counts(size_), round_displs(size_);
    for (std::int64_t done = 0; done < longest; done += part) {
      for (int r = 0; r < size_; ++r) {
        round_counts[r] = static_cast<int>(std::clamp<std::int64_t>(counts[r] - done, 0, part));
        round_displs[r] = static_cast<int>(displs[r] + std::min<std::int64_t>(done, counts[r]));
      }
      const std::int64_t sent = std::min<std::int64_t>(done, counts[rank_]);
      check_mpi(MPI_Allgatherv(static_cast<char*>(host.data_ptr()) + sent * elem,
                               round_counts[rank_], type, out.data_ptr(), round_counts.data(),
                               round_displs.data(), type, data_),
                "MPI_Allgatherv");
    }
  }
  return out.to(tensor.device());
}

torch::Tensor MpiBackend::reduce_scatter(torch::Tensor tensor, ReduceOp op) {
  std::optional<std::string> error = validate(tensor, op);
  if (!error && tensor.dim() == 0) {
    error = "reduce_scatter needs a tensor with at least one dimension: use tensor.reshape({1})";
  }
  agree(Collective::ReduceScatter, &tensor, op, -1, error);
  const torch::Tensor host = to_host(tensor);
  const std::int64_t row = host.size(0) == 0 ? 0 : host.numel() / host.size(0);
  const std::vector<std::int64_t> rows = split_rows(host.size(0), size_);
  std::vector<int> counts(size_);
  for (int r = 0; r < size_; ++r) counts[r] = as_count(rows[r] * row, "reduce_scatter");
  std::vector<std::int64_t> shape = host.sizes().vec();
  shape[0] = rows[rank_];
  torch::Tensor out = torch::empty(shape, host.options());
  if (host.numel() > 0) {
    const DType dtype = dtype_of(host);
    const PayloadWatch watch(watchdog_, seq_ - 1, "reduce_scatter", host.numel());
    if (handshake_.carries_payloads()) {
      // Power-of-two groups: recursive halving of our own.
      const auto elem = static_cast<std::int64_t>(host.element_size());
      const MPI_Datatype type = types_.datatype(dtype);
      const MPI_Op mpi_op = types_.op(dtype, op);
      std::vector<std::int64_t> block_start(static_cast<std::size_t>(size_) + 1, 0);
      for (int r = 0; r < size_; ++r) {
        block_start[static_cast<std::size_t>(r) + 1] =
            block_start[static_cast<std::size_t>(r)] + counts[static_cast<std::size_t>(r)];
      }
      const std::int64_t slab = std::max<std::int64_t>(1, kMaxChunk / size_);
      const std::int64_t longest = *std::max_element(counts.begin(), counts.end());
      const auto* in = static_cast<const char*>(host.data_ptr());
      auto* result = static_cast<char*>(out.data_ptr());
      if (size_ == 2 || longest <= slab) {
        // Straight from the input: at 2 ranks the partner's half lands in
        // the output, so nothing else is allocated.
        exchange_reduce_scatter(in, block_start, host.element_size(), type, mpi_op, result);
      } else {
        // From 4 ranks the first round keeps N/2 blocks of partial sums, so
        // large blocks go in slabs: slab k packs the k-th part (at most
        // kMaxChunk / N elements) of every rank's block side by side, which
        // bounds that buffer to kMaxChunk / 2 elements. The same partners
        // and the same sums per element as one exchange of the whole.
        std::vector<char> packed(static_cast<std::size_t>(slab * size_ * elem));
        std::vector<std::int64_t> packed_start(static_cast<std::size_t>(size_) + 1, 0);
        for (std::int64_t done = 0; done < longest; done += slab) {
          for (int r = 0; r < size_; ++r) {
            const std::int64_t n =
                std::clamp<std::int64_t>(counts[static_cast<std::size_t>(r)] - done, 0, slab);
            const std::int64_t at = packed_start[static_cast<std::size_t>(r)];
            if (n > 0) {
              std::memcpy(packed.data() + at * elem,
                          in + (block_start[static_cast<std::size_t>(r)] + done) * elem,
                          static_cast<std::size_t>(n * elem));
            }
            packed_start[static_cast<std::size_t>(r) + 1] = at + n;
          }
          const std::int64_t mine =
              std::min<std::int64_t>(done, counts[static_cast<std::size_t>(rank_)]);
          exchange_reduce_scatter(packed.data(), packed_start, host.element_size(), type, mpi_op,
                                  result + mine * elem);
        }
      }
      if (op == ReduceOp::Average) out.div_(size_);
      return out.to(tensor.device());
    }
    const std::int64_t part = std::max<std::int64_t>(1, kMaxChunk / size_);
    const std::int64_t longest = *std::max_element(counts.begin(), counts.end());
    if (longest <= part) {
      check_mpi(MPI_Reduce_scatter(host.data_ptr(), out.data_ptr(), counts.data(),
                                   types_.datatype(dtype), types_.op(dtype, op), data_),
                "MPI_Reduce_scatter");
    } else {
      // At most kMaxChunk elements per call in all, as allreduce: round k
      // reduces the k-th part of every rank's block, packed side by side.
      const auto elem = static_cast<std::int64_t>(host.element_size());
      std::vector<std::int64_t> block_start(size_, 0);
      for (int r = 1; r < size_; ++r) block_start[r] = block_start[r - 1] + counts[r - 1];
      torch::Tensor stage = torch::empty({part * size_}, host.options().dtype(host.dtype()));
      auto* packed = static_cast<char*>(stage.data_ptr());
      const auto* in = static_cast<const char*>(host.data_ptr());
      std::vector<int> round_counts(size_);
      for (std::int64_t done = 0; done < longest; done += part) {
        std::int64_t at = 0;
        for (int r = 0; r < size_; ++r) {
          const std::int64_t n = std::clamp<std::int64_t>(counts[r] - done, 0, part);
          round_counts[r] = static_cast<int>(n);
          if (n > 0) std::memcpy(packed + at * elem, in + (block_start[r] + done) * elem, n * elem);
          at += n;
        }
        const std::int64_t mine = std::min<std::int64_t>(done, counts[rank_]);
        check_mpi(MPI_Reduce_scatter(packed, static_cast<char*>(out.data_ptr()) + mine * elem,
                                     round_counts.data(), types_.datatype(dtype),
                                     types_.op(dtype, op), data_),
                  "MPI_Reduce_scatter");
      }
    }
  }
  if (op == ReduceOp::Average && size_ > 1) out.div_(size_);
  return out.to(tensor.device());
}

void MpiBackend::barrier() {
  // The check alone is a barrier: the master answers only once every rank
  // has arrived, and the fingerprint exchange completes only once every
  // rank's word has reached every rank.
  agree(Collective::Barrier, nullptr, std::nullopt, -1, std::nullopt);
}

void MpiBackend::finalize_check() {
  agree(Collective::Finalize, nullptr, std::nullopt, -1, std::nullopt);
}

std::unique_ptr<Backend> MpiBackend::split(int color, int key) {
  // Each group has an engine thread of its own; two engines may call MPI at
  // the same time only under MPI_THREAD_MULTIPLE.
  const std::optional<std::string> error =
      threads_multiple_
          ? std::nullopt
          : std::optional<std::string>(
                "process sets need an MPI library with MPI_THREAD_MULTIPLE (each group runs its "
                "own communication thread); this one provides less: use Debian's OpenMPI, or "
                "train on the world group only");
  agree(Collective::Split, nullptr, std::nullopt, -1, error);
  MPI_Comm part = MPI_COMM_NULL;
  check_mpi(MPI_Comm_split(data_, color < 0 ? MPI_UNDEFINED : color, key, &part),
            "MPI_Comm_split");
  if (part == MPI_COMM_NULL) return nullptr;
  auto out = std::make_unique<MpiBackend>(part, timeout_seconds_, threads_multiple_);
  MPI_Comm_free(&part);
  return out;
}

}  // namespace tnt::comm
