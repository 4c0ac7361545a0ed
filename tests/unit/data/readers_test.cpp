// The IDX and CSV readers on good files and on damaged ones: every damage
// gives a tnt::Error that names the file and the problem, never a crash.
#include <unistd.h>
#include <zlib.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "test_util.h"

namespace {

using namespace tnt_test;
namespace fs = std::filesystem;
using Bytes = std::vector<unsigned char>;

class TempDir {
 public:
  TempDir() {
    path_ = fs::temp_directory_path() /
            ("tnt_data_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter_++));
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  static inline int counter_ = 0;
  fs::path path_;
};

void write_raw(const std::string& path, const Bytes& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
}

void write_gz(const std::string& path, const Bytes& bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())),
            static_cast<int>(bytes.size()));
  gzclose(f);
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
}

void put_u32(Bytes& b, std::uint32_t v) {
  for (int shift : {24, 16, 8, 0}) b.push_back(static_cast<unsigned char>(v >> shift));
}

Bytes idx_header(unsigned char type, const std::vector<std::uint32_t>& dims) {
  Bytes b = {0, 0, type, static_cast<unsigned char>(dims.size())};
  for (auto d : dims) put_u32(b, d);
  return b;
}

// uint8 images [3, 2, 2] with values 0..11, and int32 labels [3] (big-endian).
Bytes images_file() {
  Bytes b = idx_header(0x08, {3, 2, 2});
  for (unsigned char v = 0; v < 12; ++v) b.push_back(v * 20);
  return b;
}
Bytes labels_file(std::vector<std::int32_t> labels = {7, -2, 300000}) {
  Bytes b = idx_header(0x0C, {static_cast<std::uint32_t>(labels.size())});
  for (auto v : labels) put_u32(b, static_cast<std::uint32_t>(v));
  return b;
}

TEST(Idx, ReadsRawAndGzipFilesWithTheirShapeAndDtype) {
  TempDir dir;
  write_raw(dir.file("img"), images_file());
  write_gz(dir.file("img.gz"), images_file());
  write_raw(dir.file("lab"), labels_file());
  const auto expected =
      (torch::arange(12, torch::kInt64) * 20).to(torch::kUInt8).reshape({3, 2, 2});
  for (const auto* name : {"img", "img.gz"}) {
    const auto t = tnt::data::read_idx(dir.file(name));
    EXPECT_EQ(t.scalar_type(), torch::kUInt8) << name;
    EXPECT_TRUE(torch::equal(t, expected)) << name << ": " << t;
  }
  const auto labels = tnt::data::read_idx(dir.file("lab"));
  EXPECT_EQ(labels.scalar_type(), torch::kInt32);
  EXPECT_TRUE(torch::equal(labels, torch::tensor({7, -2, 300000}, torch::kInt32))) << labels;

  Bytes floats = idx_header(0x0D, {2});
  for (float f : {1.5f, -0.25f}) {
    std::uint32_t bits;
    std::memcpy(&bits, &f, 4);
    put_u32(floats, bits);
  }
  write_raw(dir.file("f"), floats);
  EXPECT_TRUE(torch::equal(tnt::data::read_idx(dir.file("f")), torch::tensor({1.5f, -0.25f})));
}

TEST(Idx, FromIdxAndMnistFormatBuildDatasets) {
  TempDir dir;
  write_gz(dir.file("img.gz"), images_file());
  Bytes labels = idx_header(0x08, {3});
  for (unsigned char v : {4, 0, 9}) labels.push_back(v);
  write_gz(dir.file("lab.gz"), labels);
  const auto raw = Dataset::from_idx({dir.file("img.gz"), dir.file("lab.gz")});
  EXPECT_EQ(raw.cardinality(), 3);
  const auto ds = tnt::data::datasets::mnist_format(dir.file("img.gz"), dir.file("lab.gz"));
  const auto items = collect(ds);
  ASSERT_EQ(items.size(), 3u);
  EXPECT_EQ(items[1][0].sizes(), (std::vector<std::int64_t>{1, 2, 2}));
  EXPECT_EQ(items[1][0].scalar_type(), torch::kFloat32);
  EXPECT_TRUE(
      torch::allclose(items[1][0].flatten(), torch::tensor({80.f, 100.f, 120.f, 140.f}) / 255));
  EXPECT_EQ(items[2][1].item<std::int64_t>(), 9);
  EXPECT_EQ(items[2][1].scalar_type(), torch::kInt64);
}

