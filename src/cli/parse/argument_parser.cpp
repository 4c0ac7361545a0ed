// The launcher's command-line grammar; see argument_parser.h.
//
// CLI11 binds every flag to a string (not a number) so that bad numbers get
// our messages, which name the flag, the value and the accepted range.
#include "parse/argument_parser.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>

#include "common/launcher_error.h"
#include "parse/network_interface.h"
#include "parse/shell_words.h"
#include "tarantella/version.h"

#include <tarantella/base/env_contract.h>

namespace tnt::cli {
namespace {

const std::string kExample = "tarantella -n 2 -- ./train --epochs 5";

// CLI11's usage line cannot show the "-- PROGRAM" part.
class UsageFormatter : public CLI::Formatter {
 public:
  std::string make_usage(const CLI::App* /*app*/, std::string /*name*/) const override {
    return "\nUsage: tarantella [OPTIONS] -- PROGRAM [ARGS...]\n";
  }
};

// Raw flag values as CLI11 stores them; converted and checked by to_options().
struct RawFlags {
  std::string ranks, ranks_per_node, hostfile, assume_gpus;
  std::string log_level, fusion_threshold, interpreter, timeline, autotune_log, output_dir;
  std::string max_restarts, min_ranks, network_interface, ranks_per_gpu;
  std::vector<std::string> exports;
  std::vector<std::pair<std::string, std::string>> mca;
  bool no_gpu = false, log_on_all = false, output_on_all = false, autotune = false;
  bool pin_cpu = false, pin_memory = false;
  bool dry_run = false, cleanup = false, force = false, srun = false;
};

// Options whose presence matters even when their value is empty.
struct Given {
  CLI::Option* ranks;
  CLI::Option* ranks_per_node;
  CLI::Option* hostfile;
  CLI::Option* assume_gpus;
  CLI::Option* log_level;
  CLI::Option* fusion_threshold;
  CLI::Option* interpreter;
  CLI::Option* timeline;
  CLI::Option* autotune_log;
  CLI::Option* output_dir;
  CLI::Option* max_restarts;
  CLI::Option* min_ranks;
  CLI::Option* network_interface;
  CLI::Option* ranks_per_gpu;
};

Given define_flags(CLI::App& app, RawFlags& raw) {
  Given given{};
  given.ranks = app.add_option("-n", raw.ranks, "Start N ranks on this node")->type_name("N");
  given.ranks_per_node =
      app.add_option("--n-per-node,--npernode,--devices-per-node", raw.ranks_per_node,
                     "Start N ranks on every host of the hostfile")
          ->type_name("N");
  given.hostfile = app.add_option("--hostfile", raw.hostfile,
                                  "File with one host name per line ('#' starts a comment)")
                       ->type_name("FILE");
  app.add_flag("--no-gpu", raw.no_gpu, "Run all ranks on the CPU, even where GPUs exist");
  given.ranks_per_gpu =
      app.add_option("--ranks-per-gpu", raw.ranks_per_gpu,
                     "Let K ranks share each GPU (collectives staged through host memory over "
                     "MPI; for tests and small models). Default 1: a GPU of its own per rank")
          ->type_name("K");
  app.add_flag("--srun", raw.srun,
               "Inside a Slurm job: start the ranks with srun --mpi=pmix instead of mpirun");
  given.network_interface =
      app.add_option("--network-interface", raw.network_interface,
                     "Interface name(s) or IPv4 subnet(s) for OpenMPI's TCP traffic, e.g. eth1 "
                     "or 10.1.0.0/16 (sets btl_tcp_if_include and oob_tcp_if_include)")
          ->type_name("NAME|CIDR");
  given.log_level = app.add_option("--log-level", raw.log_level,
                                   "DEBUG, INFO, WARNING or ERROR (exported as TNT_LOG_LEVEL)")
                        ->type_name("LEVEL");
  app.add_flag("--log-on-all-devices", raw.log_on_all, "Log on every rank, not only rank 0");
  app.add_flag("--output-on-all-devices", raw.output_on_all,
               "Show the standard output of every rank, each line prefixed with [rank]");
  given.output_dir =
      app.add_option("--output-filename", raw.output_dir,
                     "Also write each rank's complete stdout and stderr to "
                     "DIR/rank.N/stdout and DIR/rank.N/stderr (the console is unchanged)")
          ->type_name("DIR");
  app.add_option("-x", raw.exports, "Export VAR=VALUE to every rank (repeatable)")
      ->type_name("VAR=VALUE");
  given.fusion_threshold =
      app.add_option("--fusion-threshold", raw.fusion_threshold,
                     "Gradient bucket size in KiB (exported as TNT_FUSION_THRESHOLD)")
          ->type_name("KB");
  given.timeline = app.add_option("--timeline", raw.timeline,
                                  "Write a Chrome-trace/Perfetto timeline of every rank to FILE "
                                  "(exported as TNT_TIMELINE)")
                       ->type_name("FILE");
  app.add_flag("--autotune", raw.autotune,
               "Pick the fusion threshold and overlap on/off by measuring the first steps "
               "(TNT_AUTOTUNE=true)");
  given.autotune_log = app.add_option("--autotune-log", raw.autotune_log,
                                      "With --autotune: write the trials to FILE "
                                      "(exported as TNT_AUTOTUNE_LOG)")
                           ->type_name("FILE");
  app.add_option("--mca", raw.mca,
                 "Pass an OpenMPI MCA parameter to mpirun, e.g. --mca btl_tcp_if_include eth0 "
                 "(repeatable)")
      ->type_name("NAME VALUE")
      ->allow_extra_args(false);  // exactly two words per --mca; a third is an error
  app.add_flag("--pin-to-socket", raw.pin_cpu, "Bind each rank's threads to one NUMA node");
  app.add_flag("--pin-memory-to-socket", raw.pin_memory,
               "Allocate each rank's memory on one NUMA node");
  given.interpreter =
      app.add_option("--python-interpreter,--interpreter", raw.interpreter,
                     "Command put in front of the program on every rank, e.g. 'python3 -u' "
                     "(default for PROGRAM.py: the Python Tarantella was built for; "
                     "'' runs the program itself)")
          ->type_name("CMD");
  given.max_restarts =
      app.add_option("--max-restarts", raw.max_restarts,
                     "When the job fails (a rank exits non-zero or is killed), start it again, "
                     "up to K times; ranks see the attempt as TNT_RESTART_COUNT (0, 1, ...). "
                     "Ctrl+C or a signal to the launcher never restarts (default 0)")
          ->type_name("K");
  given.min_ranks =
      app.add_option("--min-ranks", raw.min_ranks,
                     "With --hostfile and --max-restarts: a restart leaves out hosts that "
                     "cannot be reached while at least M ranks remain (default: every host "
                     "must be reachable)")
          ->type_name("M");
  app.add_flag("--dry-run", raw.dry_run, "Print the command and environment; run nothing");
  app.add_flag("--cleanup", raw.cleanup,
               "Stop your leftover processes of the program on every host (SIGTERM)");
  app.add_flag("--force", raw.force, "With --cleanup: use SIGKILL instead of SIGTERM");
  given.assume_gpus = app.add_option("--assume-gpus", raw.assume_gpus)->group("");
  return given;
}

// Parses a whole decimal number with no sign; nullopt for anything else.
std::optional<std::uint64_t> parse_unsigned(const std::string& text) {
  if (text.empty() || text.size() > 18) return std::nullopt;
  if (!std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return std::nullopt;
  }
  return std::stoull(text);
}

int parse_count(const std::string& flag, const std::string& text, int minimum,
                const std::string& what) {
  const auto value = parse_unsigned(text);
  if (!value || *value < static_cast<std::uint64_t>(minimum) || *value > 1000000) {
    throw LauncherError(flag + " " + (text.empty() ? "''" : text) + ": " + what +
                        " must be a whole number, at least " + std::to_string(minimum));
  }
  return static_cast<int>(*value);
}

std::string parse_log_level(const std::string& text) {
  std::string upper = text;
  for (auto& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  for (const char* level : {"DEBUG", "INFO", "WARNING", "ERROR"}) {
    if (upper == level) return upper;
  }
  throw LauncherError("--log-level '" + text +
                      "' is not a log level: use DEBUG, INFO, WARNING or ERROR (any case)");
}

std::uint64_t parse_fusion_threshold(const std::string& text) {
  const auto value = parse_unsigned(text);
  if (!value || *value > static_cast<std::uint64_t>(env::kMaxFusionThresholdKib)) {
    throw LauncherError("--fusion-threshold '" + text +
                        "': give the bucket size as a whole number of KiB from 0 to " +
                        std::to_string(env::kMaxFusionThresholdKib) +
                        " (0 = one allreduce per tensor)");
  }
  return *value;
}

// A file or directory flag; `kind` and `example` make the message:
// "--timeline '': give a file name, e.g. --timeline trace.json".
std::string path_flag(const std::string& flag, const std::string& text, const std::string& kind,
                      const std::string& example) {
  if (text.empty()) {
    throw LauncherError(flag + " '': give a " + kind + ", e.g. " + flag + " " + example);
  }
  return text;
}

void check_combinations(const RawFlags& raw, const Given& given) {
  if (given.ranks->count() && given.ranks_per_node->count()) {
    throw LauncherError("-n " + raw.ranks + " and --n-per-node " + raw.ranks_per_node +
                        " both set the ranks per node: give only one of them");
  }
  if (given.ranks->count() && given.hostfile->count()) {
    throw LauncherError("-n " + raw.ranks + " starts ranks on this node only, but --hostfile " +
                        raw.hostfile + " was given: use --n-per-node " + raw.ranks +
                        " to start that many ranks on every host");
  }
  if (raw.srun && given.hostfile->count()) {
    throw LauncherError("--srun starts the ranks on the hosts of the Slurm job, but --hostfile " +
                        raw.hostfile +
                        " names hosts: drop --hostfile (inside a Slurm job its hosts are used), "
                        "or drop --srun");
  }
  if (given.autotune_log->count() && !raw.autotune) {
    throw LauncherError("--autotune-log " + raw.autotune_log +
                        " only applies with --autotune: add --autotune, or drop --autotune-log");
  }
  if (given.ranks_per_gpu->count() && raw.no_gpu) {
    throw LauncherError("--ranks-per-gpu " + raw.ranks_per_gpu +
                        " shares GPUs between ranks and --no-gpu uses none: drop one of the two");
  }
  if (raw.force && !raw.cleanup) {
    throw LauncherError("--force only applies to --cleanup: use --cleanup --force -- PROGRAM");
  }
}

// --min-ranks only acts when a restart probes the hosts of a hostfile; a
// flag that silently does nothing would be a surprise, so it is refused.
void check_min_ranks(const RawFlags& raw, const Given& given, int max_restarts) {
  if (!given.min_ranks->count()) return;
  if (!given.hostfile->count()) {
    throw LauncherError("--min-ranks " + raw.min_ranks +
                        " only applies with --hostfile (a restart leaves out hosts that cannot "
                        "be reached): add --hostfile FILE, or drop --min-ranks");
  }
  if (max_restarts == 0) {
    throw LauncherError("--min-ranks " + raw.min_ranks +
                        " only applies to restarts: add --max-restarts K (K at least 1), or "
                        "drop --min-ranks");
  }
}

void set_restarts(LaunchOptions& options, const RawFlags& raw, const Given& given) {
  if (given.max_restarts->count()) {
    options.max_restarts(
        parse_count("--max-restarts", raw.max_restarts, 0, "the number of restarts"));
  }
  if (given.min_ranks->count()) {
    options.min_ranks(parse_count("--min-ranks", raw.min_ranks, 1, "the minimum number of ranks"));
  }
  check_min_ranks(raw, given, options.max_restarts());
}

LaunchOptions to_options(const RawFlags& raw, const Given& given) {
  check_combinations(raw, given);
  LaunchOptions options;
  if (given.ranks->count()) options.ranks(parse_count("-n", raw.ranks, 1, "the number of ranks"));
  if (given.ranks_per_node->count()) {
    options.ranks_per_node(
        parse_count("--n-per-node", raw.ranks_per_node, 1, "the number of ranks per node"));
  }
  if (given.ranks_per_gpu->count()) {
    options.ranks_per_gpu(
        parse_count("--ranks-per-gpu", raw.ranks_per_gpu, 1, "the number of ranks per GPU"));
  }
  if (given.assume_gpus->count()) {
    options.assumed_gpu_count(parse_count("--assume-gpus", raw.assume_gpus, 0, "the GPU count"));
  }
  if (given.log_level->count()) options.log_level(parse_log_level(raw.log_level));
  if (given.fusion_threshold->count()) {
    options.fusion_threshold_kib(parse_fusion_threshold(raw.fusion_threshold));
  }
  if (given.timeline->count()) {
    options.timeline_file(path_flag("--timeline", raw.timeline, "file name", "trace.json"));
  }
  if (given.autotune_log->count()) {
    options.autotune_log_file(
        path_flag("--autotune-log", raw.autotune_log, "file name", "trials.csv"));
  }
  if (given.output_dir->count()) {
    options.output_directory(path_flag("--output-filename", raw.output_dir, "directory", "logs"));
  }
  set_restarts(options, raw, given);
  if (given.network_interface->count()) {
    options.network_interface(parse_network_interface(raw.network_interface));
  }
  std::vector<McaParameter> mca;
  for (const auto& [name, value] : raw.mca) mca.push_back(parse_mca_parameter(name, value));
  options.mca_parameters(mca);
  // An empty command is the manual's way to run a .py file as a binary.
  if (given.interpreter->count()) {
    options.interpreter(split_shell_words(raw.interpreter, "--python-interpreter"));
  }
  return options.no_gpu(raw.no_gpu)
      .srun(raw.srun)
      .log_on_all_devices(raw.log_on_all)
      .output_on_all_devices(raw.output_on_all)
      .exports(parse_env_assignments(raw.exports))
      .autotune(raw.autotune)
      .pin_to_socket(raw.pin_cpu)
      .pin_memory_to_socket(raw.pin_memory)
      .dry_run(raw.dry_run)
      .cleanup(raw.cleanup)
      .force(raw.force);
}

[[noreturn]] void reject_extras(const std::vector<std::string>& extras) {
  throw LauncherError("unexpected argument '" + extras.front() +
                      "': put the program and its arguments after '--', e.g. " + kExample);
}

// CLI11's messages name the flag; we add where to look.
[[noreturn]] void rethrow_parse_error(const CLI::ParseError& error) {
  throw LauncherError(std::string(error.what()) + " (see tarantella --help)");
}

}  // namespace

// mpirun's and horovodrun's spellings, which CLI11 would split or take as
// the program ("-np 4": "-n p"): named with ours.
void reject_other_launchers_flags(const std::vector<std::string>& ours) {
  static const std::pair<const char*, const char*> kTheirs[] = {
      {"-np", "-n N"},          {"--np", "-n N"},
      {"-H", "--hostfile FILE (one host per line, `host slots=N`)"},
      {"--host", "--hostfile FILE (one host per line, `host slots=N`)"},
      {"-hostfile", "--hostfile FILE"},
      {"-npernode", "--n-per-node N"}};
  for (const auto& word : ours) {
    for (const auto& [theirs, use] : kTheirs) {
      if (word == theirs) {
        throw LauncherError("unknown option '" + word + "' (mpirun's or horovodrun's): use " +
                            use + " (see tarantella --help)");
      }
    }
  }
}

ParsedCommand parse_arguments(const std::vector<std::string>& args) {
  const auto separator = std::find(args.begin(), args.end(), "--");
  std::vector<std::string> ours(args.begin() + (args.empty() ? 0 : 1), separator);
  reject_other_launchers_flags(ours);
  ParsedCommand parsed;
  CLI::App app("Start a Tarantella program on many ranks through OpenMPI's mpirun.", "tarantella");
  app.formatter(std::make_shared<UsageFormatter>());
  app.footer("Example: " + kExample + "\nSee docs/launcher.md for the full reference.");
  app.set_version_flag("--version", std::string("tarantella ") + tnt::version());
  app.allow_extras(true);
  RawFlags raw;
  const Given given = define_flags(app, raw);
  std::reverse(ours.begin(), ours.end());  // CLI11 consumes a reversed vector
  try {
    app.parse(ours);
  } catch (const CLI::CallForHelp&) {
    parsed.kind = ParsedCommand::Kind::kHelp;
    parsed.text = app.help();
    return parsed;
  } catch (const CLI::CallForVersion& version) {
    parsed.kind = ParsedCommand::Kind::kVersion;
    parsed.text = version.what();
    return parsed;
  } catch (const CLI::ParseError& error) {
    rethrow_parse_error(error);
  }
  if (!app.remaining().empty()) reject_extras(app.remaining());
  parsed.options = to_options(raw, given);
  parsed.hostfile = raw.hostfile;
  if (separator != args.end()) parsed.options.command({separator + 1, args.end()});
  if (parsed.options.command().empty()) {
    throw LauncherError("missing program: put the program and its arguments after '--', e.g. " +
                        kExample);
  }
  return parsed;
}

}  // namespace tnt::cli
