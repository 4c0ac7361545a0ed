// Private: what one rank says about the collective it is about to run, and
// the pure verdict on the table of every rank's descriptor. The MPI backend
// exchanges descriptors through its master rank (handshake.h); the
// in-process backend through shared memory; both judge with check_table, so
// every rank of every backend raises the same error in the same words.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tnt::comm {

enum class Collective : std::int32_t {
  Allreduce,
  Broadcast,
  Allgather,
  Allgatherv,
  ReduceScatter,
  Barrier,
  Finalize,
  Split
};
const char* to_string(Collective c);

constexpr int kMaxDims = 8;

/// What one rank is about to do. Trivially copyable: sent as raw bytes.
struct Descriptor {
  std::int64_t seq = 0;
  std::int32_t collective = 0;
  std::int32_t op = -1;      ///< ReduceOp, or -1 where none applies
  std::int32_t dtype = -1;   ///< DType, or -1 where none applies
  std::int32_t root = -1;    ///< broadcast root, or -1
  std::int32_t ndim = 0;
  std::int32_t arrived = 1;  ///< set to 0 for a rank that did not arrive
  std::int32_t failed = 0;   ///< 1: the rank rejected its own arguments
  /// Where the payload goes: 0 host memory (MPI, staged or not), 1 a GPU
  /// over NCCL. An NCCL group takes host tensors over MPI, so ranks that
  /// disagree here would wait in different transports.
  std::int32_t payload = 0;
  std::int64_t numel = 0;
  std::int64_t sizes[kMaxDims] = {};
};

/// Human-readable form, e.g. "allreduce(sum) float32 [2, 3]".
std::string describe(const Descriptor& d);

/// The verdict on a complete table: empty if consistent, else the message
/// every rank raises. Pure, so all ranks reach the same conclusion.
std::string check_table(const std::vector<Descriptor>& table);

/// "rank 3" or "ranks 1,2".
std::string rank_list(const std::vector<int>& ranks);

/// rank_list() with the ranks' hosts, when `hosts` (index = rank) has them:
/// "rank 3 (on host node07)", "ranks 1,2 (on hosts node02,node03)". Where
/// the job spans machines, the host tells which machine or link to look at.
std::string rank_list(const std::vector<int>& ranks, const std::vector<std::string>& hosts);

/// A 64-bit fingerprint of the fields check_table compares (kind, op, dtype,
/// root, shape; not seq, arrived or failed), for the response cache
/// (response_cache.h). Never 0: 0 means "no fingerprint".
std::uint64_t fingerprint(const Descriptor& d);

}  // namespace tnt::comm

// ---- shared by the backends: argument checks and the micro-batch rule ----

#include <optional>

#include <torch/types.h>

#include <tarantella/comm/reduce_op.h>

namespace tnt::comm {

/// Why `tensor` cannot take part in a collective with `op` (undefined,
/// not contiguous, unsupported dtype/op), or nullopt if it can.
std::optional<std::string> validate(const torch::Tensor& tensor, std::optional<ReduceOp> op);

/// The descriptor of a call; `tensor` may be null (barrier, split).
/// `payload`: Descriptor::payload (1: a GPU tensor over NCCL).
Descriptor describe_call(std::int64_t seq, Collective kind, const torch::Tensor* tensor,
                         std::optional<ReduceOp> op, int root, bool failed, int payload = 0);

/// The micro-batch rule: `total` rows over `n` parts, the first total mod n
/// parts one row more.
std::vector<std::int64_t> split_rows(std::int64_t total, int n);

}  // namespace tnt::comm
