// Tar shards: a generated folder packed into shards reads back bitwise equal
// to the folder (raw and augmented, at 1-3 ranks); each rank reads only its
// own members; the index is built once, and a stale or missing one is
// rebuilt or refused; damaged shards are errors naming shard and member;
// archives written by Python's tarfile (ustar, pax and GNU long names) read.
#include <tarantella/data/shards.h>
#include <tarantella/data/transforms.h>

#include <fstream>

#include "data/formats/tar.h"
#include "image_test_util.h"
#include "rank_share.h"
#include "test_util.h"

namespace {

using namespace tnt_test;
namespace fs = std::filesystem;
namespace T = tnt::data::transforms;
using tnt::data::ImageOptions;
using tnt::data::ShardIndexPolicy;

constexpr std::int64_t kShardImages = 15;

class Shards : public ::testing::Test {
 protected:
  void SetUp() override {
    write_image_folder((dir_ / "folder").string(), 3, kShardImages / 3);
    fs::create_directories(dir_ / "shards");
    list_ = tnt::data::list_image_folder((dir_ / "folder").string());
    shards_ = tnt::data::pack_image_shards(list_, (dir_ / "shards" / "train").string(), 4);
  }
  TempDir dir_{"shards"};
  tnt::data::ImageList list_;
  std::vector<std::string> shards_;
};

Dataset augment(const Dataset& images) {
  return images.shuffle(kShardImages, 2)
      .map_seeded(
          T::compose({T::random_resized_crop(12), T::random_horizontal_flip(), T::to_float()}), 5,
          tnt::data::MapOptions().num_workers(2));
}

TEST_F(Shards, PackedShardsReadBackEqualToTheFolder) {
  ASSERT_EQ(shards_.size(), 4u);  // 4 + 4 + 4 + 3
  EXPECT_TRUE(fs::exists(shards_[0] + ".idx"));
  const auto folder = collect(tnt::data::from_image_files(list_));
  const auto shards = collect(tnt::data::from_image_shards(shards_));
  ASSERT_EQ(shards.size(), folder.size());
  for (std::size_t i = 0; i < folder.size(); ++i) EXPECT_ELEMENT_EQ(shards[i], folder[i]);
}

TEST_F(Shards, AugmentedShardsEqualTheFolderAtAnyRankCount) {
  const auto serial = collect(augment(tnt::data::from_image_files(list_)).batch(4));
  for (int size : {1, 2, 3}) {
    for (int rank = 0; rank < size; ++rank) {
      auto counter = std::make_shared<std::atomic<std::int64_t>>(0);
      auto images = tnt::data::from_image_shards(
          shards_, ImageOptions().num_workers(2).decoded_counter(counter));
      auto dist = tnt::data::distribute(augment(images).batch(4),
                                        tnt::data::DistributeOptions().rank(rank).size(size));
      auto it = dist.iterate(0);
      std::int64_t read = 0;
      for (std::size_t step = 0; auto mb = it.next(); ++step) {
        const auto [lo, hi] = tnt::data::micro_batch_range(serial[step][0].size(0), size, rank);
        SCOPED_TRACE("rank " + std::to_string(rank) + " of " + std::to_string(size));
        EXPECT_ELEMENT_EQ(mb->tensors, (Element{serial[step][0].slice(0, lo, hi),
                                                serial[step][1].slice(0, lo, hi)}));
        read += mb->local_size;
      }
      EXPECT_EQ(read, rank_share(kShardImages, 4, size, rank));
      EXPECT_EQ(*counter, read) << "rank " << rank << " of " << size
                                << " read members of other ranks";
    }
  }
}

TEST_F(Shards, AStaleIndexIsRebuiltOrRefused) {
  const std::string shard = shards_[1];
  const auto before = fs::last_write_time(shard + ".idx");
  tnt::data::from_image_shards(shards_, ImageOptions(), ShardIndexPolicy::Refuse);
  EXPECT_EQ(fs::last_write_time(shard + ".idx"), before) << "a fresh index was rewritten";
  std::ofstream(shard, std::ios::app) << std::string(1024, '\0');  // the shard changed
  expect_error(
      [&] { tnt::data::from_image_shards(shards_, ImageOptions(), ShardIndexPolicy::Refuse); },
      {shard, "is stale", "bytes, the index says", "index_image_shard"});
  EXPECT_EQ(collect(tnt::data::from_image_shards(shards_)).size(),
            static_cast<std::size_t>(kShardImages));
  tnt::data::from_image_shards(shards_, ImageOptions(), ShardIndexPolicy::Refuse);  // rebuilt
  fs::last_write_time(shard, fs::last_write_time(shard) + std::chrono::seconds(5));
  expect_error(
      [&] { tnt::data::from_image_shards(shards_, ImageOptions(), ShardIndexPolicy::Refuse); },
      {"modified after it was indexed"});
  tnt::data::from_image_shards(shards_);  // rebuilds shard 1's index again
  fs::remove(shards_[2] + ".idx");
  expect_error(
      [&] { tnt::data::from_image_shards(shards_, ImageOptions(), ShardIndexPolicy::Refuse); },
      {"there is no index", shards_[2]});
}

TEST_F(Shards, MissingAndDamagedShardsAreErrors) {
  expect_error(
      [&] {
        tnt::data::from_image_shards({shards_[0], shards_[0] + ".gone"});
      },
      {"train-000000.tar.gone", "missing"});
  // A bad header: break the first header's checksum.
  {
    std::fstream f(shards_[1], std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(3);
    f.put('#');
  }
  expect_error([&] { tnt::data::from_image_shards({shards_[1]}); },
               {shards_[1], "bad header at byte 0", "re-create"});
  fs::resize_file(shards_[2], 700);  // inside the first member's data
  expect_error([&] { tnt::data::from_image_shards({shards_[2]}); }, {shards_[2], "truncated"});
}

TEST_F(Shards, AShardReadWithAStaleIndexFailsNamingTheMember) {
  // An index that still matches size and mtime but points past a damaged
  // image: the decode error names shard and member.
  const std::string shard = shards_[3];
  const auto mtime = fs::last_write_time(shard);
  {
    std::fstream f(shard, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(512);  // the first image's first bytes
    f.write("XXXX", 4);
  }
  fs::last_write_time(shard, mtime);
  expect_error([&] { collect(tnt::data::from_image_shards({shard})); },
               {shard + ":000000012.", "neither a JPEG nor a PNG"});
}

TEST(ShardFormat, SamplesNeedAnImageAndALabel) {
  TempDir dir("badsample");
  const std::string shard = (dir / "s.tar").string();
  {
    std::ofstream out(shard, std::ios::binary);
    tnt::data::detail::write_tar_member(out, "a.cls", "1");
    tnt::data::detail::write_tar_member(out, "b.png", "not really");
    tnt::data::detail::write_tar_member(out, "b.cls", "x");
    tnt::data::detail::finish_tar(out);
  }
  expect_error([&] { tnt::data::from_image_shards({shard}); },
               {shard, "sample 'a' lacks an image member"});
}

TEST(ShardFormat, PythonTarfileArchivesRead) {
  TempDir dir("tarfile");
  for (const char* name : {"ustar.tar", "pax_long.tar", "gnu_long.tar"}) {
    SCOPED_TRACE(name);
    const fs::path shard = dir / name;
    fs::copy_file(fs::path(TNT_FUZZ_CORPUS) / "tar" / name, shard);
    const auto elements = collect(tnt::data::from_image_shards({shard.string()}));
    ASSERT_EQ(elements.size(), 2u);
    EXPECT_EQ(elements[0][0].sizes(), (std::vector<std::int64_t>{3, 7, 9}));
    EXPECT_EQ(elements[1][1].item<std::int64_t>(), 3);
  }
}

}  // namespace