TEST(Idx, DamagedFilesGiveClearErrors) {
  TempDir dir;
  const auto good = images_file();
  auto check = [&](const std::string& name, const Bytes& bytes, std::vector<std::string> parts,
                   bool gz = false) {
    SCOPED_TRACE(name);
    const auto path = dir.file(name);
    gz ? write_gz(path, bytes) : write_raw(path, bytes);
    parts.insert(parts.begin(), path);
    expect_error([&] { tnt::data::read_idx(path); }, parts);
  };
  check("truncated_header", Bytes(good.begin(), good.begin() + 3), {"truncated", "header"});
  check("truncated_dims", Bytes(good.begin(), good.begin() + 9),
        {"truncated", "sizes of its 3 dimensions"});
  check("truncated_data", Bytes(good.begin(), good.end() - 1),
        {"truncated", "[3, 2, 2]", "12 bytes", "only 11"});
  check("truncated_data.gz", Bytes(good.begin(), good.end() - 5), {"truncated", "only 7"}, true);
  Bytes magic = good;
  magic[0] = 0x1f;
  check("wrong_magic", magic, {"wrong magic number"});
  Bytes type = good;
  type[2] = 0x0A;
  check("unknown_type", type, {"unknown type code 0xa"});
  Bytes extra = good;
  extra.push_back(1);
  check("too_long", extra, {"longer than its header declares"});
  Bytes zero_dims = {0, 0, 0x08, 0};
  check("zero_dims", zero_dims, {"0 dimensions"});
  // A header under the size cap that declares far more than the file holds
  // (2^38 bytes = 256 GiB over 4 data bytes): found truncated after reading
  // the file, without first allocating what the header claims.
  Bytes huge = {0, 0, 0x08, 3};
  put_u32(huge, 1u << 20);
  put_u32(huge, 1u << 10);
  put_u32(huge, 1u << 8);
  for (int i = 0; i < 4; ++i) huge.push_back(7);
  check("huge_declared", huge, {"truncated", "[1048576, 1024, 256]", "only 4 bytes"});
  check("huge_declared.gz", huge, {"truncated", "only 4 bytes"}, true);

  // a gzip file whose compressed body is damaged
  const auto gz_path = dir.file("damaged.gz");
  write_gz(gz_path, Bytes(4000, 0x11));
  std::fstream f(gz_path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekp(12);
  const char junk[8] = {'\x7f', '\x01', '\x55', '\x33', '\x7f', '\x01', '\x55', '\x33'};
  f.write(junk, 8);
  f.close();
  expect_error([&] { tnt::data::read_idx(gz_path); }, {gz_path});

  expect_error([&] { tnt::data::read_idx(dir.file("missing")); }, {"missing", "cannot be opened"});
}

TEST(Idx, MnistFormatRejectsWrongDimensionsAndCounts) {
  TempDir dir;
  write_raw(dir.file("img"), images_file());
  write_raw(dir.file("lab3d"), images_file());
  write_raw(dir.file("lab4"), labels_file({1, 2, 3, 4}));
  write_raw(dir.file("lab1d_as_images"), labels_file());
  expect_error([&] { tnt::data::datasets::mnist_format(dir.file("img"), dir.file("lab3d")); },
               {"lab3d", "[3, 2, 2]", "one label per image"});
  expect_error(
      [&] { tnt::data::datasets::mnist_format(dir.file("lab1d_as_images"), dir.file("lab4")); },
      {"lab1d_as_images", "[N, rows, cols]"});
  expect_error([&] { tnt::data::datasets::mnist_format(dir.file("img"), dir.file("lab4")); },
               {"3 images", "4 labels"});
  expect_error(
      [&] {
        Dataset::from_idx({dir.file("img"), dir.file("lab4")});
      },
      {"4 items", "has 3"});
}

TEST(Csv, ReadsFeaturesAndALabelByNameOrPosition) {
  TempDir dir;
  write_text(dir.file("a.csv"), "x1, y ,x2\r\n1.5,0,2\n\n-3,2,4e1\n");
  const auto by_name = collect(
      Dataset::from_csv(dir.file("a.csv"), tnt::data::CsvOptions().header(true).label_column("y")));
  ASSERT_EQ(by_name.size(), 2u);
  EXPECT_ELEMENT_EQ(by_name[1],
                    (Element{torch::tensor({-3.f, 40.f}), torch::tensor(2, torch::kInt64)}));
  const auto table =
      tnt::data::read_csv(dir.file("a.csv"), tnt::data::CsvOptions().header(true).label_column(-2));
  EXPECT_ELEMENT_EQ(table, (Element{torch::tensor({{1.5f, 2.f}, {-3.f, 40.f}}),
                                    torch::tensor({0, 2}, torch::kInt64)}));
  write_text(dir.file("b.csv"), "1;2\n3;4\n");
  const auto plain = tnt::data::read_csv(dir.file("b.csv"), tnt::data::CsvOptions().delimiter(';'));
  EXPECT_ELEMENT_EQ(plain, (Element{torch::tensor({{1.f, 2.f}, {3.f, 4.f}})}));
  const auto real = tnt::data::read_csv(dir.file("b.csv"), tnt::data::CsvOptions()
                                                               .delimiter(';')
                                                               .label_column(0)
                                                               .label_dtype(torch::kFloat64)
                                                               .feature_dtype(torch::kFloat64));
  EXPECT_ELEMENT_EQ(real, (Element{torch::tensor({{2.0}, {4.0}}, torch::kFloat64),
                                   torch::tensor({1.0, 3.0}, torch::kFloat64)}));
}

TEST(Csv, BadFilesGiveErrorsNamingLineAndColumn) {
  TempDir dir;
  auto check = [&](const std::string& name, const std::string& text,
                   const tnt::data::CsvOptions& options, std::vector<std::string> parts) {
    SCOPED_TRACE(name);
    const auto path = dir.file(name);
    write_text(path, text);
    parts.insert(parts.begin(), path);
    expect_error([&] { tnt::data::read_csv(path, options); }, parts);
  };
  const auto opts = tnt::data::CsvOptions();
  check("nan.csv", "1,2\n3,abc\n", opts, {"line 2, column 2", "'abc' is not a number"});
  check("empty_field.csv", "1,2\n3,\n", opts, {"line 2, column 2", "'' is not a number"});
  check("ragged.csv", "1,2,3\n4,5\n", opts, {"line 2 has 2 fields", "line 1 has 3"});
  check("empty.csv", "", opts, {"no data rows"});
  check("header_only.csv", "a,b\n", tnt::data::CsvOptions().header(true), {"no data rows"});
  check("no_column.csv", "a,b\n1,2\n", tnt::data::CsvOptions().header(true).label_column("c"),
        {"no column 'c'", "'a', 'b'"});
  check("name_no_header.csv", "1,2\n", tnt::data::CsvOptions().label_column("a"), {"header(true)"});
  check("index.csv", "1,2\n", tnt::data::CsvOptions().label_column(5), {"label column 5", "0..1"});
  check("fraction.csv", "1,2.5\n", tnt::data::CsvOptions().label_column(1),
        {"line 1", "2.5", "label_dtype"});
  expect_error([&] { tnt::data::read_csv(dir.file("missing.csv")); },
               {"missing.csv", "cannot be opened"});
}

}  // namespace
