// NVRTC compile time of kernel candidates in one warm process (env/compile/nvrtc_compiler.h).
//
//   kforge_compile_bench [--out FILE.json] [--arch sm_90a] [--rounds N] [--no-pch] [--no-prelude]
//                        [--no-warm-up] [--commit SHA] [FILE.cu ...]
//
// Sources: the files given, or by default every datasets/samples/candidates/*/*/kernel.cu meant to
// compile (expect.yaml verdict not compile_error or timeout) and tools/bench/compile_sources/*.cu
// (never_ends.cu excepted). Each compile of a source is made
// "never compiled before" by a unique trailing comment and __device__ variable, so neither the
// result cache nor anything inside NVRTC can serve it; the same unique sources are then compiled
// again to time cache hits. The process is warmed first (warm_up(): NVRTC loaded, the CUB prelude's
// precompiled header made), which is how a compile worker runs. Prints the figures and writes the
// JSON record of tools/bench/results/ when --out is given.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "configs/file_reader.h"
#include "env/compile/include_guard.h"
#include "env/compile/nvrtc_compiler.h"

namespace fs = std::filesystem;
using kforge::CompileOptions;
using kforge::CompileResult;
using kforge::read_file;
using kforge::try_read_file;

namespace {

std::string run_command(const std::string& cmd) {
  std::string out;
  FILE* f = popen(cmd.c_str(), "r");
  if (!f) return out;
  char buf[512];
  while (fgets(buf, sizeof buf, f)) out += buf;
  pclose(f);
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return out;
}

double quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  double pos = q * (v.size() - 1);
  size_t i = static_cast<size_t>(pos);
  double frac = pos - i;
  return i + 1 < v.size() ? v[i] * (1 - frac) + v[i + 1] * frac : v[i];
}

bool includes_cub(const std::string& src) {
  for (const auto& inc : kforge::scan_kernel_source(src).includes)
    if (inc.header.rfind("cub/", 0) == 0) return true;
  return false;
}

// A shipped candidate meant to compile: its expect.yaml verdict is neither compile_error nor
// timeout (one of those never finishes compiling).
bool compiles(const fs::path& dir) {
  std::istringstream in(try_read_file((dir / "expect.yaml").string()).value_or(""));
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("verdict:", 0) == 0) return line.find("compile_error") == std::string::npos && line.find("timeout") == std::string::npos;
  return true;
}

std::vector<fs::path> default_sources(const fs::path& root) {
  std::vector<fs::path> files;
  std::error_code ec;
  fs::path cands = root / "datasets" / "samples" / "candidates";
  if (fs::is_directory(cands, ec))
    for (const auto& e : fs::recursive_directory_iterator(cands, ec))
      if (e.is_regular_file() && e.path().filename() == "kernel.cu" && compiles(e.path().parent_path())) files.push_back(e.path());
  fs::path own = root / "tools" / "bench" / "compile_sources";
  if (fs::is_directory(own, ec))
    for (const auto& e : fs::directory_iterator(own, ec))
      if (e.is_regular_file() && e.path().extension() == ".cu" && e.path().filename() != "never_ends.cu") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  return files;
}

// The figures as a results record (tools/bench/results_doc.py's shape).
struct CompileFigures {
  std::vector<double> cold, cold_cub, cold_plain, cached;
  double warm_ms = 0;
  size_t sources = 0;
  int cub_count = 0, failures = 0, pch_created = 0;
};

