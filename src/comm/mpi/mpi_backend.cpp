#include "comm/mpi/mpi_backend.h"

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
#include "comm/rank_naming.h"

namespace tnt::comm {
namespace {

MPI_Comm duplicate(MPI_Comm world) {
  MPI_Comm out = MPI_COMM_NULL;
  check_mpi(MPI_Comm_dup(world, &out), "MPI_Comm_dup");
  MPI_Comm_set_errhandler(out, MPI_ERRORS_RETURN);
  return out;
}

int as_count(std::int64_t n, const char* what) {
  TNT_CHECK(n <= INT_MAX, what, " of ", n, " elements exceeds MPI's limit of ", INT_MAX,
            ": split the tensor into smaller pieces");
  return static_cast<int>(n);
}

// MPI_Allgatherv in rounds of at most kMaxChunk elements in all (as
// allreduce and broadcast move them): round k carries the k-th part of every
// rank's block, sent from its place and received into its place.
void allgatherv_in_rounds(const torch::Tensor& host, const std::vector<int>& counts,
                          const std::vector<int>& displs, int rank, MPI_Datatype type,
                          MPI_Comm comm, torch::Tensor& out) {
  const int size = static_cast<int>(counts.size());
  const std::int64_t part = std::max<std::int64_t>(1, kMaxChunk / size);
  const std::int64_t longest = *std::max_element(counts.begin(), counts.end());
  const auto elem = static_cast<std::int64_t>(host.element_size());
  std::vector<int> round_counts(size), round_displs(size);
  for (std::int64_t done = 0; done < longest; done += part) {
    for (int r = 0; r < size; ++r) {
      round_counts[r] = static_cast<int>(std::clamp<std::int64_t>(counts[r] - done, 0, part));
      round_displs[r] = static_cast<int>(displs[r] + std::min<std::int64_t>(done, counts[r]));
    }
    const std::int64_t sent = std::min<std::int64_t>(done, counts[rank]);
    check_mpi(MPI_Allgatherv(static_cast<char*>(host.data_ptr()) + sent * elem,
                             round_counts[rank], type, out.data_ptr(), round_counts.data(),
                             round_displs.data(), type, comm),
              "MPI_Allgatherv");
  }
}

// MPI_Reduce_scatter, in rounds of at most kMaxChunk elements in all where
// the blocks are larger, as allreduce: round k reduces the k-th part of
// every rank's block, packed side by side.
void reduce_scatter_in_rounds(const torch::Tensor& host, const std::vector<int>& counts,
                              int rank, MPI_Datatype type, MPI_Op op, MPI_Comm comm,
                              torch::Tensor& out) {
  const int size = static_cast<int>(counts.size());
  const std::int64_t part = std::max<std::int64_t>(1, kMaxChunk / size);
  const std::int64_t longest = *std::max_element(counts.begin(), counts.end());
  if (longest <= part) {
    check_mpi(MPI_Reduce_scatter(host.data_ptr(), out.data_ptr(), counts.data(), type, op, comm),
              "MPI_Reduce_scatter");
    return;
  }
  const auto elem = static_cast<std::int64_t>(host.element_size());
  const std::vector<std::int64_t> block_start = block_starts(counts);
  torch::Tensor stage = torch::empty({part * size}, host.options().dtype(host.dtype()));
  auto* packed = static_cast<char*>(stage.data_ptr());
  std::vector<std::int64_t> packed_start;
  std::vector<int> round_counts(size);
  for (std::int64_t done = 0; done < longest; done += part) {
    pack_parts(static_cast<const char*>(host.data_ptr()), block_start, done, part, elem, packed,
               packed_start);
    for (int r = 0; r < size; ++r) {
      round_counts[r] = static_cast<int>(packed_start[r + 1] - packed_start[r]);
    }
    const std::int64_t mine = std::min<std::int64_t>(done, counts[rank]);
    check_mpi(MPI_Reduce_scatter(packed, static_cast<char*>(out.data_ptr()) + mine * elem,
                                 round_counts.data(), type, op, comm),
              "MPI_Reduce_scatter");
  }
}

// Every rank's host (MPI_Get_processor_name), so that a timeout can say on
// which machine the missing rank runs. Collective; once per group.
std::vector<std::string> processor_names(MPI_Comm comm, int size) {
  std::vector<char> mine(MPI_MAX_PROCESSOR_NAME, '\0');
  int length = 0;
  MPI_Get_processor_name(mine.data(), &length);
  std::vector<char> all(static_cast<std::size_t>(size) * MPI_MAX_PROCESSOR_NAME);
  check_mpi(MPI_Allgather(mine.data(), MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all.data(),
                          MPI_MAX_PROCESSOR_NAME, MPI_CHAR, comm),
            "MPI_Allgather (host names)");
  std::vector<std::string> names;
  for (int r = 0; r < size; ++r) {
    const char* name = all.data() + static_cast<std::size_t>(r) * MPI_MAX_PROCESSOR_NAME;
    names.emplace_back(name, strnlen(name, MPI_MAX_PROCESSOR_NAME));
  }
  return names;
}

}  // namespace

MpiBackend::MpiBackend(MPI_Comm comm, double timeout_seconds, bool threads_multiple,
                       const StackService* stacks)
    : data_(duplicate(comm)),
      control_(duplicate(comm)),
      fast_(duplicate(comm)),
      timeout_seconds_(timeout_seconds),
      threads_multiple_(threads_multiple),
      stacks_(stacks),
      handshake_(control_, fast_, 0, 1, timeout_seconds),
      device_staging_(timeout_seconds),
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
  handshake_.set_hosts(processor_names(control_, size_));
  if (stacks_ != nullptr) {
    handshake_.set_locator([this](const std::vector<int>& missing) { return where_are(missing); });
  }
  p2p_ = std::make_unique<MpiP2p>(data_, timeout_seconds, threads_multiple, handshake_.hosts(),
                                  [this](int rank) {
                                    return stacks_ != nullptr ? where_are({rank}) : std::string();
                                  });
}

