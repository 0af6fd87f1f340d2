// kforge-compile-worker: compiles kernel candidates with NVRTC (no CUDA context, no libtorch).
// Started and supervised by env/process/worker_client.h, which enforces the compile time limit by killing
// it; it keeps its precompiled headers warm between requests.
#include <filesystem>
#include <iostream>

#include "configs/error.h"
#include "env/compile/compile_request.h"
#include "env/compile/nvrtc_compiler.h"
#include "env/process/sandbox.h"
#include "env/process/worker_loop.h"

using namespace kforge;

namespace {

// A malformed request is a spec error (the worker loop answers bad_request naming the key).
Json compile_reply(NvrtcCompiler& compiler, const Json& req) {
  const CompileRequest r = parse_compile_request(req);
  return compile_reply_json(compiler.compile(r.source, r.options));
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
