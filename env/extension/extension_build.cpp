// The extension candidate's build (extension_build.h): checked files, split .cu files, cached
// objects and cubins, parallel nvcc and g++ children with a time limit, one link.
#include "env/extension/extension_build.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <thread>

#include "configs/error.h"
#include "configs/file_reader.h"
#include "configs/remove_tree.h"
#include "configs/sha256.h"
#include "env/extension/build_jobs.h"
#include "env/extension/nvrtc_cubin.h"
#include "env/extension/source_rules.h"
#include "env/process/child_sandbox.h"
#include "env/process/clock.h"

namespace kforge {
namespace fs = std::filesystem;

namespace {

// A name part no other build of this machine uses at the same time: the process and a count within
// it. Two threads of one server (a compile thread's warm build and a GPU lane's) may build the same
// candidate at once; each writes its own work folder and temporary files, and the last rename wins.
std::string build_token() {
  static std::atomic<uint64_t> next{0};
  return std::to_string(getpid()) + "." + std::to_string(next++);
}

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string part; std::getline(in, part, ';');)
    if (!part.empty()) out.push_back(part);
  return out;
}

std::string tool_version(const std::string& tool) {
  // Identifies the compiler for the caches (a changed compiler is a changed object).
  std::error_code ec;
  return tool + "@" + std::to_string(fs::exists(tool, ec) ? static_cast<long long>(fs::file_size(tool, ec)) : -1);
}

// Where the compilers may read: the system's tools and libraries, the toolchain's and torch's
// folders, kforge's stand-ins; where they may write: the cache (objects, libraries, the work
// folders, the compilers' temporary files). Nothing else: not the task set, configs or home.
ChildSandboxSpec compiler_sandbox(const ExtensionToolchain& tc, const std::string& cache_dir) {
  ChildSandboxSpec s;
  std::error_code ec;
  auto add = [&](std::vector<std::string>& to, const fs::path& p) {
    if (p.empty() || !fs::exists(p, ec)) return;
    const std::string c = fs::canonical(p, ec).string();
    if (!ec && std::find(to.begin(), to.end(), c) == to.end()) to.push_back(c);
  };
  for (const char* sys : {"/usr", "/lib", "/lib64", "/bin", "/etc/ld.so.cache", "/etc/alternatives"}) add(s.read_paths, sys);
  const fs::path nvcc = fs::canonical(tc.nvcc, ec), cxx = fs::canonical(tc.cxx, ec);
  add(s.read_paths, nvcc.parent_path().parent_path());  // the CUDA toolkit's root
  add(s.read_paths, cxx.parent_path().parent_path());
  for (const auto& p : {tc.cuda_include, tc.cuda_lib_dir, tc.torch_lib_dir, tc.shim_dir, tc.nvrtc_shim_dir}) add(s.read_paths, p);
  if (!tc.nvrtc_cubin.empty()) add(s.read_paths, tc.nvrtc_cubin);  // the tool alone, not the build folder it is in
  for (const auto& p : tc.torch_includes) add(s.read_paths, p);
  fs::create_directories(fs::path(cache_dir) / "tmp");
  add(s.write_paths, cache_dir);
  for (const char* dev : {"/dev/null", "/dev/zero", "/dev/urandom"}) add(s.write_paths, dev);
  const std::string tmp = fs::canonical(fs::path(cache_dir) / "tmp", ec).string();
  s.env = {"PATH=" + nvcc.parent_path().string() + ":" + cxx.parent_path().string() + ":/usr/bin:/bin", "TMPDIR=" + tmp, "HOME=" + tmp,
           "LC_ALL=C"};
  s.limits.cpu_s = std::max(tc.timeout_s, 600.0) + 10;  // the precompiled header's limit is 600 s
  return s;
}

}  // namespace

