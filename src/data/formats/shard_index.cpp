// Building, writing, reading and checking shard indexes (shard_index.h).
#include "data/formats/shard_index.h"

#include <tarantella/base/error.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "data/formats/tar.h"

namespace tnt::data::detail {
namespace {

namespace fs = std::filesystem;

struct ShardStat {
  std::uint64_t size = 0;
  std::int64_t mtime_ns = 0;
};

ShardStat stat_shard(const std::string& shard) {
  std::error_code ec;
  const auto size = fs::file_size(shard, ec);
  TNT_CHECK(!ec && fs::is_regular_file(shard), "image shard ", shard,
            " is missing or not a file: check the path (", ec.message(), ")");
  const auto mtime = fs::last_write_time(shard).time_since_epoch();
  return {size, std::chrono::duration_cast<std::chrono::nanoseconds>(mtime).count()};
}

// "dir/abc.d.jpg" -> key "dir/abc", extension "d.jpg" (WebDataset: the
// extension starts at the first dot of the base name).
std::pair<std::string, std::string> split_key(const std::string& name) {
  const std::size_t slash = name.rfind('/');
  const std::size_t dot = name.find('.', slash == std::string::npos ? 0 : slash + 1);
  if (dot == std::string::npos) return {name, ""};
  std::string ext = name.substr(dot + 1);
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return {name.substr(0, dot), ext};
}

bool is_image_ext(const std::string& ext) { return ext == "jpg" || ext == "jpeg" || ext == "png"; }

std::int64_t read_label(std::ifstream& in, const TarMember& m, const std::string& shard) {
  TNT_CHECK(m.size <= 32, "image shard ", shard, ": label member ", m.name, " has ", m.size,
            " bytes: a .cls member holds a class index as decimal text");
  std::string text(m.size, '\0');
  in.clear();
  in.seekg(static_cast<std::streamoff>(m.offset));
  in.read(text.data(), static_cast<std::streamsize>(m.size));
  std::istringstream parse(text);
  std::int64_t label = -1;
  std::string rest;
  const bool ok = static_cast<bool>(parse >> label) && !(parse >> rest) && label >= 0;
  TNT_CHECK(ok, "image shard ", shard, ": label member ", m.name, " holds '", text,
            "', not a class index (a whole number >= 0): re-pack the shard");
  return label;
}

// Groups consecutive members by key into samples of one image and one label.
class SampleGrouper {
 public:
  SampleGrouper(std::ifstream& in, const std::string& shard) : in_(in), shard_(shard) {}
  void add(const TarMember& m) {
    auto [key, ext] = split_key(m.name);
    if (key != key_) finish();
    key_ = key;
    if (is_image_ext(ext)) {
      TNT_CHECK(!has_image_, "image shard ", shard_, ": sample '", key, "' has two images (",
                image_.ext, " and ", ext, "): keep one image per key");
      image_ = {m.offset, m.size, 0, ext, key};
      has_image_ = true;
    } else if (ext == "cls") {
      label_ = read_label(in_, m, shard_);
      has_label_ = true;
    }
  }
  std::vector<ShardSample> finish_all() {
    finish();
    return std::move(samples_);
  }

 private:
  void finish() {
    if (key_.empty() && !has_image_ && !has_label_) return;
    TNT_CHECK(has_image_ && has_label_, "image shard ", shard_, ": sample '", key_, "' lacks ",
              has_image_ ? "a .cls label member" : "an image member (.jpg/.jpeg/.png)",
              ": every key needs both, next to each other in the archive; re-pack the shard");
    image_.label = label_;
    samples_.push_back(image_);
    key_.clear();
    has_image_ = has_label_ = false;
  }
  std::ifstream& in_;
  const std::string& shard_;
  std::string key_;
  ShardSample image_;
  std::int64_t label_ = 0;
  bool has_image_ = false, has_label_ = false;
  std::vector<ShardSample> samples_;
};

std::string stale_reason(const ShardIndex& index, const ShardStat& now) {
  if (index.shard_size != now.size) {
    return "the shard has " + std::to_string(now.size) + " bytes, the index says " +
           std::to_string(index.shard_size);
  }
  if (index.shard_mtime_ns != now.mtime_ns) return "the shard was modified after it was indexed";
  return "";
}

// The index file, parsed; `why` says what is wrong when it returns false.
bool read_index_file(const std::string& shard, ShardIndex& index, std::string& why) {
  std::ifstream in(index_path(shard));
  if (!in) {
    why = "there is no index " + index_path(shard);
    return false;
  }
  std::string magic;
  int version = 0;
  std::size_t count = 0;
  in >> magic >> version >> index.shard_size >> index.shard_mtime_ns >> count;
  if (!in || magic != "tnt-shard-index" || version != 1) {
    why = "index " + index_path(shard) + " is damaged";
    return false;
  }
  index.samples.resize(std::min<std::size_t>(count, 1u << 26));
  for (auto& s : index.samples) {
    in >> s.offset >> s.size >> s.label >> s.ext;
    in.get();
    std::getline(in, s.key);
  }
  if (!in || index.samples.size() != count) {
    why = "index " + index_path(shard) + " is damaged";
    return false;
  }
  return true;
}

}  // namespace

std::string index_path(const std::string& shard) { return shard + ".idx"; }

ShardIndex build_shard_index(const std::string& shard) {
  const ShardStat stat = stat_shard(shard);
  std::ifstream in(shard, std::ios::binary);
  TNT_CHECK(in, "cannot open image shard ", shard, ": check that it exists and is readable");
  SampleGrouper grouper(in, shard);
  for (const TarMember& m : list_tar(in, stat.size, shard)) grouper.add(m);
  return {stat.size, stat.mtime_ns, grouper.finish_all()};
}

void write_shard_index(const std::string& shard, const ShardIndex& index) {
  const std::string path = index_path(shard);
  const std::string tmp = path + ".tmp" + std::to_string(::getpid());
  {
    std::ofstream out(tmp);
    TNT_CHECK(out, "cannot write the shard index ", tmp,
              ": make the shard's folder writable, or build the index where it is writable");
    out << "tnt-shard-index 1\n"
        << index.shard_size << ' ' << index.shard_mtime_ns << ' ' << index.samples.size() << '\n';
    for (const auto& s : index.samples) {
      out << s.offset << ' ' << s.size << ' ' << s.label << ' ' << s.ext << ' ' << s.key << '\n';
    }
    TNT_CHECK(out.flush(), "cannot write the shard index ", tmp, ": is the disk full?");
  }
  fs::rename(tmp, path);
}

ShardIndex open_shard_index(const std::string& shard, ShardIndexPolicy policy) {
  const ShardStat now = stat_shard(shard);
  ShardIndex index;
  std::string why;
  if (read_index_file(shard, index, why)) {
    why = stale_reason(index, now);
    if (why.empty()) return index;
    why = "index " + index_path(shard) + " is stale: " + why;
  }
  TNT_CHECK(policy == ShardIndexPolicy::Build, "image shard ", shard, ": ", why,
            ": rebuild the index (tnt::data::index_image_shard, tnt-pack-shards --index), or ",
            "open the shards with ShardIndexPolicy::Build");
  index = build_shard_index(shard);
  write_shard_index(shard, index);
  return index;
}

}  // namespace tnt::data::detail
