// Hostfile parsing: the accepted format and every rejected input.
#include "parse/hostfile.h"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test_support.h"

namespace tnt::cli {
namespace {

using testing::error_of;
using ::testing::HasSubstr;
using testing::TempDir;

TEST(Hostfile, OneHostPerLineInFileOrder) {
  EXPECT_EQ(parse_hostfile("node1\nnode2\nnode3\n", "h"),
            (std::vector<std::string>{"node1", "node2", "node3"}));
}

TEST(Hostfile, IgnoresBlankLinesAndComments) {
  const std::string text =
      "# cluster A\n"
      "\n"
      "node1   # the fast one\n"
      "   \t\n"
      "#node9\n"
      "node2#no space before the comment\n";
  EXPECT_EQ(parse_hostfile(text, "h"), (std::vector<std::string>{"node1", "node2"}));
}

TEST(Hostfile, TrimsSurroundingWhitespaceAndCarriageReturns) {
  EXPECT_EQ(parse_hostfile("  node1\t\r\n\tnode2  \r\nnode3", "h"),
            (std::vector<std::string>{"node1", "node2", "node3"}));
}

TEST(Hostfile, DuplicateNamesTheHostAndBothLines) {
  const auto message =
      error_of([] { parse_hostfile("node1\n# x\nnode2\n\nnode1\n", "hosts.txt"); });
  EXPECT_THAT(message, HasSubstr("hosts.txt"));
  EXPECT_THAT(message, HasSubstr("host 'node1' appears twice (lines 1 and 5)"));
  EXPECT_THAT(message, HasSubstr("--n-per-node"));
}

TEST(Hostfile, DuplicateIgnoresCaseLikeDns) {
  EXPECT_THAT(error_of([] { parse_hostfile("Node1\nnode1\n", "h"); }),
              HasSubstr("host 'node1' appears twice (lines 1 and 2)"));
}

TEST(Hostfile, DuplicateAfterTrailingCommentIsStillADuplicate) {
  EXPECT_THAT(error_of([] { parse_hostfile("a # first\n  a\n", "h"); }),
              HasSubstr("'a' appears twice (lines 1 and 2)"));
}

TEST(Hostfile, EmptyFileIsAnErrorNamingIt) {
  EXPECT_THAT(error_of([] { parse_hostfile("", "empty.txt"); }),
              HasSubstr("hostfile empty.txt lists no hosts"));
}

TEST(Hostfile, OnlyCommentsAndBlanksIsEmpty) {
  EXPECT_THAT(error_of([] { parse_hostfile("# nothing\n\n   \n#x\n", "c.txt"); }),
              HasSubstr("hostfile c.txt lists no hosts"));
}

TEST(Hostfile, OpenMpiSlotsSyntaxIsRejectedWithLineNumber) {
  const auto message = error_of([] { parse_hostfile("a\nb slots=4\n", "h"); });
  EXPECT_THAT(message, HasSubstr("line 2: 'b slots=4' is not a host name"));
  EXPECT_THAT(message, HasSubstr("--n-per-node"));
}

TEST(Hostfile, ColonAndCommaAreRejected) {
  EXPECT_THAT(error_of([] { parse_hostfile("a:2\n", "h"); }), HasSubstr("'a:2'"));
  EXPECT_THAT(error_of([] { parse_hostfile("a,b\n", "h"); }), HasSubstr("'a,b'"));
}

TEST(Hostfile, ReadsAFile) {
  TempDir dir;
  const auto path = dir.write("hosts", "alpha\n# c\nbeta # x\n");
  EXPECT_EQ(read_hostfile(path), (std::vector<std::string>{"alpha", "beta"}));
}

TEST(Hostfile, MissingFileIsAnErrorNamingIt) {
  TempDir dir;
  const auto path = dir.str("no-such-hosts");
  const auto message = error_of([&] { read_hostfile(path); });
  EXPECT_THAT(message, HasSubstr("cannot read hostfile " + path));
  EXPECT_THAT(message, HasSubstr("No such file"));
}

TEST(Hostfile, EmptyFileOnDiskIsAnErrorNamingIt) {
  TempDir dir;
  const auto path = dir.write("empty", "");
  EXPECT_THAT(error_of([&] { read_hostfile(path); }),
              HasSubstr("hostfile " + path + " lists no hosts"));
}

TEST(Hostfile, DirectoryIsAnErrorNamingIt) {
  TempDir dir;
  EXPECT_THAT(error_of([&] { read_hostfile(dir.str()); }),
              HasSubstr("hostfile " + dir.str() + " is a directory"));
}

// Root reads any file, so the read is done in a child that dropped to "nobody".
TEST(Hostfile, UnreadableFileIsAnErrorNamingIt) {
  TempDir dir;
  const auto path = dir.write("secret", "a\n");
  ::chmod(path.c_str(), 0);
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (::geteuid() == 0 && (::setgid(65534) != 0 || ::setuid(65534) != 0)) ::_exit(1);
    const std::string message = error_of([&] { read_hostfile(path); });
    const ssize_t written = ::write(pipe_fds[1], message.data(), message.size());
    ::_exit(written == static_cast<ssize_t>(message.size()) ? 0 : 1);
  }
  ::close(pipe_fds[1]);
  std::string message;
  char buffer[512];
  for (ssize_t n; (n = ::read(pipe_fds[0], buffer, sizeof(buffer))) > 0;) message.append(buffer, n);
  ::close(pipe_fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child could not drop privileges";
  EXPECT_THAT(message, HasSubstr("cannot read hostfile " + path));
  EXPECT_THAT(message, HasSubstr("Permission denied"));
}

}  // namespace
}  // namespace tnt::cli
