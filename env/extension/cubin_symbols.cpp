// A cubin's kernels from its ELF symbol table (cubin_symbols.h).
#include "env/extension/cubin_symbols.h"

#include <elf.h>

#include <cstring>

#include "configs/error.h"

namespace kforge {

namespace {

constexpr unsigned char kCudaEntry = 0x10;  // st_other of a kernel's symbol in a cubin

template <class T>
T read_at(const std::string& image, uint64_t offset, const char* what) {
  KFORGE_CHECK(offset <= image.size() && image.size() - offset >= sizeof(T), runtime,
               "the cubin's " << what << " lies outside it (offset " << offset << " of " << image.size() << " bytes)");
  T v;
  std::memcpy(&v, image.data() + offset, sizeof(T));
  return v;
}

}  // namespace

std::vector<CubinEntry> cubin_entries(const std::string& image) {
  const auto eh = read_at<Elf64_Ehdr>(image, 0, "ELF header");
  KFORGE_CHECK(std::memcmp(eh.e_ident, ELFMAG, SELFMAG) == 0 && eh.e_ident[EI_CLASS] == ELFCLASS64, runtime,
               "the cubin is not a 64-bit ELF file");
  KFORGE_CHECK(eh.e_shentsize == sizeof(Elf64_Shdr), runtime, "the cubin's section headers are not ELF64's");
  std::vector<CubinEntry> out;
  for (uint64_t i = 0; i < eh.e_shnum; ++i) {
    const auto sh = read_at<Elf64_Shdr>(image, eh.e_shoff + i * sizeof(Elf64_Shdr), "section header");
    if (sh.sh_type != SHT_SYMTAB) continue;
    KFORGE_CHECK(sh.sh_link < eh.e_shnum, runtime, "the cubin's symbol table names no string table");
    const auto strtab = read_at<Elf64_Shdr>(image, eh.e_shoff + uint64_t{sh.sh_link} * sizeof(Elf64_Shdr), "string table header");
    KFORGE_CHECK(strtab.sh_offset <= image.size() && image.size() - strtab.sh_offset >= strtab.sh_size, runtime,
                 "the cubin's string table lies outside it");
    for (uint64_t s = 0; s + sizeof(Elf64_Sym) <= sh.sh_size; s += sizeof(Elf64_Sym)) {
      const auto sym = read_at<Elf64_Sym>(image, sh.sh_offset + s, "symbol");
      if (ELF64_ST_TYPE(sym.st_info) != STT_FUNC || (sym.st_other & kCudaEntry) == 0) continue;
      KFORGE_CHECK(sym.st_name < strtab.sh_size, runtime, "a cubin symbol's name lies outside its string table");
      const char* begin = image.data() + strtab.sh_offset + sym.st_name;
      const size_t len = strnlen(begin, strtab.sh_size - sym.st_name);
      KFORGE_CHECK(len < strtab.sh_size - sym.st_name, runtime, "a cubin symbol's name does not end");
      out.push_back({std::string(begin, len), ELF64_ST_BIND(sym.st_info) == STB_LOCAL});
    }
  }
  return out;
}

std::string kernel_symbol(const std::vector<CubinEntry>& entries, const std::string& name, std::string* why) {
  const std::string mangled = "_Z" + std::to_string(name.size()) + name;
  std::vector<std::string> found;
  for (const auto& e : entries)
    if (e.symbol == name || e.symbol.rfind(mangled, 0) == 0) found.push_back(e.symbol);
  if (found.size() == 1) return found[0];
  if (why) {
    *why = found.empty() ? "kernel '" + name + "' is not an entry of its cubin"
                         : "kernel '" + name + "' matches " + std::to_string(found.size()) + " entries of its cubin";
  }
  return "";
}

}  // namespace kforge
