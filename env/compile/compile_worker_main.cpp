// kforge-compile-worker: compiles kernel candidates with NVRTC (no CUDA context, no libtorch).
// Started and supervised by env/process/worker_client.h, which enforces the compile time limit by killing
// it; it keeps its precompiled headers warm between requests.
#include <filesystem>
#include <iostream>

#include "configs/error.h"
#include "env/compile/nvrtc_compiler.h"
#include "env/process/sandbox.h"
#include "env/process/worker_loop.h"

using namespace kforge;

namespace {

Json compile_reply(NvrtcCompiler& compiler, const Json& req) {
  if (req.value("type", "") != "compile")
    return error_reply(worker_error::bad_request, "unknown request type '" + req.value("type", "") + "' for a compile worker");
  const Json& o = req.value("options", Json::object());
  CompileOptions opt;
  opt.arch = o.value("arch", opt.arch);
  opt.use_fast_math = o.value("use_fast_math", opt.use_fast_math);
  opt.maxrregcount = o.value("maxrregcount", opt.maxrregcount);
  CompileResult r = compiler.compile(req.at("source").get<std::string>(), opt);
  Json resources = Json::array();
  for (const auto& k : r.resources)
    resources.push_back({{"name", k.name}, {"registers", k.registers}, {"static_shared_bytes", k.static_shared_bytes},
                         {"local_bytes", k.local_bytes}, {"spill_store_bytes", k.spill_store_bytes},
                         {"spill_load_bytes", k.spill_load_bytes}, {"const_bytes", k.const_bytes},
                         {"max_threads_per_block", k.max_threads_per_block}});
  return {{"ok", true},
          {"compile", {{"ok", r.ok}, {"log", r.log}, {"kernels", r.kernels}, {"resources", resources},
                       {"compile_ms", r.compile_ms}, {"cache_hit", r.cache_hit}, {"hash", r.hash}, {"pch", r.pch}}},
          {"cubin", Json::binary(r.cubin)}};
}

}  // namespace

int main(int argc, char** argv) {
  StartupClock startup;
  WorkerArgs args;
  try {
    args = parse_worker_args(argc, argv, "compile");
  } catch (const Error& e) {
    std::cerr << "kforge-compile-worker: " << e.what() << "\n";
    return 2;
  }
  std::unique_ptr<NvrtcCompiler> compiler;
  Json hello;
  try {
    CompilerConfig cc;
    if (!args.cache_dir.empty()) {
      std::error_code ec;
      std::filesystem::create_directories(args.cache_dir, ec);
      KFORGE_CHECK(std::filesystem::is_directory(args.cache_dir), io, "compile cache directory " << args.cache_dir << " cannot be made");
      cc.cache_dir = args.cache_dir;
    }
    compiler = std::make_unique<NvrtcCompiler>(cc);
    startup.mark("nvrtc_init");
    hello = {{"ok", true}, {"mode", "compile"}, {"nvrtc", compiler->nvrtc_version()}, {"warm_up", args.warm_up}};
    if (args.warm_up) {
      // Create the shared CUB prelude's precompiled header before the first candidate arrives.
      CompileResult warm = compiler->warm_up();
      startup.mark("warm_up");
      hello["warm_up_ms"] = warm.compile_ms;
      hello["pch"] = warm.pch;
    }
    if (args.seccomp) install_worker_seccomp();
    startup.mark("seccomp");
    hello["seccomp"] = args.seccomp;
    hello["startup"] = startup.json();
  } catch (const std::exception& e) {
    hello = error_reply(worker_error::internal, std::string("compile worker start failed: ") + e.what());
    startup.mark("failed");
    hello["startup"] = startup.json();
  }
  return serve_worker(args, hello, [&](const Json& req) { return compile_reply(*compiler, req); });
}
