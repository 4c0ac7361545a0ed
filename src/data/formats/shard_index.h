// The index beside a tar shard (`<shard>.idx`, text): where each sample's
// image lies in the shard and its label, plus the shard's size and
// modification time when it was indexed, which tell a stale index.
//
//   tnt-shard-index 1
//   <shard bytes> <shard mtime ns> <samples>
//   <image offset> <image bytes> <label> <image extension> <key>     (one per sample)
#pragma once

#include <tarantella/data/shards.h>

#include <cstdint>
#include <string>
#include <vector>

namespace tnt::data::detail {

struct ShardSample {
  std::uint64_t offset = 0, size = 0;  // of the image member's data
  std::int64_t label = 0;
  std::string ext, key;
};

struct ShardIndex {
  std::uint64_t shard_size = 0;
  std::int64_t shard_mtime_ns = 0;
  std::vector<ShardSample> samples;
};

/// "<shard>.idx".
std::string index_path(const std::string& shard);
/// Walks the shard's tar headers and reads its .cls members.
ShardIndex build_shard_index(const std::string& shard);
/// Writes the index beside the shard (temporary file, then rename).
void write_shard_index(const std::string& shard, const ShardIndex& index);
/// The shard's index: read and checked, or (policy Build) rebuilt and
/// written when missing, damaged or stale; policy Refuse throws instead.
ShardIndex open_shard_index(const std::string& shard, ShardIndexPolicy policy);

}  // namespace tnt::data::detail
