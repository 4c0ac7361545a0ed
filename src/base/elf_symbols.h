// Private: the name of the function at an offset into an ELF file, from its
// full symbol table (.symtab), outside any signal handler.
//
// backtrace_symbols() names a frame only from the dynamic symbol table, which
// holds a program's own functions only when it was linked with -rdynamic.
// A Release build that was not stripped still has .symtab, which names every
// function, static ones included; this reads it the way addr2line would,
// without debug information (so no file and line) and without running a
// tool.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace tnt::detail {

/// The symbol (mangled) of the function that contains `offset`, an offset
/// from the module's load address as backtrace_symbols prints it
/// ("prog(+0x2360)"), and the offset into that function. nullopt when the
/// file cannot be read, is not a 64-bit ELF file, has no .symtab (stripped)
/// or no function there.
struct ElfSymbol {
  std::string name;
  std::uint64_t offset = 0;
};
std::optional<ElfSymbol> elf_symbol_at(const std::string& path, std::uint64_t offset);

}  // namespace tnt::detail
