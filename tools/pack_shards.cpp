// tnt-pack-shards: packs an ImageNet-layout image folder into WebDataset-
// style tar shards with their indexes (tnt::data::pack_image_shards), or
// (re)builds the index of existing shards.
//
//   tnt-pack-shards imagenet/train shards/train --samples-per-shard 1000
//   tnt-pack-shards --index shards/train-*.tar
#include <tarantella/base/error.h>
#include <tarantella/data/shards.h>

#include <CLI/CLI.hpp>
#include <filesystem>
#include <iostream>

namespace {

int pack(const std::string& folder, const std::string& prefix, std::int64_t per_shard) {
  const auto list = tnt::data::list_image_folder(folder);
  const auto parent = std::filesystem::path(prefix).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent);
  const auto shards = tnt::data::pack_image_shards(list, prefix, per_shard);
  std::cout << "packed " << list.paths.size() << " images of " << list.classes.size()
            << " classes into " << shards.size() << " shards " << prefix << "-*.tar\n";
  std::cout << "classes (label = line number - 1):\n";
  for (const auto& c : list.classes) std::cout << "  " << c << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("Packs an image folder (FOLDER/<class>/<image>) into tar shards PREFIX-NNNNNN.tar");
  std::string folder, prefix;
  std::int64_t per_shard = 1000;
  std::vector<std::string> index;
  app.add_option("folder", folder, "image folder in the ImageNet layout");
  app.add_option("prefix", prefix, "output path prefix of the shards, e.g. shards/train");
  app.add_option("--samples-per-shard", per_shard, "samples per shard (default 1000)");
  app.add_option("--index", index, "only (re)build the index of these shards");
  CLI11_PARSE(app, argc, argv);
  try {
    if (!index.empty()) {
      for (const auto& shard : index) std::cout << tnt::data::index_image_shard(shard) << "\n";
      return 0;
    }
    if (folder.empty() || prefix.empty()) {
      std::cerr << "tnt-pack-shards: give FOLDER and PREFIX, or --index SHARD...\n";
      return 2;
    }
    return pack(folder, prefix, per_shard);
  } catch (const tnt::Error& e) {
    std::cerr << "tnt-pack-shards: " << e.what() << "\n";
    return 1;
  }
}
