// POSIX shell word splitting and quoting, without any expansion.
//
// `--python-interpreter "valgrind --leak-check=yes"` must become two words the
// way a shell would split them, and --dry-run must print a command that a shell
// reads back into exactly the argv we would exec. Both directions live here so
// that split_shell_words(shell_quote(w)) == {w} holds by construction (tested).
#pragma once

#include <string>
#include <vector>

namespace tnt::cli {

/// Splits `text` into words like a POSIX shell: blanks separate words; '...'
/// keeps everything literally; "..." keeps everything except that backslash
/// escapes $ ` " \ and newline; an unquoted backslash escapes the next
/// character (backslash-newline is removed). No variable, tilde, glob or
/// command expansion happens. Throws LauncherError on an unbalanced quote or a
/// trailing backslash, naming `what` (e.g. "--python-interpreter").
/// Example: `split_shell_words("python3 -X 'dev mode'")` -> {"python3", "-X", "dev mode"}.
std::vector<std::string> split_shell_words(const std::string& text, const std::string& what);

/// Returns `word` unchanged when it only has characters no shell treats
/// specially, else wrapped in single quotes ('it'\''s').
std::string shell_quote(const std::string& word);

/// shell_quote() of every word, joined by single spaces.
std::string shell_join(const std::vector<std::string>& words);

}  // namespace tnt::cli
