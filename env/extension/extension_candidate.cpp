// The extension kind's front stages (extension_candidate.h).
#include "env/extension/extension_candidate.h"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>

#include "configs/checked_file.h"
#include "configs/error.h"
#include "configs/remove_tree.h"

namespace fs = std::filesystem;

namespace kforge {

namespace {

constexpr size_t kMaxFiles = 64;
constexpr int64_t kMaxFileBytes = int64_t{1} << 20;

bool wanted(const std::string& rel) {
  const std::string ext = fs::path(rel).extension().string();
  const bool source = ext == ".cu" || ext == ".cpp" || ext == ".cc" || ext == ".h" || ext == ".cuh" || ext == ".hpp" || ext == ".inl";
  return rel == "model_new.py" || (rel.rfind("kernels/", 0) == 0 && (source || ext == ".py")) ||
         (rel.find('/') == std::string::npos && source);
}

std::string slurp(FILE* f) {
  std::string out;
  char buf[8192];
  while (size_t n = std::fread(buf, 1, sizeof buf, f)) out.append(buf, n);
  return out;
}

std::string quoted(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

}  // namespace

std::map<std::string, std::string> read_extension_files(const std::string& path, bool need_model_new) {
  std::map<std::string, std::string> files;
  struct stat st {};
  KFORGE_CHECK(lstat(path.c_str(), &st) == 0, io, path << ": no such file or directory");
  KFORGE_CHECK(!S_ISLNK(st.st_mode), io, path << " is a symbolic link");
  if (S_ISREG(st.st_mode)) {
    files["model_new.py"] = read_untrusted_file(path, kMaxFileBytes, "model_new.py");
    return files;
  }
  KFORGE_CHECK(S_ISDIR(st.st_mode), io, path << " is neither a file nor a directory");
  for (auto it = fs::recursive_directory_iterator(path); it != fs::recursive_directory_iterator(); ++it) {
    // Lexically: fs::relative would resolve a symbolic link and hide it.
    const std::string rel = it->path().lexically_relative(path).generic_string();
    KFORGE_CHECK(!it->is_symlink(), io, it->path().string() << " is a symbolic link");
    if (it->is_directory()) {
      if (rel != "kernels") it.disable_recursion_pending();  // only kernels/ is read below the top
      continue;
    }
    if (!wanted(rel)) continue;
    KFORGE_CHECK(files.size() < kMaxFiles, io, path << " holds more than " << kMaxFiles << " candidate files");
    files[rel] = read_untrusted_file(it->path().string(), kMaxFileBytes, rel);
  }
  KFORGE_CHECK(!need_model_new || files.count("model_new.py"), io, path << " has no model_new.py");
  return files;
}

std::string default_extension_cache_dir() {
  if (const char* d = std::getenv("KFORGE_EXTENSION_CACHE"); d && *d) return d;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::string(x) + "/kforge/extensions";
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.cache/kforge/extensions";
  return "/tmp/kforge-extensions-" + std::to_string(getuid());
}

ExtensionFront glue_extension(const std::map<std::string, std::string>& files, double glue_timeout_s) {
  ExtensionFront f;
  f.error_kind = "compile_error";
  // model_glue.py reads a directory: the files go to a private one, removed after.
  char tmpl[] = "/tmp/kforge-glue-XXXXXX";
  KFORGE_CHECK(mkdtemp(tmpl), io, "cannot make a directory for model_glue.py");
  const std::string dir = tmpl;
  auto t0 = std::chrono::steady_clock::now();
  std::string out;
  int status = 0;
  try {
    for (const auto& [rel, text] : files) {
      KFORGE_CHECK(rel.find("..") == std::string::npos && !rel.empty() && rel[0] != '/', io, "candidate file path '" << rel << "'");
      fs::create_directories((fs::path(dir) / rel).parent_path());
      std::ofstream(fs::path(dir) / rel, std::ios::binary) << text;
    }
    const std::string cmd = "timeout -s KILL " + std::to_string(static_cast<int>(glue_timeout_s)) + " " + quoted(KFORGE_GLUE_PYTHON) +
                            " -I -S " + quoted(KFORGE_GLUE_SCRIPT) + " " + quoted(dir) + " 2>&1";
    FILE* p = popen(cmd.c_str(), "r");
    KFORGE_CHECK(p, runtime, "cannot run model_glue.py");
    out = slurp(p);
    status = pclose(p);
  } catch (...) {
    remove_tree(dir);
    throw;
  }
  remove_tree(dir);
  f.glue_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (WIFEXITED(status) && WEXITSTATUS(status) == 137) {
    f.error_kind = "timeout";
    f.message = "model_glue.py did not finish within " + std::to_string(static_cast<int>(glue_timeout_s)) + " s";
    return f;
  }
  nlohmann::json j = nlohmann::json::parse(out, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    f.message = "model_glue.py failed: " + out.substr(0, 2000);
    return f;
  }
  if (j.contains("error")) {
    f.message = j["error"].value("message", std::string("model_new.py is outside the extension format"));
    return f;
  }
  try {
    f.plan = parse_extension_plan(j);
    f.plan_json = j;
    f.request = plan_build_request(f.plan, files);
  } catch (const Error& e) {
    f.message = e.what();
    return f;
  }
  f.ok = true;
  f.error_kind.clear();
  return f;
}

void build_extension(ExtensionFront& f, ExtensionBuilder& builder) {
  f.ok = false;
  f.error_kind = "compile_error";
  try {
    f.build = builder.build(f.request);
  } catch (const Error& e) {
    f.message = e.what();
    return;
  }
  if (!f.build.ok) {
    f.error_kind = f.build.error_kind == "timeout" ? "timeout" : "compile_error";
    f.message = "the extension does not build:\n" + f.build.log;
    return;
  }
  std::ifstream lib(f.build.library, std::ios::binary);
  f.library.assign(std::istreambuf_iterator<char>(lib), std::istreambuf_iterator<char>());
  KFORGE_CHECK(!f.library.empty(), io, "cannot read the built library " << f.build.library);
  f.ok = true;
  f.error_kind.clear();
}

}  // namespace kforge
