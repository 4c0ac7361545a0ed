// libFuzzer target: shell word splitting. Any input splits or raises
// LauncherError, and quoting is a round trip: every word w it returns
// satisfies split_shell_words(shell_quote(w)) == {w}.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "common/launcher_error.h"
#include "parse/shell_words.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> words;
  try {
    words = tnt::cli::split_shell_words(text, "fuzz");
  } catch (const tnt::cli::LauncherError&) {
    return 0;
  }
  for (const std::string& w : words) {
    if (w.find('\0') != std::string::npos) continue;  // not representable in argv
    const auto again = tnt::cli::split_shell_words(tnt::cli::shell_quote(w), "fuzz");
    if (again.size() != 1 || again[0] != w) std::abort();
  }
  return 0;
}
