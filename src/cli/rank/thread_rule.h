// How many OpenMP/intra-op threads each rank gets.
//
// Ranks on one node share its cores; without a limit every rank would start
// one thread per core and the node would be oversubscribed N times. Unless
// the user set OMP_NUM_THREADS, each rank gets an equal share, at least 1.
#pragma once

namespace tnt::cli {

/// max(1, cores_on_node / ranks_on_node).
/// Example: `threads_per_rank(2, 2)` -> 1; `threads_per_rank(2, 1)` -> 2.
int threads_per_rank(int cores_on_node, int ranks_on_node);

}  // namespace tnt::cli
