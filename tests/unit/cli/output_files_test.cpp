// --output-filename's files: Horovod's layout, the launcher's early check,
// and write errors that are reported once instead of dropped.
#include "supervise/output_files.h"

#include <sys/stat.h>

#include <filesystem>

#include "test_support.h"

namespace tnt::cli {
namespace {

using ::testing::HasSubstr;
using testing::read_text;
using testing::TempDir;

TEST(OutputFiles, HorovodsLayout) {
  EXPECT_EQ(rank_output_directory("/logs", 0), "/logs/rank.0");
  EXPECT_EQ(rank_output_directory("/a b/logs", 12), "/a b/logs/rank.12");
}

TEST(OutputFiles, MakeDirectoriesIsMkdirDashP) {
  TempDir tmp;
  EXPECT_EQ(make_directories(tmp.str("a/b/c")), std::nullopt);
  EXPECT_TRUE(std::filesystem::is_directory(tmp.str("a/b/c")));
  EXPECT_EQ(make_directories(tmp.str("a/b/c")), std::nullopt);  // already there: fine
}

TEST(OutputFiles, PathUnderARegularFileIsNamed) {
  TempDir tmp;
  const std::string file = tmp.write("plain", "x");
  const auto problem = make_directories(file + "/logs");
  ASSERT_TRUE(problem);
  EXPECT_THAT(*problem, HasSubstr("cannot create directory " + file + "/logs"));
  EXPECT_THAT(*problem, HasSubstr("Not a directory"));
  const auto itself = make_directories(file);
  ASSERT_TRUE(itself);
  // libstdc++ says ENOTDIR itself; others accept the path silently, which our check catches.
  EXPECT_THAT(*itself, ::testing::AnyOf(HasSubstr(file + ": Not a directory"),
                                        HasSubstr(file + ": it exists and is not a directory")));
  EXPECT_THAT(prepare_output_directory(file + "/logs").value_or(""), HasSubstr(file + "/logs"));
}

TEST(OutputFiles, PrepareLeavesAnEmptyWritableDirectory) {
  TempDir tmp;
  EXPECT_EQ(prepare_output_directory(tmp.str("logs")), std::nullopt);
  EXPECT_TRUE(std::filesystem::is_empty(tmp.str("logs")));  // the probe file is gone
}

TEST(OutputFiles, UnwritableDirectoryIsFoundBeforeTheRun) {
  if (::geteuid() == 0) GTEST_SKIP() << "root may write to a read-only directory";
  TempDir tmp;
  std::filesystem::create_directory(tmp.str("ro"));
  ::chmod(tmp.str("ro").c_str(), 0555);
  const auto problem = prepare_output_directory(tmp.str("ro"));
  ::chmod(tmp.str("ro").c_str(), 0755);
  ASSERT_TRUE(problem);
  EXPECT_THAT(*problem, HasSubstr("cannot write in directory " + tmp.str("ro")));
}

TEST(OutputFiles, FileIsTruncatedAndGetsEveryByte) {
  TempDir tmp;
  const std::string path = tmp.write("stdout", "old content that must go");
  {
    OutputFile file(path, "rank 1 on host h");
    file.write("a\nb");
    file.write("");
    file.write("c");
    file.close();
    EXPECT_FALSE(file.failed());
  }
  EXPECT_EQ(read_text(path), "a\nbc");
}

TEST(OutputFiles, CreateFailureNamesThePath) {
  TempDir tmp;
  const std::string path = tmp.str("missing/stdout");
  try {
    OutputFile file(path, "rank 0 on host h");
    FAIL() << "opened " << path;
  } catch (const std::runtime_error& error) {
    EXPECT_THAT(error.what(), HasSubstr("cannot create " + path + ": No such file"));
  }
}

TEST(OutputFiles, WriteErrorIsReportedOnceNamingTheFile) {
  if (!std::filesystem::exists("/dev/full")) GTEST_SKIP() << "no /dev/full";
  OutputFile file("/dev/full", "rank 2 on host h");
  ::testing::internal::CaptureStderr();
  file.write("first\n");
  file.write("second\n");
  file.close();
  const std::string reported = ::testing::internal::GetCapturedStderr();
  EXPECT_TRUE(file.failed());
  EXPECT_THAT(reported,
              HasSubstr("tarantella: rank 2 on host h: cannot write /dev/full: No space left"));
  EXPECT_EQ(reported.find("cannot write"), reported.rfind("cannot write")) << reported;
}

}  // namespace
}  // namespace tnt::cli
