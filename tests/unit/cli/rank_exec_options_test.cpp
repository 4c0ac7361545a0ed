// The hidden launcher -> wrapper command line round-trips exactly.
#include "rank/rank_exec_options.h"

#include "test_support.h"

namespace tnt::cli {
namespace {

using testing::error_of;
using ::testing::HasSubstr;
using Args = std::vector<std::string>;

TEST(RankExecOptions, RoundTripsEveryCombination) {
  for (int bits = 0; bits < 64; ++bits) {
    RankExecOptions options;
    options.output_on_all_devices = bits & 1;
    options.set_omp_threads = bits & 2;
    options.pin_cpu = bits & 4;
    options.pin_memory = bits & 8;
    if (bits & 16) options.output_directory = "/logs/run 1";
    options.hide_gpus = bits & 32;
    Args args = to_arguments(options);
    args.insert(args.end(), {"/bin/prog", "--", "-x"});
    const auto parsed = parse_rank_exec(args);
    EXPECT_EQ(parsed.options, options) << bits;
    EXPECT_EQ(parsed.command, (Args{"/bin/prog", "--", "-x"})) << bits;
  }
}

TEST(RankExecOptions, OutputDirectoryOfAnyShapeStaysOneArgument) {
  for (const std::string dir : {"/a", "/with space/x=y", "/--", "/-x/--output=all", "/a/b/"}) {
    RankExecOptions options;
    options.output_directory = dir;
    Args args = to_arguments(options);
    EXPECT_EQ(args.size(), to_arguments(RankExecOptions{}).size() + 1) << dir;
    args.push_back("/bin/prog");
    EXPECT_EQ(parse_rank_exec(args).options.output_directory, dir);
  }
  Args without = to_arguments(RankExecOptions{});
  without.push_back("/bin/prog");
  EXPECT_FALSE(parse_rank_exec(without).options.output_directory);
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
  EXPECT_THAT(error_of([] {
                parse_rank_exec({"--rank-exec", "--output-dir=", "--", "p"});
              }),
              HasSubstr("'--output-dir='"));
  EXPECT_THAT(error_of([] { parse_rank_exec({"--other"}); }), HasSubstr("--rank-exec"));
}

}  // namespace
}  // namespace tnt::cli
