// Logging with levels: each line names its rank; by default only the master
// rank logs (TNT_LOG_ON_ALL_DEVICES=true logs everywhere). Messages below
// TNT_LOG_LEVEL are dropped before any formatting cost is paid by callers
// that check tnt::log::enabled() first.
#pragma once

#include <string>

#include <tarantella/base/config.h>

namespace tnt::log {

/// Called once by tnt::Runtime: the rank printed in every line (and in
/// every tnt::Error) and the level and ranks configured by TNT_LOG_*.
void configure(int rank, const Config& config);
/// The rank given to configure(), or -1 before a runtime started.
int process_rank();

/// Whether a message of `level` would be printed on this rank.
bool enabled(LogLevel level);

/// Writes "[tarantella rank R] LEVEL: message" to stderr if enabled.
/// Example: tnt::log::info("epoch 3 took 1.2 s");
void write(LogLevel level, const std::string& message);

/// Like write(), but printed on every rank whose level allows it: for what
/// only this rank knows (a bad sample it read, see OnBadSample::skip).
/// Example: tnt::log::write_on_every_rank(tnt::LogLevel::Warning, "skipped a.jpg");
void write_on_every_rank(LogLevel level, const std::string& message);

inline void debug(const std::string& m) { write(LogLevel::Debug, m); }
inline void info(const std::string& m) { write(LogLevel::Info, m); }
inline void warning(const std::string& m) { write(LogLevel::Warning, m); }
inline void error(const std::string& m) { write(LogLevel::Error, m); }

}  // namespace tnt::log
