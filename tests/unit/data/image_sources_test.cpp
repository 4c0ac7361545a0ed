// The image sources: folder listing and labels, lossless PNG round trips,
// JPEG DCT scaling, a clear error for every damaged or missing input, and
// distribution: each rank decodes only its own samples of every batch.
#include <tarantella/data/transforms.h>

#include <atomic>
#include <fstream>

#include "image_test_util.h"
#include "rank_share.h"
#include "test_util.h"

namespace {

using namespace tnt_test;
namespace fs = std::filesystem;
namespace T = tnt::data::transforms;
using tnt::data::ImageOptions;

TEST(ImageFolder, ListsClassesSortedWithLabelsByName) {
  TempDir dir("list");
  write_image_folder(dir.str(), 3, 3);
  const auto list = tnt::data::list_image_folder(dir.str());
  EXPECT_EQ(list.classes, (std::vector<std::string>{"class0", "class1", "class2"}));
  ASSERT_EQ(list.paths.size(), 9u);
  EXPECT_EQ(list.labels, (std::vector<std::int64_t>{0, 0, 0, 1, 1, 1, 2, 2, 2}));
  EXPECT_EQ(fs::path(list.paths[4]).filename(), "img1.jpg");
  EXPECT_EQ(fs::path(list.paths[4]).parent_path().filename(), "class1");
}

TEST(ImageFolder, FixedClassesKeepTheirLabels) {
  TempDir dir("val");
  write_image_folder(dir.str(), 2, 1);
  fs::rename(dir / "class0", dir / "class2");  // val lacks class1
  const auto list = tnt::data::list_image_folder(dir.str(), {"class0", "class1", "class2"});
  EXPECT_EQ(list.labels, (std::vector<std::int64_t>{1, 2}));
  expect_error([&] { tnt::data::list_image_folder(dir.str(), {"class0"}); },
               {"class1", "is not one of the given classes"});
}

TEST(ImageFolder, PngDecodesToTheWrittenPixelsAsCHW) {
  TempDir dir("png");
  fs::create_directories(dir / "a");
  const auto image = pattern_image(5, 4, 7);
  tnt::data::write_image((dir / "a" / "x.png").string(), image);
  const auto elements = collect(tnt::data::from_image_folder(dir.str()));
  ASSERT_EQ(elements.size(), 1u);
  const torch::Tensor expected =
      torch::tensor(std::vector<std::int64_t>(image.pixels.begin(), image.pixels.end()))
          .to(torch::kUInt8)
          .view({4, 5, 3})
          .permute({2, 0, 1});
  EXPECT_ELEMENT_EQ(elements[0], (Element{expected, torch::scalar_tensor(0, torch::kInt64)}));
}

TEST(ImageFolder, JpegIsDctScaledOnlyWhenTheTargetIsSmaller) {
  TempDir dir("dct");
  const std::string path = (dir / "big.jpg").string();
  tnt::data::write_image(path, pattern_image(64, 48, 3));
  auto full = tnt::data::read_image(path);
  EXPECT_EQ(full.width, 64);
  EXPECT_EQ(full.height, 48);
  auto quarter = tnt::data::read_image(path, /*min_short_side=*/12);  // 48 * 2/8 = 12
  EXPECT_EQ(quarter.width, 16);
  EXPECT_EQ(quarter.height, 12);
  auto five_eighths = tnt::data::read_image(path, 25);  // 48 * 5/8 = 30 >= 25 > 24
  EXPECT_EQ(five_eighths.height, 30);
  EXPECT_EQ(tnt::data::read_image(path, 100).height, 48) << "never scaled up";
}

void truncate_file(const fs::path& path, double keep) {
  const auto size = fs::file_size(path);
  fs::resize_file(path, static_cast<std::uintmax_t>(static_cast<double>(size) * keep));
}

TEST(ImageFolder, DamagedFilesAreErrorsNamingTheFile) {
  TempDir dir("bad");
  const auto jpg = dir / "t.jpg", png = dir / "t.png", txt = dir / "t.jpeg";
  tnt::data::write_image(jpg.string(), pattern_image(40, 30, 1));
  tnt::data::write_image(png.string(), pattern_image(40, 30, 2));
  truncate_file(jpg, 0.6);
  truncate_file(png, 0.6);
  std::ofstream(txt) << "not an image";
  expect_error([&] { tnt::data::read_image(jpg.string()); },
               {jpg.string(), "not a readable JPEG", "replace the file"});
  expect_error([&] { tnt::data::read_image(png.string()); },
               {png.string(), "not a readable PNG", "replace the file"});
  expect_error([&] { tnt::data::read_image(txt.string()); },
               {txt.string(), "neither a JPEG nor a PNG"});
  expect_error([&] { tnt::data::read_image((dir / "missing.png").string()); },
               {"missing.png", "cannot open"});
}

// A header claiming far more pixels than the data could hold is refused
// before anything is allocated (found by the fuzzer: 607 bytes claiming
// 32777x10759 pixels made the decoder allocate 1 GB and run for seconds).
TEST(ImageFolder, AnImplausibleHeaderIsAnError) {
  TempDir dir("huge");
  const auto jpg = dir / "h.jpg";
  tnt::data::write_image(jpg.string(), pattern_image(40, 30, 1));
  auto bytes = tnt::data::read_file_bytes(jpg.string());
  std::size_t sof = 2;
  while (sof + 9 < bytes.size() && !(bytes[sof] == 0xFF && bytes[sof + 1] == 0xC0)) ++sof;
  ASSERT_LT(sof + 9, bytes.size()) << "no SOF0 marker in the JPEG we wrote";
  for (std::size_t i : {sof + 5, sof + 7}) bytes[i] = bytes[i + 1] = 0x75;  // 30069 x 30069
  expect_error([&] { tnt::data::decode_image(bytes.data(), bytes.size(), "h.jpg"); },
               {"h.jpg", "claims 30069x30069 pixels", "header is damaged"});
}

TEST(ImageFolder, ADamagedFileFailsWhenItsElementIsRead) {
  TempDir dir("lazy");
  write_image_folder(dir.str(), 1, 3);
  truncate_file(dir / "class0" / "img1.jpg", 0.5);
  auto ds = tnt::data::from_image_folder(dir.str());
  auto it = ds.iterate(0);
  EXPECT_TRUE(it.next().has_value()) << "listing must not decode";
  expect_error([&] { it.next(); }, {"img1.jpg", "not a readable JPEG"});
}

TEST(ImageFolder, BadFoldersAndListsAreErrors) {
  TempDir dir("empty");
  expect_error([&] { tnt::data::list_image_folder((dir / "nope").string()); },
               {"nope", "does not exist"});
  fs::create_directories(dir / "class0");
  expect_error([&] { tnt::data::list_image_folder(dir.str()); }, {"holds no .jpg/.jpeg/.png"});
  expect_error(
      [&] {
        tnt::data::from_image_files({{}, {"a.png", "b.png"}, {0}});
      },
      {"2 paths but 1 labels"});
  expect_error([&] { tnt::data::from_image_files({{}, {"a.png"}, {-1}}); }, {"label -1"});
  expect_error(
      [&] {
        tnt::data::from_image_files({{}, {"a.png"}, {0}}, ImageOptions().num_workers(0));
      },
      {"num_workers 0"});
}

// {float [3, 12, 12], label}: cropped to one size so that batches stack.
Dataset cropped(const std::string& dir, int workers,
                std::shared_ptr<std::atomic<std::int64_t>> counter) {
  return tnt::data::from_image_folder(
             dir, ImageOptions().num_workers(workers).decoded_counter(std::move(counter)))
      .shuffle(64, 3)
      .map_seeded(T::compose({T::resize(12), T::center_crop(12), T::to_float()}));
}

TEST(ImageFolder, EachRankDecodesOnlyItsOwnSamples) {
  TempDir dir("ranks");
  write_image_folder(dir.str(), 3, 5);  // 15 images
  const std::int64_t batch = 4;
  for (int size : {1, 2, 3}) {
    for (int rank = 0; rank < size; ++rank) {
      auto counter = std::make_shared<std::atomic<std::int64_t>>(0);
      auto dist = tnt::data::distribute(cropped(dir.str(), 2, counter).batch(batch),
                                        tnt::data::DistributeOptions().rank(rank).size(size));
      std::int64_t samples = 0;
      auto it = dist.iterate(0);
      while (auto mb = it.next()) samples += mb->local_size;
      EXPECT_EQ(samples, rank_share(15, batch, size, rank));
      EXPECT_EQ(*counter, samples)
          << "rank " << rank << " of " << size << " decoded other ranks' images";
    }
  }
}

}  // namespace
