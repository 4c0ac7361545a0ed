// The launcher's top-level flow; see launcher.h.
#include "launcher.h"

#include <signal.h>
#include <sys/wait.h>

#include <iostream>

#include "argument_parser.h"
#include "cleanup.h"
#include "dry_run.h"
#include "exit_status.h"
#include "hostfile.h"
#include "launch_plan.h"
#include "launcher_error.h"
#include "node_facts.h"
#include "output_files.h"
#include "program_path.h"
#include "spawn.h"
#include "supervisor.h"

namespace tnt::cli {
namespace {

void print_warnings(const LaunchPlan& plan) {
  for (const auto& w : plan.warnings) std::cerr << "tarantella: WARNING: " << w << std::endl;
}

// The summary's reason; the message of the failure itself is in the report
// above it and not repeated.
std::string failure_reason(const SupervisedResult& result) {
  if (result.stop_signal != 0) return "stopped by " + describe_signal(result.stop_signal);
  const std::string how = "mpirun " + describe_wait_status(result.wait_status);
  if (!result.first_failed_rank) return how;
  std::string reason =
      how + " (rank " + std::to_string(*result.first_failed_rank) + " failed first, see above";
  if (result.other_failed_ranks > 0) {
    reason += "; " + std::to_string(result.other_failed_ranks) + " other rank(s) failed too";
  }
  return reason + ")";
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

int run_plan(const LaunchPlan& plan) {
  prepare_output_files(plan);
  print_warnings(plan);
  ::signal(SIGPIPE, SIG_IGN);  // a closed stderr loses the relayed text, not the job
  SupervisedResult result;
  try {
    result = supervise(SuperviseOptions{plan.argv, plan.environment});
  } catch (const SpawnError& error) {
    throw LauncherError(std::string(error.what()) +
                        ": install OpenMPI (apt-get install openmpi-bin) or put mpirun in PATH");
  }
  int code = exit_code_of(result.wait_status);
  if (result.stop_signal != 0) code = 128 + result.stop_signal;
  if (code != 0) std::cerr << "tarantella: job failed: " << failure_reason(result) << std::endl;
  return code;
}

LaunchOptions with_hosts(LaunchOptions options, const std::string& hostfile) {
  if (!hostfile.empty()) options.hosts(read_hostfile(hostfile));
  return options;
}

NodeFacts facts_for(const LaunchOptions& options) {
  NodeFacts facts = detect_node_facts();
  if (options.assumed_gpu_count()) facts.gpu_count(*options.assumed_gpu_count());
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

int run_job(const LaunchOptions& options) {
  const std::string program = resolve_program(
      options.command().front(), current_program_lookup(!options.interpreter().empty()));
  const LaunchPlan plan = build_launch_plan(options, facts_for(options), program);
  if (options.dry_run()) {
    print_warnings(plan);
    std::cout << format_dry_run(plan);
    return 0;
  }
  return run_plan(plan);
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
