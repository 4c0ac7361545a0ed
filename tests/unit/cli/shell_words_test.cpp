// Word splitting for --python-interpreter and quoting for --dry-run,
// including a round trip through a real /bin/sh.
#include "parse/shell_words.h"

#include <stdio.h>

#include "test_support.h"

namespace tnt::cli {
namespace {

using testing::error_of;
using ::testing::HasSubstr;
using Words = std::vector<std::string>;

Words split(const std::string& text) { return split_shell_words(text, "--python-interpreter"); }

TEST(ShellWords, SplitsOnBlanks) {
  EXPECT_EQ(split("valgrind --leak-check=yes"), (Words{"valgrind", "--leak-check=yes"}));
  EXPECT_EQ(split("  a \t b\n c  "), (Words{"a", "b", "c"}));
  EXPECT_EQ(split(""), Words{});
  EXPECT_EQ(split("   "), Words{});
}

TEST(ShellWords, SingleQuotesKeepEverything) {
  EXPECT_EQ(split("python3 -c 'print(\"a b\")'"), (Words{"python3", "-c", "print(\"a b\")"}));
  EXPECT_EQ(split("'a\\b $X'"), (Words{"a\\b $X"}));
}

TEST(ShellWords, DoubleQuotesEscapeOnlyShellSpecials) {
  EXPECT_EQ(split("\"a b\" \"c\\\"d\" \"e\\\\f\" \"g\\h\" \"\\$i\""),
            (Words{"a b", "c\"d", "e\\f", "g\\h", "$i"}));
}

TEST(ShellWords, BackslashEscapesOutsideQuotes) {
  EXPECT_EQ(split("a\\ b c\\'d \\\\"), (Words{"a b", "c'd", "\\"}));
  EXPECT_EQ(split("a\\\nb"), (Words{"ab"}));  // backslash-newline joins lines
}

TEST(ShellWords, QuotedPiecesJoinIntoOneWord) {
  EXPECT_EQ(split("a'b c'\"d e\"f"), (Words{"ab cd ef"}));
}

TEST(ShellWords, EmptyQuotesMakeAnEmptyWord) {
  EXPECT_EQ(split("a '' \"\" b"), (Words{"a", "", "", "b"}));
}

TEST(ShellWords, NoExpansionHappens) {
  EXPECT_EQ(split("$HOME ~ *.py `id` $(id)"), (Words{"$HOME", "~", "*.py", "`id`", "$(id)"}));
}

TEST(ShellWords, UnbalancedQuotesAreErrors) {
  const auto single = error_of([] { split("python3 -c 'print(1)"); });
  EXPECT_THAT(single, HasSubstr("--python-interpreter 'python3 -c 'print(1)'"));
  EXPECT_THAT(single, HasSubstr("single quote"));
  EXPECT_THAT(error_of([] { split("a \"b"); }), HasSubstr("double quote"));
  EXPECT_THAT(error_of([] { split("a \\"); }), HasSubstr("backslash"));
}

TEST(ShellQuote, LeavesSafeWordsAlone) {
  EXPECT_EQ(shell_quote("/usr/bin/python3"), "/usr/bin/python3");
  EXPECT_EQ(shell_quote("--leak-check=yes"), "--leak-check=yes");
  EXPECT_EQ(shell_quote("a:1,b:1"), "a:1,b:1");
}

TEST(ShellQuote, QuotesEverythingElse) {
  EXPECT_EQ(shell_quote(""), "''");
  EXPECT_EQ(shell_quote("B=two words"), "'B=two words'");
  EXPECT_EQ(shell_quote("it's"), "'it'\\''s'");
  EXPECT_EQ(shell_quote("$HOME"), "'$HOME'");
  EXPECT_EQ(shell_quote("#x"), "'#x'");
}

const Words kTricky{"plain", "two words", "",          "it's", "\"dq\"", "back\\slash", "$HOME",
                    "`id`",  "tab\there", "new\nline", "*",    "~",      "a'b\"c",      "-n"};

TEST(ShellQuote, SplitReadsBackWhatJoinWrote) { EXPECT_EQ(split(shell_join(kTricky)), kTricky); }

// The strongest check: a real POSIX shell must read back the same words.
TEST(ShellQuote, RealShellReadsBackWhatJoinWrote) {
  const std::string script = "for a in " + shell_join(kTricky) + "; do printf '%s\\0' \"$a\"; done";
  const std::string command = "/bin/sh -c " + shell_quote(script);
  FILE* pipe = ::popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string output;
  char buffer[256];
  size_t n;
  while ((n = fread(buffer, 1, sizeof(buffer), pipe)) > 0) output.append(buffer, n);
  ASSERT_EQ(::pclose(pipe), 0);
  Words words;
  std::size_t start = 0;
  for (auto end = output.find('\0'); end != std::string::npos; end = output.find('\0', start)) {
    words.push_back(output.substr(start, end - start));
    start = end + 1;
  }
  EXPECT_EQ(words, kTricky);
}

}  // namespace
}  // namespace tnt::cli
