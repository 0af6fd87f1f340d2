// The split of an extension candidate's .cu files for its build (extension_build.h, cuda_split.h):
// each into a device half built to a cubin (NVRTC or nvcc -cubin: nvrtc_cubin.h) and linked as data
// beside its kernels' symbols (split_launchers.h, cubin_symbols.h), and a host half for g++;
// refusals and fallbacks, per file.
#include <set>
#include <utility>

#include "configs/error.h"
#include "configs/file_reader.h"
#include "configs/sha256.h"
#include "env/extension/build_jobs.h"
#include "env/extension/cubin_symbols.h"
#include "env/extension/cuda_split.h"
#include "env/extension/source_rules.h"
#include "env/process/child_sandbox.h"
#include "env/process/clock.h"

namespace kforge {
namespace fs = std::filesystem;

namespace {

// The candidate's files as it wrote them (the split's halves are kforge's, made from them).
void check_candidate_files(const std::vector<ExtensionFile>& files) {
  KFORGE_CHECK(!files.empty(), spec, "an extension candidate has no files");
  for (const auto& f : files) {
    check_extension_path(f.path);
    KFORGE_CHECK(f.path != "binding_registry.h" && f.path != "kforge_module.cpp", spec,
                 "'" << f.path << "' is kforge's own file in an extension build: leave it out");
    check_extension_includes(f.path, f.text);
    checked_file_kind(f.path);
  }
}

// The names of a split .cu's halves, beside it (its relative includes resolve from there).
std::pair<std::string, std::string> half_names(const std::string& path) {
  if (path == "cuda.cu") return {kSplitDeviceFile, kSplitHostFile};
  const std::string stem = path.substr(0, path.size() - 3);
  return {stem + "_kforge_device.cu", stem + "_kforge_host.cpp"};
}

// The assembler source of a cubin's data object: the image (aligned, as the driver reads an ELF
// image) and the "kernel\0symbol\0" pairs, both hidden (split_launchers.h).
std::string cubin_data_source(const std::string& cubin_path, const std::string& symbol,
                              const std::vector<std::pair<std::string, std::string>>& names) {
  auto quoted = [](const std::string& t) {
    std::string q = "\"";
    for (char c : t) q += (c == '"' || c == '\\') ? std::string("\\") + c : std::string(1, c);
    return q + "\"";
  };
  auto label = [](const std::string& sym) {
    return "  .globl " + sym + "\n  .hidden " + sym + "\n  .type " + sym + ", @object\n" + sym + ":\n";
  };
  std::string s = "  .section .rodata.kforge_cubin,\"a\",@progbits\n  .balign 128\n" + label(symbol) + "  .incbin " + quoted(cubin_path) +
                  "\n" + label(symbol + "_names");
  for (const auto& [k, v] : names) s += "  .asciz " + quoted(k) + "\n  .asciz " + quoted(v) + "\n";
  return s + "  .byte 0\n  .section .note.GNU-stack,\"\",@progbits\n";
}

}  // namespace

bool cubin_objects(const ChildSandbox& sandbox, const ExtensionToolchain& tc, const std::string& toolchain_id,
                   const std::vector<PlannedCubin>& cubins, const fs::path& work, const std::string& tmp_suffix, ExtensionBuildResult& out,
                   std::vector<std::string>& objects) {
  std::vector<BuildJob> jobs;
  for (const auto& c : cubins) {
    const auto t = Clock::now();
    const SplitHalves& h = *c.halves;
    std::string image;
    std::vector<std::pair<std::string, std::string>> names;
    try {
      image = read_file(c.path, "cubin");
      const std::vector<CubinEntry> entries = cubin_entries(image);
      for (const auto& k : h.launched) {
        std::string why;
        const std::string symbol = kernel_symbol(entries, k, &why);
        KFORGE_CHECK(!symbol.empty(), runtime, why);
        names.emplace_back(k, symbol);
      }
    } catch (const Error& e) {
      out.error_kind = "compile_error";
      out.log = h.device + ": " + e.what();
      return false;
    }
    std::string table;
    for (const auto& [k, v] : names) table += k + "=" + v + ";";
    const std::string key = sha256_hex(toolchain_id + "|cubin data|" + h.cubin_symbol + "|" + table + "|" + sha256_hex(image));
    const fs::path obj = fs::path(c.path).parent_path() / (key.substr(0, 32) + ".o");
    objects.push_back(obj.string());
    BuildStep step{h.device + " (cubin data)", "as", ms_since(t), false};
    if (fs::exists(obj)) {
      step.cached = true;
      out.steps.push_back(step);
      continue;
    }
    const fs::path src = work / (h.cubin_symbol + ".s");
    write_build_file(src, cubin_data_source(c.path, h.cubin_symbol, names));
    BuildJob j;
    j.step = step;
    j.argv = {tc.cxx, "-c", "-x", "assembler", src.string(), "-o", obj.string() + tmp_suffix};
    j.output = obj.string();
    j.log = src.string() + ".log";
    jobs.push_back(std::move(j));
  }
  return run_build_jobs_into(sandbox, jobs, tc.jobs, tc.timeout_s, tmp_suffix, out);
}

ExtensionBuildResult ExtensionBuilder::build(const ExtensionBuildRequest& req) {
  ExtensionBuildRequest plain = req;
  plain.split_cuda = false;
  const auto t0 = Clock::now();
  ExtensionBuildRequest split = plain;
  std::vector<SplitHalves> halves;
  std::vector<std::string> notes;
  std::set<std::string> taken;
  for (const auto& f : plain.files) taken.insert(f.path);
  split.files.clear();
  for (const auto& f : plain.files) {
    if (!req.split_cuda || extension_file_kind(f.path) != ExtensionFileKind::cuda) {
      split.files.push_back(f);
      continue;
    }
    const auto [device, host] = half_names(f.path);
    const std::string symbol = "kforge_cubin_" + std::to_string(halves.size());
    const CudaSplit s = split_cuda_source(f.text, f.path, symbol);
    const std::string why = !s.ok ? s.why : taken.count(device) || taken.count(host) ? "the candidate has a file of its halves' names" : "";
    if (!why.empty()) {
      notes.push_back(f.path + " built unsplit: " + why);
      split.files.push_back(f);
      continue;
    }
    halves.push_back({f.path, device, host, symbol, s.launched, s.host_uses_torch});
    split.files.push_back({device, s.device_cu});
    split.files.push_back({host, s.host_cpp});
    notes.push_back(f.path + " split: " + std::to_string(s.launched.size()) + " kernel(s) launched at " + std::to_string(s.launches) +
                    " site(s), device code to " + device +
                    " (a cubin, NVRTC where it may, else nvcc -cubin; no torch headers), host code to " + host + " (g++" +
                    (s.host_uses_torch ? ", precompiled torch header" : "") + ")");
  }
  auto joined = [](const std::vector<std::string>& v) {
    std::string out;
    for (const auto& n : v) out += (out.empty() ? "" : "; ") + n;
    return out;
  };
  try {
    check_candidate_files(plain.files);
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::spec) throw;
    ExtensionBuildResult out;
    out.filesystem = sandbox_->filesystem();
    out.error_kind = "spec_error";
    out.split = joined(notes);
    out.log = out.split.empty() ? e.what() : e.what() + std::string("\n(") + out.split + ")";
    out.total_ms = ms_since(t0);
    return out;
  }
  std::vector<BuildStep> tried;
  if (!halves.empty()) {
    ExtensionBuildResult r = build_files(split, halves);
    if (r.ok || r.error_kind == "timeout" || r.error_kind == "spec_error") {
      r.split = joined(notes);
      if (r.ok) r.log = r.split;
      return r;
    }
    const std::string first = r.log.substr(0, r.log.find('\n'));
    std::vector<std::string> kept;  // the refusals stay; the splits are undone
    for (const auto& n : notes)
      if (n.find(" built unsplit: ") != std::string::npos) kept.push_back(n);
    for (const auto& h : halves) kept.push_back(h.source + " built unsplit: its split halves did not build (" + first + ")");
    notes = kept;
    tried = r.steps;
  }
  ExtensionBuildResult r = build_files(plain, {});
  for (auto& st : tried) st.what = "split " + st.what;
  r.steps.insert(r.steps.begin(), tried.begin(), tried.end());
  r.split = joined(notes);
  if (!r.split.empty()) r.log = r.ok ? r.split : r.log + "\n(" + r.split + ")";
  r.total_ms = ms_since(t0);
  return r;
}

}  // namespace kforge
