// "[R] " in front of every output line of rank R (--output-on-all-devices).
//
// The wrapper reads its child's stdout in arbitrary chunks; lines are
// reassembled here so each one is written whole with its prefix, which keeps
// lines of different ranks from interleaving mid-line in mpirun's output.
#pragma once

#include <string>
#include <string_view>

#include "supervise/console_filter.h"

namespace tnt::cli {

/// Example:
///   LinePrefixer p("[1] ");
///   p.feed("a\nb") -> "[1] a\n";  p.finish() -> "[1] b\n"
class LinePrefixer : public ConsoleFilter {
 public:
  /// A line longer than this is emitted in pieces, each with the prefix, so a
  /// program printing without newlines cannot grow our buffer without bound.
  static constexpr std::size_t kMaxLine = 64 * 1024;

  explicit LinePrefixer(std::string prefix) : prefix_(std::move(prefix)) {}

  /// Adds a chunk; returns the complete prefixed lines it finished.
  std::string feed(std::string_view chunk) override;
  /// Returns the unfinished last line, prefixed and newline-terminated ("" if none).
  std::string finish() override;

 private:
  std::string emit(const std::string& piece);

  std::string prefix_;
  std::string partial_;
  bool after_return_ = false;  ///< the last character was '\r'
  bool redraw_ = false;        ///< the current line is redrawn with '\r'
  bool prefix_sent_ = false;   ///< this segment's prefix went out already
};

}  // namespace tnt::cli
