// Line reassembly and prefixing; see line_prefixer.h.
#include "supervise/line_prefixer.h"

namespace tnt::cli {

std::string LinePrefixer::feed(std::string_view chunk) {
  std::string out;
  for (char c : chunk) {
    if (c == '\n' && partial_.empty() && after_return_) {
      out += '\n';  // "\r\n": the line went out with its '\r'
      after_return_ = false;
      continue;
    }
    partial_ += c;
    after_return_ = c == '\r';
    if (c == '\r') {
      // A line redrawn in place (a progress bar): each state goes out as
      // it comes, with the prefix, instead of all at the line's end.
      out += prefix_ + partial_;
      partial_.clear();
    } else if (c == '\n' || partial_.size() >= kMaxLine) {
      out += prefix_ + partial_;
      if (c != '\n') out += '\n';
      partial_.clear();
    }
  }
  return out;
}

std::string LinePrefixer::finish() {
  if (partial_.empty()) return after_return_ ? "\n" : "";
  std::string out = prefix_ + partial_ + "\n";
  partial_.clear();
  return out;
}

}  // namespace tnt::cli
