// libFuzzer target: the CSV reader, with and without a header line and a
// label column. Any file is read or raises tnt::Error.
#include <cstddef>
#include <cstdint>

#include <tarantella/base/error.h>
#include <tarantella/data/csv.h>

#include "file_reader_fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  // The first byte picks the options; the rest is the file.
  const std::uint8_t mode = data[0];
  const std::string path = fuzz_input_file(data + 1, size - 1, ".csv");
  tnt::data::CsvOptions options;
  options.header(mode & 1).delimiter((mode & 2) ? ';' : ',');
  if (mode & 4) options.label_column((mode & 8) ? 0 : -1);
  if ((mode & 16) && (mode & 1)) options.label_column("label");
  try {
    (void)tnt::data::read_csv(path, options);
  } catch (const tnt::Error&) {
  }
  return 0;
}
