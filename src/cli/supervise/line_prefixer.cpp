// Line reassembly and prefixing; see line_prefixer.h.
#include "supervise/line_prefixer.h"

namespace tnt::cli {

// The piece of the current line so far, with the prefix unless it went out
// already with an earlier piece of the same segment.
std::string LinePrefixer::emit(const std::string& piece) {
  std::string out = prefix_sent_ ? piece : prefix_ + piece;
  prefix_sent_ = false;
  return out;
}

std::string LinePrefixer::feed(std::string_view chunk) {
  std::string out;
  for (char c : chunk) {
    if (c == '\n' && partial_.empty() && after_return_ && !prefix_sent_) {
      out += '\n';  // "\r\n": the line went out with its '\r'
      after_return_ = false;
      redraw_ = false;
      continue;
    }
    partial_ += c;
    after_return_ = c == '\r';
    if (c == '\r') {
      // A line redrawn in place (a progress bar): each state goes out as
      // it comes, with the prefix, instead of all at the line's end. A
      // bare '\r' (before the first state) needs no prefix of its own.
      out += partial_ == "\r" && !prefix_sent_ ? partial_ : emit(partial_);
      partial_.clear();
      redraw_ = true;
    } else if (c == '\n' || partial_.size() >= kMaxLine) {
      out += emit(partial_);
      if (c != '\n') out += '\n';
      partial_.clear();
      if (c == '\n') redraw_ = false;
    }
  }
  if (redraw_ && !partial_.empty()) {
    // The state drawn after a '\r' ("\r{bar}"): shown now, not at the next '\r'.
    out += emit(partial_);
    partial_.clear();
    prefix_sent_ = true;
  }
  return out;
}

std::string LinePrefixer::finish() {
  if (partial_.empty()) return after_return_ || prefix_sent_ ? "\n" : "";
  std::string out = emit(partial_) + "\n";
  partial_.clear();
  return out;
}

}  // namespace tnt::cli
