// The skip policy for bad samples (ImageOptions().on_error(OnBadSample::skip)):
// a file or tar member that cannot be read or decoded is dropped with one
// warning naming it; the samples that remain, and their labels, are exactly
// those of the good files, in their batches and in every rank's
// micro-batches; dataset-level faults stay errors; raise (the default)
// still names the file.
#include <gtest/gtest.h>

#include <tarantella/data/distribute.h>
#include <tarantella/data/images.h>
#include <tarantella/data/shards.h>
#include <tarantella/data/transforms.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <set>
#include <sstream>

#include "image_test_util.h"
#include "test_util.h"

namespace {

using namespace tnt_test;
namespace fs = std::filesystem;
namespace T = tnt::data::transforms;
using tnt::data::Dataset;
using tnt::data::Element;
using tnt::data::ImageList;
using tnt::data::ImageOptions;
using tnt::data::OnBadSample;
using Counter = std::shared_ptr<std::atomic<std::int64_t>>;

// 16 images of 4 classes; `bad` positions (in list order) are damaged in
// turn: truncated JPEG, truncated PNG, bytes of neither, a missing file.
struct Folder {
  explicit Folder(const std::string& tag, std::set<std::size_t> bad_positions)
      : dir(tag), bad(std::move(bad_positions)) {
    write_image_folder(dir.str(), 4, 4);
    list = tnt::data::list_image_folder(dir.str());
    int kind = 0;
    for (std::size_t i : bad) {
      const fs::path path = list.paths[i];
      switch (kind++ % 4) {
        case 0:
        case 1:
          fs::resize_file(path, fs::file_size(path) / 2);
          break;
        case 2:
          std::ofstream(path, std::ios::trunc) << "not an image";
          break;
        default:
          fs::remove(path);
      }
    }
    for (std::size_t i = 0; i < list.paths.size(); ++i) {
      if (!bad.count(i)) good.push_back(i);
    }
  }
  ImageList subset(const std::vector<std::size_t>& positions) const {
    ImageList out{list.classes, {}, {}};
    for (std::size_t i : positions) {
      out.paths.push_back(list.paths[i]);
      out.labels.push_back(list.labels[i]);
    }
    return out;
  }
  TempDir dir;
  std::set<std::size_t> bad;
  ImageList list;
  std::vector<std::size_t> good;
};

// Images of one size, so that they batch.
Dataset cropped(Dataset images) {
  return images.map_seeded(T::compose({T::resize(12), T::center_crop(12), T::to_float()}), 1);
}

ImageOptions skipping(Counter counter = nullptr, int workers = 1) {
  return ImageOptions().on_error(OnBadSample::skip).skipped_counter(std::move(counter))
      .num_workers(workers);
}

std::vector<Element> all_elements(const Dataset& ds, std::int64_t epoch = 0) {
  std::vector<Element> out;
  auto it = ds.iterate(epoch);
  while (auto e = it.next()) out.push_back(std::move(*e));
  return out;
}

std::size_t count_of(const std::string& text, const std::string& part) {
  std::size_t n = 0;
  for (auto at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

// Warnings (lines) about a skipped sample that name `what`.
std::size_t warnings_naming(const std::string& log, const std::string& what) {
  std::size_t n = 0;
  std::istringstream lines(log);
  for (std::string line; std::getline(lines, line);) {
    if (line.find("WARNING") != std::string::npos &&
        line.find("skipped bad sample") != std::string::npos &&
        line.find(what) != std::string::npos) {
      ++n;
    }
  }
  return n;
}

void expect_equal_elements(const std::vector<Element>& a, const std::vector<Element>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].size(), b[i].size()) << "element " << i;
    for (std::size_t c = 0; c < a[i].size(); ++c) {
      EXPECT_TRUE(a[i][c].equal(b[i][c])) << "element " << i << ", tensor " << c;
    }
  }
}

