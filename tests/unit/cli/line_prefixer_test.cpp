// Reassembling a rank's output into whole prefixed lines.
#include "supervise/line_prefixer.h"

#include <gtest/gtest.h>

namespace tnt::cli {
namespace {

TEST(LinePrefixer, PrefixesEachCompleteLine) {
  LinePrefixer p("[2] ");
  EXPECT_EQ(p.feed("a\nbb\n"), "[2] a\n[2] bb\n");
  EXPECT_EQ(p.finish(), "");
}

TEST(LinePrefixer, JoinsLinesSplitAcrossChunks) {
  LinePrefixer p("[0] ");
  EXPECT_EQ(p.feed("hel"), "");
  EXPECT_EQ(p.feed("lo\nwor"), "[0] hello\n");
  EXPECT_EQ(p.feed("ld\n"), "[0] world\n");
}

TEST(LinePrefixer, FinishTerminatesAPartialLine) {
  LinePrefixer p("[1] ");
  EXPECT_EQ(p.feed("no newline"), "");
  EXPECT_EQ(p.finish(), "[1] no newline\n");
  EXPECT_EQ(p.finish(), "");
}

TEST(LinePrefixer, EmptyLinesArePrefixedToo) {
  LinePrefixer p("[3] ");
  EXPECT_EQ(p.feed("\n\n"), "[3] \n[3] \n");
}

TEST(LinePrefixer, VeryLongLinesAreCutWithAPrefixOnEachPiece) {
  LinePrefixer p("[1] ");
  const std::string line(LinePrefixer::kMaxLine + 10, 'x');
  std::string out = p.feed(line);
  out += p.finish();
  EXPECT_EQ(out, "[1] " + std::string(LinePrefixer::kMaxLine, 'x') + "\n[1] " +
                     std::string(10, 'x') + "\n");
}

}  // namespace
}  // namespace tnt::cli
