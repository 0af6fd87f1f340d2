#pragma once
// What NVRTC and ptxas say about a compile (compile_log.cpp). Used by the compiler; trim_log and
// parse_ptxas_info by its tools and tests too.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace kforge {

struct KernelResources;

// Keeps at most `limit` characters: the head and the tail of `log`, cut at line ends where
// possible, joined by "[... N characters cut ...]".
std::string trim_log(const std::string& log, size_t limit);

// Per-function resources from ptxas -v output (every function it reports, mangled names too).
std::vector<KernelResources> parse_ptxas_info(const std::string& log);

// The entry functions ptxas compiled, in the order it reports them, each once.
std::vector<std::string> ptxas_entries(const std::string& log);

// Bytes of the module-level constant banks of a cubin (".nv.constantN", N > 0: __constant__ data;
// ".nv.constant0.KERNEL" is the parameter bank of one kernel). 0 if the ELF is not understood.
int module_constant_bytes(const std::vector<uint8_t>& elf);

// Orders names by where they first appear in the source (as whole words).
void sort_by_source(std::vector<std::string>& names, const std::string& source);

// Removes NVRTC's PCH messages ("kernel.cu": creating/using precompiled header file "PATH") from
// the log, returning the files named (created ones flagged).
std::string strip_pch_messages(const std::string& log, std::vector<std::pair<std::string, bool>>* files);

}  // namespace kforge
