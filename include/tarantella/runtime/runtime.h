// The runtime: starts and stops MPI (RAII), owns the world process group
// (its communicator and engine thread), and answers rank queries. Works under the
// `tarantella` launcher, under a plain `mpirun`, and as a single process.
#pragma once

#include <memory>

#include <tarantella/base/config.h>
#include <tarantella/comm/process_group.h>

namespace tnt {

/// Starts the Tarantella runtime for the lifetime of the object. Create one
/// at the top of main, before any other Tarantella call.
///
/// Example:
///   int main(int argc, char** argv) {
///     tnt::Runtime runtime(argc, argv);
///     std::cout << "rank " << tnt::get_rank() << " of " << tnt::get_size();
///   }
class Runtime {
 public:
  Runtime(int argc = 0, char** argv = nullptr);
  /// Stops the engine and finalizes MPI; if a collective failed or an
  /// exception is propagating, prints why and ends this rank with exit
  /// status 1 instead (mpirun then stops the others), so that no rank is
  /// left waiting. While a Runtime is alive, an exception nobody catches
  /// ends the rank the same way, with its message.
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  /// The configuration resolved at start-up.
  const Config& config() const;
  /// The group of every rank of the job.
  const comm::ProcessGroup& world() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

/// The world group: every rank of the job. The default group of the public
/// API (tnt::Model, distribute, the free collectives); split it into
/// process sets with world().split(...) or world().subgroup({...}).
/// Throws if no Runtime is alive.
const comm::ProcessGroup& world();
/// This rank's number in 0..get_size()-1. Throws if no Runtime is alive.
int get_rank();
/// The number of ranks in the job.
int get_size();
/// The master rank, which logs, prints progress and saves files: always 0.
int get_master_rank();
/// Whether this rank is the master rank.
bool is_master_rank();
/// This rank's number among the ranks on the same node (for GPU binding).
int get_local_rank();
/// The number of ranks on this node.
int get_local_size();
/// Whether a Runtime is alive in this process.
bool is_initialized();
/// The configuration of the running runtime. Throws if none is alive.
const Config& config();
/// What the facades (tnt::Model, DistributedOptimizer, the Python package)
/// resolve their defaults from: the running runtime's configuration, or,
/// before tnt::init(), the one the environment gives. The layers below the
/// facades take explicit options and never read the environment.
Config current_config();

}  // namespace tnt
