// Ending a rank that failed, for front ends that catch the failure
// themselves (the Python package's sys.excepthook): the same report and exit
// as an uncaught C++ exception under a tnt::Runtime (src/runtime/rank_failure.h).
#pragma once

#include <string>

namespace tnt {

/// Ends this rank as a failed rank, exactly as an uncaught C++ exception
/// does under a Runtime: prints one report line
///   tarantella: rank R on host H failed: <message>
/// and exits at once with status 1 (no MPI_Finalize, no destructors), so the
/// launcher stops the other ranks and names this one. Without a running
/// runtime the process is named instead.
///
/// Example:
///   catch (const std::exception& e) { tnt::fail_rank(e.what()); }
[[noreturn]] void fail_rank(const std::string& message);

}  // namespace tnt
