// The strict pickle reader (src/io/pickle_rewrite.h) on pickles as Python's
// torch.save and LibTorch's pickle_save write them, and on broken ones:
// pure, no files (tests/unit/crafted_files_test.cpp goes through files and
// the public API). The OrderedDict pickle below is what Python 3.11 writes
// for a state_dict-like OrderedDict with a nested one and a _metadata
// attribute; Python's pickle.loads reads it as {'a': 1, 'b': {'c': 2}}.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <utility>

#include <torch/torch.h>

#include <tarantella/base/error.h>

#include "io/pickle_rewrite.h"

namespace pickle_reader_test {
namespace {

template <std::size_t N>
std::string bytes(const char (&s)[N]) {
  return std::string(s, N - 1);
}

std::string le(std::uint64_t v, int n) {
  std::string s;
  for (int i = 0; i < n; ++i) s += static_cast<char>((v >> (8 * i)) & 0xff);
  return s;
}

// Records for storage keys, as the archive would hold them.
struct Records {
  std::map<std::string, std::string> bytes;
  int reads = 0;

  std::pair<c10::DataPtr, std::size_t> operator()(const std::string& key) {
    ++reads;
    const auto it = bytes.find(key);
    if (it == bytes.end()) throw tnt::Error("no record data/" + key);
    c10::DataPtr data = at::getCPUAllocator()->allocate(it->second.size());
    std::memcpy(data.get(), it->second.data(), it->second.size());
    return {std::move(data), it->second.size()};
  }
};

c10::IValue read(const std::string& pickle, Records& records) {
  return tnt::detail::read_pickle(pickle, std::ref(records));
}

c10::IValue read(const std::string& pickle) {
  Records none;
  return read(pickle, none);
}

std::string error_of(const std::string& pickle) {
  try {
    read(pickle);
  } catch (const tnt::Error& e) {
    return e.what();
  }
  return "no error";
}

const std::string kOrderedDict = bytes(
    "\x80\x02"
    "ccollections\nOrderedDict\nq\x00)Rq\x01(X\x01\x00\x00\x00"
    "aq\x02K\x01"
    "X\x01\x00\x00\x00"
    "bq\x03h\x00)Rq\x04X\x01\x00\x00\x00"
    "cq\x05K\x02su}q\x06"
    "X\t\x00\x00\x00_metadataq\x07}q\x08X\x00\x00\x00\x00q\t}q\nX\x07\x00\x00\x00"
    "versionq\x0bK\x01sssb.");

TEST(PickleReader, OrderedDictsSetitemAndTheMetadataBuildAreRead) {
  const c10::IValue v = read(kOrderedDict);
  ASSERT_TRUE(v.isGenericDict());
  const auto dict = v.toGenericDict();
  ASSERT_EQ(dict.size(), 2u);
  EXPECT_EQ(dict.at("a").toInt(), 1);
  const auto inner = dict.at("b").toGenericDict();
  ASSERT_EQ(inner.size(), 1u);
  EXPECT_EQ(inner.at("c").toInt(), 2);
}

TEST(PickleReader, PlainValues) {
  // pickle.dumps([None, True, False, 255, 65535, -5, 2**31, -2**40, 1.5, 'é', (), (1,)], 2)
  const c10::IValue v = read(bytes(
      "\x80\x02]q\x00(N\x88\x89K\xffM\xff\xffJ\xfb\xff\xff\xff\x8a\x05\x00\x00\x00\x80\x00"
      "\x8a\x06\x00\x00\x00\x00\x00\xffG?\xf8\x00\x00\x00\x00\x00\x00X\x02\x00\x00\x00\xc3\xa9"
      "q\x01)K\x01\x85q\x02"
      "e."));
  const auto list = v.toListRef();
  ASSERT_EQ(list.size(), 12u);
  EXPECT_TRUE(list[0].isNone());
  EXPECT_TRUE(list[1].toBool());
  EXPECT_FALSE(list[2].toBool());
  EXPECT_EQ(list[3].toInt(), 255);
  EXPECT_EQ(list[4].toInt(), 65535);
  EXPECT_EQ(list[5].toInt(), -5);
  EXPECT_EQ(list[6].toInt(), std::int64_t{1} << 31);
  EXPECT_EQ(list[7].toInt(), -(std::int64_t{1} << 40));
  EXPECT_EQ(list[8].toDouble(), 1.5);
  EXPECT_EQ(list[9].toStringRef(), "\xc3\xa9");
  EXPECT_EQ(list[10].toTupleRef().elements().size(), 0u);
  EXPECT_EQ(list[11].toTupleRef().elements().at(0).toInt(), 1);
}

// What torch::pickle_save writes: restore_type_tag around a dict, a tensor
// view (a transpose) of a storage that a second tensor shares.
TEST(PickleReader, TensorsShareTheirStorageAndKeepTheirStrides) {
  const std::string tensor_of_0 = bytes(
      "ctorch._utils\n_rebuild_tensor_v2\nq\x00((X\x07\x00\x00\x00storageq\x01"
      "ctorch\nFloatStorage\nq\x02X\x01\x00\x00\x00"
      "0X\x03\x00\x00\x00"
      "cpuK\x06tQq\x03");
  const std::string pickle =
      bytes(
          "\x80\x02"
          "ctorch.jit._pickle\nrestore_type_tag\nq\x04}(X\x01\x00\x00\x00t") +
      tensor_of_0 +
      bytes(
          "K\x00(K\x03K\x02t(K\x01K\x03t\x89"
          "ccollections\nOrderedDict\nq\x05)RtR"
          "X\x01\x00\x00\x00s"
          "h\x00(h\x03K\x01(K\x02t(K\x01t\x89h\x05)RtRu"
          "X\x11\x00\x00\x00"
          "Dict[str, Tensor]\x86R.");
  Records records;
  const std::vector<float> values = {0, 1, 2, 3, 4, 5};
  records.bytes["0"] = std::string(reinterpret_cast<const char*>(values.data()), 24);
  const auto dict = read(pickle, records).toGenericDict();
  const at::Tensor t = dict.at("t").toTensor();
  EXPECT_TRUE(torch::equal(t, torch::arange(6, torch::kFloat32).reshape({2, 3}).t()));
  EXPECT_EQ(t.strides().vec(), (std::vector<std::int64_t>{1, 3}));
  const at::Tensor s = dict.at("s").toTensor();
  EXPECT_TRUE(torch::equal(s, torch::tensor({1.0f, 2.0f})));
  EXPECT_TRUE(s.storage().is_alias_of(t.storage()));
  EXPECT_EQ(records.reads, 1);
}

TEST(PickleReader, ErrorsSayWhatAndWhere) {
  EXPECT_EQ(error_of(bytes("\x80\x02R.")),
            "data.pkl byte 2 (REDUCE): needs a value, but the stack holds none");
  EXPECT_EQ(error_of(bytes("\x80\x02\xff.")), "data.pkl byte 2: 0xff is not a pickle opcode");
  EXPECT_EQ(error_of(bytes("\x80\x02u.")),
            "data.pkl byte 2 (SETITEMS): needs a MARK, but there is none");
  EXPECT_EQ(error_of(bytes("\x80\x02}")), "data.pkl ends at byte 3 without STOP (truncated?)");
  EXPECT_EQ(error_of(""), "data.pkl is empty");
}

// Crafted files: a length is compared with what remains, never added to
// an offset first (2^64-9 + 9 wraps to 0).
TEST(PickleReader, LengthsAreCheckedAgainstWhatRemains) {
  EXPECT_EQ(error_of("\x80\x02\x8e" + le(0xfffffffffffffff7ull, 8) + "N."),
            "data.pkl byte 2 (BINBYTES8): declares 18446744073709551607 bytes, but only 2 remain "
            "(a crafted or truncated file)");
  EXPECT_EQ(error_of("\x80\x02\x8b" + le(0xffffffffull, 4) + "."),
            "data.pkl byte 2 (LONG4): declares 4294967295 bytes, but only 1 remain "
            "(a crafted or truncated file)");
  EXPECT_EQ(error_of("\x80\x02\x8d" + le(3, 8)),
            "data.pkl byte 2 (BINUNICODE8): declares 3 bytes, but only 0 remain "
            "(a crafted or truncated file)");
  EXPECT_EQ(error_of(bytes("\x80\x02\x8d\x01\x02")),
            "data.pkl byte 2 (BINUNICODE8): needs a 8-byte length, but only 2 bytes remain "
            "(truncated?)");
  // A length that fits is read, but a protocol-4 opcode is then refused.
  EXPECT_NE(error_of(bytes("\x80\x02\x8c\x01"
                           "a."))
                .find("(SHORT_BINUNICODE): this opcode is not"),
            std::string::npos);
  EXPECT_NE(error_of(bytes("\x80\x02\x8a\x09\x00\x00\x00\x00\x00\x00\x00\x00\x01."))
                .find("does not fit in 64 bits"),
            std::string::npos);
}

}  // namespace
}  // namespace pickle_reader_test
