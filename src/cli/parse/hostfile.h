// The --hostfile format: one host name per line.
//
// Blank lines and '#' comments (whole-line or trailing) are ignored and names
// are trimmed. Each host must appear once: ranks per host are set with
// --n-per-node, not by repeating a host, so a repeat is almost always a
// copy-paste mistake and is reported with both line numbers.
#pragma once

#include <string>
#include <vector>

namespace tnt::cli {

/// Parses hostfile text. `source` names the file in error messages.
/// Throws LauncherError for a duplicate host (naming it and both line
/// numbers), a line that is not a single host name, or a file with no hosts.
/// Example: `parse_hostfile("node1\n# spare\nnode2  # gpu\n", "hosts")` -> {"node1", "node2"}.
std::vector<std::string> parse_hostfile(const std::string& text, const std::string& source);

/// Reads and parses the file at `path`; a missing or unreadable file is a
/// LauncherError naming it.
std::vector<std::string> read_hostfile(const std::string& path);

}  // namespace tnt::cli
