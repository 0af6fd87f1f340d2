// The extension kind's compile times (issue 28's goals), on the machine it runs on:
//
//   kforge_extension_build_bench [--candidate DIR] [--inline FILE] [--repeats N] [--jobs J] [--out FILE] [--inline-only]
//                                [--no-unsplit]
//
//   DIR (default datasets/samples/extension_candidates/linear_relu/cuda_agent): a CUDA-Agent-format
//   candidate, its kernels/*.cu and kernels/*_binding.cpp. FILE (default .../load_inline/model_new.py):
//   a load_inline candidate whose r"""...""" CUDA source and one-line C++ source are read by pattern
//   (the glue reader does this properly; the bench needs only the sources).
//   Figures, each the median of N builds in one warm builder (its precompiled torch header made
//   first, as a worker does at start): `cuda_agent_cold_ms` (every file new: a comment salted per
//   build), `cuda_agent_one_cu_changed_ms` (only the .cu differs from the build before; its device half by
//   NVRTC where it may: env/extension/nvrtc_cubin.h), `cuda_agent_one_cu_changed_nvcc_only_ms` (the same, side by side,
//   by a second builder on the same cache without NVRTC: nvcc -cubin), `cuda_agent_one_cu_changed_beyond_device_ms`
//   (that build less its device compiler's own time: what the build adds to the compiler),
//   `cuda_agent_cached_ms` (the same files again), `load_inline_cold_ms` (cuda.cu split into a torch-free
//   .cu and a host .cpp: env/extension/cuda_split.h) and `load_inline_unsplit_cold_ms` (cuda.cu as it
//   is, nvcc over torch's headers: the build before the split, and the split's fallback); per step
//   (nvcc, g++, link) medians, and `pch_ms`. --inline-only leaves the CUDA-Agent series out (its first
//   build still makes the precompiled header); --no-unsplit the unsplit load_inline series. Writes a results record (tools/bench/results_doc.py's shape).
#include <unistd.h>
#include <algorithm>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <regex>

#include "configs/error.h"
#include "configs/file_reader.h"
#include "configs/remove_tree.h"
#include "env/extension/extension_build.h"
#include "tools/bench/bench_result.h"

using namespace kforge;
using kforge::bench::arg_value;
using kforge::bench::median;
namespace fs = std::filesystem;
using Json = nlohmann::json;

