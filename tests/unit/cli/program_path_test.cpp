// Program lookup: PATH search, relative paths made absolute, clear errors.
#include "common/program_path.h"

#include <sys/stat.h>

#include "test_support.h"

namespace tnt::cli {
namespace {

using testing::error_of;
using ::testing::HasSubstr;
using testing::TempDir;

class ProgramPath : public ::testing::Test {
 protected:
  ProgramPath() {
    tool = dir.write("bin/tool", "#!/bin/sh\n");
    ::chmod(tool.c_str(), 0755);
    data = dir.write("bin/data", "not a program");
    ::chmod(data.c_str(), 0644);
    script = dir.write("work/train.py", "print(1)\n");
    lookup.path_variable = "/nonexistent:" + dir.str("bin");
    lookup.current_dir = dir.str("work");
  }
  TempDir dir;
  std::string tool, data, script;
  ProgramLookup lookup;
};

TEST_F(ProgramPath, BareNameIsSearchedInPath) { EXPECT_EQ(resolve_program("tool", lookup), tool); }

TEST_F(ProgramPath, BareNameMissingFromPathIsAnError) {
  const auto message = error_of([&] { resolve_program("nosuch", lookup); });
  EXPECT_THAT(message, HasSubstr("program nosuch not found in PATH"));
}

TEST_F(ProgramPath, NonExecutableFilesInPathAreSkipped) {
  EXPECT_THAT(error_of([&] { resolve_program("data", lookup); }), HasSubstr("not found"));
}

TEST_F(ProgramPath, RelativePathIsMadeAbsoluteAgainstTheCurrentDirectory) {
  EXPECT_EQ(resolve_program("../bin/./tool", lookup), dir.str("work") + "/../bin/tool");
  EXPECT_EQ(resolve_program("./../bin/tool", lookup), dir.str("work") + "/../bin/tool");
}

TEST_F(ProgramPath, MissingPathIsAnErrorNamingIt) {
  const auto message = error_of([&] { resolve_program("./missing", lookup); });
  EXPECT_THAT(message, HasSubstr("program ./missing not found"));
  EXPECT_THAT(message, HasSubstr(dir.str("work") + "/missing"));
}

TEST_F(ProgramPath, NonExecutableProgramIsAnErrorWithTheFix) {
  const auto message = error_of([&] { resolve_program(data, lookup); });
  EXPECT_THAT(message, HasSubstr("is not executable"));
  EXPECT_THAT(message, HasSubstr("chmod +x " + data));
}

TEST_F(ProgramPath, WithAnInterpreterScriptsNeedNotBeExecutable) {
  lookup.for_interpreter = true;
  EXPECT_EQ(resolve_program("train.py", lookup), script);  // current directory first
  EXPECT_EQ(resolve_program(data, lookup), data);
}

TEST_F(ProgramPath, MissingScriptNamesWhereItWasLookedFor) {
  lookup.for_interpreter = true;
  const auto message = error_of([&] { resolve_program("trian.py", lookup); });
  EXPECT_THAT(message, HasSubstr("program trian.py not found (looked for " + dir.str("work") +
                                 "/trian.py and in PATH)"));
  EXPECT_THAT(message, HasSubstr("give the script's path"));
}

TEST_F(ProgramPath, WithoutAnInterpreterBareNamesIgnoreTheCurrentDirectory) {
  EXPECT_THAT(error_of([&] { resolve_program("train.py", lookup); }), HasSubstr("not found"));
}

TEST(NormalizeAbsolute, DropsDotAndEmptySegments) {
  EXPECT_EQ(normalize_absolute("/a/./b//c/"), "/a/b/c");
  EXPECT_EQ(normalize_absolute("/"), "/");
  EXPECT_EQ(normalize_absolute("/a/../b"), "/a/../b");
}

TEST(AbsolutePath, RelativePathsJoinTheCurrentDirectoryAndNeedNotExist) {
  EXPECT_EQ(absolute_path("out/./trace.json", "/home/me"), "/home/me/out/trace.json");
  EXPECT_EQ(absolute_path("t.json", "/"), "/t.json");
  EXPECT_EQ(absolute_path("/var//log/t.json", "/home/me"), "/var/log/t.json");
  EXPECT_EQ(absolute_path("../t.json", "/home/me"), "/home/me/../t.json");
}

}  // namespace
}  // namespace tnt::cli
