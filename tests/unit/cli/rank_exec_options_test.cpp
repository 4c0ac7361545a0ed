// The hidden launcher -> wrapper command line round-trips exactly.
#include "rank_exec_options.h"

#include "test_support.h"

namespace tnt::cli {
namespace {

using testing::error_of;
using ::testing::HasSubstr;
using Args = std::vector<std::string>;

TEST(RankExecOptions, RoundTripsEveryCombination) {
  for (int bits = 0; bits < 16; ++bits) {
    RankExecOptions options;
    options.output_on_all_devices = bits & 1;
    options.set_omp_threads = bits & 2;
    options.pin_cpu = bits & 4;
    options.pin_memory = bits & 8;
    Args args = to_arguments(options);
    args.insert(args.end(), {"/bin/prog", "--", "-x"});
    const auto parsed = parse_rank_exec(args);
    EXPECT_EQ(parsed.options, options) << bits;
    EXPECT_EQ(parsed.command, (Args{"/bin/prog", "--", "-x"})) << bits;
  }
}

TEST(RankExecOptions, StartsWithTheModeFlagAndEndsWithSeparator) {
  const auto args = to_arguments(RankExecOptions{});
  EXPECT_EQ(args.front(), "--rank-exec");
  EXPECT_EQ(args.back(), "--");
}

TEST(RankExecOptions, RejectsUnknownFlagsAndMissingCommand) {
  EXPECT_THAT(error_of([] {
                parse_rank_exec({"--rank-exec", "--bogus", "--", "p"});
              }),
              HasSubstr("'--bogus'"));
  EXPECT_THAT(error_of([] {
                parse_rank_exec({"--rank-exec", "--output=all", "--"});
              }),
              HasSubstr("no command"));
  EXPECT_THAT(error_of([] { parse_rank_exec({"--other"}); }), HasSubstr("--rank-exec"));
}

}  // namespace
}  // namespace tnt::cli
