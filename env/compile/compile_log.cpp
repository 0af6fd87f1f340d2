// What NVRTC and ptxas say about a compile: the log trimmed for the policy, the per-kernel
// resources from ptxas -v, the module's constant bytes from the cubin, NVRTC's PCH messages.
#include "env/compile/compile_log.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <regex>
#include <sstream>

#include "env/compile/nvrtc_compiler.h"

namespace kforge {

std::string trim_log(const std::string& log, size_t limit) {
  limit = std::max<size_t>(limit, 96);
  if (log.size() <= limit) return log;
  const size_t avail = limit - 48;  // room for the marker
  const size_t head_len = avail * 2 / 3;
  const size_t tail_len = avail - head_len;
  size_t head_end = head_len;
  size_t nl = log.rfind('\n', head_len - 1);
  if (nl != std::string::npos && nl + 1 >= head_len / 2) head_end = nl + 1;
  size_t tail_begin = log.size() - tail_len;
  size_t nl2 = log.find('\n', tail_begin > 0 ? tail_begin - 1 : 0);
  if (nl2 != std::string::npos && nl2 + 1 <= tail_begin + tail_len / 2) tail_begin = nl2 + 1;
  std::ostringstream os;
  os << log.substr(0, head_end);
  if (head_end > 0 && log[head_end - 1] != '\n') os << '\n';
  os << "[... " << (tail_begin - head_end) << " characters cut ...]\n";
  os << log.substr(tail_begin);
  return os.str();
}

std::vector<KernelResources> parse_ptxas_info(const std::string& log) {
  static const std::regex entry_re(R"(Compiling entry function '([^']+)')");
  static const std::regex props_re(R"(Function properties for (\S+))");
  static const std::regex frame_re(R"((\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads)");
  static const std::regex regs_re(R"(Used (\d+) registers)");
  static const std::regex smem_re(R"((\d+) bytes smem)");
  static const std::regex cmem_re(R"((\d+) bytes cmem\[(\d+)\])");
  std::vector<KernelResources> out;
  auto find = [&](const std::string& name) -> KernelResources& {
    for (auto& k : out)
      if (k.name == name) return k;
    out.push_back(KernelResources{});
    out.back().name = name;
    return out.back();
  };
  KernelResources* cur = nullptr;
  std::istringstream in(log);
  std::string line;
  std::smatch m;
  while (std::getline(in, line)) {
    if (line.rfind("ptxas", 0) != 0) continue;
    if (std::regex_search(line, m, entry_re)) {
      cur = &find(m[1]);
    } else if (std::regex_search(line, m, props_re)) {
      cur = &find(m[1]);
    } else if (cur && std::regex_search(line, m, frame_re)) {
      cur->local_bytes = std::stoi(m[1]);
      cur->spill_store_bytes = std::stoi(m[2]);
      cur->spill_load_bytes = std::stoi(m[3]);
    } else if (cur && std::regex_search(line, m, regs_re)) {
      cur->registers = std::stoi(m[1]);
      if (std::regex_search(line, m, smem_re)) cur->static_shared_bytes = std::stoi(m[1]);
      for (auto it = std::sregex_iterator(line.begin(), line.end(), cmem_re); it != std::sregex_iterator(); ++it)
        if ((*it)[2] != "0") cur->const_bytes += std::stoi((*it)[1]);
    }
  }
  return out;
}

// The extern "C" and mangled entry functions ptxas compiled, in the order it reports them.
std::vector<std::string> ptxas_entries(const std::string& log) {
  static const std::regex entry_re(R"(Compiling entry function '([^']+)')");
  std::vector<std::string> names;
  for (auto it = std::sregex_iterator(log.begin(), log.end(), entry_re); it != std::sregex_iterator(); ++it) {
    std::string n = (*it)[1];
    if (std::find(names.begin(), names.end(), n) == names.end()) names.push_back(n);
  }
  return names;
}

// Bytes of the module-level constant banks of a cubin (".nv.constantN", N > 0: __constant__ data;
// ".nv.constant0.KERNEL" is the parameter bank of one kernel). 0 if the ELF is not understood.
int module_constant_bytes(const std::vector<uint8_t>& elf) {
  auto rd = [&](size_t off, size_t n) -> uint64_t {
    uint64_t v = 0;
    for (size_t i = 0; i < n; ++i) v |= uint64_t(elf[off + i]) << (8 * i);
    return v;
  };
  if (elf.size() < 64 ||
      std::memcmp(elf.data(),
                  "\x7f"
                  "ELF",
                  4) != 0 ||
      elf[4] != 2 || elf[5] != 1)
    return 0;
  uint64_t shoff = rd(0x28, 8);
  uint64_t shentsize = rd(0x3a, 2), shnum = rd(0x3c, 2), shstrndx = rd(0x3e, 2);
  if (shentsize < 64 || shstrndx >= shnum || shoff + shnum * shentsize > elf.size()) return 0;
  uint64_t str_off = rd(shoff + shstrndx * shentsize + 0x18, 8);
  uint64_t str_size = rd(shoff + shstrndx * shentsize + 0x20, 8);
  if (str_off + str_size > elf.size()) return 0;
  uint64_t total = 0;
  for (uint64_t i = 0; i < shnum; ++i) {
    size_t sh = shoff + i * shentsize;
    uint64_t name = rd(sh, 4);
    if (name >= str_size) continue;
    const char* s = reinterpret_cast<const char*>(elf.data() + str_off + name);
    size_t max_len = str_size - name;
    std::string n(s, strnlen(s, max_len));
    const std::string prefix = ".nv.constant";
    if (n.rfind(prefix, 0) != 0) continue;
    std::string bank = n.substr(prefix.size());
    if (bank.empty() || bank == "0" || !std::all_of(bank.begin(), bank.end(), ::isdigit)) continue;
    total += rd(sh + 0x20, 8);
  }
  return static_cast<int>(std::min<uint64_t>(total, 1u << 30));
}

// Orders names by where they first appear in the source (as whole words).
void sort_by_source(std::vector<std::string>& names, const std::string& source) {
  auto pos = [&](const std::string& n) {
    size_t p = 0;
    while ((p = source.find(n, p)) != std::string::npos) {
      bool left = p == 0 || !(std::isalnum(static_cast<unsigned char>(source[p - 1])) || source[p - 1] == '_');
      size_t e = p + n.size();
      bool right = e >= source.size() || !(std::isalnum(static_cast<unsigned char>(source[e])) || source[e] == '_');
      if (left && right) return p;
      p = e;
    }
    return std::string::npos;
  };
  std::stable_sort(names.begin(), names.end(), [&](const std::string& a, const std::string& b) {
    size_t pa = pos(a), pb = pos(b);
    return pa != pb ? pa < pb : a < b;
  });
}

namespace {
const char* kPchLineMarker = "precompiled header file \"";
}  // namespace

// Removes NVRTC's PCH messages ("kernel.cu": creating/using precompiled header file "PATH") from
// the log, returning the files named (created ones flagged).
std::string strip_pch_messages(const std::string& log, std::vector<std::pair<std::string, bool>>* files) {
  std::string out;
  std::istringstream in(log);
  std::string line;
  bool first = true;
  while (std::getline(in, line)) {
    size_t m = line.find(kPchLineMarker);
    if (line.rfind("\"kernel.cu\": ", 0) == 0 && m != std::string::npos) {
      size_t b = m + std::strlen(kPchLineMarker);
      size_t e = line.find('"', b);
      if (e != std::string::npos) files->push_back({line.substr(b, e - b), line.find("creating") != std::string::npos});
      continue;
    }
    if (!first) out.push_back('\n');
    out += line;
    first = false;
  }
  if (!log.empty() && log.back() == '\n' && !out.empty()) out.push_back('\n');
  return out;
}

}  // namespace kforge
