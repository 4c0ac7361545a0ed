// The tar walker and writer of tar.h. Layout of a header block (POSIX
// ustar): name[100] at 0, size[12] at 124 (octal, or base-256 when the first
// byte has its high bit set), checksum[8] at 148, type at 156, magic at 257,
// prefix[155] at 345. Data follows, padded to 512 bytes; two zero blocks
// (or the end of the file after one) end the archive.
#include "data/formats/tar.h"

#include <tarantella/base/error.h>

#include <algorithm>
#include <array>
#include <cstring>

namespace tnt::data::detail {
namespace {

constexpr std::uint64_t kBlock = 512;
using Block = std::array<char, kBlock>;

std::uint64_t padded(std::uint64_t size) { return (size + kBlock - 1) / kBlock * kBlock; }

std::string field(const Block& b, std::size_t at, std::size_t len) {
  const char* begin = b.data() + at;
  return std::string(begin, std::find(begin, begin + len, '\0'));
}

// An octal field (spaces and NULs around it allowed) or a base-256 number.
bool parse_number(const Block& b, std::size_t at, std::size_t len, std::uint64_t& value) {
  const auto* p = reinterpret_cast<const unsigned char*>(b.data() + at);
  value = 0;
  if (p[0] & 0x80) {
    for (std::size_t i = 1; i < len; ++i) {
      if (value >> 55) return false;
      value = (value << 8) | p[i];
    }
    return (p[0] & 0x7F) == 0;
  }
  std::size_t i = 0;
  while (i < len && p[i] == ' ') ++i;
  bool digits = false;
  for (; i < len && p[i] >= '0' && p[i] <= '7'; ++i, digits = true) {
    if (value >> 60) return false;
    value = value * 8 + (p[i] - '0');
  }
  for (; i < len; ++i) {
    if (p[i] != ' ' && p[i] != '\0') return false;
  }
  return digits;
}

bool checksum_ok(const Block& b) {
  std::uint64_t stored = 0;
  if (!parse_number(b, 148, 8, stored)) return false;
  std::int64_t sum_unsigned = 0, sum_signed = 0;
  for (std::size_t i = 0; i < kBlock; ++i) {
    const bool in_field = i >= 148 && i < 156;
    sum_unsigned += in_field ? ' ' : static_cast<unsigned char>(b[i]);
    sum_signed += in_field ? ' ' : static_cast<signed char>(b[i]);
  }
  return static_cast<std::int64_t>(stored) == sum_unsigned ||
         static_cast<std::int64_t>(stored) == sum_signed;
}

bool is_zero(const Block& b) {
  return std::all_of(b.begin(), b.end(), [](char c) { return c == 0; });
}

// The walk over one archive: position, pending long name / pax values.
class TarWalker {
 public:
  TarWalker(std::istream& in, std::uint64_t total, const std::string& name)
      : in_(in), total_(total), name_(name) {}

  std::vector<TarMember> walk() {
    Block b;
    while (pos_ + kBlock <= total_) {
      read_at(pos_, b.data(), kBlock, "header");
      if (is_zero(b)) return members_;
      entry(b);
    }
    TNT_CHECK(pos_ == total_, "tar file ", name_, " ends inside the header at byte ", pos_,
              ": the file is truncated; re-create or re-copy it");
    return members_;  // no end-of-archive blocks: tolerated, as GNU tar does
  }

 private:
  void entry(const Block& b) {
    const std::uint64_t header = pos_;
    std::uint64_t size = 0;
    TNT_CHECK(checksum_ok(b) && parse_number(b, 124, 12, size), "tar file ", name_,
              ": bad header at byte ", header,
              " (checksum or size field invalid): the file is damaged or not a tar archive; "
              "re-create it (e.g. with tnt-pack-shards)");
    if (pax_size_set_) size = pax_size_;
    const std::uint64_t data = header + kBlock;
    TNT_CHECK(size <= total_ && data + size <= total_, "tar file ", name_, ": member at byte ",
              header, " claims ", size, " bytes but the file has ", total_,
              ": the file is truncated; re-create or re-copy it");
    dispatch(b, data, size);
    pos_ = data + padded(size);
  }

  void dispatch(const Block& b, std::uint64_t data, std::uint64_t size) {
    const char type = b[156];
    if (type == 'L') {
      long_name_ = read_string(data, size, "GNU long name");
      long_name_ = long_name_.substr(0, long_name_.find('\0'));
    } else if (type == 'x') {
      parse_pax(read_string(data, size, "pax header"), data);
    } else if (type == '0' || type == '\0' || type == '7') {
      members_.push_back({member_name(b), data, size});
      clear_pending();
    } else if (type != 'g') {
      clear_pending();  // directories, links, devices: not samples
    }
  }

