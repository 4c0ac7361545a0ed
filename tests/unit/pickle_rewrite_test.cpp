// The pickle of an OrderedDict with a nested OrderedDict and a _metadata
// attribute, as Python 3.11's pickle (protocol 2, torch.save's) writes it.
// The expected rewrite was checked with Python's pickle.loads, which reads
// it as {'a': 1, 'b': {'c': 2}} (the _metadata is left out).
#include <gtest/gtest.h>

#include "io/pickle_rewrite.h"

namespace {

template <std::size_t N>
std::string bytes(const char (&s)[N]) {
  return std::string(s, N - 1);
}

const std::string kOrderedDict = bytes(
    "\x80\x02" "ccollections\nOrderedDict\nq\x00)Rq\x01(X\x01\x00\x00\x00" "aq\x02K\x01"
    "X\x01\x00\x00\x00" "bq\x03h\x00)Rq\x04X\x01\x00\x00\x00" "cq\x05K\x02su}q\x06"
    "X\t\x00\x00\x00_metadataq\x07}q\x08X\x00\x00\x00\x00q\t}q\nX\x07\x00\x00\x00"
    "versionq\x0bK\x01sssb.");

TEST(PickleRewrite, OrderedDictsBecomeDictsSetitemBecomesSetitemsBuildIsDropped) {
  ASSERT_EQ(kOrderedDict.size(), 123u);
  const auto out = tnt::detail::rewrite_ordered_dicts(kOrderedDict);
  ASSERT_TRUE(out.has_value());
  const std::string expected = bytes(
      "\x80\x02}q\x01(X\x01\x00\x00\x00" "aq\x02K\x01X\x01\x00\x00\x00" "bq\x03}q\x04("
      "X\x01\x00\x00\x00" "cq\x05K\x02uu.");
  EXPECT_EQ(*out, expected);
}

TEST(PickleRewrite, APlainDictWithSetitemsIsLeftAlone) {
  // pickle.dumps({'a': 1, 'b': 2}, protocol=2)
  const std::string plain = bytes(
      "\x80\x02}q\x00(X\x01\x00\x00\x00" "aq\x01K\x01X\x01\x00\x00\x00" "bq\x02K\x02u.");
  EXPECT_EQ(tnt::detail::rewrite_ordered_dicts(plain), plain);
}

TEST(PickleRewrite, UnknownOpcodesOrBrokenStreamsGiveUpInsteadOfGuessing) {
  EXPECT_FALSE(tnt::detail::rewrite_ordered_dicts(bytes("\x80\x02\xff.")).has_value());
  EXPECT_FALSE(tnt::detail::rewrite_ordered_dicts(bytes("\x80\x02X\xff\x00\x00\x00" "ab")).has_value());
  EXPECT_FALSE(tnt::detail::rewrite_ordered_dicts(bytes("\x80\x02u.")).has_value());  // no MARK
}

}  // namespace
