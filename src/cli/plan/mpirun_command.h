// Builder for mpirun command lines, shared by job and cleanup plans.
//
// It owns the invariants every mpirun call of ours has: --oversubscribe (a
// user asking for more ranks than cores gets them, without OpenMPI's
// variables), --bind-to none (we size thread pools ourselves; OpenMPI's core
// binding would squeeze a rank's threads onto one core), the root permission
// variables, and variables passed by name with -x so values with spaces or
// quotes never go through a shell.
//
// Inside a Slurm allocation the same plan can start the ranks with `srun
// --mpi=pmix` instead (start_with_srun): then the variables reach the ranks
// through srun's environment (it exports everything) and --mca settings
// become OMPI_MCA_ variables, the way OpenMPI reads them without mpirun.
#pragma once

#include <string>
#include <vector>

#include "plan/allocation_placement.h"
#include "plan/launch_plan.h"
#include "parse/mca_parameter.h"
#include "probe/node_facts.h"

namespace tnt::cli {

/// Example:
///   MpirunCommand(facts).on_this_node(2).export_value("A", "1")
///       .build({"/abs/tarantella", "--rank-exec", "--", "/abs/prog"});
class MpirunCommand {
 public:
  explicit MpirunCommand(const NodeFacts& facts);

  /// -np N on the launching node.
  MpirunCommand& on_this_node(int ranks);
  /// --host h1:K,h2:K -np hosts*K --npernode K.
  MpirunCommand& on_hosts(const std::vector<std::string>& hosts, int ranks_per_host);
  /// --host h1:R1,h2:R2 -np R1+R2 (hosts of a Slurm allocation; mpirun maps
  /// by slot, so each host gets exactly its count).
  MpirunCommand& on_host_ranks(const std::vector<HostRanks>& hosts);
  /// srun instead of mpirun, on exactly these hosts and counts.
  MpirunCommand& start_with_srun(const std::vector<HostRanks>& hosts);
  /// Sets NAME=VALUE in mpirun's environment and forwards it with -x NAME.
  /// A repeated name keeps its first position and takes the new value.
  MpirunCommand& export_value(const std::string& name, const std::string& value);
  /// Forwards NAME from the launcher's own environment with -x NAME.
  MpirunCommand& export_inherited(const std::string& name);
  /// --mca NAME VALUE, in the order given (mpirun lets a later one win).
  MpirunCommand& mca(const std::vector<McaParameter>& parameters);

  /// The plan that runs `rank_command` on every rank.
  LaunchPlan build(const std::vector<std::string>& rank_command) const;

 private:
  struct Export {
    std::string name;
    bool has_value = false;
    std::string value;
  };
  Export& export_slot(const std::string& name);
  LaunchPlan build_srun(const std::vector<std::string>& rank_command) const;

  std::vector<EnvAssignment> mpirun_only_env_;
  std::vector<std::string> placement_;
  std::vector<std::string> mca_;
  std::vector<EnvAssignment> mca_env_;  // the same settings, for srun
  bool srun_ = false;
  std::vector<Export> exports_;
};

}  // namespace tnt::cli
