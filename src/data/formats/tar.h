// A minimal tar reader and writer for WebDataset-style shards, without
// LibTorch. Reading walks the 512-byte headers once and returns every
// regular file's name, data offset and size, so that a member can later be
// read by one seek (random access; see shards.cpp).
//
// Why our own and not libarchive: libarchive reads archives as a stream and
// does not tell the byte offset of a member's data, which random access
// needs; walking tar headers is a page of code and is fuzzed
// (tests/fuzz/tar_fuzz.cpp). Understood: ustar and GNU/old headers, GNU long
// names ('L'), pax extended headers ('x': path, size; 'g' ignored), base-256
// sizes. Directories, links and other types are skipped.
#pragma once

#include <cstdint>
#include <istream>
#include <ostream>
#include <string>
#include <vector>

namespace tnt::data::detail {

/// A regular file in a tar archive.
struct TarMember {
  std::string name;
  std::uint64_t offset = 0;  // of its data, from the start of the archive
  std::uint64_t size = 0;
};

/// The regular files of the archive `in` (of `total` bytes), in archive
/// order. `name` is used in errors, which name the header's byte offset:
/// a bad checksum, a size past the end, a truncated header or pax record.
std::vector<TarMember> list_tar(std::istream& in, std::uint64_t total, const std::string& name);

/// Appends one regular file (ustar header, mode 0644, mtime 0, so packing is
/// reproducible). Names must be shorter than 100 bytes.
void write_tar_member(std::ostream& out, const std::string& name, const std::string& bytes);
/// Appends the two zero blocks that end an archive.
void finish_tar(std::ostream& out);

}  // namespace tnt::data::detail