TEST(SkipBadSamples, DropsEachBadFileWithOneWarningAndKeepsTheGoodOnesWithTheirLabels) {
  Folder f("skip", {1, 6, 7, 12});
  for (int workers : {1, 3}) {
    auto counter = std::make_shared<std::atomic<std::int64_t>>(0);
    // The list was made before the damage: one file of it is gone.
    const Dataset ds = tnt::data::from_image_files(f.list, skipping(counter, workers));
    EXPECT_TRUE(ds.may_skip_samples());
    testing::internal::CaptureStderr();
    const std::vector<Element> got = all_elements(cropped(ds).batch(16).unbatch());
    const std::string log = testing::internal::GetCapturedStderr();
    expect_equal_elements(got, all_elements(cropped(tnt::data::from_image_files(f.subset(f.good)))));
    EXPECT_EQ(*counter, 4) << log;
    EXPECT_EQ(ds.samples_skipped(), 4);
    EXPECT_EQ(count_of(log, "skipped bad sample"), 4u) << log;
    for (std::size_t i : f.bad) {
      EXPECT_EQ(warnings_naming(log, f.list.paths[i]), 1u)
          << "one warning naming " << f.list.paths[i] << ":\n" << log;
    }
    EXPECT_NE(log.find("not a readable JPEG"), std::string::npos) << "the decoder's reason";
  }
  // raise (the default) still names the file.
  expect_error([&] { all_elements(tnt::data::from_image_files(f.list)); },
               {f.list.paths[1], "not a readable JPEG"});
  EXPECT_FALSE(tnt::data::from_image_files(f.list).may_skip_samples());
  // A folder listed after the damage has no missing file: the other three.
  auto counter = std::make_shared<std::atomic<std::int64_t>>(0);
  all_elements(tnt::data::from_image_folder(f.dir.str(), skipping(counter)));
  EXPECT_EQ(*counter, 3);
}

// Batch k holds the good samples of positions [kB, kB + B); a batch of bad
// samples only is passed over; shuffling and labels travel with the samples.
TEST(SkipBadSamples, ABatchHoldsTheGoodSamplesOfItsPositions) {
  Folder f("skipbatch", {0, 4, 5, 6, 7, 13});
  const std::int64_t B = 4;
  for (bool shuffle : {false, true}) {
    Dataset ds = tnt::data::from_image_files(f.list, skipping());
    if (shuffle) ds = ds.shuffle(16, 9);
    // The reference: the same order of positions, bad ones left out.
    Dataset positions = Dataset::from_tensor_slices({torch::arange(16, torch::kInt64)});
    if (shuffle) positions = positions.shuffle(16, 9);
    std::vector<std::int64_t> order;
    for (const auto& e : all_elements(positions)) order.push_back(e[0].item<std::int64_t>());
    std::vector<Element> expected;
    for (std::size_t k = 0; k < order.size(); k += B) {
      std::vector<std::size_t> good;
      for (std::size_t j = k; j < k + B; ++j) {
        const auto p = static_cast<std::size_t>(order[j]);
        if (!f.bad.count(p)) good.push_back(p);
      }
      if (good.empty()) continue;
      auto batch = all_elements(cropped(tnt::data::from_image_files(f.subset(good)))
                                    .batch(static_cast<std::int64_t>(good.size())));
      expected.push_back(batch.front());
    }
    const auto got = all_elements(cropped(ds).batch(B));
    if (!shuffle) {
      EXPECT_EQ(got.size(), 3u) << "batch 1 (positions 4..7) is all bad";
    }
    expect_equal_elements(got, expected);
  }
}

