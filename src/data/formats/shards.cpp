// The tar shard source and packer (shards.h). Opening reads every shard's
// index (names, offsets, labels: no pixels); a sample is then read with one
// seek into its shard and decoded where it is asked for.
#include <tarantella/base/error.h>
#include <tarantella/data/shards.h>

#include <filesystem>
#include <fstream>
#include <iomanip>
#include <sstream>

#include "data/formats/shard_index.h"
#include "data/formats/tar.h"
#include "data/images/image_samples.h"

namespace tnt::data {
namespace {

// Where sample i lies: shard path and image member.
struct ShardCatalog {
  std::vector<std::string> shards;
  std::vector<std::size_t> shard_of;
  std::vector<detail::ShardSample> samples;
};

// The bytes of sample i's image member. A failure here is the dataset's (a
// vanished shard, an index that promises more than the shard holds).
detail::EncodedSample read_shard_sample(const ShardCatalog& c, std::int64_t i) {
  const auto& s = c.samples[static_cast<std::size_t>(i)];
  const std::string& shard = c.shards[c.shard_of[static_cast<std::size_t>(i)]];
  std::ifstream in(shard, std::ios::binary);
  TNT_CHECK(in, "cannot open image shard ", shard, ": check that it exists and is readable");
  std::vector<std::uint8_t> bytes(s.size);
  in.seekg(static_cast<std::streamoff>(s.offset));
  in.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(s.size));
  TNT_CHECK(in.gcount() == static_cast<std::streamsize>(s.size), "image shard ", shard,
            ": cannot read member ", s.key, ".", s.ext, " (", s.size, " bytes at ", s.offset,
            "): the shard is shorter than its index says; rebuild the index or re-copy the shard");
  return {std::move(bytes), shard + ":" + s.key + "." + s.ext};
}

std::string shard_name(const std::string& prefix, std::size_t n) {
  std::ostringstream out;
  out << prefix << '-' << std::setw(6) << std::setfill('0') << n << ".tar";
  return out.str();
}

std::string sample_key(std::size_t i) {
  std::ostringstream out;
  out << std::setw(9) << std::setfill('0') << i;
  return out.str();
}

std::string image_ext(const std::string& path) {
  std::string ext = std::filesystem::path(path).extension().string();
  for (auto& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return ext.empty() ? ext : ext.substr(1);
}

void write_shard(const std::string& shard, const ImageList& list, std::size_t begin,
                 std::size_t end) {
  {
    std::ofstream out(shard, std::ios::binary | std::ios::trunc);
    TNT_CHECK(out, "cannot create shard ", shard, ": check that its folder exists and is writable");
    for (std::size_t i = begin; i < end; ++i) {
      const auto& bytes = read_file_bytes(list.paths[i]);
      detail::write_tar_member(out, sample_key(i) + "." + image_ext(list.paths[i]),
                               std::string(bytes.begin(), bytes.end()));
      detail::write_tar_member(out, sample_key(i) + ".cls", std::to_string(list.labels[i]));
    }
    detail::finish_tar(out);
    TNT_CHECK(out.flush(), "cannot write shard ", shard, ": is the disk full?");
  }
  detail::write_shard_index(shard, detail::build_shard_index(shard));
}

}  // namespace

Dataset from_image_shards(const std::vector<std::string>& shards, const ImageOptions& options,
                          ShardIndexPolicy policy) {
  TNT_CHECK(!shards.empty(), "from_image_shards: no shards given: pass the shard paths, e.g. ",
            "the result of pack_image_shards");
  detail::check_image_options(options);
  auto catalog = std::make_shared<ShardCatalog>();
  catalog->shards = shards;
  std::vector<std::int64_t> labels;
  for (std::size_t k = 0; k < shards.size(); ++k) {
    detail::ShardIndex index = detail::open_shard_index(shards[k], policy);
    for (auto& s : index.samples) {
      labels.push_back(s.label);
      catalog->shard_of.push_back(k);
      catalog->samples.push_back(std::move(s));
    }
  }
  detail::ImageSamples samples{
      "image_shards(" + std::to_string(shards.size()) + " shards, " +
          std::to_string(labels.size()) + " samples)",
      std::move(labels),
      [catalog = std::shared_ptr<const ShardCatalog>(catalog)](std::int64_t i) {
        return read_shard_sample(*catalog, i);
      },
      /*read_fault_is_the_samples=*/false, options};
  return Dataset(detail::make_image_samples(std::move(samples)));
}

std::vector<std::string> pack_image_shards(const ImageList& list, const std::string& prefix,
                                           std::int64_t samples_per_shard) {
  TNT_CHECK(samples_per_shard > 0, "pack_image_shards: samples_per_shard ", samples_per_shard,
            " is invalid: use a positive count, e.g. 1000");
  TNT_CHECK(list.paths.size() == list.labels.size(), "pack_image_shards: ", list.paths.size(),
            " paths but ", list.labels.size(), " labels: give one label per file");
  std::vector<std::string> shards;
  const auto per = static_cast<std::size_t>(samples_per_shard);
  for (std::size_t begin = 0; begin < list.paths.size(); begin += per) {
    shards.push_back(shard_name(prefix, shards.size()));
    write_shard(shards.back(), list, begin, std::min(begin + per, list.paths.size()));
  }
  return shards;
}

std::string index_image_shard(const std::string& shard) {
  detail::write_shard_index(shard, detail::build_shard_index(shard));
  return detail::index_path(shard);
}

}  // namespace tnt::data
