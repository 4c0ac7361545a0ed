// A rewrite of one output stream on its way to the console.
//
// Output reaches the console through a relay that reads arbitrary chunks
// (OutputRelay). What the console shows may differ from what was written:
// the rank wrapper prefixes lines with the rank (LinePrefixer), the
// launcher keeps only the first rank failure report of mpirun's standard
// error (ReportFilter). Both reassemble lines from chunks, so they share
// this interface and the relay needs to know neither.
#pragma once

#include <string>
#include <string_view>

namespace tnt::cli {

/// Example: `out += filter.feed(chunk); ... out += filter.finish();`
class ConsoleFilter {
 public:
  virtual ~ConsoleFilter() = default;
  /// Adds a chunk of the stream; returns the text to show now.
  virtual std::string feed(std::string_view chunk) = 0;
  /// The stream ended: returns what was held back.
  virtual std::string finish() = 0;
};

}  // namespace tnt::cli
