// Log lines go to stderr, one write per line so lines of concurrent threads
// and ranks do not interleave mid-line.
#include <tarantella/base/logging.h>

#include <atomic>
#include <cstdio>
#include <mutex>

#include <string_view>

#include <fmt/format.h>

#include <tarantella/base/error.h>


namespace tnt {
namespace {

struct LogState {
  std::atomic<int> rank{-1};
  std::atomic<int> level{static_cast<int>(LogLevel::Warning)};
  std::atomic<bool> all_ranks{false};
  std::atomic<bool> configured{false};
};

LogState& state() {
  static LogState s;
  return s;
}

// Before a runtime exists, honour TNT_LOG_LEVEL from the environment (a bad
// value there is reported when the runtime starts, not here).
void configure_from_env_once() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (state().configured.load()) return;
    try {
      const Config c = Config::from_env();
      state().level = static_cast<int>(c.log_level);
      state().all_ranks = c.log_on_all_devices;
    } catch (const tnt::Error&) {
    }
  });
}

}  // namespace

namespace log {

void configure(int rank, const Config& config) {
  state().rank = rank;
  state().level = static_cast<int>(config.log_level);
  state().all_ranks = config.log_on_all_devices;
  state().configured = true;
}

int process_rank() { return state().rank.load(); }

bool enabled(LogLevel level) {
  configure_from_env_once();
  const LogState& s = state();
  if (static_cast<int>(level) < s.level.load()) return false;
  // Errors are shown from every rank: a failing non-master rank must be heard.
  if (level == LogLevel::Error) return true;
  return s.all_ranks.load() || s.rank.load() <= 0;
}

namespace {

void emit(LogLevel level, const std::string& message) {
  const int rank = state().rank.load();
  // An Error's text already starts with this rank's prefix: don't repeat it.
  std::string_view text = message;
  const std::string own = fmt::format("[tarantella rank {}] ", rank);
  if (rank >= 0 && text.substr(0, own.size()) == own) text.remove_prefix(own.size());
  const std::string line =
      rank >= 0 ? fmt::format("[tarantella rank {}] {}: {}\n", rank, to_string(level), text)
                : fmt::format("[tarantella] {}: {}\n", to_string(level), text);
  std::fwrite(line.data(), 1, line.size(), stderr);
  std::fflush(stderr);
}

}  // namespace

void write(LogLevel level, const std::string& message) {
  if (enabled(level)) emit(level, message);
}

void write_on_every_rank(LogLevel level, const std::string& message) {
  configure_from_env_once();
  if (static_cast<int>(level) >= state().level.load()) emit(level, message);
}

}  // namespace log
}  // namespace tnt
