// Private: how the MPI backend cuts large payloads. MPI counts are int, so
// large payloads go in pieces anyway; every plain MPI call moves at most
// kMaxChunk elements. Blockwise collectives (reduce_scatter, allgatherv),
// where rank r owns block r of the buffer, go in rounds: round k carries the
// k-th part of every rank's block, packed side by side, so a round stays
// within kMaxChunk elements in all. The exchange of power-of-two groups
// bounds its buffers the same way (exchange_reduce_scatter.cpp).
#pragma once

#include <cstdint>
#include <vector>

namespace tnt::comm {

/// Elements per MPI call: large collectives go in pieces of this many. MPI
/// counts are int, so large payloads go in pieces anyway; pieces of 4 MiB (of
/// float32) also reduce faster than one huge message over shared memory (an
/// 80 MB gradient: 21 ms in 4 MiB pieces vs 34 ms whole; bench/train_step).
/// The runtime sizes OpenMPI's TCP eager limit after it (runtime.cpp).
constexpr std::int64_t kMaxChunk = 1LL << 20;

/// Where each rank's block begins: counts.size() + 1 entries, rank r's
/// block being elements [start[r], start[r + 1]).
std::vector<std::int64_t> block_starts(const std::vector<int>& counts);

/// One round of a blockwise collective in parts: copies elements
/// [done, done + part) of every rank's block of `in` (as far as the block
/// goes; `elem` bytes each) side by side into `packed`, and sets
/// `packed_start` (one entry per rank and one more) to where each rank's
/// part begins there.
void pack_parts(const char* in, const std::vector<std::int64_t>& block_start, std::int64_t done,
                std::int64_t part, std::int64_t elem, char* packed,
                std::vector<std::int64_t>& packed_start);

}  // namespace tnt::comm