ExtensionToolchain ExtensionToolchain::from_build() {
  ExtensionToolchain t;
#ifdef KFORGE_EXT_NVCC
  t.nvcc = KFORGE_EXT_NVCC;
  t.cxx = KFORGE_EXT_CXX;
  t.shim_dir = KFORGE_EXT_SHIM_DIR;
  t.cuda_include = KFORGE_EXT_CUDA_INCLUDE;
  t.cuda_lib_dir = KFORGE_EXT_CUDA_LIB_DIR;
  t.torch_lib_dir = KFORGE_EXT_TORCH_LIB_DIR;
  t.torch_cxx_flags = KFORGE_EXT_TORCH_CXX_FLAGS;
  t.torch_includes = split_list(KFORGE_EXT_TORCH_INCLUDES);
  t.nvrtc_cubin = KFORGE_EXT_NVRTC_CUBIN;
  t.nvrtc_shim_dir = KFORGE_EXT_NVRTC_SHIM_DIR;
#endif
  t.jobs = std::max(1u, std::thread::hardware_concurrency());
  return t;
}

ExtensionBuilder::ExtensionBuilder(ExtensionToolchain tc, std::string cache_dir) : tc_(std::move(tc)), cache_dir_(std::move(cache_dir)) {
  KFORGE_CHECK(!tc_.nvcc.empty() && !tc_.cxx.empty(), config, "the extension kind needs nvcc and a C++ compiler (none configured)");
  std::string shim;
  for (const auto& dir : {tc_.shim_dir, tc_.nvrtc_shim_dir}) {
    if (dir.empty()) continue;
    for (const auto& e : fs::recursive_directory_iterator(dir))
      if (e.is_regular_file()) shim += e.path().string() + "\n" + read_file(e.path().string(), "shim header") + "\n";
  }
  toolchain_id_ = sha256_hex(tool_version(tc_.nvcc) + "|" + tool_version(tc_.cxx) + "|" + tc_.arch + "|" + tc_.torch_cxx_flags + "|" + shim)
                      .substr(0, 16);
  fs::create_directories(fs::path(cache_dir_) / "obj");
  sandbox_ = std::make_unique<ChildSandbox>(compiler_sandbox(tc_, cache_dir_));
}

ExtensionBuilder::~ExtensionBuilder() = default;

namespace {

std::vector<std::string> common_includes(const ExtensionToolchain& tc, const std::string& work) {
  std::vector<std::string> a = {"-I" + work, "-I" + tc.shim_dir};  // the stand-ins shadow torch's binding headers
  for (const auto& i : tc.torch_includes) a.push_back("-I" + i);
  a.push_back("-I" + tc.cuda_include);
  return a;
}

std::vector<std::string> host_flags(const ExtensionToolchain& tc) {
  std::vector<std::string> a = {"-O3", "-std=c++17", "-fPIC", "-fvisibility=hidden", "-Winvalid-pch"};
  for (const auto& f : split_list(std::regex_replace(tc.torch_cxx_flags, std::regex(" +"), ";"))) a.push_back(f);
  return a;
}

}  // namespace

std::string ExtensionBuilder::pch_dir() {
  const fs::path dir = fs::path(cache_dir_) / ("pch-" + toolchain_id_);
  const fs::path header = dir / "kforge_torch_pch.h";
  const fs::path gch = dir / "kforge_torch_pch.h.gch";
  if (pch_ready_ || fs::exists(gch)) {
    pch_ready_ = true;
    return dir.string();
  }
  write_build_file(header, "#pragma once\n#include <torch/extension.h>\n");
  BuildJob j;
  j.step = {"pch", "g++", 0, false};
  j.argv = {tc_.cxx, "-x", "c++-header"};
  for (const auto& f : host_flags(tc_)) j.argv.push_back(f);
  for (const auto& f : common_includes(tc_, dir.string())) j.argv.push_back(f);
  const std::string tmp = gch.string() + ".tmp" + build_token();  // concurrent builders each write their own
  j.argv.insert(j.argv.end(), {"-o", tmp, header.string()});
  j.log = (dir / "pch.log").string();
  std::vector<BuildJob> jobs{j};
  bool timed_out = false;
  int failed = run_build_jobs(*sandbox_, jobs, 1, 600, &timed_out);
  KFORGE_CHECK(failed < 0, runtime, "the precompiled torch header failed to build:\n" << trimmed_build_log(j.log));
  fs::rename(tmp, gch);
  pch_step_ = jobs[0].step;
  pch_ready_ = true;
  return dir.string();
}