void write_record(const std::string& out_path, const std::string& command, std::string commit, const fs::path& root,
                  const kforge::NvrtcCompiler& compiler, const CompileFigures& f) {
  std::string gpu = run_command("nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1");
  std::string driver = run_command("nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -1");
  if (commit.empty()) commit = run_command("git -C '" + root.string() + "' rev-parse HEAD 2>/dev/null");
  if (commit.size() < 7 || commit.size() > 40 || commit.find_first_not_of("0123456789abcdef") != std::string::npos) commit.clear();
  std::time_t now = std::time(nullptr);
  char date[32];
  std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  nlohmann::json j;
  j["gpu"] = gpu.empty() ? "none (CPU)" : gpu;
  j["driver"] = driver.empty() ? "none" : driver;
  j["cuda"] = compiler.nvrtc_version();
  j["torch"] = "none (not used)";
  j["date"] = date;
  j["commit"] = commit.empty() ? "unknown" : commit;
  j["command"] = command;
  j["figures"] = {
      {"nvrtc_compile_ms_p50_cold", quantile(f.cold, 0.5)},
      {"nvrtc_compile_ms_p95_cold", quantile(f.cold, 0.95)},
      {"nvrtc_compile_ms_p50_cold_cub", quantile(f.cold_cub, 0.5)},
      {"nvrtc_compile_ms_p95_cold_cub", quantile(f.cold_cub, 0.95)},
      {"nvrtc_compile_ms_p50_cold_no_cub", quantile(f.cold_plain, 0.5)},
      {"nvrtc_compile_ms_p95_cold_no_cub", quantile(f.cold_plain, 0.95)},
      {"nvrtc_compile_ms_p50_cached", quantile(f.cached, 0.5)},
      {"nvrtc_compile_ms_p95_cached", quantile(f.cached, 0.95)},
      {"nvrtc_warm_up_ms", f.warm_ms},
      {"sources_count", f.sources},
      {"sources_cub_count", f.cub_count},
      {"compiles_cold_count", f.cold.size()},
      {"compile_failures_count", f.failures},
      {"pch_created_count", f.pch_created},
  };
  std::ofstream out(out_path);
  out << j.dump(2) << "\n";
  std::cout << "wrote " << out_path << "\n";
}

// The command line.
struct BenchArgs {
  std::string out_path, arch = "sm_90a", commit, command;
  int rounds = 3;
  bool warm = true;
  kforge::CompilerConfig config;
  std::vector<fs::path> files;
};

// Fills `args` from the command line; a non-negative result is main's exit status (help, or a
// usage error), -1 goes on.
int parse_args(int argc, char** argv, BenchArgs& args) {
  for (int i = 0; i < argc; ++i) args.command += (i ? " " : "") + std::string(argv[i]);
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::cerr << "compile_bench: " << a << " needs a value\n";
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--out")
      args.out_path = value();
    else if (a == "--arch")
      args.arch = value();
    else if (a == "--commit")
      args.commit = value();
    else if (a == "--rounds")
      args.rounds = std::max(1, std::stoi(value()));
    else if (a == "--no-pch")
      args.config.use_pch = false;
    else if (a == "--no-prelude")
      args.config.cccl_prelude = false;
    else if (a == "--no-warm-up")
      args.warm = false;
    else if (a == "-h" || a == "--help") {
      std::cout << "usage: kforge_compile_bench [--out FILE.json] [--arch sm_90a] [--rounds N] [--no-pch] "
                   "[--no-prelude] [--no-warm-up] [--commit SHA] [FILE.cu ...]\n";
      return 0;
    } else if (!a.empty() && a[0] == '-') {
      std::cerr << "compile_bench: unknown option " << a << "\n";
      return 2;
    } else {
      args.files.emplace_back(a);
    }
  }
  return -1;
}

struct Source {
  std::string name, text;
  bool cub = false;
};

std::vector<Source> load_sources(const std::vector<fs::path>& files, const fs::path& root) {
  std::vector<Source> sources;
  for (const fs::path& f : files) {
    Source s;
    s.name = fs::relative(f, root).string();
    if (s.name.empty() || s.name.rfind("..", 0) == 0) s.name = f.string();
    s.text = read_file(f.string(), "the source");
    s.cub = includes_cub(s.text);
    sources.push_back(s);
  }
  return sources;
}

// What the rounds measured: the record's figures, and per source its compile times and the PCH
// each round found.
struct Measured {
  CompileFigures figures;
  std::map<std::string, std::vector<double>> per_source;
  std::map<std::string, std::string> pch_of;
  int pch_used = 0;
};

