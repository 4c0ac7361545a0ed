// The pure half of the consistency check: describing a collective and
// judging a table of descriptors. Shared by every backend (MPI's handshake,
// the in-process backend), so all report a mismatch in the same words.
#include "comm/descriptor.h"

#include <algorithm>
#include <map>
#include <sstream>

#include <tarantella/base/error.h>

#include "comm/dtype.h"

namespace tnt::comm {
namespace {

std::string ranks_text(const std::vector<int>& ranks) {
  std::ostringstream out;
  out << (ranks.size() == 1 ? "rank " : "ranks ");
  for (std::size_t i = 0; i < ranks.size(); ++i) out << (i ? "," : "") << ranks[i];
  return out.str();
}

// The fields that must agree for `kind`, as a comparable string.
std::string signature(const Descriptor& d) {
  const auto kind = static_cast<Collective>(d.collective);
  if (kind == Collective::Barrier || kind == Collective::Finalize || kind == Collective::Split) return describe(d);
  if (kind == Collective::Allgatherv) {
    // Dimension 0 may differ; everything else must match.
    Descriptor row = d;
    row.numel = 0;
    row.sizes[0] = 0;
    return describe(row);
  }
  return describe(d);
}

}  // namespace

std::string rank_list(const std::vector<int>& ranks) { return ranks_text(ranks); }

std::string rank_list(const std::vector<int>& ranks, const std::vector<std::string>& hosts) {
  std::ostringstream names;
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    const auto r = static_cast<std::size_t>(ranks[i]);
    if (ranks[i] < 0 || r >= hosts.size() || hosts[r].empty()) return ranks_text(ranks);
    names << (i ? "," : "") << hosts[r];
  }
  if (ranks.empty()) return ranks_text(ranks);
  return ranks_text(ranks) + (ranks.size() == 1 ? " (on host " : " (on hosts ") + names.str() + ")";
}

std::uint64_t fingerprint(const Descriptor& d) {
  // splitmix64's finalizer over each field in turn: every bit of every field
  // reaches every bit of the result, so two descriptors that differ anywhere
  // collide with probability ~2^-64.
  std::uint64_t h = 0x9e3779b97f4a7c15ULL;
  const auto mix = [&h](std::int64_t v) {
    std::uint64_t z = h ^ (static_cast<std::uint64_t>(v) + 0x9e3779b97f4a7c15ULL + (h << 6));
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    h = z ^ (z >> 31);
  };
  mix(d.collective);
  mix(d.op);
  mix(d.dtype);
  mix(d.root);
  mix(d.ndim);
  mix(d.numel);
  for (int i = 0; i < d.ndim && i < kMaxDims; ++i) mix(d.sizes[i]);
  mix(d.payload);
  return h == 0 ? 1 : h;
}

const char* to_string(Collective c) {
  switch (c) {
    case Collective::Allreduce: return "allreduce";
    case Collective::Broadcast: return "broadcast";
    case Collective::Allgather: return "allgather";
    case Collective::Allgatherv: return "allgatherv";
    case Collective::ReduceScatter: return "reduce_scatter";
    case Collective::Barrier: return "barrier";
    case Collective::Finalize: return "runtime shutdown";
    case Collective::Split: return "split";
  }
  return "?";
}

std::string describe(const Descriptor& d) {
  std::ostringstream out;
  const auto kind = static_cast<Collective>(d.collective);
  out << to_string(kind);
  if (d.op >= 0) out << "(" << to_string(static_cast<ReduceOp>(d.op)) << ")";
  if (d.root >= 0) out << "(root " << d.root << ")";
  if (kind == Collective::Barrier || kind == Collective::Finalize || kind == Collective::Split) return out.str();
  if (d.dtype >= 0) out << " " << to_string(static_cast<DType>(d.dtype));
  out << " [";
  for (int i = 0; i < d.ndim && i < kMaxDims; ++i) out << (i ? ", " : "") << d.sizes[i];
  if (d.ndim > kMaxDims) out << ", ...";
  out << "]";
  if (d.payload == 1) out << " on the GPU (NCCL)";
  return out.str();
}

std::string check_table(const std::vector<Descriptor>& table) {
  std::vector<int> missing, failed;
  std::map<std::string, std::vector<int>> groups;  // signature -> ranks
  for (int r = 0; r < static_cast<int>(table.size()); ++r) {
    if (!table[r].arrived) {
      missing.push_back(r);
    } else if (table[r].failed) {
      failed.push_back(r);
    } else {
      groups[signature(table[r])].push_back(r);
    }
  }
  const long long seq = table.empty() ? 0 : table[0].seq;
  if (!missing.empty()) {
    return ::tnt::detail::concat("collective #", seq, " (", describe(table[0]), " on rank 0): ",
                          ranks_text(missing),
                          " did not arrive within the timeout (TNT_COMM_TIMEOUT): the rank is "
                          "stuck, far behind, or called a different number of collectives");
  }
  if (!failed.empty()) {
    return ::tnt::detail::concat("collective #", seq, ": ", ranks_text(failed),
                          " rejected its arguments (see that rank's error above); no data was "
                          "exchanged");
  }
  if (groups.size() <= 1) return "";
  std::ostringstream out;
  out << "collective #" << seq << " mismatch across ranks: ";
  bool first = true;
  for (const auto& [sig, ranks] : groups) {
    out << (first ? "" : "; ") << ranks_text(ranks) << " called " << sig;
    first = false;
  }
  out << ". Every rank must call the same collectives in the same order with the same "
         "operation, dtype, shape and root";
  const bool nccl = std::any_of(table.begin(), table.end(),
                                [](const Descriptor& d) { return d.payload == 1; });
  if (nccl) out << ", and over NCCL with the tensor on the GPU on every rank or on none";
  return out.str();
}

}  // namespace tnt::comm

namespace tnt::comm {

std::optional<std::string> validate(const torch::Tensor& tensor, std::optional<ReduceOp> op) {
  try {
    TNT_CHECK(tensor.defined(), "collective called with an undefined tensor: pass a tensor");
    TNT_CHECK(tensor.is_contiguous(), "collectives need contiguous tensors, got one with sizes ",
              tensor.sizes(), " and strides ", tensor.strides(), ": call .contiguous() first");
    const DType dtype = dtype_of(tensor);
    if (op) check_supported(dtype, *op);
  } catch (const Error& e) {
    return std::string(e.what());
  }
  return std::nullopt;
}

Descriptor describe_call(std::int64_t seq, Collective kind, const torch::Tensor* tensor,
                         std::optional<ReduceOp> op, int root, bool failed, int payload) {
  Descriptor d;
  d.payload = payload;
  d.seq = seq;
  d.collective = static_cast<std::int32_t>(kind);
  d.op = op ? static_cast<std::int32_t>(*op) : -1;
  d.root = root;
  d.failed = failed ? 1 : 0;
  if (tensor != nullptr && !failed) {
    d.dtype = static_cast<std::int32_t>(dtype_of(*tensor));
    d.ndim = static_cast<std::int32_t>(tensor->dim());
    d.numel = tensor->numel();
    for (int i = 0; i < d.ndim && i < kMaxDims; ++i) d.sizes[i] = tensor->size(i);
  }
  return d;
}

std::vector<std::int64_t> split_rows(std::int64_t total, int n) {
  std::vector<std::int64_t> rows(static_cast<std::size_t>(n), total / n);
  for (int r = 0; r < total % n; ++r) ++rows[static_cast<std::size_t>(r)];
  return rows;
}

}  // namespace tnt::comm
