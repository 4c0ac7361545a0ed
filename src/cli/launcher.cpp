// The launcher's top-level flow; see launcher.h.
#include "launcher.h"

#include <signal.h>

#include <cstdlib>
#include <iostream>
#include <optional>

#include "cleanup/cleanup.h"
#include "common/launcher_error.h"
#include "common/program_path.h"
#include "parse/argument_parser.h"
#include "plan/dry_run.h"
#include "probe/host_probe.h"
#include "parse/hostfile.h"
#include "plan/launch_plan.h"
#include "probe/network_probe.h"
#include "probe/node_facts.h"
#include "probe/python_interpreter.h"
#include "supervise/output_files.h"
#include "supervise/restart_loop.h"
#include "common/spawn.h"
#include "supervise/supervisor.h"

namespace tnt::cli {
namespace {

void print_warnings(const LaunchPlan& plan) {
  for (const auto& w : plan.warnings) std::cerr << "tarantella: WARNING: " << w << std::endl;
}

// On the launching node, before mpirun: a bad --output-filename stops the
// launch at once instead of failing every rank (each rank still creates its
// own rank.N folder, on whatever host it runs).
void prepare_output_files(const LaunchPlan& plan) {
  if (!plan.output_directory) return;
  if (const auto problem = prepare_output_directory(*plan.output_directory)) {
    throw LauncherError("--output-filename: " + *problem +
                        "; give a directory you can create and write to");
  }
}

// Once per launch, whatever the number of attempts.
void prepare_run(const LaunchPlan& plan) {
  prepare_output_files(plan);
  print_warnings(plan);
  ::signal(SIGPIPE, SIG_IGN);  // a closed stderr loses the relayed text, not the job
}

SupervisedResult run_attempt(const LaunchPlan& plan) {
  const std::string& starter = plan.argv.front();  // mpirun, or srun (--srun)
  try {
    SupervisedResult result = supervise(SuperviseOptions{plan.argv, plan.environment});
    result.starter = starter;
    return result;
  } catch (const SpawnError& error) {
    throw LauncherError(std::string(error.what()) +
                        (starter == "srun"
                             ? ": run inside a Slurm job where srun is in PATH, or drop --srun"
                             : ": install OpenMPI (apt-get install openmpi-bin) or put mpirun "
                               "in PATH"));
  }
}

// Runs `plan` once (a cleanup: never restarted).
int run_plan(const LaunchPlan& plan) {
  prepare_run(plan);
  RestartHooks hooks;
  hooks.run = [&](int, const std::vector<std::string>&) { return run_attempt(plan); };
  return run_with_restarts(RestartPolicy{}, hooks);
}

std::optional<std::string> environment_value(const char* name) {
  const char* value = std::getenv(name);
  return value ? std::optional<std::string>(value) : std::nullopt;
}

// The probe asks the agent mpirun itself will use to reach the hosts.
ProbeOptions probe_options(const LaunchOptions& options) {
  ProbeOptions probe;
  probe.agent = probe_agent(options.mca_parameters(), environment_value("OMPI_MCA_plm_rsh_agent"),
                            environment_value("OMPI_MCA_plm_rsh_args"));
  probe.this_hostname = this_hostname();
  return probe;
}

RestartPolicy restart_policy(const LaunchOptions& options, const LaunchPlan& plan) {
  RestartPolicy policy;
  policy.max_restarts = options.max_restarts();
  policy.hosts = options.hosts();
  policy.ranks_per_node = plan.ranks_per_node;
  policy.min_ranks = options.min_ranks();
  return policy;
}

LaunchOptions with_hosts(LaunchOptions options, const std::string& hostfile) {
  if (hostfile.empty()) return options;
  const std::vector<std::string> hosts = read_hostfile(hostfile);
  // Two names of this node (localhost and its host name) are one host
  // twice for mpirun, which then refuses the ranks with a banner of its own.
  const std::string here = this_hostname();
  std::optional<std::string> first_here;
  for (const auto& host : hosts) {
    if (!is_this_host(host, here)) continue;
    if (first_here) {
      throw LauncherError("hostfile " + hostfile + ": '" + *first_here + "' and '" + host +
                          "' both name this node (" + here +
                          "): list it once and use --n-per-node to start several ranks per host");
    }
    first_here = host;
  }
  options.hosts(hosts);
  return options;
}

NodeFacts facts_for(const LaunchOptions& options) {
  NodeFacts facts = detect_node_facts();
  if (options.assumed_gpu_count()) {
    facts.gpu_count(*options.assumed_gpu_count()).installed_gpu_count(*options.assumed_gpu_count());
  }
  return facts;
}

// Cleanup needs no local program on remote hosts: a name we cannot find here
// is passed on and looked up on each host.
int run_cleanup(const LaunchOptions& options) {
  const std::string& program = options.command().front();
  if (options.hosts().empty()) {
    CleanupRequest request;
    request.program = resolve_program(program, current_program_lookup(true));
    request.force = options.force();
    request.dry_run = options.dry_run();
    return clean_up_this_host(request);
  }
  std::string target = program;
  try {
    target = resolve_program(program, current_program_lookup(true));
  } catch (const LauncherError&) {
    if (program.find('/') != std::string::npos && program[0] != '/') throw;
  }
  const LaunchPlan plan = build_cleanup_plan(options, facts_for(options), target);
  if (options.dry_run()) {
    std::cout << format_dry_run(plan);
    return 0;
  }
  return run_plan(plan);
}

int run_job(const LaunchOptions& requested) {
  const NodeFacts facts = facts_for(requested);
  const ProbeOptions probe = probe_options(requested);
  // Checked here, before anything starts, like the program itself; the plan
  // makes the same choice from the same facts.
  const InterpreterChoice interpreter = choose_interpreter(requested, facts.default_python());
  const ProgramLookup lookup = current_program_lookup(!interpreter.words.empty());
  const std::string program = resolve_program(requested.command().front(), lookup);
  check_interpreter(interpreter, requested.command().front(), lookup);
  // Planned once before the hosts are asked for their networks, so that a
  // mistake in the flags is reported at once, not after the probes.
  const LaunchPlan requested_plan = build_launch_plan(requested, facts, program);
  if (requested.dry_run()) {
    print_warnings(requested_plan);
    std::cout << format_dry_run(requested_plan);
    return 0;
  }
  const LaunchOptions options = with_network(requested, probe, facts);
  const LaunchPlan plan = build_launch_plan(options, facts, program);
  prepare_run(plan);
  RestartHooks hooks;
  // A restart's plan differs in TNT_RESTART_COUNT and, with a hostfile, in
  // the hosts left out; ranks per node stay those of the first run.
  hooks.run = [&](int restart_count, const std::vector<std::string>& hosts) {
    if (restart_count == 0) return run_attempt(plan);
    LaunchOptions next = options;
    next.restart_count(restart_count).hosts(hosts);
    return run_attempt(build_launch_plan(next, facts, program));
  };
  hooks.probe = [&](const std::vector<std::string>& hosts) { return probe_hosts(hosts, probe); };
  return run_with_restarts(restart_policy(options, plan), hooks);
}

}  // namespace

int run_launcher(const std::vector<std::string>& args) {
  const ParsedCommand parsed = parse_arguments(args);
  if (parsed.kind != ParsedCommand::Kind::kRun) {
    std::cout << parsed.text << std::endl;
    return 0;
  }
  const LaunchOptions options = with_hosts(parsed.options, parsed.hostfile);
  return options.cleanup() ? run_cleanup(options) : run_job(options);
}

}  // namespace tnt::cli
