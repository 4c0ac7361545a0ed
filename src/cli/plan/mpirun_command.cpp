// mpirun command builder; see mpirun_command.h.
#include "plan/mpirun_command.h"

namespace tnt::cli {

MpirunCommand::MpirunCommand(const NodeFacts& facts) {
  if (facts.effective_uid() == 0) {
    // OpenMPI refuses to run as root unless both are set; containers and
    // single-user machines often run as root, and the user chose to.
    mpirun_only_env_.push_back({"OMPI_ALLOW_RUN_AS_ROOT", "1"});
    mpirun_only_env_.push_back({"OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1"});
  }
}

MpirunCommand& MpirunCommand::on_this_node(int ranks) {
  placement_ = {"-np", std::to_string(ranks)};
  return *this;
}

MpirunCommand& MpirunCommand::on_hosts(const std::vector<std::string>& hosts, int ranks_per_host) {
  std::string host_list;
  for (const auto& host : hosts) {
    if (!host_list.empty()) host_list += ',';
    host_list += host + ":" + std::to_string(ranks_per_host);
  }
  const auto total = static_cast<long>(hosts.size()) * ranks_per_host;
  placement_ = {"--host",     host_list,
                "-np",        std::to_string(total),
                "--npernode", std::to_string(ranks_per_host)};
  return *this;
}

MpirunCommand& MpirunCommand::on_host_ranks(const std::vector<HostRanks>& hosts) {
  std::string host_list;
  int total = 0;
  for (const auto& h : hosts) {
    if (!host_list.empty()) host_list += ',';
    host_list += h.host + ":" + std::to_string(h.ranks);
    total += h.ranks;
  }
  placement_ = {"--host", host_list, "-np", std::to_string(total)};
  return *this;
}

// Equal counts: srun's own --ntasks-per-node. Unequal ones (-n taking part
// of an allocation): the arbitrary distribution, where the node list names a
// host once per task, in rank order.
MpirunCommand& MpirunCommand::start_with_srun(const std::vector<HostRanks>& hosts) {
  srun_ = true;
  const AllocationPlacement placement{hosts, false};
  std::string nodes;
  std::string tasks;
  for (const auto& h : hosts) {
    nodes += (nodes.empty() ? "" : ",") + h.host;
    for (int r = 0; r < h.ranks; ++r) tasks += (tasks.empty() ? "" : ",") + h.host;
  }
  placement_ = {"--nodes=" + std::to_string(hosts.size()),
                "--ntasks=" + std::to_string(placement.total_ranks())};
  if (const auto k = placement.uniform_ranks_per_node()) {
    placement_.insert(placement_.end(),
                      {"--ntasks-per-node=" + std::to_string(*k), "--nodelist=" + nodes});
  } else {
    placement_.insert(placement_.end(), {"--distribution=arbitrary", "--nodelist=" + tasks});
  }
  return *this;
}

MpirunCommand::Export& MpirunCommand::export_slot(const std::string& name) {
  for (auto& slot : exports_) {
    if (slot.name == name) return slot;
  }
  exports_.push_back(Export{name, false, ""});
  return exports_.back();
}

MpirunCommand& MpirunCommand::export_value(const std::string& name, const std::string& value) {
  Export& slot = export_slot(name);
  slot.has_value = true;
  slot.value = value;
  return *this;
}

MpirunCommand& MpirunCommand::export_inherited(const std::string& name) {
  export_slot(name);
  return *this;
}

MpirunCommand& MpirunCommand::mca(const std::vector<McaParameter>& parameters) {
  for (const auto& p : parameters) {
    mca_.insert(mca_.end(), {"--mca", p.name, p.value});
    mca_env_.push_back({"OMPI_MCA_" + p.name, p.value});
  }
  return *this;
}

// srun hands its whole environment to every task, so the values need no -x;
// --kill-on-bad-exit ends the step when one rank fails, as mpirun does.
LaunchPlan MpirunCommand::build_srun(const std::vector<std::string>& rank_command) const {
  LaunchPlan plan;
  for (const auto& slot : exports_) {
    if (slot.has_value) plan.environment.push_back({slot.name, slot.value});
  }
  plan.environment.insert(plan.environment.end(), mca_env_.begin(), mca_env_.end());
  plan.argv = {"srun", "--mpi=pmix", "--kill-on-bad-exit=1", "--cpu-bind=none"};
  plan.argv.insert(plan.argv.end(), placement_.begin(), placement_.end());
  plan.argv.insert(plan.argv.end(), rank_command.begin(), rank_command.end());
  return plan;
}

LaunchPlan MpirunCommand::build(const std::vector<std::string>& rank_command) const {
  if (srun_) return build_srun(rank_command);
  LaunchPlan plan;
  plan.environment = mpirun_only_env_;
  plan.argv = {"mpirun", "--oversubscribe", "--bind-to", "none"};
  plan.argv.insert(plan.argv.end(), mca_.begin(), mca_.end());
  plan.argv.insert(plan.argv.end(), placement_.begin(), placement_.end());
  for (const auto& slot : exports_) {
    if (slot.has_value) plan.environment.push_back({slot.name, slot.value});
    plan.argv.push_back("-x");
    plan.argv.push_back(slot.name);
  }
  plan.argv.insert(plan.argv.end(), rank_command.begin(), rank_command.end());
  return plan;
}

}  // namespace tnt::cli