// The sentences for the ranks of this group that did not arrive, asked of
// them through the world's StackService; the whole dumps go to the log.
std::string MpiBackend::where_are(const std::vector<int>& missing) const {
  MPI_Group mine = MPI_GROUP_NULL, world = MPI_GROUP_NULL;
  std::vector<int> world_ranks(missing.size(), MPI_UNDEFINED);
  MPI_Comm_group(data_, &mine);
  MPI_Comm_group(MPI_COMM_WORLD, &world);
  MPI_Group_translate_ranks(mine, static_cast<int>(missing.size()), missing.data(), world,
                            world_ranks.data());
  MPI_Group_free(&mine);
  MPI_Group_free(&world);
  const double seconds = stack_wait_seconds(timeout_seconds_);
  const auto answers = stacks_->where_are(world_ranks, seconds);
  std::string out;
  for (std::size_t i = 0; i < missing.size(); ++i) {
    const auto r = static_cast<std::size_t>(missing[i]);
    const std::string host = r < handshake_.hosts().size() ? handshake_.hosts()[r] : "";
    const std::string sentence = where_sentence(missing[i], host, answers[i], seconds);
    out += (i ? "; " : "") + sentence;
    if (!answers[i].dump.empty()) {
      ::tnt::log::warning(::tnt::detail::concat("stack of rank ", missing[i], " (host ",
                                                answers[i].host, "), innermost call first:\n",
                                                answers[i].dump));
    }
  }
  return out;
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
                                        Handshake::Piggyback* small, int payload) {
  const Descriptor d =
      describe_call(seq_++, kind, tensor, op, root, local_error.has_value(), payload);
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
  const std::string verdict =
      threads_multiple_ ? who_stopped(payload.seq, "MPI")
                        : std::string("the rank that stopped could not be determined (MPI "
                                      "without MPI_THREAD_MULTIPLE)");
  // Told as the group that owns this backend tells its errors (in the job's
  // ranks, with their roles): this one cannot be thrown through it.
  const std::string message = retold_by_group(
      this, ::tnt::detail::concat("[tarantella rank ", rank_, "] collective #", payload.seq, " (",
                                  payload.what, ") did not complete within ", timeout_seconds_,
                                  " s (TNT_COMM_TIMEOUT) although every rank had agreed to it: ",
                                  verdict));
  std::fprintf(stderr, "%s\n", message.c_str());
  std::fflush(nullptr);
  // The blocked MPI call cannot be unwound: end the process; the launcher
  // then stops the job.
  std::_Exit(1);
}

