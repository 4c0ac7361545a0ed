// The launch plan: every flag's effect on mpirun's argv and environment,
// computed from fixed node facts (no machine probing).
#include "plan/launch_plan.h"

#include <algorithm>

#include "common/launcher_error.h"
#include "test_support.h"

namespace tnt::cli {
namespace {

using ::testing::ElementsAre;
using testing::error_of;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using Args = std::vector<std::string>;

const std::string kProgram = "/abs/prog";
const std::string kLauncher = "/opt/tnt/bin/tarantella";

NodeFacts cpu_node() {
  return NodeFacts()
      .gpu_count(0)
      .core_count(2)
      .numa_node_count(1)
      .numactl_available(true)
      .effective_uid(1000)
      .omp_num_threads_set(false)
      .launcher_path(kLauncher)
      .current_dir("/home/me/run");
}

LaunchOptions job(int ranks) { return LaunchOptions().ranks(ranks).command({"./prog", "arg"}); }

bool contains_sequence(const Args& argv, const Args& sequence) {
  return std::search(argv.begin(), argv.end(), sequence.begin(), sequence.end()) != argv.end();
}

std::optional<std::string> env_value(const LaunchPlan& plan, const std::string& name) {
  std::optional<std::string> value;
  for (const auto& e : plan.environment) {
    if (e.name == name) {
      EXPECT_FALSE(value) << name << " is set twice in mpirun's environment";
      value = e.value;
    }
  }
  return value;
}

// Names forwarded with -x, in order.
Args exported_names(const LaunchPlan& plan) {
  Args names;
  for (std::size_t i = 0; i + 1 < plan.argv.size(); ++i) {
    if (plan.argv[i] == "-x") names.push_back(plan.argv[i + 1]);
  }
  return names;
}

bool exported(const LaunchPlan& plan, const std::string& name) {
  const Args names = exported_names(plan);
  return std::count(names.begin(), names.end(), name) == 1;
}

// The per-rank part: everything from the launcher path on.
Args rank_command(const LaunchPlan& plan) {
  const auto it = std::find(plan.argv.begin(), plan.argv.end(), kLauncher);
  return Args(it, plan.argv.end());
}

TEST(LaunchPlan, SingleNodeRanksAndTheFixedMpirunFlags) {
  const auto plan = build_launch_plan(job(3), cpu_node(), kProgram);
  ASSERT_FALSE(plan.argv.empty());
  EXPECT_EQ(plan.argv[0], "mpirun");
  EXPECT_TRUE(contains_sequence(plan.argv, {"-np", "3"}));
  EXPECT_TRUE(contains_sequence(plan.argv, {"--oversubscribe"}));
  EXPECT_TRUE(contains_sequence(plan.argv, {"--bind-to", "none"}));
  EXPECT_FALSE(contains_sequence(plan.argv, {"--host"}));
}

TEST(LaunchPlan, RanksRunThroughTheWrapperWithAnAbsoluteProgram) {
  const auto plan = build_launch_plan(job(2), cpu_node(), kProgram);
  EXPECT_EQ(rank_command(plan), (Args{kLauncher, "--rank-exec", "--output=rank0", "--threads=auto",
                                      "--", kProgram, "arg"}));
  EXPECT_FALSE(plan.output_directory);
}

TEST(LaunchPlan, OutputFilenameIsMadeAbsoluteForTheWrapperAndTheLauncher) {
  for (const auto& [typed, absolute] :
       {std::pair<std::string, std::string>{"logs/./run", "/home/me/run/logs/run"},
        {"/var//logs", "/var/logs"}}) {
    const auto plan = build_launch_plan(job(2).output_directory(typed), cpu_node(), kProgram);
    EXPECT_EQ(plan.output_directory, absolute) << typed;
    EXPECT_EQ(rank_command(plan),
              (Args{kLauncher, "--rank-exec", "--output=rank0", "--threads=auto",
                    "--output-dir=" + absolute, "--", kProgram, "arg"}));
    EXPECT_THAT(plan.notes, ::testing::Contains(
                                "each rank's stdout and stderr are also written to " + absolute +
                                "/rank.N/stdout and " + absolute + "/rank.N/stderr"));
  }
}

TEST(LaunchPlan, RanksLearnWhetherTheLaunchersStdoutIsATerminal) {
  const auto piped = build_launch_plan(job(1), cpu_node(), kProgram);
  EXPECT_EQ(env_value(piped, "TNT_STDOUT_IS_TERMINAL"), "false");
  EXPECT_TRUE(exported(piped, "TNT_STDOUT_IS_TERMINAL"));
  const auto terminal = build_launch_plan(job(1), cpu_node().stdout_is_terminal(true), kProgram);
  EXPECT_EQ(env_value(terminal, "TNT_STDOUT_IS_TERMINAL"), "true");
  // The user's -x wins, e.g. to force one line per epoch in a terminal.
  const auto forced = build_launch_plan(job(1).exports({{"TNT_STDOUT_IS_TERMINAL", "false"}}),
                                        cpu_node().stdout_is_terminal(true), kProgram);
  EXPECT_EQ(env_value(forced, "TNT_STDOUT_IS_TERMINAL"), "false");
  EXPECT_TRUE(exported(forced, "TNT_STDOUT_IS_TERMINAL"));
}

TEST(LaunchPlan, ProgramArgumentsThatLookLikeFlagsStayIntact) {
  const auto options = LaunchOptions().ranks(1).command({"p", "-n", "5", "--", "x y"});
  const auto cmd = rank_command(build_launch_plan(options, cpu_node(), kProgram));
  EXPECT_EQ(Args(cmd.end() - 5, cmd.end()), (Args{kProgram, "-n", "5", "--", "x y"}));
}

TEST(LaunchPlan, RootGetsOpenMpiPermissionOnlyInMpirunsEnvironment) {
  const auto as_root = build_launch_plan(job(1), cpu_node().effective_uid(0), kProgram);
  EXPECT_EQ(env_value(as_root, "OMPI_ALLOW_RUN_AS_ROOT"), "1");
  EXPECT_EQ(env_value(as_root, "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"), "1");
  EXPECT_FALSE(exported(as_root, "OMPI_ALLOW_RUN_AS_ROOT"));
  const auto as_user = build_launch_plan(job(1), cpu_node(), kProgram);
  EXPECT_FALSE(env_value(as_user, "OMPI_ALLOW_RUN_AS_ROOT"));
  EXPECT_FALSE(env_value(as_user, "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"));
}

TEST(LaunchPlan, HostfileGivesHostListAndRanksPerNode) {
  const auto options = LaunchOptions().ranks_per_node(2).hosts({"n1", "n2", "n3"}).command({"p"});
  const auto plan = build_launch_plan(options, cpu_node(), kProgram);
  EXPECT_TRUE(
      contains_sequence(plan.argv, {"--host", "n1:2,n2:2,n3:2", "-np", "6", "--npernode", "2"}));
}

TEST(LaunchPlan, HostfileWithoutGpusHereStartsOneRankPerHostSilently) {
  const auto options = LaunchOptions().hosts({"n1", "n2"}).command({"p"});
  const auto plan = build_launch_plan(options, cpu_node(), kProgram);
  EXPECT_TRUE(contains_sequence(plan.argv, {"--host", "n1:1,n2:1", "-np", "2"}));
  EXPECT_THAT(plan.warnings, IsEmpty());
}

// Started from a node without GPUs (a login node), the launcher cannot see
// the hosts' GPUs: each rank decides on its own host, never a forced CPU.
TEST(LaunchPlan, HostfileFromANodeWithoutGpusLetsEachHostDecide) {
  const auto plan = build_launch_plan(LaunchOptions().hosts({"n1", "n2"}).command({"p"}),
                                      cpu_node(), kProgram);
  EXPECT_EQ(env_value(plan, "TNT_USE_GPU"), "auto");
  EXPECT_THAT(plan.notes.front(),
              HasSubstr("1 rank(s) on each of 2 hosts, on the GPU of each rank's host where it "
                        "has one, else the CPU (TNT_USE_GPU=auto"));
  EXPECT_THAT(plan.notes.front(), HasSubstr("give --n-per-node with the GPUs per host"));
  // The user's word still wins, and this node alone is known: false.
  EXPECT_EQ(env_value(build_launch_plan(LaunchOptions().hosts({"n1"}).no_gpu(true).command({"p"}),
                                        cpu_node(), kProgram),
                      "TNT_USE_GPU"),
            "false");
  EXPECT_EQ(env_value(build_launch_plan(job(2), cpu_node(), kProgram), "TNT_USE_GPU"), "false");
  const auto cpu = build_launch_plan(LaunchOptions()
                                         .hosts({"n1"})
                                         .exports({{"TNT_USE_GPU", "false"}})
                                         .network_interface("eth1")
                                         .command({"p"}),
                                     cpu_node(), kProgram);
  EXPECT_EQ(env_value(cpu, "TNT_USE_GPU"), "false");
  EXPECT_THAT(cpu.notes.front(), HasSubstr("on the CPU"));
  EXPECT_FALSE(env_value(cpu, "NCCL_SOCKET_IFNAME"));  // no GPU, no NCCL
}

// Asked for from such a node, GPUs are taken as asked: the ranks check.
TEST(LaunchPlan, GpusAskedForOnAHostfileFromANodeWithoutGpusAreTakenAsAsked) {
  const auto demand = build_launch_plan(
      LaunchOptions().hosts({"n1", "n2"}).exports({{"TNT_USE_GPU", "true"}}).command({"p"}),
      cpu_node(), kProgram);
  EXPECT_TRUE(contains_sequence(demand.argv, {"--host", "n1:1,n2:1", "-np", "2"}));
  EXPECT_EQ(env_value(demand, "TNT_USE_GPU"), "true");
  EXPECT_THAT(demand.notes.front(), HasSubstr("not counted: this node has no GPU"));
  const auto shared = build_launch_plan(
      LaunchOptions().hosts({"n1", "n2"}).ranks_per_gpu(2).command({"p"}), cpu_node(), kProgram);
  EXPECT_TRUE(contains_sequence(shared.argv, {"--host", "n1:2,n2:2", "-np", "4"}));
  EXPECT_EQ(env_value(shared, "TNT_RANKS_PER_GPU"), "2");
  // This node alone: it has no GPU, and that is known.
  EXPECT_THROW(build_launch_plan(job(2).exports({{"TNT_USE_GPU", "true"}}), cpu_node(), kProgram),
               LauncherError);
  EXPECT_THROW(build_launch_plan(LaunchOptions().hosts({"n1"}).exports({{"TNT_USE_GPU", "maybe"}})
                                     .command({"p"}),
                                 cpu_node(), kProgram),
               LauncherError);
}

TEST(LaunchPlan, GpuNodeStartsOneRankPerGpu) {
  const auto options = LaunchOptions().command({"p"});
  const auto plan = build_launch_plan(options, cpu_node().gpu_count(4), kProgram);
  EXPECT_TRUE(contains_sequence(plan.argv, {"-np", "4"}));
  // "auto": the rank's LibTorch decides; "true" would be a demand.
  EXPECT_EQ(env_value(plan, "TNT_USE_GPU"), "auto");
  EXPECT_TRUE(exported(plan, "TNT_USE_GPU"));
  EXPECT_THAT(plan.warnings, IsEmpty());
}

// -x TNT_USE_GPU=true is checked against the node before anything starts.
TEST(LaunchPlan, ExplicitGpuRequestOnACpuNodeIsRefused) {
  EXPECT_THROW(build_launch_plan(job(2).exports({{"TNT_USE_GPU", "true"}}), cpu_node(), kProgram),
               LauncherError);
  const auto met = build_launch_plan(job(2).exports({{"TNT_USE_GPU", "true"}}),
                                     cpu_node().gpu_count(2), kProgram);
  EXPECT_EQ(env_value(met, "TNT_USE_GPU"), "true");
}

TEST(LaunchPlan, MoreRanksThanGpusRunOnCpuWithWarning) {
  const auto plan = build_launch_plan(job(3), cpu_node().gpu_count(2), kProgram);
  EXPECT_EQ(env_value(plan, "TNT_USE_GPU"), "false");
  EXPECT_THAT(plan.warnings, ElementsAre(HasSubstr("3 ranks per node requested")));
}

TEST(LaunchPlan, RanksPerGpuSharesTheGpusOfTheNode) {
  const auto plan =
      build_launch_plan(LaunchOptions().ranks_per_gpu(2).command({"p"}), cpu_node().gpu_count(1),
                        kProgram);
  EXPECT_TRUE(contains_sequence(plan.argv, {"-np", "2"}));
  EXPECT_EQ(env_value(plan, "TNT_USE_GPU"), "auto");
  // The ranks learn that the sharing is on purpose (no warning there).
  EXPECT_EQ(env_value(plan, "TNT_RANKS_PER_GPU"), "2");
  EXPECT_FALSE(env_value(build_launch_plan(job(2), cpu_node().gpu_count(2), kProgram),
                         "TNT_RANKS_PER_GPU"));
  EXPECT_THAT(plan.warnings, IsEmpty());
  EXPECT_THROW(build_launch_plan(job(2).ranks_per_gpu(2), cpu_node(), kProgram), LauncherError);
}

// The ranks see the GPUs of the CUDA_VISIBLE_DEVICES that -x gives them,
// not of the launcher's own: the rank count and the device follow it.
TEST(LaunchPlan, ACudaVisibleDevicesGivenWithXIsWhatTheGpusAreCountedFrom) {
  const auto eight = cpu_node().gpu_count(8).installed_gpu_count(8);
  const auto visible = [](const std::string& value) {
    return LaunchOptions().exports({{"CUDA_VISIBLE_DEVICES", value}}).command({"p"});
  };
  const auto two = build_launch_plan(visible("0,1"), eight, kProgram);
  EXPECT_TRUE(contains_sequence(two.argv, {"-np", "2"}));
  EXPECT_EQ(env_value(two, "TNT_USE_GPU"), "auto");
  EXPECT_EQ(env_value(two, "CUDA_VISIBLE_DEVICES"), "0,1");
  const auto too_many = build_launch_plan(
      job(8).exports({{"CUDA_VISIBLE_DEVICES", "0,1"}}), eight, kProgram);
  EXPECT_EQ(env_value(too_many, "TNT_USE_GPU"), "false");
  EXPECT_THAT(too_many.warnings, ElementsAre(HasSubstr("this node has 2 GPUs")));
  EXPECT_THROW(build_launch_plan(job(8).exports({{"CUDA_VISIBLE_DEVICES", "0,1"},
                                                 {"TNT_USE_GPU", "true"}}),
                                 eight, kProgram),
               LauncherError);
  const auto none = build_launch_plan(visible(""), eight, kProgram);  // hides every GPU
  EXPECT_TRUE(contains_sequence(none.argv, {"-np", "1"}));
  EXPECT_EQ(env_value(none, "TNT_USE_GPU"), "false");
  EXPECT_THAT(none.notes.front(), HasSubstr("on the CPU"));
  // The launcher's own CUDA_VISIBLE_DEVICES (one GPU seen of 8) gives way.
  const auto four =
      build_launch_plan(visible("0,1,2,3"), cpu_node().gpu_count(1).installed_gpu_count(8), kProgram);
  EXPECT_TRUE(contains_sequence(four.argv, {"-np", "4"}));
}

// -x TNT_USE_GPU=auto is no request: the launcher's choice stands, and the
// ranks are told it (not "auto", which would put 3 ranks on 2 GPUs).
TEST(LaunchPlan, AutoGivenWithXLeavesTheChoiceToTheLauncher) {
  const auto plan = build_launch_plan(job(3).exports({{"TNT_USE_GPU", "auto"}}),
                                      cpu_node().gpu_count(2), kProgram);
  EXPECT_EQ(env_value(plan, "TNT_USE_GPU"), "false");
  EXPECT_THAT(plan.warnings, ElementsAre(HasSubstr("all ranks run on the CPU")));
  const auto fits = build_launch_plan(job(2).exports({{"TNT_USE_GPU", " Auto"}}),
                                      cpu_node().gpu_count(2), kProgram);
  EXPECT_EQ(env_value(fits, "TNT_USE_GPU"), "auto");
  // The last -x is the one that counts, for the plan and for the ranks.
  const auto last = build_launch_plan(
      job(3).exports({{"TNT_USE_GPU", "true"}, {"TNT_USE_GPU", "auto"}}), cpu_node().gpu_count(2),
      kProgram);
  EXPECT_EQ(env_value(last, "TNT_USE_GPU"), "false");
}

TEST(LaunchPlan, NoGpuFlagIsSilent) {
  const auto plan = build_launch_plan(job(2).no_gpu(true), cpu_node().gpu_count(4), kProgram);
  EXPECT_EQ(env_value(plan, "TNT_USE_GPU"), "false");
  EXPECT_THAT(plan.warnings, IsEmpty());
}

// Asked for the CPU, the program sees no GPU either: an own loop's
// `torch::cuda::is_available() ? kCUDA : kCPU` would otherwise put every
// rank on GPU 0 while the engine trains on the CPU.
TEST(LaunchPlan, TheCpuAskedForHidesTheGpusFromTheProgram) {
  const auto hides = [](const LaunchOptions& options) {
    const auto cmd = rank_command(build_launch_plan(options, cpu_node().gpu_count(4), kProgram));
    return std::find(cmd.begin(), cmd.end(), "--hide-gpus") != cmd.end();
  };
  EXPECT_TRUE(hides(job(2).no_gpu(true)));
  EXPECT_TRUE(hides(job(2).exports({{"TNT_USE_GPU", "false"}})));
  EXPECT_TRUE(hides(job(2).exports({{"TNT_USE_GPU", "true"}, {"TNT_USE_GPU", "0"}})));
  // The launcher's own choice of the CPU (more ranks than GPUs; a warning
  // says so) too. GPUs used, or the user's own CUDA_VISIBLE_DEVICES: left.
  EXPECT_TRUE(hides(job(6)));
  EXPECT_FALSE(hides(job(2)));
  EXPECT_FALSE(hides(job(2).exports({{"TNT_USE_GPU", "auto"}})));
  EXPECT_FALSE(hides(job(2).no_gpu(true).exports({{"CUDA_VISIBLE_DEVICES", "1"}})));
  // A node without GPUs: nothing to hide, the command as it was.
  const auto cpu_node_cmd = rank_command(build_launch_plan(job(2), cpu_node(), kProgram));
  EXPECT_EQ(std::find(cpu_node_cmd.begin(), cpu_node_cmd.end(), "--hide-gpus"),
            cpu_node_cmd.end());
}

// The manual's variable given with -x does what the flag does: every
// rank's output reaches the console (it was exported, and the wrapper
// still dropped the other ranks' output).
TEST(LaunchPlan, OutputOnAllDevicesGivenWithXIsTheFlag) {
  const auto wrapper_output = [](const LaunchOptions& options) {
    const auto cmd = rank_command(build_launch_plan(options, cpu_node(), kProgram));
    return std::find(cmd.begin(), cmd.end(), "--output=all") != cmd.end();
  };
  EXPECT_TRUE(wrapper_output(job(2).exports({{"TNT_OUTPUT_ON_ALL_DEVICES", "true"}})));
  EXPECT_TRUE(wrapper_output(job(2).exports({{"TNT_OUTPUT_ON_ALL_DEVICES", "1"}})));
  EXPECT_TRUE(wrapper_output(job(2).output_on_all_devices(true)));
  EXPECT_FALSE(wrapper_output(job(2).exports({{"TNT_OUTPUT_ON_ALL_DEVICES", "false"}})));
  EXPECT_FALSE(wrapper_output(job(2)));
}

// TNT_* and NCCL_* settings of the launcher's shell reach the ranks on other
// hosts too (mpirun passes only what -x names; ssh starts a clean shell),
// unless the launcher or -x sets them.
TEST(LaunchPlan, TheShellsTarantellaAndNcclSettingsReachEveryHost) {
  const auto node = cpu_node().forwarded_variables({"NCCL_DEBUG", "TNT_COMM_TIMEOUT", "TNT_USE_GPU"});
  const auto plan =
      build_launch_plan(job(2).exports({{"TNT_COMM_TIMEOUT", "9"}}), node, kProgram);
  EXPECT_TRUE(exported(plan, "NCCL_DEBUG"));
  EXPECT_FALSE(env_value(plan, "NCCL_DEBUG"));  // the launcher's own value, inherited
  EXPECT_EQ(env_value(plan, "TNT_COMM_TIMEOUT"), "9");
  EXPECT_EQ(env_value(plan, "TNT_USE_GPU"), "false");  // the launcher's choice
  EXPECT_TRUE(exported(plan, "TNT_USE_GPU"));
}

TEST(LaunchPlan, LoggingAndOutputSettingsAreExported) {
  const auto quiet = build_launch_plan(job(1), cpu_node(), kProgram);
  EXPECT_FALSE(env_value(quiet, "TNT_LOG_LEVEL"));
  EXPECT_EQ(env_value(quiet, "TNT_LOG_ON_ALL_DEVICES"), "false");
  EXPECT_EQ(env_value(quiet, "TNT_OUTPUT_ON_ALL_DEVICES"), "false");

  const auto options =
      job(1).log_level(std::string("DEBUG")).log_on_all_devices(true).output_on_all_devices(true);
  const auto loud = build_launch_plan(options, cpu_node(), kProgram);
  EXPECT_EQ(env_value(loud, "TNT_LOG_LEVEL"), "DEBUG");
  EXPECT_EQ(env_value(loud, "TNT_LOG_ON_ALL_DEVICES"), "true");
  EXPECT_EQ(env_value(loud, "TNT_OUTPUT_ON_ALL_DEVICES"), "true");
  for (const char* name :
       {"TNT_LOG_LEVEL", "TNT_LOG_ON_ALL_DEVICES", "TNT_OUTPUT_ON_ALL_DEVICES"}) {
    EXPECT_TRUE(exported(loud, name)) << name;
  }
  EXPECT_TRUE(contains_sequence(rank_command(loud), {"--output=all"}));
}

TEST(LaunchPlan, FusionThresholdInKib) {
  const auto none = build_launch_plan(job(1), cpu_node(), kProgram);
  EXPECT_FALSE(env_value(none, "TNT_FUSION_THRESHOLD"));
  const auto plan = build_launch_plan(job(1).fusion_threshold_kib(64), cpu_node(), kProgram);
  EXPECT_EQ(env_value(plan, "TNT_FUSION_THRESHOLD"), "64");
  EXPECT_TRUE(exported(plan, "TNT_FUSION_THRESHOLD"));
}

TEST(LaunchPlan, TimelineAndAutotuneFilesAreExportedAsAbsolutePaths) {
  const auto none = build_launch_plan(job(1), cpu_node(), kProgram);
  for (const char* name : {"TNT_TIMELINE", "TNT_AUTOTUNE", "TNT_AUTOTUNE_LOG"}) {
    EXPECT_FALSE(env_value(none, name)) << name;
    EXPECT_FALSE(exported(none, name)) << name;
  }
  const auto options = job(2)
                           .timeline_file(std::string("out/./trace.json"))
                           .autotune(true)
                           .autotune_log_file(std::string("/tmp//trials.csv"));
  const auto plan = build_launch_plan(options, cpu_node(), kProgram);
  EXPECT_EQ(env_value(plan, "TNT_TIMELINE"), "/home/me/run/out/trace.json");
  EXPECT_EQ(env_value(plan, "TNT_AUTOTUNE"), "true");
  EXPECT_EQ(env_value(plan, "TNT_AUTOTUNE_LOG"), "/tmp/trials.csv");
  for (const char* name : {"TNT_TIMELINE", "TNT_AUTOTUNE", "TNT_AUTOTUNE_LOG"}) {
    EXPECT_TRUE(exported(plan, name)) << name;
  }
  const auto autotune_only = build_launch_plan(job(1).autotune(true), cpu_node(), kProgram);
  EXPECT_EQ(env_value(autotune_only, "TNT_AUTOTUNE"), "true");
  EXPECT_FALSE(env_value(autotune_only, "TNT_AUTOTUNE_LOG"));
}

TEST(LaunchPlan, McaParametersGoToMpirunInOrderBeforeThePlacement) {
  const auto options =
      LaunchOptions()
          .hosts({"10.0.0.1", "10.0.0.2"})
          .ranks_per_node(1)
          .mca_parameters({{"plm_rsh_agent", "/opt/agent one.sh"}, {"btl", "self,tcp"}})
          .command({"prog"});
  const auto plan = build_launch_plan(options, cpu_node(), kProgram);
  EXPECT_TRUE(contains_sequence(
      plan.argv, {"--bind-to", "none", "--mca", "plm_rsh_agent", "/opt/agent one.sh", "--mca",
                  "btl", "self,tcp", "--host", "10.0.0.1:1,10.0.0.2:1"}));
  const auto none = build_launch_plan(job(1), cpu_node(), kProgram);
  EXPECT_FALSE(contains_sequence(none.argv, {"--mca"}));
}

TEST(LaunchPlan, CleanupAcrossHostsUsesTheSameMcaParameters) {
  const auto options = LaunchOptions()
                           .cleanup(true)
                           .hosts({"a", "b"})
                           .mca_parameters({{"plm_rsh_agent", "/opt/agent.sh"}})
                           .command({"prog"});
  const auto plan = build_cleanup_plan(options, cpu_node(), "/abs/prog");
  EXPECT_TRUE(contains_sequence(plan.argv, {"--mca", "plm_rsh_agent", "/opt/agent.sh"}));
}

TEST(LaunchPlan, UserExportsKeepOrderAndValuesAfterOurs) {
  const auto options = job(1).exports({{"Z", "1"}, {"B", "two words"}, {"Q", "it's \"x\""}});
  const auto plan = build_launch_plan(options, cpu_node(), kProgram);
  EXPECT_EQ(env_value(plan, "B"), "two words");
  EXPECT_EQ(env_value(plan, "Q"), "it's \"x\"");
  EXPECT_EQ(exported_names(plan),
            (Args{"TNT_USE_GPU", "TNT_LOG_ON_ALL_DEVICES", "TNT_OUTPUT_ON_ALL_DEVICES",
                  "TNT_STDOUT_IS_TERMINAL", "Z", "B", "Q", "TNT_RESTART_COUNT"}));
}

TEST(LaunchPlan, RestartCountIsExportedAndCannotBeOverridden) {
  const auto first = build_launch_plan(job(2), cpu_node(), kProgram);
  EXPECT_EQ(env_value(first, "TNT_RESTART_COUNT"), "0");
  EXPECT_TRUE(exported(first, "TNT_RESTART_COUNT"));
  const auto options = job(2).restart_count(2).exports({{"TNT_RESTART_COUNT", "7"}});
  const auto restart = build_launch_plan(options, cpu_node(), kProgram);
  EXPECT_EQ(env_value(restart, "TNT_RESTART_COUNT"), "2");
  EXPECT_TRUE(exported(restart, "TNT_RESTART_COUNT"));
}

TEST(LaunchPlan, RanksPerNodeIsKeptForRestarts) {
  EXPECT_EQ(build_launch_plan(job(3), cpu_node(), kProgram).ranks_per_node, 3);
  const auto options = LaunchOptions().ranks_per_node(2).hosts({"a", "b", "c"}).command({"p"});
  EXPECT_EQ(build_launch_plan(options, cpu_node(), kProgram).ranks_per_node, 2);
}

TEST(LaunchPlan, RestartSettingsAreShownAsNotes) {
  EXPECT_THAT(build_launch_plan(job(2), cpu_node(), kProgram).notes,
              ::testing::Not(::testing::Contains(HasSubstr("restart"))));
  const auto single = build_launch_plan(job(2).max_restarts(3), cpu_node(), kProgram);
  EXPECT_THAT(single.notes, ::testing::Contains("on failure: up to 3 restart(s) "
                                                "(TNT_RESTART_COUNT=0 now, 1..3 on restarts)"));
  const auto hosts = LaunchOptions().ranks_per_node(2).hosts({"a", "b"}).command({"p"});
  const auto all = build_launch_plan(LaunchOptions(hosts).max_restarts(1), cpu_node(), kProgram);
  EXPECT_THAT(all.notes, ::testing::Contains(HasSubstr(
                             "each restart first probes the 2 hosts, all of which must be "
                             "reachable (no --min-ranks)")));
  const auto some =
      build_launch_plan(LaunchOptions(hosts).max_restarts(1).min_ranks(2), cpu_node(), kProgram);
  EXPECT_THAT(some.notes, ::testing::Contains(HasSubstr(
                              "leaves out those that cannot be reached while at least 2 ranks "
                              "remain (--min-ranks)")));
}

TEST(LaunchPlan, MinRanksCannotExceedTheRanksOfTheFirstRun) {
  const auto hosts =
      LaunchOptions().ranks_per_node(2).hosts({"a", "b"}).max_restarts(1).command({"p"});
  EXPECT_EQ(
      error_of([&] { build_launch_plan(LaunchOptions(hosts).min_ranks(5), cpu_node(), kProgram); }),
      "--min-ranks 5 is more than the 4 ranks the job starts (2 host(s) x 2 rank(s) per "
      "node): give --min-ranks 4 or less");
  EXPECT_EQ(
      error_of([&] { build_launch_plan(LaunchOptions(hosts).min_ranks(4), cpu_node(), kProgram); }),
      "<no error>");
}

TEST(LaunchPlan, RepeatedExportKeepsTheLastValueOnce) {
  const auto options = job(1)
                           .log_level(std::string("DEBUG"))
                           .exports({{"A", "1"}, {"TNT_LOG_LEVEL", "INFO"}, {"A", "2"}});
  const auto plan = build_launch_plan(options, cpu_node(), kProgram);
  EXPECT_EQ(env_value(plan, "A"), "2");
  EXPECT_EQ(env_value(plan, "TNT_LOG_LEVEL"), "INFO");
  EXPECT_TRUE(exported(plan, "A"));
  EXPECT_TRUE(exported(plan, "TNT_LOG_LEVEL"));
}

TEST(LaunchPlan, ThreadsComputedPerRankUnlessTheUserSetThem) {
  const auto automatic = build_launch_plan(job(2), cpu_node(), kProgram);
  EXPECT_TRUE(contains_sequence(rank_command(automatic), {"--threads=auto"}));
  EXPECT_FALSE(exported(automatic, "OMP_NUM_THREADS"));
  EXPECT_THAT(automatic.notes, ::testing::Contains(HasSubstr(
                                   "OMP_NUM_THREADS per rank on this node: 1 (2 cores / 2 ranks")));

  const auto from_env = build_launch_plan(job(2), cpu_node().omp_num_threads_set(true), kProgram);
  EXPECT_TRUE(contains_sequence(rank_command(from_env), {"--threads=inherit"}));
  EXPECT_TRUE(exported(from_env, "OMP_NUM_THREADS"));
  EXPECT_FALSE(env_value(from_env, "OMP_NUM_THREADS"));  // forwarded, not overwritten

  const auto from_x =
      build_launch_plan(job(2).exports({{"OMP_NUM_THREADS", "3"}}), cpu_node(), kProgram);
  EXPECT_TRUE(contains_sequence(rank_command(from_x), {"--threads=inherit"}));
  EXPECT_EQ(env_value(from_x, "OMP_NUM_THREADS"), "3");
}

TEST(LaunchPlan, InterpreterWordsGoBeforeTheProgram) {
  const auto options = job(1).interpreter(Args{"valgrind", "--leak-check=yes"});
  const auto plan = build_launch_plan(options, cpu_node(), kProgram);
  EXPECT_TRUE(contains_sequence(rank_command(plan),
                                {"--", "valgrind", "--leak-check=yes", kProgram, "arg"}));
  EXPECT_THAT(plan.notes, ::testing::Contains(kProgram + " runs under valgrind --leak-check=yes "
                                                         "(--python-interpreter)"));
}

const std::string kScript = "/home/me/run/train.py";

LaunchOptions script_job() {
  return LaunchOptions().ranks(2).command({"train.py", "--epochs", "2"});
}

TEST(LaunchPlan, PythonScriptRunsUnderTheRecordedPython) {
  const auto facts = cpu_node().default_python("/usr/bin/python3");
  const auto plan = build_launch_plan(script_job(), facts, kScript);
  EXPECT_TRUE(
      contains_sequence(rank_command(plan), {"--", "/usr/bin/python3", kScript, "--epochs", "2"}));
  EXPECT_THAT(plan.notes, ::testing::Contains(HasSubstr(
                              kScript + " runs under /usr/bin/python3 (the Python Tarantella "
                                        "was built for; --python-interpreter CMD names another)")));
}

TEST(LaunchPlan, PythonScriptRunsUnderPython3FromPathWithoutARecordedOne) {
  const auto plan = build_launch_plan(script_job(), cpu_node().default_python("python3"), kScript);
  EXPECT_TRUE(contains_sequence(rank_command(plan), {"--", "python3", kScript, "--epochs"}));
  EXPECT_THAT(plan.notes, ::testing::Contains(HasSubstr("runs under python3 (from PATH")));
}

TEST(LaunchPlan, NamedInterpreterReplacesTheDefaultForScripts) {
  const auto options = script_job().interpreter(Args{"env", "FOO=1", "/opt/py/bin/python"});
  const auto cmd = rank_command(
      build_launch_plan(options, cpu_node().default_python("/usr/bin/python3"), kScript));
  EXPECT_TRUE(contains_sequence(cmd, {"--", "env", "FOO=1", "/opt/py/bin/python", kScript}));
  EXPECT_EQ(std::count(cmd.begin(), cmd.end(), "/usr/bin/python3"), 0);
}

TEST(LaunchPlan, EmptyInterpreterRunsAScriptAsAProgram) {
  const auto options = script_job().interpreter(Args{});
  const auto plan =
      build_launch_plan(options, cpu_node().default_python("/usr/bin/python3"), kScript);
  EXPECT_TRUE(contains_sequence(rank_command(plan), {"--", kScript, "--epochs"}));
  EXPECT_THAT(plan.notes,
              ::testing::Contains(kScript + " runs as a program (--python-interpreter '')"));
}

TEST(LaunchPlan, OtherProgramsRunThemselvesWithoutTheFlag) {
  const auto plan =
      build_launch_plan(job(1), cpu_node().default_python("/usr/bin/python3"), kProgram);
  EXPECT_TRUE(contains_sequence(rank_command(plan), {"--", kProgram, "arg"}));
  EXPECT_THAT(plan.notes, ::testing::Not(::testing::Contains(HasSubstr("runs "))));
}

TEST(LaunchPlan, BuildTreePackageComesFirstInPythonPath) {
  const NodeFacts facts = cpu_node().python_package_dir("/src/build/python");
  const auto plan = build_launch_plan(script_job(), facts, kScript);
  EXPECT_EQ(env_value(plan, "PYTHONPATH"), "/src/build/python");
  EXPECT_TRUE(exported(plan, "PYTHONPATH"));
  EXPECT_THAT(plan.notes,
              ::testing::Contains(HasSubstr("PYTHONPATH starts with /src/build/python")));

  const auto inherited =
      build_launch_plan(script_job(), NodeFacts(facts).python_path("/mine:/theirs"), kScript);
  EXPECT_EQ(env_value(inherited, "PYTHONPATH"), "/src/build/python:/mine:/theirs");

  // -x wins over the launcher's own value, and still comes after the package.
  const auto from_x = build_launch_plan(script_job().exports({{"PYTHONPATH", "/x"}}),
                                        NodeFacts(facts).python_path("/mine"), kScript);
  EXPECT_EQ(env_value(from_x, "PYTHONPATH"), "/src/build/python:/x");
  EXPECT_TRUE(exported(from_x, "PYTHONPATH"));
}

TEST(LaunchPlan, InstalledLauncherLeavesPythonPathAlone) {
  const auto plan = build_launch_plan(script_job(), cpu_node().python_path("/mine"), kScript);
  EXPECT_FALSE(env_value(plan, "PYTHONPATH"));
  EXPECT_FALSE(exported(plan, "PYTHONPATH"));  // ranks here inherit it from mpirun
}

TEST(LaunchPlan, PinningAddsWrapperFlags) {
  const auto options = job(2).pin_to_socket(true).pin_memory_to_socket(true);
  const auto cmd =
      rank_command(build_launch_plan(options, cpu_node().numa_node_count(2), kProgram));
  EXPECT_TRUE(contains_sequence(cmd, {"--pin-cpu", "--pin-memory", "--"}));
  const auto cpu_only = rank_command(
      build_launch_plan(job(2).pin_to_socket(true), cpu_node().numa_node_count(2), kProgram));
  EXPECT_TRUE(contains_sequence(cpu_only, {"--pin-cpu", "--"}));
}

TEST(LaunchPlan, PinningWithoutNumactlIsAnError) {
  const auto message = error_of([] {
    build_launch_plan(job(1).pin_to_socket(true), cpu_node().numactl_available(false), kProgram);
  });
  EXPECT_THAT(message, HasSubstr("--pin-to-socket needs numactl"));
  EXPECT_THAT(message, HasSubstr("apt-get install numactl"));
}

TEST(LaunchPlan, PinningNeedsANumaNodePerRank) {
  const auto message = error_of([] {
    build_launch_plan(job(2).pin_memory_to_socket(true), cpu_node().numa_node_count(1), kProgram);
  });
  EXPECT_THAT(message, HasSubstr("--pin-memory-to-socket: 2 ranks per node but this node has "
                                 "only 1 NUMA node(s)"));
}

TEST(LaunchPlan, CleanupRunsOneLauncherPerHost) {
  const auto options = LaunchOptions().cleanup(true).hosts({"a", "b"}).command({"prog"});
  const auto plan = build_cleanup_plan(options, cpu_node(), "/abs/prog");
  EXPECT_TRUE(contains_sequence(plan.argv, {"--host", "a:1,b:1", "-np", "2", "--npernode", "1"}));
  EXPECT_TRUE(contains_sequence(plan.argv,
                                {kLauncher, "--cleanup-exec", "--signal=TERM", "--", "/abs/prog"}));
  const auto forced =
      build_cleanup_plan(LaunchOptions(options).force(true), cpu_node(), "/abs/prog");
  EXPECT_TRUE(contains_sequence(forced.argv, {"--cleanup-exec", "--signal=KILL"}));
}

// Inside a Slurm allocation: 3 tasks on 2 nodes (2 + 1).
NodeFacts slurm_node() {
  SlurmAllocation slurm;
  slurm.job_id = "42";
  slurm.hosts = {"node01", "node02"};
  slurm.tasks_per_node = {2, 1};
  slurm.node_list_text = "node[01-02]";
  slurm.tasks_per_node_text = "2,1";
  return cpu_node().slurm_allocation(slurm);
}

LaunchOptions any_ranks() { return LaunchOptions().command({"./prog"}); }

TEST(LaunchPlan, SlurmAllocationGivesItsHostsAndTasksWithoutHostfile) {
  const auto plan = build_launch_plan(any_ranks(), slurm_node(), kProgram);
  EXPECT_EQ(plan.argv[0], "mpirun");
  EXPECT_TRUE(contains_sequence(plan.argv, {"--host", "node01:2,node02:1", "-np", "3", "-x"}));
  EXPECT_FALSE(contains_sequence(plan.argv, {"--npernode"}));
  EXPECT_THAT(plan.warnings, IsEmpty());  // no "no GPU found": the tasks say how many
  EXPECT_EQ(env_value(plan, "TNT_USE_GPU"), "auto");  // this node cannot see the hosts' GPUs
  EXPECT_EQ(env_value(plan, kRestartCountVariable), "0");
  EXPECT_THAT(plan.notes.front(),
              HasSubstr("Slurm job 42 (SLURM_JOB_NODELIST=node[01-02], SLURM_TASKS_PER_NODE=2,1): "
                        "3 rank(s), 2 on node01, 1 on node02, on the GPU of each rank's host"));
}

TEST(LaunchPlan, SlurmJobThatDoesNotSayItsGpusLetsEachHostDecideFromALoginNode) {
  // slurm_node(): no SLURM_GPUS_PER_NODE, and this node has no GPU.
  const auto plan = build_launch_plan(any_ranks(), slurm_node(), kProgram);
  EXPECT_EQ(env_value(plan, "TNT_USE_GPU"), "auto");
  EXPECT_THAT(plan.notes.front(), HasSubstr("on the GPU of each rank's host where it has one"));
  // A job that says it has no GPUs, or a node that counts them, decides here.
  // --ranks-per-gpu reaches the ranks there too (sharing on purpose).
  EXPECT_EQ(env_value(build_launch_plan(any_ranks().ranks_per_gpu(2), slurm_node(), kProgram),
                      "TNT_RANKS_PER_GPU"),
            "2");
  SlurmAllocation none = *slurm_node().slurm_allocation();
  none.gpus_per_node = 0;
  EXPECT_EQ(env_value(build_launch_plan(any_ranks(), cpu_node().slurm_allocation(none), kProgram),
                      "TNT_USE_GPU"),
            "false");
}

// Inside a Slurm job the GPU flags mean what they mean on a node of one's
// own: TNT_USE_GPU=false counts the job's tasks, not its GPUs, and the
// contradictions are refused before anything starts.
TEST(LaunchPlan, SlurmJobTakesTheGpuFlagsAsANodeDoes) {
  SlurmAllocation gpus = *slurm_node().slurm_allocation();
  gpus.tasks_per_node = {1, 1};
  gpus.tasks_per_node_text = "1(x2)";
  gpus.gpus_per_node = 8;
  const NodeFacts node = cpu_node().gpu_count(8).slurm_allocation(gpus);
  EXPECT_TRUE(contains_sequence(build_launch_plan(any_ranks(), node, kProgram).argv,
                                {"--host", "node01:8,node02:8", "-np", "16"}));
  // A CUDA_VISIBLE_DEVICES given to the ranks caps the job's GPUs per node.
  EXPECT_TRUE(contains_sequence(
      build_launch_plan(any_ranks().exports({{"CUDA_VISIBLE_DEVICES", "0,1"}}), node, kProgram)
          .argv,
      {"--host", "node01:2,node02:2", "-np", "4"}));
  const auto cpu =
      build_launch_plan(any_ranks().exports({{"TNT_USE_GPU", "false"}}), node, kProgram);
  EXPECT_TRUE(contains_sequence(cpu.argv, {"--host", "node01:1,node02:1", "-np", "2"}));
  EXPECT_EQ(env_value(cpu, "TNT_USE_GPU"), "false");
  EXPECT_THAT(cpu.notes.front(), HasSubstr("on the CPU"));
  EXPECT_THAT(error_of([&] {
                build_launch_plan(any_ranks().ranks_per_gpu(2).exports({{"TNT_USE_GPU", "false"}}),
                                  node, kProgram);
              }),
              HasSubstr("--ranks-per-gpu 2 shares GPUs, but -x TNT_USE_GPU=false runs every rank "
                        "on the CPU"));
  EXPECT_THAT(error_of([&] {
                build_launch_plan(any_ranks().ranks_per_gpu(2).no_gpu(true), node, kProgram);
              }),
              HasSubstr("--ranks-per-gpu 2 shares GPUs, but --no-gpu"));
  EXPECT_THAT(error_of([&] {
                build_launch_plan(any_ranks().no_gpu(true).exports({{"TNT_USE_GPU", "true"}}),
                                  node, kProgram);
              }),
              HasSubstr("asks for a GPU on every rank and --no-gpu for none"));
}

// sbatch --gpus-per-task=1 --ntasks=3 over 2 nodes (2 + 1): a rank per
// task's GPU, wherever the tasks are; mpirun across nodes is warned about.
TEST(LaunchPlan, SlurmGpusBoundToTasksGiveARankPerTask) {
  SlurmAllocation per_task = *slurm_node().slurm_allocation();
  per_task.gpus_per_task = 1;
  const NodeFacts node = cpu_node().gpu_count(2).slurm_allocation(per_task);
  const auto plan = build_launch_plan(any_ranks(), node, kProgram);
  EXPECT_TRUE(contains_sequence(plan.argv, {"--host", "node01:2,node02:1", "-np", "3"}));
  EXPECT_EQ(env_value(plan, "TNT_USE_GPU"), "auto");
  EXPECT_THAT(plan.warnings, ElementsAre(HasSubstr("binds its GPUs to tasks (SLURM_GPUS_PER_TASK=1)"
                                                   ": mpirun starts the ranks of the other nodes")));
  EXPECT_THAT(build_launch_plan(any_ranks().srun(true), node, kProgram).warnings, IsEmpty());
  EXPECT_THAT(build_launch_plan(job(2), node, kProgram).warnings, IsEmpty());  // node01 only
  // srun: one rank per task, so no host may have more ranks than tasks.
  EXPECT_THAT(error_of([&] {
                build_launch_plan(any_ranks().srun(true).ranks_per_gpu(2), node, kProgram);
              }),
              HasSubstr("4 ranks on node01 (one per GPU, 2 per GPU with --ranks-per-gpu) are "
                        "more than its 2 task(s) of Slurm job 42 (SLURM_GPUS_PER_TASK=1)"));
  per_task.gpus_per_task = 2;
  const NodeFacts two = cpu_node().gpu_count(4).slurm_allocation(per_task);
  EXPECT_THAT(error_of([&] { build_launch_plan(any_ranks().srun(true), two, kProgram); }),
              HasSubstr("4 ranks on node01 (one per GPU) are more than its 2 task(s)"));
  // Within the tasks: allowed (2 ranks, 2 tasks on node01).
  EXPECT_TRUE(contains_sequence(
      build_launch_plan(any_ranks().srun(true).ranks_per_node(1), two, kProgram).argv,
      {"--nodes=2", "--ntasks=2"}));
}

TEST(LaunchPlan, SlurmAllocationNarrowedByMinusN) {
  const auto plan = build_launch_plan(job(2), slurm_node(), kProgram);
  EXPECT_TRUE(contains_sequence(plan.argv, {"--host", "node01:2", "-np", "2"}));
  EXPECT_THAT(error_of([] { build_launch_plan(job(4), slurm_node(), kProgram); }),
              HasSubstr("-n 4 is more than the 3 tasks of Slurm job 42"));
}

TEST(LaunchPlan, SrunStartsTheRanksWithTheVariablesInItsEnvironment) {
  const auto options =
      any_ranks().srun(true).exports({{"A", "1"}}).mca_parameters({{"btl", "self,tcp"}});
  const auto plan = build_launch_plan(options, slurm_node(), kProgram);
  EXPECT_THAT(Args(plan.argv.begin(), plan.argv.begin() + 4),
              ElementsAre("srun", "--mpi=pmix", "--kill-on-bad-exit=1", "--cpu-bind=none"));
  EXPECT_TRUE(contains_sequence(plan.argv, {"--nodes=2", "--ntasks=3", "--distribution=arbitrary",
                                            "--nodelist=node01,node01,node02", kLauncher}));
  EXPECT_THAT(exported_names(plan), IsEmpty());
  EXPECT_EQ(env_value(plan, "A"), "1");
  EXPECT_EQ(env_value(plan, "OMPI_MCA_btl"), "self,tcp");
  EXPECT_EQ(env_value(plan, kRestartCountVariable), "0");
  EXPECT_THAT(plan.notes.front(), HasSubstr("started by srun --mpi=pmix (--srun)"));
  const auto even =
      build_launch_plan(LaunchOptions(options).ranks_per_node(1), slurm_node(), kProgram);
  EXPECT_TRUE(contains_sequence(
      even.argv, {"--nodes=2", "--ntasks=2", "--ntasks-per-node=1", "--nodelist=node01,node02"}));
}

TEST(LaunchPlan, SrunOutsideSlurmIsAnError) {
  EXPECT_THAT(error_of([] { build_launch_plan(job(1).srun(true), cpu_node(), kProgram); }),
              HasSubstr("--srun starts the ranks with Slurm's srun, but this is not a Slurm job"));
}

TEST(LaunchPlan, HostfileInsideSlurmWinsAndSaysSo) {
  const auto plan =
      build_launch_plan(any_ranks().hosts({"a", "b"}).ranks_per_node(1), slurm_node(), kProgram);
  EXPECT_TRUE(contains_sequence(plan.argv, {"--host", "a:1,b:1", "-np", "2", "--npernode", "1"}));
  EXPECT_THAT(plan.notes, ::testing::Contains(HasSubstr("its hosts are not used")));
}

TEST(LaunchPlan, NetworkInterfaceNamesGoToNcclOnGpus) {
  const auto gpu = build_launch_plan(job(2).network_interface("ib0,10.1.0.0/16,eth1"),
                                     cpu_node().gpu_count(2), kProgram);
  EXPECT_EQ(env_value(gpu, "NCCL_SOCKET_IFNAME"), "=ib0,eth1");
  // Subnets only (NCCL takes names), or the CPU (no NCCL): nothing.
  EXPECT_FALSE(env_value(build_launch_plan(job(2).network_interface("10.1.0.0/16"),
                                           cpu_node().gpu_count(2), kProgram),
                         "NCCL_SOCKET_IFNAME"));
  EXPECT_FALSE(env_value(build_launch_plan(job(2).network_interface("eth1"), cpu_node(), kProgram),
                         "NCCL_SOCKET_IFNAME"));
  // The user's -x wins.
  const auto own = build_launch_plan(
      job(2).network_interface("eth1").exports({{"NCCL_SOCKET_IFNAME", "eth2"}}),
      cpu_node().gpu_count(2), kProgram);
  EXPECT_EQ(env_value(own, "NCCL_SOCKET_IFNAME"), "eth2");
}

TEST(LaunchPlan, NetworkInterfaceSetsBothTcpSettingsBeforeTheUsersMca) {
  const auto options =
      job(2).network_interface("10.1.0.0/16").mca_parameters({{"btl_tcp_if_include", "eth9"}});
  const auto plan = build_launch_plan(options, cpu_node(), kProgram);
  EXPECT_TRUE(contains_sequence(
      plan.argv, {"--mca", "btl_tcp_if_include", "10.1.0.0/16", "--mca", "oob_tcp_if_include",
                  "10.1.0.0/16", "--mca", "btl_tcp_if_include", "eth9"}));
}

}  // namespace
}  // namespace tnt::cli
