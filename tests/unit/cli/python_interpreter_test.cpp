// The interpreter rule for .py programs, the launching node's check that the
// interpreter exists, and the build tree's python folder (temporary files,
// no mpirun).
#include "probe/python_interpreter.h"

#include <sys/stat.h>

#include "test_support.h"

namespace tnt::cli {
namespace {

using testing::error_of;
using ::testing::HasSubstr;
using testing::TempDir;
using Args = std::vector<std::string>;

TEST(PythonInterpreter, ScriptsAreRecognizedByTheirSuffix) {
  EXPECT_TRUE(is_python_script("train.py"));
  EXPECT_TRUE(is_python_script("../examples/mnist.py"));
  EXPECT_FALSE(is_python_script("train"));
  EXPECT_FALSE(is_python_script("train.pyc"));
  EXPECT_FALSE(is_python_script(".py"));
}

TEST(PythonInterpreter, ChoiceFollowsTheFlagThenTheSuffix) {
  const auto script = LaunchOptions().command({"train.py"});
  const auto chosen = choose_interpreter(script, "/usr/bin/python3");
  EXPECT_EQ(chosen.words, Args{"/usr/bin/python3"});
  EXPECT_TRUE(chosen.is_default);

  const auto named = choose_interpreter(LaunchOptions(script).interpreter(Args{"python3", "-u"}),
                                        "/usr/bin/python3");
  EXPECT_EQ(named.words, (Args{"python3", "-u"}));
  EXPECT_FALSE(named.is_default);

  EXPECT_TRUE(choose_interpreter(LaunchOptions(script).interpreter(Args{}), "/usr/bin/python3")
                  .words.empty());
  EXPECT_TRUE(choose_interpreter(LaunchOptions().command({"./train"}), "python3").words.empty());
}

class InterpreterCheck : public ::testing::Test {
 protected:
  InterpreterCheck() {
    python = dir.write("bin/python3", "#!/bin/sh\n");
    ::chmod(python.c_str(), 0755);
    lookup.path_variable = dir.str("bin");
    lookup.current_dir = dir.str();
  }
  std::string check(const Args& words, bool is_default) {
    return error_of([&] { check_interpreter({words, is_default}, "train.py", lookup); });
  }
  TempDir dir;
  std::string python;
  ProgramLookup lookup;
};

TEST_F(InterpreterCheck, FoundInPathOrByPath) {
  EXPECT_EQ(check({"python3"}, true), "<no error>");
  EXPECT_EQ(check({python}, true), "<no error>");
  EXPECT_EQ(check({"bin/python3", "-u"}, false), "<no error>");  // relative to the current dir
  EXPECT_EQ(check({}, false), "<no error>");                     // the program runs itself
}

TEST_F(InterpreterCheck, MissingDefaultFromPathSuggestsTheFlag) {
  lookup.path_variable = dir.str("nowhere");
  const auto message = check({"python3"}, true);
  EXPECT_THAT(message, HasSubstr("python3 not found in PATH (it runs train.py)"));
  EXPECT_THAT(message, HasSubstr("--python-interpreter /usr/bin/python3"));
  EXPECT_THAT(message, HasSubstr("--python-interpreter '' runs train.py as a program"));
}

TEST_F(InterpreterCheck, MissingRecordedPythonIsNamed) {
  const auto message = check({dir.str("gone/python3")}, true);
  EXPECT_THAT(message, HasSubstr(dir.str("gone/python3") +
                                 ", the Python that Tarantella was built for, is not an "
                                 "executable file"));
  EXPECT_THAT(message, HasSubstr("--python-interpreter python3"));
}

TEST_F(InterpreterCheck, MissingNamedInterpreterQuotesTheFlag) {
  const auto message = check({"valgrind", "--tool=memcheck", "python3"}, false);
  EXPECT_THAT(message, HasSubstr("--python-interpreter 'valgrind --tool=memcheck python3': "
                                 "valgrind not found in PATH"));
  EXPECT_THAT(message, HasSubstr("give its full path in --python-interpreter"));
}

TEST(PythonPackageDir, FoundNextToTheLauncherOnlyWithThePackage) {
  TempDir dir;
  const std::string launcher = dir.write("build/bin/tarantella", "");
  EXPECT_EQ(python_package_dir(launcher, "lib/python3/dist-packages"), "");
  dir.write("build/python/tarantella/__init__.py", "");
  EXPECT_EQ(python_package_dir(launcher, "lib/python3/dist-packages"), dir.str("build/python"));
  EXPECT_EQ(python_package_dir("tarantella", "lib/python3/dist-packages"), "");
  EXPECT_EQ(python_package_dir("/tarantella", "lib/python3/dist-packages"), "");
}

TEST(PythonPackageDir, AnInstalledPrefixGivesItsInstallDir) {
  TempDir dir;
  const std::string launcher = dir.write("prefix/bin/tarantella", "");
  EXPECT_EQ(python_package_dir(launcher, "lib/python3/dist-packages"), "");
  dir.write("prefix/lib/python3/dist-packages/tarantella/__init__.py", "");
  EXPECT_EQ(python_package_dir(launcher, "lib/python3/dist-packages"),
            dir.str("prefix/lib/python3/dist-packages"));
  EXPECT_EQ(python_package_dir(launcher, "lib/elsewhere"), "");
  EXPECT_FALSE(installed_python_subdir().empty());
}

TEST(DefaultPython, AVenvLauncherTakesTheVenvsPython) {
  TempDir dir;
  const std::string launcher = dir.write("venv/bin/tarantella", "");
  const std::string python = dir.write("venv/bin/python3", "#!/bin/sh\n");
  ASSERT_EQ(::chmod(python.c_str(), 0755), 0);
  // Not a venv yet: the recorded interpreter, else python3 from PATH.
  EXPECT_EQ(default_python_interpreter(launcher, "/usr/bin/python3"), "/usr/bin/python3");
  EXPECT_EQ(default_python_interpreter(launcher, ""), "python3");
  dir.write("venv/pyvenv.cfg", "home = /usr/bin\n");
  EXPECT_EQ(default_python_interpreter(launcher, "/usr/bin/python3"), python);
  EXPECT_EQ(default_python_interpreter(launcher, ""), python);
  EXPECT_EQ(default_python_interpreter("tarantella", ""), "python3");
}

TEST(PrependPythonPath, UserEntriesComeAfterThePackage) {
  EXPECT_EQ(prepend_python_path("/b/python", std::nullopt), "/b/python");
  EXPECT_EQ(prepend_python_path("/b/python", std::string()), "/b/python");
  EXPECT_EQ(prepend_python_path("/b/python", std::string("/mine:/x")), "/b/python:/mine:/x");
}

}  // namespace
}  // namespace tnt::cli
