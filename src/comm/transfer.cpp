// The pure half of point-to-point transfers, shared by every backend: the
// argument checks, the header, the mismatch verdict and the sentences of
// the errors (transfer.h says why they live in one place).
#include "comm/transfer.h"

#include <algorithm>
#include <cstring>
#include <sstream>

#include <tarantella/base/error.h>

#include "comm/dtype.h"

namespace tnt::comm {

P2pHeader header_of(const torch::Tensor& tensor, std::int64_t seq, const std::string& what) {
  P2pHeader h;
  h.seq = seq;
  h.dtype = static_cast<std::int32_t>(dtype_of(tensor));
  h.ndim = static_cast<std::int32_t>(tensor.dim());
  h.numel = tensor.numel();
  h.nbytes = static_cast<std::int64_t>(tensor.nbytes());
  for (int i = 0; i < h.ndim && i < kMaxDims; ++i) h.sizes[i] = tensor.size(i);
  std::memcpy(h.what, what.data(), std::min<std::size_t>(what.size(), kMaxLabel - 1));
  return h;
}

std::string shape_text(const P2pHeader& h) {
  std::ostringstream out;
  if (h.dtype >= 0) out << to_string(static_cast<DType>(h.dtype)) << " ";
  out << "[";
  for (int i = 0; i < h.ndim && i < kMaxDims; ++i) out << (i ? ", " : "") << h.sizes[i];
  if (h.ndim > kMaxDims) out << ", ...";
  out << "]";
  if (h.device) out << " on the GPU";
  return out.str();
}

bool peer_is_valid(const Transfer& t, int rank, int size, int max_tag) {
  return t.peer >= 0 && t.peer < size && t.peer != rank && t.tag >= 0 && t.tag <= max_tag;
}

std::optional<std::string> transfer_problem(const Transfer& t, bool receiving, int rank, int size,
                                            int max_tag) {
  const char* call = receiving ? "recv" : "send";
  const std::string label = t.what.empty() ? "" : ::tnt::detail::concat(" of '", t.what, "'");
  if (t.peer < 0 || t.peer >= size) {
    return ::tnt::detail::concat(call, label, ": peer ", t.peer, " is not a rank of this group (0..",
                                 size - 1, "): pass the group rank of the other stage");
  }
  if (t.peer == rank) {
    return ::tnt::detail::concat(call, label, ": peer ", t.peer,
                                 " is this rank itself: a rank cannot send to or receive from "
                                 "itself; copy the tensor instead");
  }
  if (t.tag < 0 || t.tag > max_tag) {
    return ::tnt::detail::concat(call, label, ": tag ", t.tag, " is out of range: pass a tag in 0..",
                                 max_tag);
  }
  if (!t.tensor.defined()) {
    return ::tnt::detail::concat(call, label, " with an undefined tensor: pass ",
                                 receiving ? "a preallocated tensor of the sender's dtype and shape"
                                           : "the tensor to send");
  }
  if (!t.tensor.is_contiguous()) {
    return ::tnt::detail::concat(call, label, " needs a contiguous tensor, got one with sizes ",
                                 t.tensor.sizes(), " and strides ", t.tensor.strides(),
                                 receiving ? ": receive into a contiguous tensor and copy it into "
                                             "the view afterwards"
                                           : ": call .contiguous() first");
  }
  if (t.tensor.dim() > kMaxDims) {
    return ::tnt::detail::concat(call, label, " of a tensor with ", t.tensor.dim(),
                                 " dimensions: at most ", kMaxDims,
                                 " are supported; reshape it first");
  }
  try {
    dtype_of(t.tensor);
  } catch (const Error& e) {
    return ::tnt::detail::concat(call, label, ": ", e.what());
  }
  return std::nullopt;
}

std::string transfer_text(const Transfer& t, bool receiving) {
  std::ostringstream out;
  out << (receiving ? "recv" : "send");
  if (!t.what.empty()) out << " of '" << t.what << "'";
  out << " (";
  if (t.tensor.defined()) {
    try {
      out << shape_text(header_of(t.tensor, 0, "")) << ", ";
    } catch (const Error&) {
    }
  }
  out << "tag " << t.tag << ") " << (receiving ? "from" : "to") << " rank " << t.peer;
  return out.str();
}

std::string mismatch_text(const P2pHeader& sent, int sender, const P2pHeader& expected,
                          int receiver, int tag) {
  bool same = sent.dtype == expected.dtype && sent.ndim == expected.ndim &&
              sent.device == expected.device;
  for (int i = 0; same && i < sent.ndim && i < kMaxDims; ++i) {
    same = sent.sizes[i] == expected.sizes[i];
  }
  if (same) return "";
  const std::string label(sent.what, strnlen(sent.what, kMaxLabel));
  const std::string label_r(expected.what, strnlen(expected.what, kMaxLabel));
  std::ostringstream out;
  out << "point-to-point mismatch";
  if (!label.empty()) out << " on '" << label << "'";
  out << " (tag " << tag << ", transfer #" << sent.seq << " from rank " << sender << " to rank "
      << receiver << "): rank " << sender << " sent " << shape_text(sent) << ", rank " << receiver
      << " expected " << shape_text(expected);
  if (label_r != label) out << " (its recv is labelled '" << label_r << "')";
  if (sent.device != expected.device) {
    out << ". On an NCCL group both ends of a transfer must hold the tensor on the GPU, or both "
           "in host memory";
  }
  out << ". A recv must be given a tensor of the sender's dtype and shape, and each pair of "
         "ranks must send and receive on a tag in the same order";
  return out.str();
}

std::string sender_failed_text(const Transfer& t, int rank) {
  return ::tnt::detail::concat("[tarantella rank ", rank, "] ", transfer_text(t, true),
                               ": rank ", t.peer,
                               " rejected its own arguments to the matching send (see that "
                               "rank's error); no data was sent");
}

std::string receiver_failed_text(const Transfer& t, int rank) {
  return ::tnt::detail::concat("[tarantella rank ", rank, "] ", transfer_text(t, false),
                               ": rank ", t.peer,
                               " could not receive it on the GPU transport (NCCL; see that "
                               "rank's error); no data was sent");
}

std::string timeout_text(const Transfer& t, bool receiving, int rank, double seconds,
                         const std::string& peer_text, bool started, const std::string& where) {
  std::ostringstream out;
  out << "[tarantella rank " << rank << "] " << transfer_text(t, receiving)
      << " did not complete within " << seconds << " s (TNT_COMM_TIMEOUT): ";
  if (started) {
    out << "the data began to move, then " << peer_text << " stopped answering";
  } else if (receiving) {
    out << peer_text << " did not send it (it is stuck, far behind, dead, or sends on another "
        << "tag)";
  } else {
    out << peer_text << " did not receive it (it is stuck, far behind, dead, or receives on "
        << "another tag)";
  }
  if (!where.empty()) out << "; " << where;
  out << ". The group is unusable now: the job must end";
  return out.str();
}

}  // namespace tnt::comm
