// The record framing of event files: the library's CRC-32C against the
// published iSCSI test vectors (RFC 3720, B.4) and against the tests' own
// bitwise CRC, and framed records read back by the independent reader.
#include "callbacks/event_record.h"

#include <gtest/gtest.h>

#include <random>
#include <string>

#include "event_file_reader.h"

namespace {

namespace detail = tnt::callbacks::detail;

TEST(EventRecord, Crc32cMatchesPublishedVectors) {
  EXPECT_EQ(detail::crc32c("123456789"), 0xE3069283u);
  EXPECT_EQ(detail::crc32c(std::string(32, '\0')), 0x8A9136AAu);
  EXPECT_EQ(detail::crc32c(std::string(32, '\xFF')), 0x62A8AB43u);
  std::string ascending;
  for (int i = 0; i < 32; ++i) ascending.push_back(static_cast<char>(i));
  EXPECT_EQ(detail::crc32c(ascending), 0x46DD794Eu);
  EXPECT_EQ(detail::crc32c(""), 0u);
  // The reader's independent implementation agrees on the same vectors.
  EXPECT_EQ(tnt_test::crc32c_bitwise("123456789"), 0xE3069283u);
  EXPECT_EQ(tnt_test::crc32c_bitwise(ascending), 0x46DD794Eu);
}

TEST(EventRecord, Crc32cAgreesWithBitwiseCrcOnRandomData) {
  std::mt19937 rng(7);
  for (std::size_t size : {1u, 3u, 8u, 255u, 1000u, 4099u}) {
    std::string data(size, '\0');
    for (char& c : data) c = static_cast<char>(rng() & 0xFF);
    EXPECT_EQ(detail::crc32c(data), tnt_test::crc32c_bitwise(data)) << "size " << size;
  }
}

TEST(EventRecord, MaskIsTensorFlowsRotateAndAdd) {
  EXPECT_EQ(detail::mask_crc(0u), 0xA282EAD8u);
  EXPECT_EQ(detail::mask_crc(0x00008000u), 0xA282EAD9u);  // bit 15 rotates to bit 0
  EXPECT_EQ(detail::mask_crc(0x12345678u), tnt_test::masked(0x12345678u));
}

TEST(EventRecord, FramedRecordsReadBack) {
  const std::string a = "first payload", b(300, 'x'), empty;
  const std::string stream =
      detail::frame_record(a) + detail::frame_record(b) + detail::frame_record(empty);
  ASSERT_EQ(stream.size(), (12 + a.size() + 4) + (12 + b.size() + 4) + 16);
  // uint64 little-endian length first.
  EXPECT_EQ(static_cast<unsigned char>(stream[0]), a.size());
  for (int i = 1; i < 8; ++i) EXPECT_EQ(stream[i], '\0');
  const auto records = tnt_test::read_records(stream, "stream");
  ASSERT_EQ(records.size(), 3u);
  EXPECT_EQ(records[0], a);
  EXPECT_EQ(records[1], b);
  EXPECT_EQ(records[2], empty);
}

TEST(EventRecord, ReaderRejectsCorruptAndTruncatedRecords) {
  const std::string good = detail::frame_record("payload");
  std::string bad_data = good;
  bad_data[14] ^= 0x01;
  EXPECT_THROW(
      {
        try {
          tnt_test::read_records(bad_data, "s");
        } catch (const std::runtime_error& e) {
          EXPECT_NE(std::string(e.what()).find("CRC of the data"), std::string::npos) << e.what();
          throw;
        }
      },
      std::runtime_error);
  std::string bad_length = good;
  bad_length[9] ^= 0x01;
  EXPECT_THROW(tnt_test::read_records(bad_length, "s"), std::runtime_error);
  EXPECT_THROW(tnt_test::read_records(good.substr(0, good.size() - 1), "s"), std::runtime_error);
}

}  // namespace
