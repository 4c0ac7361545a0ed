// POSIX-style word splitting and quoting; see shell_words.h.
#include "parse/shell_words.h"

#include <cctype>
#include <cstring>

#include "common/launcher_error.h"

namespace tnt::cli {
namespace {

// A tiny state machine over the input. `in_word` is separate from
// `current.empty()` because "" and '' produce an empty word.
class WordSplitter {
 public:
  WordSplitter(const std::string& text, const std::string& what) : text_(text), what_(what) {}

  std::vector<std::string> run() {
    while (pos_ < text_.size()) step();
    finish_word();
    return words_;
  }

 private:
  void step() {
    const char c = text_[pos_++];
    if (c == ' ' || c == '\t' || c == '\n') {
      finish_word();
    } else if (c == '\'') {
      single_quoted();
    } else if (c == '"') {
      double_quoted();
    } else if (c == '\\') {
      unquoted_backslash();
    } else {
      append(c);
    }
  }

  void single_quoted() {
    in_word_ = true;
    const auto end = text_.find('\'', pos_);
    if (end == std::string::npos) fail("a single quote (') is not closed");
    current_.append(text_, pos_, end - pos_);
    pos_ = end + 1;
  }

  void double_quoted() {
    in_word_ = true;
    while (pos_ < text_.size()) {
      const char c = text_[pos_++];
      if (c == '"') return;
      if (c == '\\' && pos_ < text_.size() && std::strchr("$`\"\\\n", text_[pos_])) {
        const char escaped = text_[pos_++];
        if (escaped != '\n') current_ += escaped;
      } else {
        current_ += c;
      }
    }
    fail("a double quote (\") is not closed");
  }

  void unquoted_backslash() {
    if (pos_ >= text_.size()) fail("it ends with a backslash that escapes nothing");
    const char escaped = text_[pos_++];
    if (escaped != '\n') append(escaped);  // backslash-newline continues the line
  }

  void append(char c) {
    in_word_ = true;
    current_ += c;
  }

  void finish_word() {
    if (in_word_) words_.push_back(current_);
    current_.clear();
    in_word_ = false;
  }

  [[noreturn]] void fail(const std::string& why) const {
    throw LauncherError(what_ + " '" + text_ + "' cannot be split into words: " + why +
                        "; balance the quotes or escape the character with a backslash");
  }

  const std::string& text_;
  const std::string& what_;
  std::size_t pos_ = 0;
  std::string current_;
  bool in_word_ = false;
  std::vector<std::string> words_;
};

bool is_shell_safe(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || std::strchr("_@%+=:,./-", c) != nullptr;
}

}  // namespace

std::vector<std::string> split_shell_words(const std::string& text, const std::string& what) {
  return WordSplitter(text, what).run();
}

std::string shell_quote(const std::string& word) {
  bool safe = !word.empty();
  for (char c : word) safe = safe && c != '\0' && is_shell_safe(c);
  if (safe) return word;
  std::string quoted = "'";
  for (char c : word) {
    if (c == '\'') {
      quoted += "'\\''";
    } else {
      quoted += c;
    }
  }
  return quoted + "'";
}

std::string shell_join(const std::vector<std::string>& words) {
  std::string joined;
  for (const auto& word : words) {
    if (!joined.empty()) joined += ' ';
    joined += shell_quote(word);
  }
  return joined;
}

}  // namespace tnt::cli