std::string MpiBackend::who_stopped(std::int64_t seq, const char* transport) {
  const std::vector<int> missing =
      handshake_.probe_missing(seq, std::min(5.0, 0.5 + 0.1 * timeout_seconds_));
  if (missing.empty()) {
    return ::tnt::detail::concat("every rank still answers, so ", transport, " itself is stuck");
  }
  // Asked where it is, as a rank missing at the handshake is: a rank that
  // hangs (not stopped) answers with its stack.
  const std::string where = stacks_ != nullptr ? where_are(missing) : std::string();
  return ::tnt::detail::concat(rank_list(missing, handshake_.hosts()),
                               " stopped answering (stopped, hung, or cut off)",
                               where.empty() ? "" : "; ", where);
}

std::vector<Descriptor> MpiBackend::check(Collective kind, const torch::Tensor* tensor,
                                          std::optional<ReduceOp> op, int root,
                                          const std::optional<std::string>& local_error,
                                          int payload) {
  return agree(kind, tensor, op, root, local_error, nullptr, payload).table;
}

ExchangeContext MpiBackend::exchange_context() {
  return {data_, rank_, size_, local_size_ < size_, incoming_, reduced_, watchdog_, seq_ - 1};
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
  torch::Tensor host = device_staging_.to_host(tensor);
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
      exchange_allreduce(exchange_context(), base + done * host.element_size(), n,
                         host.element_size(), type, mpi_op);
      continue;
    }
    check_mpi(MPI_Allreduce(MPI_IN_PLACE, base + done * host.element_size(), n, type, mpi_op,
                            data_),
              "MPI_Allreduce");
  }
  if (op == ReduceOp::Average && size_ > 1) host.div_(size_);
  device_staging_.to_device(tensor, host);
  return tensor;
}

torch::Tensor MpiBackend::broadcast(torch::Tensor tensor, int root) {
  std::optional<std::string> error = validate(tensor, std::nullopt);
  if (!error && (root < 0 || root >= size_)) {
    error = ::tnt::detail::concat("broadcast root ", root, " is not a rank of this job (0..", size_ - 1,
                           "): pass a root in that range");
  }
  agree(Collective::Broadcast, &tensor, std::nullopt, root, error);
  torch::Tensor host = device_staging_.to_host(tensor);
  const MPI_Datatype type = types_.datatype(dtype_of(host));
  auto* base = static_cast<char*>(host.data_ptr());
  for (std::int64_t done = 0; done < host.numel(); done += kMaxChunk) {
    const auto n = static_cast<int>(std::min(kMaxChunk, host.numel() - done));
    const PayloadWatch watch(watchdog_, seq_ - 1, "broadcast", host.numel());
    check_mpi(MPI_Bcast(base + done * host.element_size(), n, type, root, data_), "MPI_Bcast");
  }
  device_staging_.to_device(tensor, host);
  return tensor;
}

torch::Tensor MpiBackend::allgather(torch::Tensor tensor) {
  std::optional<std::string> error = validate(tensor, std::nullopt);
  if (!error && tensor.dim() == 0) {
    error = "allgather needs a tensor with at least one dimension: use tensor.reshape({1})";
  }
  agree(Collective::Allgather, &tensor, std::nullopt, -1, error);
  const torch::Tensor host = device_staging_.to_host(tensor);
  std::vector<std::int64_t> shape = host.sizes().vec();
  shape[0] *= size_;
  torch::Tensor out = device_staging_.result_buffer(shape, tensor);
  if (host.numel() > 0) {
    const MPI_Datatype type = types_.datatype(dtype_of(host));
    const int n = as_count(host.numel(), "allgather");
    as_count(out.numel(), "allgather result");
    const PayloadWatch watch(watchdog_, seq_ - 1, "allgather", host.numel());
    if (handshake_.carries_payloads()) {
      exchange_allgather(exchange_context(), static_cast<const char*>(host.data_ptr()),
                         std::vector<int>(static_cast<std::size_t>(size_), n),
                         host.element_size(), static_cast<char*>(out.data_ptr()), "allgather");
    } else {
      check_mpi(MPI_Allgather(host.data_ptr(), n, type, out.data_ptr(), n, type, data_),
                "MPI_Allgather");
    }
  }
  return device_staging_.result_to_device(out, tensor.device());
}

