// Encoding of the wrapper's hidden flags; see rank_exec_options.h.
#include "rank/rank_exec_options.h"

#include "common/launcher_error.h"

namespace tnt::cli {
namespace {

const char* const kOutputAll = "--output=all";
const char* const kOutputRank0 = "--output=rank0";
const char* const kThreadsAuto = "--threads=auto";
const char* const kThreadsInherit = "--threads=inherit";
const char* const kPinCpu = "--pin-cpu";
const char* const kPinMemory = "--pin-memory";
const char* const kHideGpus = "--hide-gpus";
// Followed by the directory in the same word, so any path (spaces, '=',
// a leading '-') stays one argument.
const std::string kOutputDirectory = "--output-dir=";

// Applies one flag; false when it is not a wrapper flag.
bool apply_flag(const std::string& flag, RankExecOptions& options) {
  if (flag == kOutputAll || flag == kOutputRank0) {
    options.output_on_all_devices = flag == kOutputAll;
  } else if (flag == kThreadsAuto || flag == kThreadsInherit) {
    options.set_omp_threads = flag == kThreadsAuto;
  } else if (flag == kPinCpu) {
    options.pin_cpu = true;
  } else if (flag == kPinMemory) {
    options.pin_memory = true;
  } else if (flag == kHideGpus) {
    options.hide_gpus = true;
  } else if (flag.compare(0, kOutputDirectory.size(), kOutputDirectory) == 0 &&
             flag.size() > kOutputDirectory.size()) {
    options.output_directory = flag.substr(kOutputDirectory.size());
  } else {
    return false;
  }
  return true;
}

}  // namespace

std::vector<std::string> to_arguments(const RankExecOptions& options) {
  std::vector<std::string> args{kRankExecFlag};
  args.push_back(options.output_on_all_devices ? kOutputAll : kOutputRank0);
  args.push_back(options.set_omp_threads ? kThreadsAuto : kThreadsInherit);
  if (options.pin_cpu) args.push_back(kPinCpu);
  if (options.pin_memory) args.push_back(kPinMemory);
  if (options.hide_gpus) args.push_back(kHideGpus);
  if (options.output_directory) args.push_back(kOutputDirectory + *options.output_directory);
  args.push_back("--");
  return args;
}

RankExecCommand parse_rank_exec(const std::vector<std::string>& args) {
  if (args.empty() || args.front() != kRankExecFlag) {
    throw LauncherError("internal: the rank wrapper must be started with " +
                        std::string(kRankExecFlag));
  }
  RankExecCommand parsed;
  std::size_t i = 1;
  for (; i < args.size() && args[i] != "--"; ++i) {
    if (!apply_flag(args[i], parsed.options)) {
      throw LauncherError("internal: unknown rank wrapper flag '" + args[i] +
                          "': the launcher and the tarantella on this host differ in version?");
    }
  }
  if (i < args.size()) parsed.command.assign(args.begin() + static_cast<long>(i) + 1, args.end());
  if (parsed.command.empty()) {
    throw LauncherError("internal: the rank wrapper got no command after '--'");
  }
  return parsed;
}

}  // namespace tnt::cli
