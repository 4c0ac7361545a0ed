// Private: the response cache (after Horovod's): the descriptors this rank
// has seen every rank agree to in a full handshake through the master.
//
// How it is used (MpiBackend::agree). Before every collective, all ranks
// exchange two 64-bit words with their peers directly (Handshake::
// same_everywhere): the fingerprint of the descriptor if it is in this rank's
// cache, else 0. If every rank sent the same non-zero fingerprint, all of
// them had agreed to exactly this collective before and agree now: the
// payload runs at once. Otherwise (a miss anywhere, or ranks that disagree)
// every rank sees the same outcome and runs the full handshake, which
// produces today's table and its clear error. Caches need not be identical
// across ranks: a miss on any rank only costs the full handshake.
#pragma once

#include <cstdint>
#include <unordered_set>

namespace tnt::comm {

class ResponseCache {
 public:
  /// Enough for every bucket and metric of a training job; past it the cache
  /// starts over (a job with ever-new shapes pays the full handshake anyway).
  static constexpr std::size_t kCapacity = 4096;

  bool contains(std::uint64_t fingerprint) const { return seen_.count(fingerprint) != 0; }
  void insert(std::uint64_t fingerprint) {
    if (seen_.size() >= kCapacity) seen_.clear();
    seen_.insert(fingerprint);
  }

 private:
  std::unordered_set<std::uint64_t> seen_;
};

}  // namespace tnt::comm