namespace {

// What compiling the files takes: a job per object not in the cache, the objects in link order.
struct ObjectPlan {
  std::vector<BuildJob> jobs;
  std::vector<std::string> objects;
  std::vector<BuildStep> cached;
  std::vector<PlannedCubin> cubins;  // the split halves' device code, linked as data objects
};

struct BuildPlace {
  const ExtensionToolchain& tc;
  std::string toolchain_id, work, pch, tmp_suffix, headers, arch;
  const std::vector<SplitHalves>& halves;
};

const SplitHalves* half_of(const std::vector<SplitHalves>& halves, const std::string& path, bool device) {
  for (const auto& h : halves)
    if ((device ? h.device : h.host) == path) return &h;
  return nullptr;
}

// nvcc's defines of torch's load_inline (the nvcc command below), which the host code of cuda.cu saw.
const std::vector<std::string>& load_inline_nvcc_defines() {
  static const std::vector<std::string> d = {"-D__CUDA_NO_HALF_OPERATORS__", "-D__CUDA_NO_HALF_CONVERSIONS__",
                                             "-D__CUDA_NO_BFLOAT16_CONVERSIONS__", "-D__CUDA_NO_HALF2_OPERATORS__"};
  return d;
}

// The split's host half is cuda.cu's host code: it gets the -D, -U and -std of extra_cuda_cflags, as
// nvcc gave that code, not extra_cflags (main.cpp's, as in torch's load_inline). Not nvcc's four
// __CUDA_NO_HALF* defines: the precompiled torch header (cuda_fp16.h and cuda_bf16.h included, as in
// every host file of the kind) would not be used with them (8.5 s instead of 2.5 s here); host code
// without them has half's host operators and conversions, which only accepts more.
std::vector<std::string> split_host_flags(const std::vector<std::string>& cuda_extra) {
  std::vector<std::string> out;
  for (const auto& f : cuda_extra)
    if (f.rfind("-D", 0) == 0 || f.rfind("-U", 0) == 0 || f.rfind("-std=", 0) == 0) out.push_back(f);
  return out;
}

// Whether NVRTC may build any device half of this build (what holds for all of them alike): NVRTC is
// in the toolchain, the candidate's headers read as nvcc would read them (nvrtc_cubin.h), and no
// candidate file is named as a stand-in header (nvcc's own includes would find it where NVRTC has none).
bool nvrtc_may_build(const BuildPlace& at, const std::vector<ExtensionFile>& files) {
  if (at.tc.nvrtc_cubin.empty() || !nvrtc_unsuitable(at.headers).empty()) return false;
  for (const auto& c : files)
    if (fs::exists(fs::path(at.tc.nvrtc_shim_dir) / fs::path(c.path).filename())) return false;
  return true;
}

// kforge-nvrtc-cubin's NVRTC options for a device half whose nvcc command is `nvcc` (no -o or
// source yet), in a build NVRTC may build (nvrtc_may_build), or none when nvcc builds it: the half
// or a flag that NVRTC may read differently (nvrtc_cubin.h).
std::vector<std::string> nvrtc_plan(const BuildPlace& at, const ExtensionFile& f, const std::vector<std::string>& nvcc) {
  if (!nvrtc_unsuitable(f.text).empty()) return {};
  std::vector<std::string> flags;
  for (size_t a = 1; a < nvcc.size(); ++a)
    if (nvcc[a] != "-cubin" && nvcc[a].rfind("-arch=", 0) != 0) flags.push_back(nvcc[a]);
  std::optional<std::vector<std::string>> opts = nvrtc_options(at.arch, flags, nullptr);
  if (!opts) return {};
  // nvcc's order (common_includes): the candidate's folder first, so that a header of its own shadows
  // a standard one for both compilers alike; then the stand-ins where nvcc has the system's headers.
  for (const auto& dir : {at.work, at.tc.nvrtc_shim_dir, at.tc.cuda_include}) opts->push_back("-I" + dir);
  return *opts;
}

ObjectPlan plan_objects(const BuildPlace& at, const std::string& module_name, const std::vector<ExtensionFile>& files,
                        const std::vector<std::string>& cuda_extra, const std::vector<std::string>& host_extra) {
  const ExtensionToolchain& tc = at.tc;
  ObjectPlan plan;
  const std::string define = "-DTORCH_EXTENSION_NAME=" + module_name;
  const bool nvrtc_build = !at.halves.empty() && nvrtc_may_build(at, files);  // once per build, not per half
  for (const auto& f : files) {
    const ExtensionFileKind k = checked_file_kind(f.path);
    if (k == ExtensionFileKind::header) continue;
    BuildJob j;
    j.step = {f.path, k == ExtensionFileKind::cuda ? "nvcc" : "g++", 0, false};
    std::vector<std::string> nvrtc;  // kforge-nvrtc-cubin's options, when NVRTC builds this device half
    const SplitHalves* device_half = half_of(at.halves, f.path, true);
    const SplitHalves* host_half = half_of(at.halves, f.path, false);
    if (k == ExtensionFileKind::cuda) {
      // torch's own load_inline defaults, which KernelBench-style sources expect; a split's device
      // half is device code only: nvcc's device passes, to a cubin.
      if (device_half)
        j.argv = {tc.nvcc, "-cubin", "-O3", "-std=c++17", "-arch=" + at.arch, "--expt-relaxed-constexpr"};
      else
        j.argv = {tc.nvcc, "-c", "-O3", "-std=c++17", "-arch=" + at.arch, "-cudart", "shared", "--expt-relaxed-constexpr"};
      for (const auto& d : load_inline_nvcc_defines()) j.argv.push_back(d);
      if (!device_half) j.argv.insert(j.argv.end(), {"-Xcompiler", "-fPIC,-fvisibility=hidden"});
      j.argv.push_back(define);
      for (const auto& x : split_list(std::regex_replace(tc.torch_cxx_flags, std::regex(" +"), ";"))) j.argv.push_back(x);
      for (const auto& x : cuda_extra) j.argv.push_back(x);
      if (device_half && nvrtc_build) nvrtc = nvrtc_plan(at, f, j.argv);
    } else {
      j.argv = {tc.cxx, "-c"};
      for (const auto& x : host_flags(tc)) j.argv.push_back(x);
      if (!host_half || host_half->host_uses_torch) j.argv.insert(j.argv.end(), {"-include", at.pch + "/kforge_torch_pch.h"});
      j.argv.push_back(define);
      for (const auto& x : host_half ? split_host_flags(cuda_extra) : host_extra) j.argv.push_back(x);
    }
    for (const auto& x : common_includes(tc, at.work)) j.argv.push_back(x);
    // The object's key: the toolchain, the command's flags, the file and every candidate header.
    std::string flags;
    for (size_t a = 1; a < j.argv.size(); ++a)
      if (j.argv[a].rfind("-I", 0) != 0 && j.argv[a].rfind(at.pch, 0) != 0) flags += j.argv[a] + " ";
    for (const auto& o : nvrtc)
      if (o.rfind("-I", 0) != 0) flags += "nvrtc:" + o + " ";
    const std::string key = sha256_hex(at.toolchain_id + "|" + flags + "|" + f.path + "|" + f.text + "|" +
                                       (f.path == "kforge_ext_entry.cpp" ? std::string() : at.headers));
    const fs::path obj = fs::path(at.work).parent_path().parent_path() / "obj" / (key.substr(0, 32) + (device_half ? ".cubin" : ".o"));
    if (device_half)
      plan.cubins.push_back({obj.string(), device_half});
    else
      plan.objects.push_back(obj.string());
    if (fs::exists(obj)) {
      j.step.cached = true;
      plan.cached.push_back(j.step);
      continue;
    }
    j.output = obj.string();
    j.argv.insert(j.argv.end(), {"-o", obj.string() + at.tmp_suffix, (fs::path(at.work) / f.path).string()});
    if (!nvrtc.empty()) {  // NVRTC first, nvcc's command in its place if it fails
      std::vector<std::string> w = {at.tc.nvrtc_cubin, (fs::path(at.work) / f.path).string(), obj.string() + at.tmp_suffix};
      w.insert(w.end(), nvrtc.begin(), nvrtc.end());
      w.push_back("--");
      w.insert(w.end(), j.argv.begin(), j.argv.end());
      j.argv = std::move(w);
      j.step.tool = "nvrtc";
      j.fallback_tool = "nvcc";
    }
    j.log = (fs::path(at.work) / (f.path + ".log")).string();
    plan.jobs.push_back(std::move(j));
  }
  return plan;
}

// CUDA Agent's fixed module file (its binding.cpp applies the registry; kforge writes its own).
std::string cuda_agent_module(const std::string& name) {
  return "#include \"binding_registry.h\"\nPYBIND11_MODULE(" + name + ", m) { BindingRegistry::getInstance().applyBindings(m); }\n";
}

}  // namespace