// `rounds` cold compiles of every source, each made unique, then the same unique texts again as
// cache hits.
Measured measure(kforge::NvrtcCompiler& compiler, const CompileOptions& options, const std::vector<Source>& sources, int rounds) {
  Measured m;
  CompileFigures& f = m.figures;
  std::vector<std::string> uniques;
  std::vector<size_t> owner;
  for (int r = 0; r < rounds; ++r) {
    for (size_t i = 0; i < sources.size(); ++i) {
      std::ostringstream tag;
      tag << "\n// kforge compile_bench: round " << r << " source " << i << " pid " << getpid() << "\n"
          << "__device__ int kforge_compile_bench_unique_" << r << "_" << i << "_" << getpid() << ";\n";
      std::string text = sources[i].text + tag.str();
      CompileResult c = compiler.compile(text, options);
      if (c.cache_hit) std::cerr << "compile_bench: unexpected cache hit for " << sources[i].name << "\n";
      if (!c.ok) {
        ++f.failures;
        std::cerr << "compile_bench: " << sources[i].name << " failed:\n" << kforge::trim_log(c.log, 1500) << "\n";
      }
      f.pch_created += c.pch == "created";
      m.pch_used += c.pch == "used";
      f.cold.push_back(c.compile_ms);
      (sources[i].cub ? f.cold_cub : f.cold_plain).push_back(c.compile_ms);
      m.per_source[sources[i].name].push_back(c.compile_ms);
      m.pch_of[sources[i].name] += (c.prelude ? "P" : "") + c.pch.substr(0, 1);
      uniques.push_back(text);
      owner.push_back(i);
    }
  }
  for (size_t u = 0; u < uniques.size(); ++u) {
    CompileResult c = compiler.compile(uniques[u], options);
    if (!c.cache_hit) std::cerr << "compile_bench: expected a cache hit for " << sources[owner[u]].name << "\n";
    f.cached.push_back(c.compile_ms);
  }
  return m;
}

void print_figures(const kforge::NvrtcCompiler& compiler, const BenchArgs& args, const std::vector<Source>& sources, Measured& m) {
  const CompileFigures& f = m.figures;
  std::cout << std::fixed << std::setprecision(1);
  std::cout << "NVRTC " << compiler.nvrtc_version() << ", arch " << args.arch << ", PCH " << (compiler.pch_available() ? "on" : "off")
            << ", CUB prelude " << (args.config.cccl_prelude ? "on" : "off") << "\n";
  std::cout << sources.size() << " sources (" << f.cub_count << " include CUB), " << args.rounds << " rounds: " << f.cold.size()
            << " cold compiles, " << f.failures << " failed; PCH created " << f.pch_created << ", used " << m.pch_used << "\n";
  for (const Source& s : sources) {
    const auto& v = m.per_source[s.name];
    std::cout << "  " << std::left << std::setw(62) << s.name << std::right << (s.cub ? " cub " : "     ") << " p50 " << std::setw(7)
              << quantile(v, 0.5) << " ms  max " << std::setw(7) << *std::max_element(v.begin(), v.end()) << " ms  pch " << m.pch_of[s.name]
              << "\n";
  }
  std::cout << "  (pch per round: c = created, u = used, n = none; P = after the shared CUB prelude)\n";
  std::cout << "cold:   p50 " << quantile(f.cold, 0.5) << " ms, p95 " << quantile(f.cold, 0.95) << " ms\n";
  std::cout << "  CUB:  p50 " << quantile(f.cold_cub, 0.5) << " ms, p95 " << quantile(f.cold_cub, 0.95) << " ms\n";
  std::cout << "  none: p50 " << quantile(f.cold_plain, 0.5) << " ms, p95 " << quantile(f.cold_plain, 0.95) << " ms\n";
  std::cout << "cached: p50 " << std::setprecision(3) << quantile(f.cached, 0.5) << " ms, p95 " << quantile(f.cached, 0.95) << " ms\n";
}

}  // namespace

int main(int argc, char** argv) {
  BenchArgs args;
  if (int status = parse_args(argc, argv, args); status >= 0) return status;
  fs::path root = KFORGE_SOURCE_DIR;
  if (args.files.empty()) args.files = default_sources(root);
  if (args.files.empty()) {
    std::cerr << "compile_bench: no sources\n";
    return 2;
  }
  std::vector<Source> sources = load_sources(args.files, root);

  kforge::NvrtcCompiler compiler(args.config);
  CompileOptions options;
  options.arch = args.arch;
  double warm_ms = 0;
  if (args.warm) {
    CompileResult w = compiler.warm_up(options);
    warm_ms = w.compile_ms;
    std::cout << "warm-up: " << std::fixed << std::setprecision(1) << warm_ms << " ms (ok=" << w.ok << ", pch " << w.pch << ")\n";
  }

  Measured m = measure(compiler, options, sources, args.rounds);
  m.figures.warm_ms = warm_ms;
  m.figures.sources = sources.size();
  m.figures.cub_count = static_cast<int>(std::count_if(sources.begin(), sources.end(), [](const Source& s) { return s.cub; }));
  print_figures(compiler, args, sources, m);
  if (!args.out_path.empty()) write_record(args.out_path, args.command, args.commit, root, compiler, m.figures);
  return m.figures.failures == 0 ? 0 : 1;
}
