// WebDataset-style tar shards of images: each sample is a group of
// consecutive members sharing a key, `<key>.jpg` (or .jpeg/.png) and
// `<key>.cls` (the label as decimal text). Millions of small files on a
// shared file system are slow to list and open; a few large shards are not.
//
// Random access. Beside every shard lies an index, `<shard>.idx`: the byte
// offset and size of each sample's image and its label, and the shard's
// size and modification time when it was indexed. It is built once (by
// pack_image_shards, or by the first reader) and checked at every open; a
// stale index (the shard changed) is rebuilt, or refused under
// ShardIndexPolicy::Refuse. With it a sample is one seek and one read, so
// under distribute() each rank reads only its own samples' members.
//
// Elements are those of the folder source: {uint8 [3, H, W], int64 label};
// a folder packed in list order reads back bitwise equal to the folder.
//
// Example:
//   auto shards = tnt::data::pack_image_shards(tnt::data::list_image_folder("train"),
//                                              "shards/train", /*samples_per_shard=*/1000);
//   auto ds = tnt::data::from_image_shards(shards, tnt::data::ImageOptions().num_workers(4));
#pragma once

#include <tarantella/data/images.h>

#include <cstdint>
#include <string>
#include <vector>

namespace tnt::data {

/// What an image shard source does when a shard's index is missing or no
/// longer matches the shard's size and modification time.
enum class ShardIndexPolicy {
  Build,   // (re)build it by walking the shard once, and write it (atomically)
  Refuse,  // throw, naming the shard and the way to rebuild
};

/// The samples of `shards`, in shard order, then member order. Missing
/// shards, damaged tar headers, samples without an image or a .cls member
/// and non-numeric labels are errors naming the shard and the member.
/// Example: auto ds = tnt::data::from_image_shards({"s/train-000000.tar", "s/train-000001.tar"});
Dataset from_image_shards(const std::vector<std::string>& shards,
                          const ImageOptions& options = ImageOptions(),
                          ShardIndexPolicy policy = ShardIndexPolicy::Build);

/// Packs `list` into shards `<prefix>-000000.tar`, `<prefix>-000001.tar`, ...
/// of `samples_per_shard` samples each, in list order, keys the zero-padded
/// sample number, and writes each shard's index. Returns the shard paths.
/// Example: tnt::data::pack_image_shards(list, "/data/shards/train", 1000);
std::vector<std::string> pack_image_shards(const ImageList& list, const std::string& prefix,
                                           std::int64_t samples_per_shard);

/// Builds (or rebuilds) the index beside `shard` and returns its path.
/// Example: tnt::data::index_image_shard("/data/shards/train-000000.tar");
std::string index_image_shard(const std::string& shard);

}  // namespace tnt::data
