// -x VAR=VALUE validation: values kept byte for byte, bad entries named.
#include "parse/env_assignment.h"

#include <cstdlib>

#include "test_support.h"

namespace tnt::cli {
namespace {

using testing::error_of;
using ::testing::HasSubstr;

TEST(EnvAssignment, SplitsAtTheFirstEquals) {
  EXPECT_EQ(parse_env_assignment("A=1"), (EnvAssignment{"A", "1"}));
  EXPECT_EQ(parse_env_assignment("URL=a=b=c"), (EnvAssignment{"URL", "a=b=c"}));
}

TEST(EnvAssignment, KeepsSpacesQuotesAndEmptyValues) {
  EXPECT_EQ(parse_env_assignment("B=two words"), (EnvAssignment{"B", "two words"}));
  EXPECT_EQ(parse_env_assignment("Q=it's \"quoted\" $HOME \\n"),
            (EnvAssignment{"Q", "it's \"quoted\" $HOME \\n"}));
  EXPECT_EQ(parse_env_assignment("EMPTY="), (EnvAssignment{"EMPTY", ""}));
}

// mpirun's -x NAME: the launcher's own value, passed on (to other hosts too).
TEST(EnvAssignment, ANameAlonePassesOnThisEnvironmentsValue) {
  ::setenv("TNT_TEST_FORWARDED", "42 and more", 1);
  EXPECT_EQ(parse_env_assignment("TNT_TEST_FORWARDED"),
            (EnvAssignment{"TNT_TEST_FORWARDED", "42 and more"}));
  ::unsetenv("TNT_TEST_FORWARDED");
  EXPECT_THAT(error_of([] { parse_env_assignment("TNT_TEST_FORWARDED"); }),
              HasSubstr("which is not set"));
}

TEST(EnvAssignment, NoEqualsIsAnErrorNamingTheEntry) {
  const auto message = error_of([] { parse_env_assignment("FOO"); });
  EXPECT_THAT(message, HasSubstr("-x 'FOO'"));
  EXPECT_THAT(message, HasSubstr("expected VAR=VALUE"));
}

TEST(EnvAssignment, EmptyNameIsAnError) {
  EXPECT_THAT(error_of([] { parse_env_assignment("=1"); }),
              HasSubstr("-x '=1': the variable name"));
}

TEST(EnvAssignment, InvalidNamesAreErrorsNamingTheName) {
  for (const std::string entry : {"1A=2", "A-B=2", "A B=2", "A.B=1", "Ä=1"}) {
    const auto message = error_of([&] { parse_env_assignment(entry); });
    EXPECT_THAT(message, HasSubstr("-x '" + entry + "'")) << entry;
    EXPECT_THAT(message, HasSubstr("not a valid variable name")) << entry;
  }
}

TEST(EnvAssignment, ValidNames) {
  for (const std::string name : {"A", "_", "_A1", "a_b_C", "OMP_NUM_THREADS"}) {
    EXPECT_TRUE(is_valid_env_name(name)) << name;
  }
  EXPECT_FALSE(is_valid_env_name(""));
}

TEST(EnvAssignment, ListKeepsOrderAndRepeats) {
  EXPECT_EQ(parse_env_assignments({"Z=1", "A=2", "Z=3"}),
            (std::vector<EnvAssignment>{{"Z", "1"}, {"A", "2"}, {"Z", "3"}}));
}

TEST(EnvAssignment, ListStopsAtTheFirstBadEntry) {
  EXPECT_THAT(error_of([] {
                parse_env_assignments({"A=1", "oops", "B=2"});
              }),
              HasSubstr("-x 'oops'"));
}

}  // namespace
}  // namespace tnt::cli
