// Resolves TNT_* environment variables into one Config. Each parser names
// the variable, the bad value and what would be accepted.
#include <tarantella/base/config.h>
#include <tarantella/base/env_contract.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <limits>

#include <tarantella/base/error.h>

namespace tnt {
namespace {

using Lookup = std::function<std::optional<std::string>(const std::string&)>;

std::string upper(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  return s;
}

std::string trim(const std::string& s) {
  const auto first = s.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return "";
  const auto last = s.find_last_not_of(" \t\r\n");
  return s.substr(first, last - first + 1);
}

bool parse_bool(const std::string& var, const std::string& raw) {
  const std::string v = upper(trim(raw));
  if (v == "1" || v == "TRUE" || v == "YES" || v == "ON") return true;
  if (v == "0" || v == "FALSE" || v == "NO" || v == "OFF") return false;
  throw Error(detail::concat(var, "='", raw,
                             "' is not a boolean: use true or false (also 1/0, yes/no, on/off)"));
}

long long parse_integer(const std::string& var, const std::string& raw, long long min,
                        long long max, const char* what) {
  const std::string v = trim(raw);
  char* end = nullptr;
  errno = 0;
  const long long value = v.empty() ? 0 : std::strtoll(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0' || errno == ERANGE || value < min || value > max) {
    throw Error(detail::concat(var, "='", raw, "' is not valid: expected ", what, " (an integer from ",
                               min, " to ", max, ")"));
  }
  return value;
}

double parse_seconds(const std::string& var, const std::string& raw) {
  const std::string v = trim(raw);
  char* end = nullptr;
  errno = 0;
  const double value = v.empty() ? 0.0 : std::strtod(v.c_str(), &end);
  if (v.empty() || *end != '\0' || errno == ERANGE || !(value > 0.0)) {
    throw Error(detail::concat(var, "='", raw,
                               "' is not valid: expected a positive number of seconds, e.g. 300"));
  }
  return value;
}

LogLevel parse_level(const std::string& var, const std::string& raw) {
  const std::string v = upper(trim(raw));
  if (v == "DEBUG") return LogLevel::Debug;
  if (v == "INFO") return LogLevel::Info;
  if (v == "WARNING" || v == "WARN") return LogLevel::Warning;
  if (v == "ERROR") return LogLevel::Error;
  throw Error(detail::concat(var, "='", raw,
                             "' is not a log level: use DEBUG, INFO, WARNING or ERROR"));
}

CommBackend parse_backend(const std::string& var, const std::string& raw) {
  const std::string v = upper(trim(raw));
  if (v.empty() || v == "AUTO") return CommBackend::Auto;
  if (v == "MPI") return CommBackend::Mpi;
  if (v == "NCCL") return CommBackend::Nccl;
  throw Error(detail::concat(var, "='", raw,
                             "' is not a communication backend: use mpi or nccl (or auto, the "
                             "default: NCCL when the model is on a GPU of its own, else MPI)"));
}

}  // namespace

const char* to_string(CommBackend backend) {
  switch (backend) {
    case CommBackend::Auto: return "auto";
    case CommBackend::Mpi: return "mpi";
    case CommBackend::Nccl: return "nccl";
  }
  return "?";
}

const char* to_string(LogLevel level) {
  switch (level) {
    case LogLevel::Debug: return "DEBUG";
    case LogLevel::Info: return "INFO";
    case LogLevel::Warning: return "WARNING";
    case LogLevel::Error: return "ERROR";
  }
  return "?";
}

Config Config::from_lookup(const Lookup& lookup) {
  Config c;
  auto with = [&](const char* var, auto apply) {
    if (auto raw = lookup(var)) apply(std::string(var), *raw);
  };
  with(env::kLogLevel, [&](auto v, auto r) { c.log_level = parse_level(v, r); });
  with(env::kLogOnAllDevices, [&](auto v, auto r) { c.log_on_all_devices = parse_bool(v, r); });
  with(env::kOutputOnAllDevices,
       [&](auto v, auto r) { c.output_on_all_devices = parse_bool(v, r); });
  with(env::kTensorboardOnAllDevices,
       [&](auto v, auto r) { c.tensorboard_on_all_devices = parse_bool(v, r); });
  with(env::kFusionThreshold, [&](auto v, auto r) {
    const long long kib = parse_integer(v, r, 0, env::kMaxFusionThresholdKib, "a fusion threshold in KiB");
    c.fusion_threshold_bytes = static_cast<std::size_t>(kib) * 1024;
  });
  with(env::kCommTimeout, [&](auto v, auto r) { c.comm_timeout_seconds = parse_seconds(v, r); });
  with(env::kCommBackend, [&](auto v, auto r) { c.comm_backend = parse_backend(v, r); });
  with("OMP_NUM_THREADS", [&](auto v, auto r) {
    c.num_threads = static_cast<int>(parse_integer(v, r, 1, 4096, "a thread count"));
  });
  with(env::kNumThreads, [&](auto v, auto r) {
    c.num_threads = static_cast<int>(parse_integer(v, r, 1, 4096, "a thread count"));
  });
  with(env::kRanksPerGpu, [&](auto v, auto r) {
    c.ranks_per_gpu = static_cast<int>(parse_integer(v, r, 1, env::kMaxRanksPerGpu, "a count of ranks per GPU"));
  });
  with(env::kUseGpu, [&](auto v, auto r) {
    if (upper(trim(r)) != "AUTO") c.use_gpu = parse_bool(v, r);
  });
  with(env::kOverlap, [&](auto v, auto r) {
    c.overlap = parse_bool(v, r);
    c.overlap_set = true;
  });
  with(env::kOverlapOptimizer, [&](auto v, auto r) { c.overlap_optimizer = parse_bool(v, r); });
  with(env::kMallocTuning, [&](auto v, auto r) { c.malloc_tuning = parse_bool(v, r); });
  with(env::kStackService, [&](auto v, auto r) { c.stack_service = parse_bool(v, r); });
  with(env::kTimeline, [&](auto, auto r) { c.timeline_path = trim(r); });
  with(env::kAutotune, [&](auto v, auto r) { c.autotune = parse_bool(v, r); });
  with(env::kAutotuneLog, [&](auto, auto r) { c.autotune_log_path = trim(r); });
  with(env::kStragglerWindow, [&](auto v, auto r) {
    c.straggler_window =
        parse_integer(v, r, 0, env::kMaxStragglerWindow, "a number of steps (0 = off)");
  });
  with(env::kStdoutIsTerminal, [&](auto v, auto r) { c.stdout_is_terminal = parse_bool(v, r); });
  return c;
}

Config Config::from_env() {
  return from_lookup([](const std::string& name) -> std::optional<std::string> {
    const char* value = std::getenv(name.c_str());
    if (value == nullptr) return std::nullopt;
    return std::string(value);
  });
}

}  // namespace tnt
