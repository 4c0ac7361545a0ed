// A snapshot of /proc for --cleanup, and the rule that decides what matches.
//
// Cleanup must never kill the wrong thing, so matching is by resolved path,
// never by name: a process matches when the executable it runs is the
// program (realpath of /proc/PID/exe, also when that file was since deleted
// or rebuilt), or when it is a script run by an interpreter whose argv[1]
// resolves to the program. Scanning takes a root directory so tests can
// build a fake /proc in a temp directory.
#pragma once

#include <sys/types.h>

#include <set>
#include <string>
#include <vector>

namespace tnt::cli {

/// What cleanup needs to know about one process.
struct ProcessInfo {
  pid_t pid = 0;
  pid_t parent = 0;
  unsigned uid = 0;        ///< real uid (first field of "Uid:" in status)
  std::string executable;  ///< realpath of exe, or its target without " (deleted)"
  std::string script;      ///< argv[1] made absolute (against cwd) and resolved; may be ""
};

/// Reads every numeric entry of `proc_root` (normally "/proc"); processes that
/// vanish or cannot be read (other users', kernel threads) are skipped or
/// come back with empty paths.
std::vector<ProcessInfo> scan_processes(const std::string& proc_root);

/// The matching rule: `program` must already be a realpath.
bool runs_program(const ProcessInfo& process, const std::string& program);

/// `self` and its ancestors found in `processes` (through `parent`).
std::set<pid_t> self_and_ancestors(const std::vector<ProcessInfo>& processes, pid_t self);

/// The processes of user `uid` that run `program`, minus `protected_pids`.
/// Example: a copy of sleep at /tmp/x/sleep matches program "/tmp/x/sleep",
/// /usr/bin/sleep does not.
std::vector<pid_t> select_cleanup_targets(const std::vector<ProcessInfo>& processes,
                                          const std::string& program, unsigned uid,
                                          const std::set<pid_t>& protected_pids);

}  // namespace tnt::cli