  std::string member_name(const Block& b) const {
    if (!pax_path_.empty()) return pax_path_;
    if (!long_name_.empty()) return long_name_;
    const std::string name = field(b, 0, 100);
    const bool ustar = field(b, 257, 5) == "ustar";
    const std::string prefix = ustar ? field(b, 345, 155) : "";
    return prefix.empty() ? name : prefix + "/" + name;
  }

  // Records "LEN key=value\n"; LEN counts the whole record.
  void parse_pax(const std::string& text, std::uint64_t at) {
    std::size_t i = 0;
    while (i < text.size()) {
      const std::size_t space = text.find(' ', i);
      std::size_t len = 0;
      const bool ok = space != std::string::npos && space > i && space - i < 20 &&
                      std::all_of(text.begin() + i, text.begin() + space, ::isdigit) &&
                      (len = std::stoull(text.substr(i, space - i))) > space - i &&
                      i + len <= text.size() && text[i + len - 1] == '\n';
      TNT_CHECK(ok, "tar file ", name_, ": damaged pax header at byte ", at,
                ": re-create the archive");
      pax_record(text.substr(space + 1, i + len - space - 2));
      i += len;
    }
  }

  void pax_record(const std::string& record) {
    const std::size_t eq = record.find('=');
    if (eq == std::string::npos) return;
    const std::string key = record.substr(0, eq), value = record.substr(eq + 1);
    if (key == "path") pax_path_ = value;
    if (key == "size" && !value.empty() && value.size() < 20 &&
        std::all_of(value.begin(), value.end(), ::isdigit)) {
      pax_size_ = std::stoull(value);
      pax_size_set_ = true;
    }
  }

  std::string read_string(std::uint64_t at, std::uint64_t size, const char* what) {
    TNT_CHECK(size <= (1u << 20), "tar file ", name_, ": ", what, " at byte ", at, " claims ", size,
              " bytes (more than 1 MiB): the archive is damaged; re-create it");
    std::string s(size, '\0');
    read_at(at, s.data(), size, what);
    return s;
  }

  void read_at(std::uint64_t at, char* dst, std::uint64_t n, const char* what) {
    in_.clear();
    in_.seekg(static_cast<std::streamoff>(at));
    in_.read(dst, static_cast<std::streamsize>(n));
    TNT_CHECK(in_.gcount() == static_cast<std::streamsize>(n), "tar file ", name_,
              ": cannot read the ", what, " at byte ", at,
              ": the file is truncated or unreadable; re-create or re-copy it");
  }

  void clear_pending() {
    long_name_.clear();
    pax_path_.clear();
    pax_size_set_ = false;
  }

  std::istream& in_;
  const std::uint64_t total_;
  const std::string& name_;
  std::uint64_t pos_ = 0;
  std::vector<TarMember> members_;
  std::string long_name_, pax_path_;
  std::uint64_t pax_size_ = 0;
  bool pax_size_set_ = false;
};

void put_octal(Block& b, std::size_t at, std::size_t len, std::uint64_t value) {
  std::string digits(len - 1, '0');
  for (std::size_t i = len - 1; i-- > 0; value >>= 3)
    digits[i] = static_cast<char>('0' + (value & 7));
  std::memcpy(b.data() + at, digits.data(), len - 1);
}

}  // namespace

std::vector<TarMember> list_tar(std::istream& in, std::uint64_t total, const std::string& name) {
  return TarWalker(in, total, name).walk();
}

void write_tar_member(std::ostream& out, const std::string& name, const std::string& bytes) {
  TNT_CHECK(!name.empty() && name.size() < 100, "tar member name '", name,
            "' must have 1 to 99 bytes: use a shorter key");
  Block b{};
  std::memcpy(b.data(), name.data(), name.size());
  put_octal(b, 100, 8, 0644);
  put_octal(b, 108, 8, 0);
  put_octal(b, 116, 8, 0);
  put_octal(b, 124, 12, bytes.size());
  put_octal(b, 136, 12, 0);
  b[156] = '0';
  std::memcpy(b.data() + 257,
              "ustar\0"
              "00",
              8);
  std::memset(b.data() + 148, ' ', 8);
  std::uint64_t sum = 0;
  for (char c : b) sum += static_cast<unsigned char>(c);
  put_octal(b, 148, 7, sum);
  b[155] = '\0';
  out.write(b.data(), kBlock);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  const Block zeros{};
  out.write(zeros.data(), static_cast<std::streamsize>(padded(bytes.size()) - bytes.size()));
}

void finish_tar(std::ostream& out) {
  const Block zeros{};
  out.write(zeros.data(), kBlock);
  out.write(zeros.data(), kBlock);
}

}  // namespace tnt::data::detail