// Every rank's micro-batch k holds the good samples of its rows; concatenated
// in rank order they are the serial batch k. A rank whose rows are all bad
// gets zero rows of the right shapes; a batch with no good sample at all is
// a step without samples on every rank.
TEST(SkipBadSamples, MicroBatchesConcatenateToTheSerialBatchAtAnyRankCount) {
  Folder f("skipdist", {1, 2, 5, 8, 9, 10, 11, 15});
  const std::int64_t B = 4;
  for (bool sequential : {false, true}) {
    Dataset ds = tnt::data::from_image_files(f.list, skipping()).shuffle(16, 5);
    if (sequential) ds = ds.filter([](const Element&) { return true; });
    ds = cropped(ds).batch(B);
    std::vector<Element> serial;
    {
      auto it = ds.iterate(2);
      while (auto e = it.next()) serial.push_back(*e);
    }
    for (int size = 1; size <= 4; ++size) {
      SCOPED_TRACE("N=" + std::to_string(size) + (sequential ? " sequential" : ""));
      std::vector<std::vector<tnt::data::MicroBatch>> ranks(static_cast<std::size_t>(size));
      for (int r = 0; r < size; ++r) {
        auto dist =
            tnt::data::distribute(ds, tnt::data::DistributeOptions().rank(r).size(size));
        auto it = dist.iterate(2);
        while (auto mb = it.next()) ranks[static_cast<std::size_t>(r)].push_back(std::move(*mb));
        ASSERT_EQ(ranks[static_cast<std::size_t>(r)].size(), 4u) << "every rank runs every step";
      }
      std::size_t s = 0;
      for (std::size_t k = 0; k < 4; ++k) {
        std::vector<Element> parts;
        std::int64_t rows = 0;
        for (int r = 0; r < size; ++r) {
          const auto& mb = ranks[static_cast<std::size_t>(r)][k];
          EXPECT_EQ(mb.global_size, B) << "nominal: the trainer counts the real size";
          rows += mb.local_size;
          if (mb.local_size > 0) parts.push_back(mb.tensors);
          if (mb.local_size == 0 && !mb.tensors.empty()) {
            EXPECT_EQ(mb.tensors[0].sizes(), torch::IntArrayRef({0, 3, 12, 12}));
          }
        }
        if (rows == 0) continue;  // no good sample: the serial pass has no batch here
        ASSERT_LT(s, serial.size());
        for (std::size_t c = 0; c < 2; ++c) {
          std::vector<torch::Tensor> column;
          for (const auto& p : parts) column.push_back(p[c]);
          EXPECT_TRUE(torch::cat(column).equal(serial[s][c])) << "batch " << k << " tensor " << c;
        }
        ++s;
      }
      EXPECT_EQ(s, serial.size());
    }
  }
}

// zip before batch drops the pair: the other input's row never pairs with
// another sample. zip after batch could misalign rows, so it is refused.
TEST(SkipBadSamples, ZipKeepsPairsTogetherAndRefusesBatchedInputs) {
  Folder f("skipzip", {3, 4, 9});
  const Dataset images = cropped(tnt::data::from_image_files(f.list, skipping()));
  const Dataset ids = Dataset::from_tensor_slices({torch::arange(16, torch::kInt64)});
  const auto batches = all_elements(Dataset::zip({images, ids}).enumerate().batch(5));
  std::vector<std::int64_t> seen;
  for (const auto& b : batches) {
    ASSERT_EQ(b.size(), 4u);
    EXPECT_TRUE(b[0].equal(b[3])) << "enumerate's counter stays with its sample";
    for (std::int64_t i = 0; i < b[3].size(0); ++i) seen.push_back(b[3][i].item<std::int64_t>());
  }
  std::vector<std::int64_t> expected(f.good.begin(), f.good.end());
  EXPECT_EQ(seen, expected);
  expect_error([&] { Dataset::zip({images.batch(4), ids.batch(4)}); },
               {"may drop bad samples", "zip before batch"});
}

// Shards: a damaged member is skipped like a file, naming shard and member;
// a shard that is gone or shorter than its index stays an error.
TEST(SkipBadSamples, ShardMembersAreSkippedButDatasetFaultsStayErrors) {
  Folder f("skipshard", {2, 9});
  TempDir out("skipshard_out");
  std::vector<std::size_t> readable(f.good);
  readable.push_back(2);  // truncated: packs fine, decodes badly
  std::sort(readable.begin(), readable.end());
  const auto shards = tnt::data::pack_image_shards(f.subset(readable), (out / "s").string(), 5);
  auto counter = std::make_shared<std::atomic<std::int64_t>>(0);
  const Dataset ds = tnt::data::from_image_shards(shards, skipping(counter));
  testing::internal::CaptureStderr();
  const auto got = all_elements(cropped(ds));
  const std::string log = testing::internal::GetCapturedStderr();
  expect_equal_elements(got, all_elements(cropped(tnt::data::from_image_files(f.subset(f.good)))));
  EXPECT_EQ(*counter, 1);
  EXPECT_EQ(warnings_naming(log, "s-000000.tar:000000002.png"), 1u) << log;

  fs::remove(shards[1]);
  expect_error([&] { all_elements(ds); }, {shards[1]});
  expect_error([&] { tnt::data::from_image_shards(shards, skipping()); }, {shards[1]});
}

}  // namespace
