// Private: what every backend's point-to-point transfers share. A sender
// describes its tensor in a fixed-size P2pHeader (dtype, shape, its label)
// that travels ahead of the data; the receiver compares it with its own
// buffer and answers with a P2pAck (agreed, or its own header), so both
// raise the same MismatchError in the same words. The argument checks and
// the sentences of the errors live here too, so the MPI, in-process and
// NCCL backends name a transfer alike ("recv of 'stage 1 activations'
// (float32 [8, 16], tag 0) from rank 1").
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <torch/types.h>

#include <tarantella/comm/backend.h>

#include "comm/descriptor.h"

namespace tnt::comm {

/// The longest label a header carries (longer ones are cut).
constexpr int kMaxLabel = 64;
/// What a first header to a peer may carry to open a channel of the
/// device transport (NCCL's unique id, 128 bytes).
constexpr int kMaxChannelToken = 128;

/// A transfer as its sender describes it. Trivially copyable: sent as bytes.
struct P2pHeader {
  std::int64_t seq = 0;     ///< the transfer's number in its (peer, tag) stream
  std::int64_t numel = 0;
  std::int64_t nbytes = 0;
  std::int64_t sizes[kMaxDims] = {};
  std::int32_t dtype = -1;  ///< DType
  std::int32_t ndim = 0;
  std::int32_t failed = 0;  ///< 1: the sender rejected its own arguments
  std::int32_t device = 0;  ///< 1: the payload goes over the device transport (NCCL)
  std::int32_t opens = 0;   ///< 1: `channel` opens the device transport's channel to the receiver
  std::int32_t pad = 0;
  char what[kMaxLabel] = {};
  char channel[kMaxChannelToken] = {};
};

/// The receiver's answer to a header.
struct P2pAck {
  std::int64_t tag = 0;
  std::int64_t seq = 0;
  std::int32_t agreed = 0;  ///< 0: `receiver` differs from the sender's header
  std::int32_t pad = 0;
  P2pHeader receiver;       ///< the receiver's own view of the transfer
};

/// The header of `tensor` (defined, contiguous, supported dtype).
P2pHeader header_of(const torch::Tensor& tensor, std::int64_t seq, const std::string& what);

/// "float32 [8, 16]".
std::string shape_text(const P2pHeader& h);

/// Why `t` cannot be sent (`receiving` false) or received into by `rank` of
/// a group of `size` ranks whose largest tag is `max_tag`: a peer out of
/// range or this rank itself, a negative tag, an undefined, non-contiguous
/// or unsupported tensor. nullopt when it can.
std::optional<std::string> transfer_problem(const Transfer& t, bool receiving, int rank, int size,
                                            int max_tag);

/// Whether the problem concerns the tensor only (the peer and tag are
/// valid): then the sender tells its receiver, which fails at once instead
/// of waiting for data that will not come.
bool peer_is_valid(const Transfer& t, int rank, int size, int max_tag);

/// "send of 'stage 1 activations' (float32 [8, 16], tag 0) to rank 1": the
/// transfer in errors. `receiving` picks "recv of ... from".
std::string transfer_text(const Transfer& t, bool receiving);

/// The sentence both ranks raise when `sent` (by rank `sender`) and
/// `expected` (by rank `receiver`) differ in dtype, shape, or in whether
/// the device transport carries them; empty when they agree.
std::string mismatch_text(const P2pHeader& sent, int sender, const P2pHeader& expected,
                          int receiver, int tag);

/// The receiver's error when its sender rejected its own arguments.
std::string sender_failed_text(const Transfer& t, int rank);
/// A send's error when its receiver could not take the data on the device
/// transport (NCCL): nothing was sent.
std::string receiver_failed_text(const Transfer& t, int rank);

/// The TimeoutError's sentence for a transfer of rank `rank` that waited
/// `seconds` without its peer taking part. `peer_text`: the peer as
/// rank_list names it (with its host); `started`: the data had begun to
/// move. `where` (may be empty) says where the peer is.
std::string timeout_text(const Transfer& t, bool receiving, int rank, double seconds,
                         const std::string& peer_text, bool started, const std::string& where);

}  // namespace tnt::comm
