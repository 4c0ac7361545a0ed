// Resolution of options + node facts into an mpirun plan; see launch_plan.h.
#include "plan/launch_plan.h"

#include "cleanup/cleanup.h"
#include "common/launcher_error.h"
#include "common/program_path.h"
#include "plan/allocation_placement.h"
#include "plan/device_placement.h"
#include "plan/mpirun_command.h"
#include "probe/python_interpreter.h"
#include "parse/shell_words.h"
#include "rank/rank_exec_options.h"
#include "rank/thread_rule.h"

#include <algorithm>
#include <limits>
#include <tarantella/base/env_contract.h>

namespace tnt::cli {
namespace {

const char* bool_text(bool value) { return value ? "true" : "false"; }

// The value the user gave NAME with -x (the last one wins), if any.
std::optional<std::string> user_export(const LaunchOptions& options, const std::string& name) {
  std::optional<std::string> value;
  for (const auto& e : options.exports()) {
    if (e.name == name) value = e.value;
  }
  return value;
}

std::string pin_flags(const LaunchOptions& options) {
  if (options.pin_to_socket() && options.pin_memory_to_socket()) {
    return "--pin-to-socket/--pin-memory-to-socket";
  }
  return options.pin_to_socket() ? "--pin-to-socket" : "--pin-memory-to-socket";
}

// Pinning gives each rank of a node its own NUMA node, so it needs numactl
// and at least as many NUMA nodes as ranks per node. Checked here, on the
// launching node, so the user hears about it before anything starts.
void check_pinning(const LaunchOptions& options, const NodeFacts& facts, int ranks_per_node) {
  if (!options.pin_to_socket() && !options.pin_memory_to_socket()) return;
  const std::string flags = pin_flags(options);
  if (!facts.numactl_available()) {
    throw LauncherError(flags +
                        " needs numactl, which is not in PATH on this node: "
                        "install it (apt-get install numactl) or drop " +
                        flags);
  }
  if (facts.numa_node_count() < ranks_per_node) {
    throw LauncherError(
        flags + ": " + std::to_string(ranks_per_node) + " ranks per node but this node has only " +
        std::to_string(facts.numa_node_count()) + " NUMA node(s): start at most " +
        std::to_string(facts.numa_node_count()) + " ranks per node, or drop " + flags);
  }
}

// Where the ranks go: a hostfile's hosts, this node, or a Slurm allocation
// (when there is one and no hostfile names other hosts).
struct JobPlacement {
  DevicePlacement device;  ///< ranks_per_node: the most on any host
  std::optional<AllocationPlacement> allocation;
};

JobPlacement place_job(const LaunchOptions& options, const NodeFacts& facts) {
  const auto& slurm = facts.slurm_allocation();
  if (options.srun() && !slurm) {
    throw LauncherError(
        "--srun starts the ranks with Slurm's srun, but this is not a Slurm job (SLURM_JOB_ID "
        "is not set): run tarantella inside sbatch or salloc, or drop --srun");
  }
  if (!slurm || !options.hosts().empty()) {
    const auto gpu_request = user_export(options, env::kUseGpu);
    int gpus = facts.gpu_count();
    if (gpus == 0 && !options.hosts().empty() && !options.no_gpu() &&
        (options.ranks_per_gpu() > 1 || (gpu_request && parse_gpu_request(*gpu_request) == true))) {
      // GPUs asked for on the hostfile's hosts from a node that has none (a
      // login node): this node cannot count theirs, so the request is taken
      // as said (-n, else one GPU per host) and each rank checks its own
      // host (TNT_USE_GPU=true fails there, naming the rank, without one).
      const int ranks = options.requested_ranks_per_node().value_or(options.ranks_per_gpu());
      gpus = (ranks + options.ranks_per_gpu() - 1) / options.ranks_per_gpu();
    }
    return {place_ranks(options.requested_ranks_per_node(), options.no_gpu(), gpus, gpu_request,
                        options.ranks_per_gpu()),
            std::nullopt};
  }
  // The same flags as on a node of one's own: -x TNT_USE_GPU=false means the
  // CPU, so the job's tasks count and not its GPUs; contradictions are
  // refused. A demand (true) is checked by each rank on its own host.
  const std::optional<bool> demand =
      check_gpu_flags(options.no_gpu(), user_export(options, env::kUseGpu), options.ranks_per_gpu());
  AllocationRequest request;
  request.total_ranks = options.ranks();
  request.ranks_per_node = options.ranks_per_node();
  request.no_gpu = options.no_gpu() || demand == false;
  request.local_gpu_count = facts.gpu_count();
  request.ranks_per_gpu = options.ranks_per_gpu();
  if (const auto visible = user_export(options, "CUDA_VISIBLE_DEVICES")) {
    request.visible_gpus = visible_gpu_count(std::numeric_limits<int>::max(), visible->c_str());
  }
  JobPlacement job{{}, place_in_allocation(*slurm, request)};
  for (const auto& h : job.allocation->hosts) {
    job.device.ranks_per_node = std::max(job.device.ranks_per_node, h.ranks);
  }
  job.device.use_gpu = job.allocation->use_gpu;
  job.device.ranks_per_gpu = job.allocation->use_gpu ? options.ranks_per_gpu() : 1;
  // srun starts one rank per task of its own, each with its task's GPUs:
  // a host with more ranks than tasks (one rank per GPU of a task, or K per
  // GPU) would be a step larger than the job.
  if (options.srun() && job.allocation->use_gpu && slurm->gpus_per_task && !slurm->gpus_per_node) {
    for (const HostRanks& h : job.allocation->hosts) {
      const auto at = std::find(slurm->hosts.begin(), slurm->hosts.end(), h.host);
      const int tasks = at == slurm->hosts.end()
                            ? 0
                            : slurm->tasks_per_node[static_cast<std::size_t>(at - slurm->hosts.begin())];
      if (h.ranks <= tasks) continue;
      const int per_task = *slurm->gpus_per_task;
      // Where the count came from: the GPUs, unless -n or --n-per-node said it.
      const bool counted = !options.ranks() && !options.ranks_per_node();
      const std::string why_ranks =
          !counted ? std::string()
          : options.ranks_per_gpu() > 1
              ? " (one per GPU, " + std::to_string(options.ranks_per_gpu()) +
                    " per GPU with --ranks-per-gpu)"
              : std::string(" (one per GPU)");
      throw LauncherError(
          "--srun starts every rank as a Slurm task with that task's GPUs, but " +
          std::to_string(h.ranks) + " ranks on " + h.host + why_ranks +
          " are more than its " + std::to_string(tasks) + " task(s) of Slurm job " +
          slurm->job_id + " (SLURM_GPUS_PER_TASK=" + std::to_string(per_task) +
          "): give -n or --n-per-node within the tasks, submit with --gpus-per-task=1 and a "
          "task per rank, or drop --srun");
    }
  }
  return job;
}

MpirunCommand& place(MpirunCommand& command, const LaunchOptions& options,
                     const JobPlacement& job) {
  if (job.allocation && options.srun()) return command.start_with_srun(job.allocation->hosts);
  if (job.allocation) return command.on_host_ranks(job.allocation->hosts);
  if (options.hosts().empty()) return command.on_this_node(job.device.ranks_per_node);
  return command.on_hosts(options.hosts(), job.device.ranks_per_node);
}

// Whether each rank's host decides between its GPU and the CPU, because the
// launcher cannot: the ranks run on hosts named by a hostfile or by a Slurm
// job that does not say its GPUs per node, and this node (a login node, say)
// has no GPU to count. Exported as TNT_USE_GPU=auto instead of false, so
// GPU hosts train on their GPUs.
bool hosts_decide_device(const LaunchOptions& options, const NodeFacts& facts,
                         const JobPlacement& job) {
  if (job.device.use_gpu || options.no_gpu() || facts.gpu_count() > 0) return false;
  const auto request = user_export(options, env::kUseGpu);
  if (request && parse_gpu_request(*request) == false) return false;  // the user's CPU
  if (job.allocation) return !facts.slurm_allocation()->gpus_per_node.has_value();
  return !options.hosts().empty();
}

// The interface names of a --network-interface value, for NCCL's
// NCCL_SOCKET_IFNAME ("=eth1,ib0": exactly these); "" when it names only
// subnets, which NCCL cannot take.
std::string nccl_interfaces(const std::string& value) {
  std::string names;
  std::size_t start = 0;
  while (start <= value.size()) {
    const std::size_t end = std::min(value.find(',', start), value.size());
    const std::string item = value.substr(start, end - start);
    if (!item.empty() && item.find('/') == std::string::npos) {
      names += (names.empty() ? "=" : ",") + item;
    }
    start = end + 1;
  }
  return names;
}

// --network-interface is both of OpenMPI's TCP settings: the ranks' data
// (btl) and mpirun's own out-of-band channel (oob). Before the user's --mca,
// which therefore still wins. On GPUs, its interface names also go to NCCL
// (its bootstrap and socket transport), before the user's -x.
void choose_network(MpirunCommand& command, const LaunchOptions& options, bool gpus) {
  if (!options.network_interface()) return;
  const std::string& value = *options.network_interface();
  command.mca({{"btl_tcp_if_include", value}, {"oob_tcp_if_include", value}});
  const std::string names = nccl_interfaces(value);
  if (gpus && !names.empty()) command.export_value("NCCL_SOCKET_IFNAME", names);
}

void export_tarantella_settings(MpirunCommand& command, const LaunchOptions& options,
                                const NodeFacts& facts, const JobPlacement& job) {
  // "auto", not "true": the launcher saw GPUs, but only the rank's LibTorch
  // knows whether it can use them; "true" is the user's demand (-x), which
  // a rank without a usable GPU refuses (train/engine/engine.cpp).
  const bool use_gpu = job.device.use_gpu;
  const bool hosts_decide = hosts_decide_device(options, facts, job);
  command.export_value(env::kUseGpu, use_gpu || hosts_decide ? "auto" : "false");
  if ((use_gpu || hosts_decide) && options.ranks_per_gpu() > 1) {
    // Sharing on purpose: the ranks do not warn that they share a GPU.
    command.export_value(env::kRanksPerGpu, std::to_string(options.ranks_per_gpu()));
  }
  if (options.log_level()) command.export_value(env::kLogLevel, *options.log_level());
  command.export_value(env::kLogOnAllDevices, bool_text(options.log_on_all_devices()));
  command.export_value(env::kOutputOnAllDevices, bool_text(options.output_on_all_devices()));
  command.export_value(env::kStdoutIsTerminal, bool_text(facts.stdout_is_terminal()));
  if (options.fusion_threshold_kib()) {
    command.export_value(env::kFusionThreshold, std::to_string(*options.fusion_threshold_kib()));
  }
  // Files are named absolutely: ranks may start in another directory.
  if (options.timeline_file()) {
    command.export_value(env::kTimeline,
                         absolute_path(*options.timeline_file(), facts.current_dir()));
  }
  if (options.autotune()) command.export_value(env::kAutotune, "true");
  if (options.autotune_log_file()) {
    command.export_value(env::kAutotuneLog,
                         absolute_path(*options.autotune_log_file(), facts.current_dir()));
  }
}

// Like --timeline, made absolute here: ranks may start in another directory.
std::optional<std::string> absolute_output_directory(const LaunchOptions& options,
                                                     const NodeFacts& facts) {
  if (!options.output_directory()) return std::nullopt;
  return absolute_path(*options.output_directory(), facts.current_dir());
}

// --min-ranks bounds how far restarts may shrink the job, so it cannot be
// more than the first run starts; checked before anything starts.
void check_min_ranks(const LaunchOptions& options, int ranks_per_node) {
  if (!options.min_ranks()) return;
  const auto hosts = static_cast<long>(options.hosts().size());
  const long total = (hosts == 0 ? 1 : hosts) * ranks_per_node;  // no hostfile: this node
  if (*options.min_ranks() <= total) return;
  throw LauncherError("--min-ranks " + std::to_string(*options.min_ranks()) + " is more than the " +
                      std::to_string(total) + " ranks the job starts (" + std::to_string(hosts) +
                      " host(s) x " + std::to_string(ranks_per_node) +
                      " rank(s) per node): give --min-ranks " + std::to_string(total) + " or less");
}

// From a build tree, `import tarantella` finds the package next to the
// launcher; the user's own PYTHONPATH (-x, else the launcher's) comes after.
void export_python_path(MpirunCommand& command, const LaunchOptions& options,
                        const NodeFacts& facts) {
  if (facts.python_package_dir().empty()) return;
  const auto user = user_export(options, "PYTHONPATH");
  command.export_value("PYTHONPATH", prepend_python_path(facts.python_package_dir(),
                                                         user ? user : facts.python_path()));
}

std::optional<std::string> interpreter_note(const InterpreterChoice& interpreter,
                                            const LaunchOptions& options,
                                            const std::string& program_path) {
  if (interpreter.is_default) {
    return program_path + " runs under " + interpreter.words.front() +
           (interpreter.words.front().find('/') == std::string::npos
                ? " (from PATH on each host"
                : " (the Python Tarantella was built for") +
           "; --python-interpreter CMD names another)";
  }
  if (!options.interpreter()) return std::nullopt;
  if (interpreter.words.empty()) {
    return program_path + " runs as a program (--python-interpreter '')";
  }
  return program_path + " runs under " + shell_join(interpreter.words) + " (--python-interpreter)";
}

// The wrapper's argv on every rank: launcher --rank-exec FLAGS -- [interpreter] program args.
std::vector<std::string> rank_command_for(const LaunchOptions& options, const NodeFacts& facts,
                                          const RankExecOptions& wrapper,
                                          const InterpreterChoice& interpreter,
                                          const std::string& program_path) {
  std::vector<std::string> rank_command = to_arguments(wrapper);
  rank_command.insert(rank_command.begin(), facts.launcher_path());
  rank_command.insert(rank_command.end(), interpreter.words.begin(), interpreter.words.end());
  rank_command.push_back(program_path);
  rank_command.insert(rank_command.end(), options.command().begin() + 1, options.command().end());
  return rank_command;
}

std::string restart_note(const LaunchOptions& options) {
  const std::string k = std::to_string(options.max_restarts());
  std::string note = "on failure: up to " + k + " restart(s) (" + kRestartCountVariable +
                     "=0 now, 1.." + k + " on restarts)";
  if (options.hosts().empty()) return note;
  note += "; each restart first probes the " + std::to_string(options.hosts().size()) + " hosts";
  if (!options.min_ranks()) return note + ", all of which must be reachable (no --min-ranks)";
  return note + " and leaves out those that cannot be reached while at least " +
         std::to_string(*options.min_ranks()) + " ranks remain (--min-ranks)";
}

// "CPU", "GPU (one GPU per rank)", ..., for the notes.
std::string device_text(const LaunchOptions& options, const NodeFacts& facts,
                        const JobPlacement& job) {
  if (hosts_decide_device(options, facts, job)) {
    return "GPU of each rank's host where it has one, else the CPU (TNT_USE_GPU=auto: this node "
           "has no GPU to count)";
  }
  return describe_device(job.device.use_gpu, job.device.ranks_per_gpu);
}

std::string allocation_note(const LaunchOptions& options, const NodeFacts& facts,
                            const JobPlacement& job) {
  const AllocationPlacement& placement = *job.allocation;
  const SlurmAllocation& slurm = *facts.slurm_allocation();
  return "Slurm job " + slurm.job_id + " (SLURM_JOB_NODELIST=" + slurm.node_list_text +
         ", SLURM_TASKS_PER_NODE=" + slurm.tasks_per_node_text +
         "): " + std::to_string(placement.total_ranks()) + " rank(s), " +
         describe_hosts(placement.hosts) + ", on the " + device_text(options, facts, job) +
         "; started by " +
         (options.srun() ? "srun --mpi=pmix (--srun)"
                         : "mpirun, which starts its daemons through Slurm (no ssh)");
}

std::string placement_note(const LaunchOptions& options, const NodeFacts& facts,
                           const JobPlacement& job) {
  if (job.allocation) return allocation_note(options, facts, job);
  const int per_node = job.device.ranks_per_node;
  const std::string where = options.hosts().empty()
                                ? "this node"
                                : "each of " + std::to_string(options.hosts().size()) + " hosts";
  std::string note = std::to_string(per_node) + " rank(s) on " + where + ", on the " +
                     device_text(options, facts, job);
  if (hosts_decide_device(options, facts, job) && !options.requested_ranks_per_node()) {
    note += "; give --n-per-node with the GPUs per host to start one rank per GPU";
  }
  if (job.device.use_gpu && facts.gpu_count() == 0) {
    note += " (not counted: this node has no GPU; each rank checks its own host)";
  }
  return note;
}

// The --dry-run lines about where the ranks run and over which network.
std::vector<std::string> placement_notes(const LaunchOptions& options, const NodeFacts& facts,
                                         const JobPlacement& job) {
  std::vector<std::string> notes{placement_note(options, facts, job)};
  if (facts.slurm_allocation() && !options.hosts().empty()) {
    notes.push_back("Slurm job " + facts.slurm_allocation()->job_id +
                    ": its hosts are not used, --hostfile names the hosts");
  }
  if (options.network_interface()) {
    notes.push_back("network: " + *options.network_interface() +
                    " for the ranks' data and mpirun's control traffic (--network-interface)");
  }
  return notes;
}

std::string threads_note(bool keep_user_value, const NodeFacts& facts, int per_node) {
  if (keep_user_value) return "OMP_NUM_THREADS: your value is kept on every rank";
  return "OMP_NUM_THREADS per rank on this node: " +
         std::to_string(threads_per_rank(facts.core_count(), per_node)) + " (" +
         std::to_string(facts.core_count()) + " cores / " + std::to_string(per_node) +
         " ranks; computed on each host from its own cores)";
}

// GPUs bound to tasks (sbatch --gpus-per-task) and mpirun across nodes:
// mpirun starts its daemons on the other nodes with one srun task each, so
// that step holds one task's GPUs and all of the node's ranks share them.
std::optional<std::string> gpus_per_task_warning(const LaunchOptions& options,
                                                 const NodeFacts& facts, const JobPlacement& job) {
  if (!job.allocation || options.srun() || !job.allocation->use_gpu ||
      job.allocation->hosts.size() < 2) {
    return std::nullopt;
  }
  const SlurmAllocation& slurm = *facts.slurm_allocation();
  if (!slurm.gpus_per_task || slurm.gpus_per_node) return std::nullopt;
  return "Slurm job " + slurm.job_id + " binds its GPUs to tasks (SLURM_GPUS_PER_TASK=" +
         std::to_string(*slurm.gpus_per_task) +
         "): mpirun starts the ranks of the other nodes inside one Slurm task per node, which "
         "may see that task's GPUs only, so those ranks would share them (they warn if so); "
         "add --srun to start every rank as a task of its own, with its own GPUs (a rank per "
         "task: --gpus-per-task=1)";
}

// The node as the ranks will see it: a CUDA_VISIBLE_DEVICES given with -x
// (the last one wins, as for mpirun) replaces the launcher's own when the
// GPUs are counted.
NodeFacts as_ranks_see_it(const LaunchOptions& options, NodeFacts facts) {
  const auto visible = user_export(options, "CUDA_VISIBLE_DEVICES");
  if (!visible) return facts;
  return facts.gpu_count(
      visible_gpu_count(facts.installed_gpu_count().value_or(facts.gpu_count()), visible->c_str()));
}

}  // namespace

LaunchPlan build_launch_plan(const LaunchOptions& options, const NodeFacts& node,
                             const std::string& program_path) {
  if (options.command().empty()) throw LauncherError("missing program after '--'");
  const NodeFacts facts = as_ranks_see_it(options, node);
  const JobPlacement job = place_job(options, facts);
  const DevicePlacement& placement = job.device;
  check_pinning(options, facts, placement.ranks_per_node);
  check_min_ranks(options, placement.ranks_per_node);

  MpirunCommand command(facts);
  place(command, options, job);
  const bool gpus = placement.use_gpu || hosts_decide_device(options, facts, job);
  choose_network(command, options, gpus);
  command.mca(options.mca_parameters());
  export_tarantella_settings(command, options, facts, job);
  // The user's TNT_* and NCCL_* settings reach the ranks on every host; a
  // value the launcher sets (above) or -x gives (below) stays.
  for (const auto& name : facts.forwarded_variables()) command.export_inherited(name);
  const bool keep_threads = facts.omp_num_threads_set() || user_export(options, "OMP_NUM_THREADS");
  if (facts.omp_num_threads_set()) command.export_inherited("OMP_NUM_THREADS");
  const auto gpu_request = user_export(options, env::kUseGpu);  // the last -x wins
  for (const auto& e : options.exports()) {
    if (e.name != env::kUseGpu) command.export_value(e.name, e.value);
  }
  // -x TNT_USE_GPU=auto leaves the choice to the launcher, as no -x does
  // (place_ranks): its "false" for more ranks than GPUs must stand.
  if (gpu_request && parse_gpu_request(*gpu_request).has_value()) {
    command.export_value(env::kUseGpu, *gpu_request);
  }
  export_python_path(command, options, facts);
  // After -x: a fact about this attempt, not a setting the user may change.
  command.export_value(kRestartCountVariable, std::to_string(options.restart_count()));

  const auto output_directory = absolute_output_directory(options, facts);
  RankExecOptions wrapper;
  // A -x TNT_OUTPUT_ON_ALL_DEVICES (the manual's variable) as the flag.
  const auto all_output = user_export(options, env::kOutputOnAllDevices);
  wrapper.output_on_all_devices =
      options.output_on_all_devices() || (all_output && boolean_text(*all_output).value_or(false));
  wrapper.output_directory = output_directory;
  wrapper.set_omp_threads = !keep_threads;
  wrapper.pin_cpu = options.pin_to_socket();
  wrapper.pin_memory = options.pin_memory_to_socket();
  // The ranks on the CPU, asked for or the launcher's choice (more ranks
  // than GPUs): the program's own `torch.cuda.is_available()` says so too
  // (an own loop's device lines would otherwise take GPU 0 on every rank).
  // A -x CUDA_VISIBLE_DEVICES of the user's is left as given.
  const bool cpu_asked =
      options.no_gpu() || (gpu_request && parse_gpu_request(*gpu_request) == false);
  wrapper.hide_gpus = !gpus && (cpu_asked || facts.gpu_count() > 0) &&
                      !user_export(options, "CUDA_VISIBLE_DEVICES");
  const InterpreterChoice interpreter = choose_interpreter(options, facts.default_python());

  LaunchPlan plan =
      command.build(rank_command_for(options, facts, wrapper, interpreter, program_path));
  if (!placement.warning.empty()) plan.warnings.push_back(placement.warning);
  if (auto warning = gpus_per_task_warning(options, facts, job)) plan.warnings.push_back(*warning);
  for (auto& note : placement_notes(options, facts, job)) plan.notes.push_back(std::move(note));
  plan.notes.push_back(threads_note(keep_threads, facts, placement.ranks_per_node));
  if (auto note = interpreter_note(interpreter, options, program_path)) plan.notes.push_back(*note);
  if (!facts.python_package_dir().empty()) {
    plan.notes.push_back("PYTHONPATH starts with " + facts.python_package_dir() +
                         ", where this launcher's tarantella package is");
  }
  if (options.max_restarts() > 0) {
    plan.notes.push_back(restart_note(options));
  }
  if (output_directory) {
    plan.notes.push_back("each rank's stdout and stderr are also written to " + *output_directory +
                         "/rank.N/stdout and " + *output_directory + "/rank.N/stderr");
    plan.output_directory = output_directory;
  }
  plan.ranks_per_node = placement.ranks_per_node;
  return plan;
}

LaunchPlan build_cleanup_plan(const LaunchOptions& options, const NodeFacts& facts,
                              const std::string& program) {
  MpirunCommand command(facts);
  command.on_hosts(options.hosts(), 1).mca(options.mca_parameters());
  std::vector<std::string> rank_command = cleanup_exec_arguments(options.force(), program);
  rank_command.insert(rank_command.begin(), facts.launcher_path());
  LaunchPlan plan = command.build(rank_command);
  plan.notes.push_back("cleanup on each of " + std::to_string(options.hosts().size()) +
                       " hosts, one process per host");
  return plan;
}

}  // namespace tnt::cli