torch::Tensor MpiBackend::allgatherv(torch::Tensor tensor) {
  std::optional<std::string> error = validate(tensor, std::nullopt);
  if (!error && tensor.dim() == 0) {
    error = "allgatherv needs a tensor with at least one dimension: use tensor.reshape({1})";
  }
  const auto table = agree(Collective::Allgatherv, &tensor, std::nullopt, -1, error).table;
  const torch::Tensor host = device_staging_.to_host(tensor);
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
  torch::Tensor out = device_staging_.result_buffer(shape, tensor);
  if (out.numel() > 0) {
    const MPI_Datatype type = types_.datatype(dtype_of(host));
    const PayloadWatch watch(watchdog_, seq_ - 1, "allgatherv", out.numel());
    if (handshake_.carries_payloads()) {
      // Power-of-two groups: recursive doubling of our own, straight into
      // the result.
      exchange_allgather(exchange_context(), static_cast<const char*>(host.data_ptr()), counts,
                         host.element_size(), static_cast<char*>(out.data_ptr()), "allgatherv");
    } else {
      allgatherv_in_rounds(host, counts, displs, rank_, type, data_, out);
    }
  }
  return device_staging_.result_to_device(out, tensor.device());
}

torch::Tensor MpiBackend::reduce_scatter(torch::Tensor tensor, ReduceOp op) {
  std::optional<std::string> error = validate(tensor, op);
  if (!error && tensor.dim() == 0) {
    error = "reduce_scatter needs a tensor with at least one dimension: use tensor.reshape({1})";
  }
  agree(Collective::ReduceScatter, &tensor, op, -1, error);
  const torch::Tensor host = device_staging_.to_host(tensor);
  const std::int64_t row = host.size(0) == 0 ? 0 : host.numel() / host.size(0);
  const std::vector<std::int64_t> rows = split_rows(host.size(0), size_);
  std::vector<int> counts(size_);
  for (int r = 0; r < size_; ++r) counts[r] = as_count(rows[r] * row, "reduce_scatter");
  std::vector<std::int64_t> shape = host.sizes().vec();
  shape[0] = rows[rank_];
  torch::Tensor out = device_staging_.result_buffer(shape, tensor);
  if (host.numel() > 0) {
    const DType dtype = dtype_of(host);
    const MPI_Datatype type = types_.datatype(dtype);
    const MPI_Op mpi_op = types_.op(dtype, op);
    const PayloadWatch watch(watchdog_, seq_ - 1, "reduce_scatter", host.numel());
    if (handshake_.carries_payloads()) {
      // Power-of-two groups: recursive halving of our own.
      exchange_reduce_scatter(exchange_context(), static_cast<const char*>(host.data_ptr()),
                              counts, host.element_size(), type, mpi_op,
                              static_cast<char*>(out.data_ptr()));
      if (op == ReduceOp::Average) out.div_(size_);
      return device_staging_.result_to_device(out, tensor.device());
    }
    reduce_scatter_in_rounds(host, counts, rank_, type, mpi_op, data_, out);
  }
  if (op == ReduceOp::Average && size_ > 1) out.div_(size_);
  return device_staging_.result_to_device(out, tensor.device());
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
  auto out = std::make_unique<MpiBackend>(part, timeout_seconds_, threads_multiple_, stacks_);
  MPI_Comm_free(&part);
  return out;
}

}  // namespace tnt::comm
