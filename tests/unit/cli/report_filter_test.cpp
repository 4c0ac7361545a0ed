// What the launcher shows of mpirun's standard error: the first rank
// report, without the later ones or mpirun's banners about stopping the
// job; everything else unchanged and without delay.
#include "supervise/report_filter.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace tnt::cli {
namespace {

const std::string kBorder(74, '-');

std::string banner(const std::vector<std::string>& lines) {
  std::string text = kBorder + "\n";
  for (const auto& line : lines) text += line + "\n";
  return text + kBorder + "\n";
}

// mpirun's two banners after a rank exited with code 1 (OpenMPI 4.1).
const std::string kStopBanners =
    banner({"Primary job  terminated normally, but 1 process returned",
            "a non-zero exit code. Per user-direction, the job has been aborted."}) +
    banner({"mpirun detected that one or more processes exited with non-zero status, thus "
            "causing",
            "the job to be terminated. The first process to do so was:", "",
            "  Process name: [[3738,1],2]", "  Exit code:    1"});

// Everything the filter shows for `chunks`, the end of the stream included.
std::string shown(ReportFilter& filter, const std::vector<std::string>& chunks) {
  std::string out;
  for (const auto& chunk : chunks) out += filter.feed(chunk);
  return out + filter.finish();
}

TEST(ReportFilter, OrdinaryOutputPassesUnchanged) {
  ReportFilter filter;
  EXPECT_EQ(shown(filter, {"epoch 1\n[tarantella rank 0] INFO: x\n", "tail"}),
            "epoch 1\n[tarantella rank 0] INFO: x\ntail");
  EXPECT_FALSE(filter.first_failed_rank());
}

TEST(ReportFilter, PartialOrdinaryLinesAreNotHeldBack) {
  ReportFilter filter;
  EXPECT_EQ(filter.feed("progress 10%\r"), "progress 10%\r");
  EXPECT_EQ(filter.feed("progress 20%\r"), "progress 20%\r");
  EXPECT_EQ(filter.feed("\n"), "\n");
}

TEST(ReportFilter, OnlyTheFirstReportIsShownAndOtherRanksAreCounted) {
  ReportFilter filter;
  const std::string out =
      shown(filter, {"tarantella: rank 2 on host h failed: no data\n",
                     "tarantella: rank 2 on host h exited with code 1\n",
                     "tarantella: rank 0 on host h failed: the master rank failed: no data\n",
                     "tarantella: rank 3 on host g exited with code 1\n", "after\n"});
  EXPECT_EQ(out, "tarantella: rank 2 on host h failed: no data\nafter\n");
  EXPECT_EQ(filter.first_failed_rank(), 2);
  EXPECT_EQ(filter.other_failed_ranks(), 2);
}

TEST(ReportFilter, AReportWithoutARankCountsAsTheFirst) {
  ReportFilter filter;
  EXPECT_EQ(shown(filter, {"tarantella: process 4711 on host h failed: bad TNT_X\n",
                           "tarantella: rank 1 on host h exited with code 1\n",
                           "tarantella: process 4712 on host h failed: bad TNT_X\n"}),
            "tarantella: process 4711 on host h failed: bad TNT_X\n");
  EXPECT_EQ(filter.first_failed_rank(), 1);
  EXPECT_EQ(filter.other_failed_ranks(), 0);
}

TEST(ReportFilter, AReportArrivingInPiecesIsShownOnceWhole) {
  ReportFilter filter;
  EXPECT_EQ(filter.feed("tarant"), "");
  EXPECT_EQ(filter.feed("ella: rank 1"), "");
  EXPECT_EQ(filter.feed("1 on host h exited with code 3\nnext"),
            "tarantella: rank 11 on host h exited with code 3\nnext");
  EXPECT_EQ(filter.first_failed_rank(), 11);
}

TEST(ReportFilter, MpirunsStopBannersAreDropped) {
  ReportFilter filter;
  EXPECT_EQ(shown(filter, {"tarantella: rank 1 on host h failed: boom\n", kStopBanners,
                           "tarantella: rank 1 on host h exited with code 1\n"}),
            "tarantella: rank 1 on host h failed: boom\n");
}

TEST(ReportFilter, BannersArriveInAnyChunksAndAreStillDropped) {
  ReportFilter filter;
  std::vector<std::string> bytes;
  for (char c : kStopBanners) bytes.emplace_back(1, c);
  EXPECT_EQ(shown(filter, bytes), "");
}

TEST(ReportFilter, OtherOpenMpiMessagesAreKept) {
  const std::string daemons = banner({"ORTE was unable to reliably start one or more daemons."});
  ReportFilter filter;
  EXPECT_EQ(shown(filter, {"ssh: Could not resolve hostname x\n", daemons}),
            "ssh: Could not resolve hostname x\n" + daemons);
}

TEST(ReportFilter, AnUnfinishedBannerIsShownAtTheEnd) {
  ReportFilter filter;
  EXPECT_EQ(filter.feed(kBorder + "\nhalf a message\n"), "");
  EXPECT_EQ(filter.finish(), kBorder + "\nhalf a message\n");
}

TEST(ReportFilter, ALongRunAfterADashLineIsNotHeldAsABanner) {
  ReportFilter filter;
  std::string out = filter.feed(kBorder + "\n");
  for (std::size_t i = 0; i < ReportFilter::kMaxBannerLines + 1; ++i) out += filter.feed("l\n");
  EXPECT_EQ(out.size(), kBorder.size() + 1 + 2 * (ReportFilter::kMaxBannerLines + 1));
}

TEST(ReportFilter, ShortDashLinesAndNumberlessReportsAreOrdinary) {
  ReportFilter filter;
  EXPECT_EQ(filter.feed("-----\n"), "-----\n");
  EXPECT_EQ(filter.feed("tarantella: rank x\n"), "tarantella: rank x\n");
  EXPECT_EQ(filter.feed("tarantella: rank x\n"), "tarantella: rank x\n");
  EXPECT_FALSE(filter.first_failed_rank());
}

}  // namespace
}  // namespace tnt::cli
