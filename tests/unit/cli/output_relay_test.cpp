// The relay of one program stream: the console keeps its text (prefixed or
// not, or nothing), the file gets every byte unprefixed.
#include "supervise/output_relay.h"

#include <fcntl.h>
#include <unistd.h>

#include "supervise/line_prefixer.h"
#include "test_support.h"

namespace tnt::cli {
namespace {

using testing::read_text;
using testing::TempDir;

std::string read_all(int fd) {
  std::string text;
  char buffer[4096];
  ssize_t n;
  while ((n = ::read(fd, buffer, sizeof(buffer))) > 0) text.append(buffer, n);
  return text;
}

// Feeds `chunks` through a relay as a program would write them; returns
// what reached the console.
std::string relay(const std::vector<std::string>& chunks, std::optional<std::string> prefix,
                  std::unique_ptr<OutputFile> file, bool show = true) {
  int program[2], console[2];
  EXPECT_EQ(::pipe(program), 0);
  EXPECT_EQ(::pipe(console), 0);
  std::shared_ptr<ConsoleFilter> prefixer;
  if (prefix) prefixer = std::make_shared<LinePrefixer>(*prefix);
  OutputRelay relay(program[0], ConsoleSink{show ? console[1] : -1, prefixer}, std::move(file));
  for (const auto& chunk : chunks) {
    EXPECT_EQ(::write(program[1], chunk.data(), chunk.size()), static_cast<ssize_t>(chunk.size()));
    EXPECT_TRUE(relay.relay_once());
  }
  ::close(program[1]);
  EXPECT_FALSE(relay.relay_once());  // EOF
  EXPECT_FALSE(relay.is_open());
  relay.finish();
  ::close(console[1]);
  const std::string shown = read_all(console[0]);
  ::close(console[0]);
  return shown;
}

TEST(OutputRelay, ConsolePrefixedFileExact) {
  TempDir tmp;
  auto file = std::make_unique<OutputFile>(tmp.str("stdout"), "rank 1 on host h");
  EXPECT_EQ(relay({"a\nb", "c\n", "tail"}, "[1] ", std::move(file)), "[1] a\n[1] bc\n[1] tail\n");
  EXPECT_EQ(read_text(tmp.str("stdout")), "a\nbc\ntail");
}

TEST(OutputRelay, UnprefixedConsoleIsPassedThroughAsIs) {
  TempDir tmp;
  auto file = std::make_unique<OutputFile>(tmp.str("stderr"), "rank 0 on host h");
  EXPECT_EQ(relay({"x\n", "no newline"}, std::nullopt, std::move(file)), "x\nno newline");
  EXPECT_EQ(read_text(tmp.str("stderr")), "x\nno newline");
}

TEST(OutputRelay, HiddenStreamStillReachesTheFile) {
  TempDir tmp;
  auto file = std::make_unique<OutputFile>(tmp.str("stdout"), "rank 2 on host h");
  EXPECT_EQ(relay({"only in the file\n"}, std::nullopt, std::move(file), /*show=*/false), "");
  EXPECT_EQ(read_text(tmp.str("stdout")), "only in the file\n");
}

TEST(OutputRelay, WithoutAFileOnlyTheConsole) {
  EXPECT_EQ(relay({"a\n", "b"}, "[0] ", nullptr), "[0] a\n[0] b\n");
}

}  // namespace
}  // namespace tnt::cli
