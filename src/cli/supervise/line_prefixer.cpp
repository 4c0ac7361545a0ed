// Line reassembly and prefixing; see line_prefixer.h.
#include "supervise/line_prefixer.h"

namespace tnt::cli {

std::string LinePrefixer::feed(std::string_view chunk) {
  std::string out;
  for (char c : chunk) {
    partial_ += c;
    if (c == '\n' || partial_.size() >= kMaxLine) {
      out += prefix_ + partial_;
      if (c != '\n') out += '\n';
      partial_.clear();
    }
  }
  return out;
}

std::string LinePrefixer::finish() {
  if (partial_.empty()) return "";
  std::string out = prefix_ + partial_ + "\n";
  partial_.clear();
  return out;
}

}  // namespace tnt::cli
