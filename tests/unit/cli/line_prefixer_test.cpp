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

// A line redrawn in place (a progress bar's '\r'): each state goes out as
// it comes, prefixed (they all came at the line's end, and the '\r' then
// wrote over the prefix); "\r\n" gives no empty prefixed line.
TEST(LinePrefixer, EachRedrawOfALineGoesOutAtOnce) {
  LinePrefixer p("[0] ");
  EXPECT_EQ(p.feed("1/3 ....\r"), "[0] 1/3 ....\r");
  EXPECT_EQ(p.feed("2/3 ..."), "[0] 2/3 ...");  // a redrawn line's state at once
  EXPECT_EQ(p.feed(".\r3/3 done\n"), ".\r[0] 3/3 done\n");
  EXPECT_EQ(p.feed("dos line\r\nnext\n"), "[0] dos line\r\n[0] next\n");
  EXPECT_EQ(p.feed("last\r"), "[0] last\r");
  EXPECT_EQ(p.finish(), "\n");
}

// The progress bar's own form ("\r{bar}", as Keras's and tqdm's): each
// state shows as soon as it is written, not one redraw late.
TEST(LinePrefixer, AStateDrawnAfterItsReturnShowsAtOnce) {
  LinePrefixer p("[1] ");
  EXPECT_EQ(p.feed("\r1/3"), "\r[1] 1/3");
  EXPECT_EQ(p.feed(" ...."), " ....");
  EXPECT_EQ(p.feed("\r2/3 ....\r3/3"), "\r[1] 2/3 ....\r[1] 3/3");
  EXPECT_EQ(p.feed(" done\n"), " done\n");
  EXPECT_EQ(p.feed("plain "), "");  // an ordinary line still waits for its end
  EXPECT_EQ(p.feed("line\n"), "[1] plain line\n");
  EXPECT_EQ(p.feed("\r4/4"), "\r[1] 4/4");
  EXPECT_EQ(p.finish(), "\n");
}

}  // namespace
}  // namespace tnt::cli
