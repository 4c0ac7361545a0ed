// The per-rank wrapper: what mpirun actually starts on every rank.
//
// It sits between OpenMPI and the user's program to give every rank the same
// treatment on every host: OMP_NUM_THREADS from the thread rule, optional
// NUMA pinning through numactl, stdout shown for rank 0 only (or prefixed
// with the rank for all), with --output-filename a copy of stdout and
// stderr in DIR/rank.N/, stop signals passed on, and a one-line report
// naming the rank and host when the program fails.
#pragma once

#include <string>
#include <vector>

namespace tnt::cli {

/// Runs the wrapper for `args` (argv without argv[0], starting with
/// "--rank-exec") and returns the exit code: the program's own, 128+N when
/// signal N killed it, 127 when it could not be executed, kUsageExitCode
/// when its --output-filename files could not be created.
int run_rank_exec(const std::vector<std::string>& args);

}  // namespace tnt::cli
