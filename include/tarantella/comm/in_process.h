// An in-process process group: N ranks played by N threads of one process,
// exchanging tensors through shared memory. It runs the same consistency
// check as MPI (check_table), with a timeout, so code built on ProcessGroup
// — gradient synchronization, distribution, tnt::Model — is unit-tested at
// several rank counts without MPI or a launcher. Useful for users' own tests
// too.
#pragma once

#include <functional>
#include <vector>

#include <tarantella/comm/process_group.h>

namespace tnt::comm {

/// `size` handles on one new in-process group; handle r is rank r. Hand
/// each to the thread that plays that rank.
///
/// Example:
///   auto ranks = tnt::comm::make_in_process_group(3);
///   // thread r: ranks[r].allreduce(t);
std::vector<ProcessGroup> make_in_process_group(int size, double timeout_seconds = 60.0);

/// Runs `body(group)` for each of `size` ranks on its own thread, waits for
/// all, and rethrows the exception of the lowest failing rank, if any.
///
/// Example:
///   tnt::comm::run_in_process(4, [](const tnt::comm::ProcessGroup& g) {
///     auto t = torch::ones({2}) * g.rank();
///     g.allreduce(t);   // 0 + 1 + 2 + 3 everywhere
///   });
void run_in_process(int size, const std::function<void(const ProcessGroup&)>& body,
                    double timeout_seconds = 60.0);

}  // namespace tnt::comm
