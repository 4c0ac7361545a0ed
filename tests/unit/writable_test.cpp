// make_directories(): a folder that cannot be made is a tnt::Error naming the
// path, the reason and the fix, never a std::filesystem_error.
#include "base/writable.h"

#include <gtest/gtest.h>
#include <tarantella/base/error.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace {

namespace fs = std::filesystem;

// EXPECT_PRED2(contains, message, part) prints both on failure.
bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}
bool lacks(const std::string& text, const std::string& part) { return !contains(text, part); }

struct TempDir {
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "tnt-writable-XXXXXX").string();
    path = ::mkdtemp(pattern.data());
  }
  ~TempDir() {
    std::error_code ignored;
    fs::remove_all(path, ignored);
  }
  std::string path;
};

std::string error_of(const std::string& dir) {
  try {
    tnt::detail::make_directories(dir, "ModelCheckpoint");
  } catch (const tnt::Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "make_directories('" << dir << "') did not throw";
  return "";
}

TEST(MakeDirectories, CreatesMissingParentsAndAcceptsAnExistingFolder) {
  TempDir tmp;
  const std::string dir = tmp.path + "/a/b/c";
  tnt::detail::make_directories(dir, "ModelCheckpoint");
  EXPECT_TRUE(fs::is_directory(dir));
  tnt::detail::make_directories(dir, "ModelCheckpoint");
  EXPECT_TRUE(fs::is_directory(dir));
}

TEST(MakeDirectories, AFileInThePathIsNamed) {
  TempDir tmp;
  const std::string file = tmp.path + "/plain";
  std::ofstream(file) << "x";
  for (const std::string& dir : {file + "/ckpt", file + "/ckpt/deeper", file}) {
    const std::string message = error_of(dir);
    EXPECT_PRED2(contains, message, "ModelCheckpoint: cannot create the directory '" + dir + "'");
    EXPECT_PRED2(contains, message,
                 "'" + file + "' is a file, not a directory: choose another path");
    EXPECT_PRED2(lacks, message, "filesystem_error");
  }
}

TEST(MakeDirectories, TheOsReasonIsNamed) {
  // /proc refuses new folders whoever asks, root included.
  const std::string message = error_of("/proc/tnt-no-such-folder/ckpt");
  EXPECT_PRED2(contains, message, "cannot create the directory '/proc/tnt-no-such-folder/ckpt': ");
  EXPECT_PRED2(contains, message, "choose a directory on a file system this process can write to");
  EXPECT_PRED2(lacks, message, "filesystem_error");
}

}  // namespace
