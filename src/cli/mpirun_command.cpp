// mpirun command builder; see mpirun_command.h.
#include "mpirun_command.h"

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
  for (const auto& p : parameters) mca_.insert(mca_.end(), {"--mca", p.name, p.value});
  return *this;
}

LaunchPlan MpirunCommand::build(const std::vector<std::string>& rank_command) const {
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
