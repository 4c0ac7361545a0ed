// Function names from an ELF file's .symtab (see elf_symbols.h).
#include "base/elf_symbols.h"

#include <elf.h>

#include <fstream>
#include <limits>
#include <vector>

namespace tnt::detail {
namespace {

template <typename T>
bool read_at(std::ifstream& in, std::uint64_t position, T* out, std::size_t count = 1) {
  in.seekg(static_cast<std::streamoff>(position));
  in.read(reinterpret_cast<char*>(out), static_cast<std::streamsize>(sizeof(T) * count));
  return static_cast<bool>(in);
}

// Where the module's first loaded segment starts: backtrace_symbols' offsets
// count from there (0 for a position-independent program or library).
std::uint64_t load_base(std::ifstream& in, const Elf64_Ehdr& header) {
  std::uint64_t base = std::numeric_limits<std::uint64_t>::max();
  for (int i = 0; i < header.e_phnum; ++i) {
    Elf64_Phdr segment{};
    if (!read_at(in, header.e_phoff + static_cast<std::uint64_t>(i) * header.e_phentsize,
                 &segment)) {
      return 0;
    }
    if (segment.p_type != PT_LOAD) continue;
    const std::uint64_t align = segment.p_align > 0 ? segment.p_align : 1;
    base = std::min(base, segment.p_vaddr & ~(align - 1));
  }
  return base == std::numeric_limits<std::uint64_t>::max() ? 0 : base;
}

}  // namespace

std::optional<ElfSymbol> elf_symbol_at(const std::string& path, std::uint64_t offset) {
  std::ifstream in(path, std::ios::binary);
  Elf64_Ehdr header{};
  if (!in || !read_at(in, 0, &header) ||
      std::string(reinterpret_cast<char*>(header.e_ident), 4) != std::string(ELFMAG, SELFMAG) ||
      header.e_ident[EI_CLASS] != ELFCLASS64 || header.e_shentsize != sizeof(Elf64_Shdr)) {
    return std::nullopt;
  }
  const std::uint64_t address = offset + load_base(in, header);
  std::vector<Elf64_Shdr> sections(header.e_shnum);
  if (sections.empty() || !read_at(in, header.e_shoff, sections.data(), sections.size())) {
    return std::nullopt;
  }
  for (const Elf64_Shdr& table : sections) {
    if (table.sh_type != SHT_SYMTAB || table.sh_link >= sections.size()) continue;
    std::vector<Elf64_Sym> symbols(table.sh_size / sizeof(Elf64_Sym));
    if (!read_at(in, table.sh_offset, symbols.data(), symbols.size())) return std::nullopt;
    for (const Elf64_Sym& s : symbols) {
      if (ELF64_ST_TYPE(s.st_info) != STT_FUNC || s.st_value > address ||
          address >= s.st_value + std::max<std::uint64_t>(s.st_size, 1)) {
        continue;
      }
      const Elf64_Shdr& names = sections[table.sh_link];
      if (s.st_name >= names.sh_size) return std::nullopt;
      std::string name;
      in.seekg(static_cast<std::streamoff>(names.sh_offset + s.st_name));
      std::getline(in, name, '\0');
      return ElfSymbol{name, address - s.st_value};
    }
  }
  return std::nullopt;
}

}  // namespace tnt::detail