ExtensionBuildResult ExtensionBuilder::build_files(const ExtensionBuildRequest& req, const std::vector<SplitHalves>& halves) {
  const auto t0 = Clock::now();
  ExtensionBuildResult out;
  out.filesystem = sandbox_->filesystem();
  try {
    KFORGE_CHECK(std::regex_match(req.module_name, std::regex("[A-Za-z_][A-Za-z0-9_]*")), spec,
                 "extension module name '" << req.module_name << "' is not an identifier");
    std::vector<ExtensionFile> files = req.files;  // not empty: build() checked the candidate's files
    std::string headers;                           // every header of the candidate: part of every object's key
    for (const auto& f : files)
      if (checked_file_kind(f.path) == ExtensionFileKind::header) headers += f.path + "\n" + f.text + "\n";
    if (req.cuda_agent_module) {
      files.push_back({"binding_registry.h", read_file(tc_.shim_dir + "/binding_registry.h", "shim header")});
      files.push_back({"kforge_module.cpp", cuda_agent_module(req.module_name)});
    }
    files.push_back({"kforge_ext_entry.cpp", read_file(tc_.shim_dir + "/kforge_ext_entry.cpp", "shim source")});
    const std::string arch = req.arch.empty() ? tc_.arch : req.arch;
    KFORGE_CHECK(std::regex_match(arch, std::regex("sm_[0-9]+[a-z]?")), spec, "extension build architecture '" << arch << "' is not sm_NN");
    const std::vector<std::string> cuda_extra = extension_flags(req.extra_cuda_cflags, "extra_cuda_cflags");
    const std::vector<std::string> host_extra = extension_flags(req.extra_cflags, "extra_cflags");
    const std::string pch = pch_dir();
    if (pch_step_.ms > 0) {
      out.steps.push_back(pch_step_);
      pch_step_.ms = 0;
    }

    std::string all_text;
    for (const auto& f : files) all_text += f.path + "\n" + sha256_hex(f.text) + "\n";
    const std::string key_all = sha256_hex(toolchain_id_ + "|" + arch + "|" + req.module_name + "|" + all_text + "|" +
                                           nlohmann::json(cuda_extra).dump() + nlohmann::json(host_extra).dump());
    out.hash = key_all.substr(0, 32);
    const std::string token = build_token();
    const fs::path work = fs::path(cache_dir_) / "work" / (out.hash + "-" + token);
    const fs::path lib = fs::path(cache_dir_) / "lib" / ("ext-" + out.hash + ".so");
    if (fs::exists(lib)) {
      out.ok = true;
      out.library = lib.string();
      out.library_cached = true;
      out.total_ms = ms_since(t0);
      return out;
    }
    const std::string tmp_suffix = ".tmp" + token;
    remove_tree(work.string());
    for (const auto& f : files) write_build_file(work / f.path, f.text);

    ObjectPlan plan = plan_objects({tc_, toolchain_id_, work.string(), pch, tmp_suffix, headers, arch, halves}, req.module_name, files,
                                   cuda_extra, host_extra);
    for (const auto& st : plan.cached) out.steps.push_back(st);
    auto stopped = [&] {  // a failed build keeps its work folder: the logs
      out.total_ms = ms_since(t0);
      return out;
    };
    if (!run_build_jobs_into(*sandbox_, plan.jobs, tc_.jobs, tc_.timeout_s, tmp_suffix, out)) return stopped();
    std::vector<std::string> objects = plan.objects;
    if (!plan.cubins.empty() && !cubin_objects(*sandbox_, tc_, toolchain_id_, plan.cubins, work, tmp_suffix, out, objects))
      return stopped();
    BuildJob link;
    link.step = {"link", "g++", 0, false};
    link.argv = {tc_.cxx, "-shared", "-o", lib.string() + tmp_suffix};
    link.argv.insert(link.argv.end(), objects.begin(), objects.end());
    // No torch library on the line: reading libtorch_cpu's symbol table was most of the link (0.39 s of
    // 0.4 on an H100 host; about 10 ms without). The library's torch symbols resolve when the worker,
    // which has libtorch loaded, opens it; one that is undefined makes the load fail, naming it.
    link.argv.insert(link.argv.end(), {"-L" + tc_.cuda_lib_dir, "-lcudart"});
    link.output = lib.string();
    link.log = (work / "link.log").string();
    fs::create_directories(lib.parent_path());
    std::vector<BuildJob> links{link};
    if (!run_build_jobs_into(*sandbox_, links, 1, tc_.timeout_s, tmp_suffix, out)) return stopped();
    remove_tree(work.string());  // a failed build keeps its folder: the logs
    out.ok = true;
    out.library = lib.string();
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::spec) throw;
    out.error_kind = "spec_error";
    out.log = e.what();
  }
  out.total_ms = ms_since(t0);
  return out;
}