namespace {

ExtensionBuildRequest read_cuda_agent(const std::string& dir) {
  ExtensionBuildRequest r;
  for (const auto& e : fs::directory_iterator(fs::path(dir) / "kernels"))
    if (e.is_regular_file()) r.files.push_back({"kernels/" + e.path().filename().string(), read_file(e.path().string(), "candidate file")});
  std::sort(r.files.begin(), r.files.end(), [](const auto& a, const auto& b) { return a.path < b.path; });
  KFORGE_CHECK(!r.files.empty(), io, dir << "/kernels holds no files");
  return r;
}

ExtensionBuildRequest read_load_inline(const std::string& file, bool split) {
  const std::string py = read_file(file, "model_new.py");
  std::smatch cpp, name, fns;
  // (std::regex recurses per character: the long CUDA source is cut out by hand.)
  const std::string marker = "cuda_source = r\"\"\"";
  const size_t open = py.find(marker);
  const size_t close = open == std::string::npos ? open : py.find("\"\"\"", open + marker.size());
  KFORGE_CHECK(close != std::string::npos, spec, file << ": no cuda_source = r\"\"\"...\"\"\"");
  const std::string cu = py.substr(open + marker.size(), close - open - marker.size());
  KFORGE_CHECK(std::regex_search(py, cpp, std::regex(R"re(cpp_source\s*=\s*"([^"]*)")re")), spec, file << ": no cpp_source = \"...\"");
  KFORGE_CHECK(std::regex_search(py, name, std::regex(R"re(name\s*=\s*"([A-Za-z_][A-Za-z0-9_]*)")re")), spec, file << ": no name=\"...\"");
  KFORGE_CHECK(std::regex_search(py, fns, std::regex(R"re(functions\s*=\s*\["([A-Za-z_][A-Za-z0-9_]*)"\])re")), spec,
               file << ": no functions=[\"...\"]");
  return load_inline_request(name[1], cpp[1], cu, {fns[1]}, split);
}

// A copy whose every (or only the .cu) file carries a new macro: nothing of it is cached. (A macro, not
// a comment: the load_inline split drops comments between declarations, so a comment would leave its
// halves as they were, cached.)
ExtensionBuildRequest salted(ExtensionBuildRequest r, const std::string& salt, bool only_cu) {
  static int n = 0;
  const std::string line = "\n#define KFORGE_BENCH_SALT_" + std::to_string(n++) + " \"" + salt + "\"\n";
  for (auto& f : r.files)
    if (!only_cu || (f.path.size() > 3 && f.path.substr(f.path.size() - 3) == ".cu")) f.text += line;
  return r;
}

struct Series {
  std::vector<double> total;
  // Per build: its total less the device compiler's own steps (nvrtc, nvcc): what the build adds to
  // the compiler (issue 28's one-.cu goal, restated as that overhead: session 31's note).
  std::vector<double> beyond_device;
  std::map<std::string, std::vector<double>> by_tool;  // uncached steps only, by tool as a figure name's part (g++: gxx)
  std::map<std::string, std::vector<double>> by_step;  // the same, by file ("cuda_device_cu", "link")
  void add(const ExtensionBuildResult& b, const std::string& what) {
    KFORGE_CHECK(b.ok, runtime, what << " failed (" << b.error_kind << "):\n" << b.log);
    total.push_back(b.total_ms);
    double device = 0;
    for (const auto& s : b.steps)
      if (!s.cached && (s.tool == "nvrtc" || s.tool == "nvcc")) device += s.ms;
    beyond_device.push_back(b.total_ms - device);
    for (const auto& s : b.steps)
      if (!s.cached && s.what != "pch") {
        by_tool[s.what == "link" ? "link" : std::regex_replace(s.tool, std::regex("\\+"), "x")].push_back(s.ms);
        by_step[std::regex_replace(s.what, std::regex("[^A-Za-z0-9]"), "_")].push_back(s.ms);
      }
  }
};

// PREFIX + KEY + "_ms_p50": the median of each list in `by`.
void put_medians(Json& fig, const std::string& prefix, const std::map<std::string, std::vector<double>>& by) {
  for (const auto& [key, v] : by) fig[prefix + key + "_ms_p50"] = median(v);
}

std::string utc_now() {
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const std::string root = KFORGE_SOURCE_DIR;
    const std::string dir = arg_value(argc, argv, "--candidate", root + "/datasets/samples/extension_candidates/linear_relu/cuda_agent");
    const std::string inl =
        arg_value(argc, argv, "--inline", root + "/datasets/samples/extension_candidates/linear_relu/load_inline/model_new.py");
    const int repeats = std::stoi(arg_value(argc, argv, "--repeats", "5"));
    ExtensionToolchain tc = ExtensionToolchain::from_build();
    tc.jobs = std::stoi(arg_value(argc, argv, "--jobs", std::to_string(tc.jobs)));
    const std::string cache = (fs::temp_directory_path() / ("kforge-extbench-" + std::to_string(getpid()))).string();
    ExtensionBuilder builder(tc, cache);
    // The same toolchain without NVRTC (nvcc -cubin for every device half), on the same cache: the
    // host objects it finds are the first builder's, its device halves its own (nvrtc_cubin.h).
    ExtensionToolchain tc_nvcc = tc;
    tc_nvcc.nvrtc_cubin.clear();
    ExtensionBuilder builder_nvcc(tc_nvcc, cache);
    const bool inline_only = std::find(argv + 1, argv + argc, std::string("--inline-only")) != argv + argc;
    const bool no_unsplit = std::find(argv + 1, argv + argc, std::string("--no-unsplit")) != argv + argc;
    const ExtensionBuildRequest agent = read_cuda_agent(dir), inline_req = read_load_inline(inl, true),
                                inline_unsplit = read_load_inline(inl, false);

    ExtensionBuildResult first = builder.build(salted(agent, "warm", false));  // makes the precompiled header
    KFORGE_CHECK(first.ok, runtime, "the first build failed:\n" << first.log);
    double pch_ms = 0;
    for (const auto& s : first.steps)
      if (s.what == "pch") pch_ms = s.ms;
    Series cold, one_cu, one_cu_nvcc, cached, inline_cold, inline_unsplit_cold;
    std::string split_note;
    for (int i = 0; i < repeats; ++i) {
      const std::string salt = "build " + std::to_string(i) + " of " + std::to_string(getpid());
      if (!inline_only) {
        ExtensionBuildRequest c = salted(agent, salt, false);
        cold.add(builder.build(c), "cold");
        cached.add(builder.build(c), "cached");
        one_cu_nvcc.add(builder_nvcc.build(salted(c, "changed with nvcc", true)), "one .cu changed, nvcc");
        one_cu.add(builder.build(salted(c, "changed", true)), "one .cu changed");
      }
      const ExtensionBuildResult split = builder.build(salted(inline_req, salt, false));
      split_note = split.split;
      inline_cold.add(split, "load_inline cold");
      if (!no_unsplit) inline_unsplit_cold.add(builder.build(salted(inline_unsplit, salt, false)), "load_inline unsplit cold");
      std::fprintf(stderr,
                   "build %d: cold %.0f ms, one .cu changed %.0f ms (nvcc only %.0f ms), cached %.1f ms, load_inline cold %.0f ms "
                   "(unsplit %.0f ms)\n",
                   i, cold.total.empty() ? 0.0 : cold.total.back(), one_cu.total.empty() ? 0.0 : one_cu.total.back(),
                   one_cu_nvcc.total.empty() ? 0.0 : one_cu_nvcc.total.back(), cached.total.empty() ? 0.0 : cached.total.back(),
                   inline_cold.total.back(), inline_unsplit_cold.total.empty() ? 0.0 : inline_unsplit_cold.total.back());
    }
    Json fig = {{"pch_ms", pch_ms},
                {"cuda_agent_cold_ms_p50", median(cold.total)},
                {"cuda_agent_one_cu_changed_ms_p50", median(one_cu.total)},
                {"cuda_agent_one_cu_changed_nvcc_only_ms_p50", median(one_cu_nvcc.total)},
                {"cuda_agent_one_cu_changed_beyond_device_ms_p50", median(one_cu.beyond_device)},
                {"cuda_agent_cached_ms_p50", median(cached.total)},
                {"load_inline_cold_ms_p50", median(inline_cold.total)},
                {"load_inline_unsplit_cold_ms_p50", median(inline_unsplit_cold.total)},
                {"cuda_agent_files_count", agent.files.size()},
                {"jobs_count", tc.jobs},
                {"repeats_count", repeats}};
    put_medians(fig, "cuda_agent_cold_", cold.by_tool);
    put_medians(fig, "cuda_agent_one_cu_changed_", one_cu.by_tool);  // the changed .cu's device compile, its host half, the link
    put_medians(fig, "cuda_agent_one_cu_changed_nvcc_only_", one_cu_nvcc.by_tool);
    put_medians(fig, "load_inline_cold_", inline_cold.by_tool);
    put_medians(fig, "load_inline_cold_step_", inline_cold.by_step);
    put_medians(fig, "load_inline_unsplit_cold_", inline_unsplit_cold.by_tool);
    put_medians(fig, "load_inline_unsplit_cold_step_", inline_unsplit_cold.by_step);
    std::cout << fig.dump(2) << "\n";
    const Json doc = {
        {"gpu", std::getenv("KFORGE_GPU") ? std::getenv("KFORGE_GPU") : "none (compile only)"},
        {"driver", ""},
        {"cuda", "13.0"},
        {"torch", "2.11.0"},
        {"date", utc_now()},
        {"commit", std::getenv("KFORGE_COMMIT") ? std::getenv("KFORGE_COMMIT") : "unknown"},
        {"command", "kforge_extension_build_bench --repeats " + std::to_string(repeats) + " --jobs " + std::to_string(tc.jobs) +
                        (inline_only ? " --inline-only" : "") + (no_unsplit ? " --no-unsplit" : "")},
        {"figures", fig},
        {"details", {{"load_inline_split", split_note}}}};  // figures are numbers only (tools/bench/results_doc.py)
    std::ofstream(arg_value(argc, argv, "--out", "extension_build.json")) << doc.dump(2) << "\n";
    remove_tree(cache);
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "kforge_extension_build_bench: " << e.what() << "\n";
    return 1;
  }
}
