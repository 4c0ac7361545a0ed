// libFuzzer target: the hostfile parser. Any input either parses or raises
// LauncherError; a crash, a sanitizer report or another exception is a bug.
// Also: every host it returns is non-empty and free of whitespace.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "common/launcher_error.h"
#include "parse/hostfile.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    for (const std::string& host : tnt::cli::parse_hostfile(text, "fuzz")) {
      if (host.empty() || host.find_first_of(" \t\r\n") != std::string::npos) std::abort();
    }
  } catch (const tnt::cli::LauncherError&) {
  }
  return 0;
}