ExtensionBuildRequest load_inline_request(const std::string& name, const std::string& cpp_sources, const std::string& cuda_sources,
                                          const std::vector<std::string>& functions, bool split_cuda) {
  ExtensionBuildRequest r;
  r.split_cuda = split_cuda && !cuda_sources.empty();
  r.module_name = name;
  r.cuda_agent_module = false;
  std::string main = "#include <torch/extension.h>\n" + cpp_sources + "\n\nPYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {\n";
  for (const auto& f : functions) {
    KFORGE_CHECK(std::regex_match(f, std::regex("[A-Za-z_][A-Za-z0-9_]*")), spec,
                 "load_inline function '" << f << "' is not an identifier");
    main += "  m.def(\"" + f + "\", &" + f + ", \"" + f + "\");\n";
  }
  r.files.push_back({"main.cpp", main + "}\n"});
  if (!cuda_sources.empty())
    r.files.push_back({"cuda.cu", "#include <torch/types.h>\n#include <cuda.h>\n#include <cuda_runtime.h>\n" + cuda_sources});
  return r;
}

nlohmann::json to_json(const ExtensionBuildResult& r) {
  nlohmann::json steps = nlohmann::json::array();
  for (const auto& s : r.steps) steps.push_back({{"what", s.what}, {"tool", s.tool}, {"ms", s.ms}, {"cached", s.cached}});
  nlohmann::json j = {{"ok", r.ok},
                      {"hash", r.hash},
                      {"total_ms", r.total_ms},
                      {"library_cached", r.library_cached},
                      {"steps", steps},
                      {"filesystem", r.filesystem}};
  if (!r.split.empty()) j["split"] = r.split;
  if (!r.ok) j["error"] = {{"kind", r.error_kind}, {"log", r.log}};
  return j;
}

}  // namespace kforge
