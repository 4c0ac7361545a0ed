// Command-line parsing: each flag lands in LaunchOptions, bad input is named.
#include "parse/argument_parser.h"

#include "tarantella/version.h"
#include "test_support.h"

namespace tnt::cli {
namespace {

using testing::error_of;
using ::testing::HasSubstr;
using ::testing::Not;
using Args = std::vector<std::string>;

LaunchOptions parse(Args args) {
  args.insert(args.begin(), "tarantella");
  const auto parsed = parse_arguments(args);
  EXPECT_EQ(parsed.kind, ParsedCommand::Kind::kRun);
  return parsed.options;
}

std::string parse_error(Args args) {
  args.insert(args.begin(), "tarantella");
  return error_of([&] { parse_arguments(args); });
}

TEST(ArgumentParser, RanksAndProgram) {
  const auto o = parse({"-n", "3", "--", "./prog", "arg"});
  EXPECT_EQ(o.ranks(), 3);
  EXPECT_EQ(o.requested_ranks_per_node(), 3);
  EXPECT_EQ(o.command(), (Args{"./prog", "arg"}));
}

TEST(ArgumentParser, DefaultsWhenOnlyAProgramIsGiven) {
  const auto o = parse({"--", "prog"});
  EXPECT_FALSE(o.ranks());
  EXPECT_FALSE(o.ranks_per_node());
  EXPECT_FALSE(o.no_gpu());
  EXPECT_FALSE(o.log_level());
  EXPECT_FALSE(o.fusion_threshold_kib());
  EXPECT_TRUE(o.exports().empty());
  EXPECT_FALSE(o.interpreter());  // the launch plan picks one for .py programs
  EXPECT_FALSE(o.dry_run() || o.cleanup() || o.force() || o.pin_to_socket() ||
               o.pin_memory_to_socket() || o.log_on_all_devices() || o.output_on_all_devices());
}

TEST(ArgumentParser, EverythingAfterSeparatorBelongsToTheProgram) {
  const auto o = parse({"-n", "2", "--", "prog", "-n", "5", "--help", "--", "-x"});
  EXPECT_EQ(o.ranks(), 2);
  EXPECT_EQ(o.command(), (Args{"prog", "-n", "5", "--help", "--", "-x"}));
}

// mpirun's and horovodrun's habits get ours named (-np used to read as
// "-n p", then "unexpected argument '4'").
TEST(ArgumentParser, OtherLaunchersFlagsNameOurs) {
  EXPECT_THAT(parse_error({"-np", "4", "--", "prog"}), HasSubstr("unknown option '-np'"));
  EXPECT_THAT(parse_error({"-np", "4", "--", "prog"}), HasSubstr("use -n N"));
  EXPECT_THAT(parse_error({"-H", "a,b", "--", "prog"}), HasSubstr("use --hostfile FILE"));
  // After '--' they are the program's.
  EXPECT_EQ(parse({"--", "prog", "-np", "4"}).command(), (Args{"prog", "-np", "4"}));
}

TEST(ArgumentParser, NPerNodeAndItsAliases) {
  for (const std::string flag : {"--n-per-node", "--npernode", "--devices-per-node"}) {
    const auto o = parse({flag, "4", "--", "prog"});
    EXPECT_EQ(o.ranks_per_node(), 4) << flag;
    EXPECT_EQ(o.requested_ranks_per_node(), 4) << flag;
  }
}

TEST(ArgumentParser, NTogetherWithNPerNodeIsAnError) {
  const auto message = parse_error({"-n", "2", "--npernode", "3", "--", "prog"});
  EXPECT_THAT(message, HasSubstr("-n 2 and --n-per-node 3"));
  EXPECT_THAT(message, HasSubstr("only one"));
}

TEST(ArgumentParser, RankCountsMustBeAtLeastOne) {
  EXPECT_THAT(parse_error({"-n", "0", "--", "prog"}), HasSubstr("-n 0: the number of ranks"));
  EXPECT_THAT(parse_error({"-n", "0", "--", "prog"}), HasSubstr("at least 1"));
  EXPECT_THAT(parse_error({"-n", "abc", "--", "prog"}), HasSubstr("-n abc"));
  EXPECT_THAT(parse_error({"-n", "2.5", "--", "prog"}), HasSubstr("-n 2.5"));
  EXPECT_THAT(parse_error({"--n-per-node", "0", "--", "prog"}), HasSubstr("--n-per-node 0"));
}

TEST(ArgumentParser, HostfileWithNIsAnErrorSuggestingNPerNode) {
  const auto message = parse_error({"-n", "2", "--hostfile", "hosts", "--", "prog"});
  EXPECT_THAT(message, HasSubstr("--n-per-node 2"));
}

TEST(ArgumentParser, HostfilePathIsKept) {
  const auto parsed = parse_arguments({"tarantella", "--hostfile", "my hosts", "--", "prog"});
  EXPECT_EQ(parsed.hostfile, "my hosts");
}

TEST(ArgumentParser, LogLevelIsCaseInsensitiveAndNormalized) {
  EXPECT_EQ(parse({"--log-level", "debug", "--", "p"}).log_level(), "DEBUG");
  EXPECT_EQ(parse({"--log-level", "Warning", "--", "p"}).log_level(), "WARNING");
  EXPECT_EQ(parse({"--log-level=ERROR", "--", "p"}).log_level(), "ERROR");
}

TEST(ArgumentParser, UnknownLogLevelNamesTheValue) {
  const auto message = parse_error({"--log-level", "LOUD", "--", "p"});
  EXPECT_THAT(message, HasSubstr("--log-level 'LOUD'"));
  EXPECT_THAT(message, HasSubstr("DEBUG, INFO, WARNING or ERROR"));
}

TEST(ArgumentParser, BooleanFlags) {
  const auto o = parse({"--no-gpu", "--log-on-all-devices", "--output-on-all-devices",
                        "--pin-to-socket", "--pin-memory-to-socket", "--dry-run", "--", "p"});
  EXPECT_TRUE(o.no_gpu());
  EXPECT_TRUE(o.log_on_all_devices());
  EXPECT_TRUE(o.output_on_all_devices());
  EXPECT_TRUE(o.pin_to_socket());
  EXPECT_TRUE(o.pin_memory_to_socket());
  EXPECT_TRUE(o.dry_run());
}

TEST(ArgumentParser, ExportTakesSeveralValuesAndRepeatsInOrder) {
  const auto o =
      parse({"-x", "A=1", "B=two words", "-n", "2", "-x", "C='q'", "-x", "A=3", "--", "p"});
  EXPECT_EQ(o.exports(),
            (std::vector<EnvAssignment>{{"A", "1"}, {"B", "two words"}, {"C", "'q'"}, {"A", "3"}}));
  EXPECT_EQ(o.ranks(), 2);
}

TEST(ArgumentParser, ExportStopsAtTheSeparator) {
  const auto o = parse({"-x", "A=1", "--", "B=2"});
  EXPECT_EQ(o.exports(), (std::vector<EnvAssignment>{{"A", "1"}}));
  EXPECT_EQ(o.command(), (Args{"B=2"}));
}

TEST(ArgumentParser, MalformedExportIsNamed) {
  EXPECT_THAT(parse_error({"-x", "A=1", "NOEQUALS", "--", "p"}), HasSubstr("-x 'NOEQUALS'"));
  EXPECT_THAT(parse_error({"-x", "9X=1", "--", "p"}), HasSubstr("'9X' is not a valid"));
}

TEST(ArgumentParser, ExportWithoutValueIsAnError) {
  EXPECT_THAT(parse_error({"-x", "--", "p"}), HasSubstr("-x"));
}

TEST(ArgumentParser, FusionThreshold) {
  EXPECT_EQ(parse({"--fusion-threshold", "64", "--", "p"}).fusion_threshold_kib(), 64u);
  EXPECT_EQ(parse({"--fusion-threshold", "0", "--", "p"}).fusion_threshold_kib(), 0u);
  EXPECT_THAT(parse_error({"--fusion-threshold", "-1", "--", "p"}),
              HasSubstr("--fusion-threshold '-1'"));
  EXPECT_THAT(parse_error({"--fusion-threshold", "1.5", "--", "p"}),
              HasSubstr("--fusion-threshold '1.5'"));
}

TEST(ArgumentParser, InterpreterIsSplitIntoWords) {
  EXPECT_EQ(parse({"--python-interpreter", "valgrind --leak-check=yes", "--", "p"}).interpreter(),
            (Args{"valgrind", "--leak-check=yes"}));
  EXPECT_EQ(parse({"--interpreter", "python3 -X 'dev mode'", "--", "p"}).interpreter(),
            (Args{"python3", "-X", "dev mode"}));
}

TEST(ArgumentParser, BadInterpreterIsNamed) {
  EXPECT_THAT(parse_error({"--python-interpreter", "python3 'x", "--", "p"}),
              HasSubstr("single quote"));
}

// The manual's way to run a .py file as a binary: an empty interpreter,
// which is not the same as no flag at all.
TEST(ArgumentParser, EmptyInterpreterMeansRunTheProgramItself) {
  const auto empty = parse({"--python-interpreter", "", "--", "x.py"}).interpreter();
  ASSERT_TRUE(empty);
  EXPECT_TRUE(empty->empty());
  const auto blanks = parse({"--python-interpreter", "  ", "--", "x.py"}).interpreter();
  ASSERT_TRUE(blanks);
  EXPECT_TRUE(blanks->empty());
}

TEST(ArgumentParser, MissingProgramIsAnError) {
  EXPECT_THAT(parse_error({"-n", "2"}), HasSubstr("missing program"));
  EXPECT_THAT(parse_error({"-n", "2", "--"}), HasSubstr("missing program"));
}

TEST(ArgumentParser, ProgramWithoutSeparatorSuggestsIt) {
  const auto message = parse_error({"-n", "2", "./prog"});
  EXPECT_THAT(message, HasSubstr("unexpected argument './prog'"));
  EXPECT_THAT(message, HasSubstr("after '--'"));
}

TEST(ArgumentParser, UnknownFlagIsNamed) {
  EXPECT_THAT(parse_error({"--gpus", "2", "--", "p"}), HasSubstr("--gpus"));
}

TEST(ArgumentParser, ForceNeedsCleanup) {
  EXPECT_THAT(parse_error({"--force", "--", "p"}), HasSubstr("--force only applies to --cleanup"));
  const auto o = parse({"--cleanup", "--force", "--", "p"});
  EXPECT_TRUE(o.cleanup());
  EXPECT_TRUE(o.force());
}

TEST(ArgumentParser, TimelineAndAutotuneFilesAreKeptAsTyped) {
  const auto o = parse(
      {"--timeline", "out/trace.json", "--autotune", "--autotune-log", "trials.csv", "--", "p"});
  EXPECT_EQ(o.timeline_file(), "out/trace.json");
  EXPECT_TRUE(o.autotune());
  EXPECT_EQ(o.autotune_log_file(), "trials.csv");
  const auto plain = parse({"--", "p"});
  EXPECT_FALSE(plain.timeline_file());
  EXPECT_FALSE(plain.autotune());
  EXPECT_FALSE(plain.autotune_log_file());
  EXPECT_TRUE(parse({"--autotune", "--", "p"}).autotune());
}

TEST(ArgumentParser, OutputFilenameIsKeptAsTyped) {
  EXPECT_EQ(parse({"--output-filename", "logs/run 1", "--", "p"}).output_directory(), "logs/run 1");
  EXPECT_EQ(parse({"--output-filename=/abs/logs", "-n", "2", "--", "p"}).output_directory(),
            "/abs/logs");
  EXPECT_FALSE(parse({"--", "p"}).output_directory());
  EXPECT_THAT(parse_error({"--output-filename", "", "--", "p"}),
              HasSubstr("--output-filename '': give a directory, e.g. --output-filename logs"));
  EXPECT_THAT(parse_error({"--output-filename", "--", "p"}), HasSubstr("--output-filename"));
}

TEST(ArgumentParser, AutotuneLogNeedsAutotune) {
  const auto message = parse_error({"--autotune-log", "trials.csv", "--", "p"});
  EXPECT_THAT(message, HasSubstr("--autotune-log trials.csv only applies with --autotune"));
}

TEST(ArgumentParser, EmptyFileNamesAreErrors) {
  EXPECT_THAT(parse_error({"--timeline", "", "--", "p"}), HasSubstr("--timeline '': give a file"));
  EXPECT_THAT(parse_error({"--autotune", "--autotune-log", "", "--", "p"}),
              HasSubstr("--autotune-log '': give a file"));
  EXPECT_THAT(parse_error({"--timeline", "--", "p"}), HasSubstr("--timeline"));
}

TEST(ArgumentParser, McaTakesExactlyTwoWordsAndRepeatsInOrder) {
  const auto o = parse({"--mca", "btl", "self,tcp", "-n", "2", "--mca", "plm_rsh_agent",
                        "/opt/my agent.sh", "--", "p"});
  EXPECT_EQ(o.mca_parameters(), (std::vector<McaParameter>{{"btl", "self,tcp"},
                                                           {"plm_rsh_agent", "/opt/my agent.sh"}}));
  EXPECT_EQ(o.ranks(), 2);
  EXPECT_TRUE(parse({"--", "p"}).mca_parameters().empty());
}

TEST(ArgumentParser, MalformedMcaIsNamed) {
  EXPECT_THAT(parse_error({"--mca", "btl", "--", "p"}), HasSubstr("--mca"));
  EXPECT_THAT(parse_error({"--mca", "btl", "tcp", "extra", "--", "p"}),
              HasSubstr("unexpected argument 'extra'"));
  EXPECT_THAT(parse_error({"--mca", "btl-tcp", "1", "--", "p"}),
              HasSubstr("'btl-tcp' is not an MCA parameter name"));
  EXPECT_THAT(parse_error({"--mca", "btl", "", "--", "p"}), HasSubstr("--mca btl '': the value"));
}

TEST(ArgumentParser, HelpListsTheFlagsButNotTheHiddenOnes) {
  const auto parsed = parse_arguments({"tarantella", "--help"});
  EXPECT_EQ(parsed.kind, ParsedCommand::Kind::kHelp);
  for (const char* flag : {"--n-per-node",
                           "--npernode",
                           "--devices-per-node",
                           "--hostfile",
                           "--no-gpu",
                           "--ranks-per-gpu",
                           "--log-level",
                           "--log-on-all-devices",
                           "--output-on-all-devices",
                           "--output-filename",
                           "DIR/rank.N/stdout",
                           "-x",
                           "--fusion-threshold",
                           "--pin-to-socket",
                           "--pin-memory-to-socket",
                           "--python-interpreter",
                           "--dry-run",
                           "--cleanup",
                           "--force",
                           "--version",
                           "--timeline",
                           "--autotune",
                           "--autotune-log",
                           "--mca",
                           "--max-restarts",
                           "--min-ranks",
                           "TNT_RESTART_COUNT"}) {
    EXPECT_THAT(parsed.text, HasSubstr(flag));
  }
  EXPECT_THAT(parsed.text, Not(HasSubstr("--assume-gpus")));
  EXPECT_THAT(parsed.text, Not(HasSubstr("--rank-exec")));
}

TEST(ArgumentParser, Version) {
  const auto parsed = parse_arguments({"tarantella", "--version"});
  EXPECT_EQ(parsed.kind, ParsedCommand::Kind::kVersion);
  EXPECT_EQ(parsed.text, std::string("tarantella ") + TNT_VERSION_STRING);
}

TEST(ArgumentParser, MaxRestartsDefaultsToZero) {
  EXPECT_EQ(parse({"--", "p"}).max_restarts(), 0);
  EXPECT_FALSE(parse({"--", "p"}).min_ranks());
  EXPECT_EQ(parse({"--max-restarts", "0", "--", "p"}).max_restarts(), 0);
  EXPECT_EQ(parse({"--max-restarts", "3", "--", "p"}).max_restarts(), 3);
}

TEST(ArgumentParser, BadMaxRestartsIsNamed) {
  for (const std::string bad : {"-1", "two", "1.5", ""}) {
    const auto message = parse_error({"--max-restarts", bad, "--", "p"});
    EXPECT_THAT(message, HasSubstr("--max-restarts " + (bad.empty() ? "''" : bad))) << bad;
    EXPECT_THAT(message, HasSubstr("the number of restarts must be a whole number, at least 0"))
        << bad;
  }
}

TEST(ArgumentParser, MinRanksWithHostfileAndRestarts) {
  const auto parsed = parse_arguments(
      {"tarantella", "--hostfile", "hosts", "--max-restarts", "2", "--min-ranks", "4", "--", "p"});
  EXPECT_EQ(parsed.options.max_restarts(), 2);
  EXPECT_EQ(parsed.options.min_ranks(), 4);
}

TEST(ArgumentParser, BadMinRanksIsNamed) {
  const Args restarts = {"--hostfile", "hosts", "--max-restarts", "1", "--min-ranks"};
  for (const std::string bad : {"0", "-2", "many"}) {
    Args args = restarts;
    args.insert(args.end(), {bad, "--", "p"});
    const auto message = parse_error(args);
    EXPECT_THAT(message, HasSubstr("--min-ranks " + bad + ": the minimum number of ranks")) << bad;
    EXPECT_THAT(message, HasSubstr("at least 1")) << bad;
  }
}

TEST(ArgumentParser, MinRanksNeedsAHostfile) {
  const auto message =
      parse_error({"-n", "4", "--max-restarts", "1", "--min-ranks", "2", "--", "p"});
  EXPECT_THAT(message, HasSubstr("--min-ranks 2 only applies with --hostfile"));
  EXPECT_THAT(message, HasSubstr("add --hostfile FILE, or drop --min-ranks"));
}

TEST(ArgumentParser, MinRanksNeedsRestarts) {
  for (const Args& restarts : {Args{}, Args{"--max-restarts", "0"}}) {
    Args args = {"--hostfile", "hosts", "--min-ranks", "2"};
    args.insert(args.end(), restarts.begin(), restarts.end());
    args.insert(args.end(), {"--", "p"});
    const auto message = parse_error(args);
    EXPECT_THAT(message, HasSubstr("--min-ranks 2 only applies to restarts"));
    EXPECT_THAT(message, HasSubstr("add --max-restarts K"));
  }
}

TEST(ArgumentParser, RanksPerGpu) {
  EXPECT_EQ(parse({"--", "prog"}).ranks_per_gpu(), 1);
  EXPECT_EQ(parse({"-n", "4", "--ranks-per-gpu", "2", "--", "prog"}).ranks_per_gpu(), 2);
  EXPECT_THAT(parse_error({"--ranks-per-gpu", "0", "--", "prog"}),
              HasSubstr("--ranks-per-gpu 0: the number of ranks per GPU must be a whole number, "
                        "at least 1"));
  EXPECT_THAT(parse_error({"--ranks-per-gpu", "two", "--", "prog"}),
              HasSubstr("--ranks-per-gpu two"));
  EXPECT_THAT(parse_error({"--ranks-per-gpu", "2", "--no-gpu", "--", "prog"}),
              HasSubstr("--ranks-per-gpu 2 shares GPUs between ranks and --no-gpu uses none"));
}

TEST(ArgumentParser, AssumedGpuCountForTests) {
  EXPECT_EQ(parse({"--assume-gpus", "2", "--", "p"}).assumed_gpu_count(), 2);
  EXPECT_EQ(parse({"--assume-gpus", "0", "--", "p"}).assumed_gpu_count(), 0);
}

TEST(ArgumentParser, SrunAndNetworkInterface) {
  const auto o = parse({"--srun", "--network-interface", "10.1.0.0/16", "--", "p"});
  EXPECT_TRUE(o.srun());
  EXPECT_EQ(o.network_interface(), "10.1.0.0/16");
  EXPECT_FALSE(parse({"--", "p"}).srun());
  EXPECT_FALSE(parse({"--", "p"}).network_interface());
}

TEST(ArgumentParser, SrunWithHostfileAndBadInterfacesAreNamed) {
  EXPECT_THAT(parse_error({"--srun", "--hostfile", "hosts", "--", "p"}),
              HasSubstr("--srun starts the ranks on the hosts of the Slurm job, but --hostfile "
                        "hosts names hosts"));
  EXPECT_THAT(parse_error({"--network-interface", "eth 0", "--", "p"}),
              HasSubstr("--network-interface 'eth 0': 'eth 0' is neither"));
}

}  // namespace
}  // namespace tnt::cli
