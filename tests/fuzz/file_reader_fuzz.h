// Shared by the targets whose parser reads a file: writes the input to a
// per-process scratch file and hands its path over.
#pragma once

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

inline std::string fuzz_input_file(const std::uint8_t* data, std::size_t size, const char* ext) {
  static const std::string path =
      "/tmp/tnt-fuzz-" + std::to_string(::getpid()) + std::string(ext);
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) std::abort();
  if (size > 0 && std::fwrite(data, 1, size, f) != size) std::abort();
  std::fclose(f);
  return path;
}
