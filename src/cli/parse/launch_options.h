// The user's request, as parsed from the command line.
//
// Plain validated data: no defaults resolved against the node yet (that is
// build_launch_plan()'s job, with NodeFacts), so the parser can be tested
// without a machine and the plan without a command line.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <tarantella/base/arg.h>

#include "parse/env_assignment.h"
#include "parse/mca_parameter.h"

namespace tnt::cli {

/// Example: `LaunchOptions().ranks(3).command({"./train", "--epochs", "2"})`.
class LaunchOptions {
  /// -n: ranks on this node only.
  TNT_ARG(std::optional<int>, ranks);
  /// --n-per-node / --npernode / --devices-per-node.
  TNT_ARG(std::optional<int>, ranks_per_node);
  /// Hosts read from --hostfile (empty: this node only).
  TNT_ARG(std::vector<std::string>, hosts);
  TNT_ARG(bool, no_gpu) = false;
  /// --ranks-per-gpu: how many ranks share one GPU (1: each has its own).
  /// Shared GPUs use the host-staged collectives over MPI (never NCCL).
  TNT_ARG(int, ranks_per_gpu) = 1;
  /// --srun: inside a Slurm allocation, start the ranks with srun, not mpirun.
  TNT_ARG(bool, srun) = false;
  /// --network-interface: interface names or CIDR subnets (comma-separated)
  /// for OpenMPI's TCP data and out-of-band traffic.
  TNT_ARG(std::optional<std::string>, network_interface);
  /// Hidden testing aid (--assume-gpus): replaces nvidia-smi's answer.
  TNT_ARG(std::optional<int>, assumed_gpu_count);
  /// DEBUG, INFO, WARNING or ERROR (upper case).
  TNT_ARG(std::optional<std::string>, log_level);
  TNT_ARG(bool, log_on_all_devices) = false;
  TNT_ARG(bool, output_on_all_devices) = false;
  /// --output-filename: the folder for DIR/rank.N/{stdout,stderr}, as typed
  /// (made absolute by the launch plan).
  TNT_ARG(std::optional<std::string>, output_directory);
  /// -x entries in command-line order.
  TNT_ARG(std::vector<EnvAssignment>, exports);
  TNT_ARG(std::optional<std::uint64_t>, fusion_threshold_kib);
  /// --timeline: the trace file, as typed (made absolute by the launch plan).
  TNT_ARG(std::optional<std::string>, timeline_file);
  /// --autotune: pick the fusion threshold (and engine settings) by measuring.
  TNT_ARG(bool, autotune) = false;
  /// --autotune-log: where the trials are written, as typed; needs autotune.
  TNT_ARG(std::optional<std::string>, autotune_log_file);
  /// --mca entries in command-line order, passed to mpirun untouched.
  TNT_ARG(std::vector<McaParameter>, mca_parameters);
  TNT_ARG(bool, pin_to_socket) = false;
  TNT_ARG(bool, pin_memory_to_socket) = false;
  /// --python-interpreter split into words; an empty list (`""`) runs the
  /// program itself; nullopt (no flag): Python for .py programs, else the
  /// program itself (see python_interpreter.h).
  TNT_ARG(std::optional<std::vector<std::string>>, interpreter);
  TNT_ARG(bool, dry_run) = false;
  TNT_ARG(bool, cleanup) = false;
  TNT_ARG(bool, force) = false;
  /// --max-restarts: how often a failed job is started again.
  TNT_ARG(int, max_restarts) = 0;
  /// --min-ranks: with a hostfile, a restart leaves out hosts that cannot be
  /// reached while at least this many ranks remain; nullopt: every host must
  /// take part.
  TNT_ARG(std::optional<int>, min_ranks);
  /// Not a flag: which attempt of the job a plan is for (0: the first run),
  /// set by the restart loop and exported to the ranks as TNT_RESTART_COUNT.
  TNT_ARG(int, restart_count) = 0;
  /// The program and its arguments (everything after "--"), as typed.
  TNT_ARG(std::vector<std::string>, command);

 public:
  /// The per-node rank count the user asked for, from -n or --n-per-node.
  std::optional<int> requested_ranks_per_node() const { return ranks_ ? ranks_ : ranks_per_node_; }
};

}  // namespace tnt::cli
