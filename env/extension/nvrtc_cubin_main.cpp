// kforge-nvrtc-cubin: a split .cu's device half to a cubin with NVRTC, or else with nvcc (nvrtc_cubin.h).
//
//   kforge-nvrtc-cubin SOURCE OUT [NVRTC-OPTION ...] -- NVCC-COMMAND ...
//
// Compiles SOURCE with NVRTC and the options given, and writes the cubin to OUT. When NVRTC does not
// compile it (any error: a construct nvcc accepts and NVRTC does not, a header NVRTC lacks), it prints
// kNvrtcFallbackMarker as its first line and runs NVCC-COMMAND in its place (which writes OUT
// itself), so the build gets nvcc's cubin and nvcc's errors, as it did before. Run by the extension
// build in the compilers' sandbox, one child per device half.
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include <nvrtc.h>

#include "env/extension/nvrtc_cubin.h"

namespace {

// NVRTC's cubin of `source`, or an empty string (its log in `log`).
std::string nvrtc_cubin(const std::string& source, const std::string& name, const std::vector<std::string>& options, std::string& log) {
  nvrtcProgram prog = nullptr;
  if (nvrtcCreateProgram(&prog, source.c_str(), name.c_str(), 0, nullptr, nullptr) != NVRTC_SUCCESS) {
    log = "NVRTC could not create the program";
    return {};
  }
  std::vector<const char*> argv;
  for (const auto& o : options) argv.push_back(o.c_str());
  const nvrtcResult r = nvrtcCompileProgram(prog, static_cast<int>(argv.size()), argv.data());
  size_t n = 0;
  if (nvrtcGetProgramLogSize(prog, &n) == NVRTC_SUCCESS && n > 1) {
    log.resize(n);
    nvrtcGetProgramLog(prog, log.data());
    log.resize(n - 1);
  }
  std::string cubin;
  if (r == NVRTC_SUCCESS && nvrtcGetCUBINSize(prog, &n) == NVRTC_SUCCESS && n > 0) {
    cubin.resize(n);
    if (nvrtcGetCUBIN(prog, cubin.data()) != NVRTC_SUCCESS) cubin.clear();
  } else if (r != NVRTC_SUCCESS) {
    log += std::string(log.empty() ? "" : "\n") + nvrtcGetErrorString(r);
  }
  nvrtcDestroyProgram(&prog);
  return cubin;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> options;
  int sep = 3;
  while (sep < argc && std::strcmp(argv[sep], "--") != 0) options.emplace_back(argv[sep++]);
  if (argc < 3 || sep >= argc - 1) {
    std::cerr << "usage: kforge-nvrtc-cubin SOURCE OUT [NVRTC-OPTION ...] -- NVCC-COMMAND ...\n";
    return 2;
  }
  const std::string source_path = argv[1], out_path = argv[2];
  std::ifstream in(source_path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  std::string log;
  const std::string cubin = in ? nvrtc_cubin(text.str(), source_path, options, log) : std::string();
  if (!cubin.empty()) {
    std::ofstream out(out_path, std::ios::binary);
    out.write(cubin.data(), static_cast<std::streamsize>(cubin.size()));
    out.close();
    if (out) return 0;
    log = "cannot write " + out_path;
  }
  // nvcc in NVRTC's place: its output (and errors) are the build's, after the marker line.
  const std::string first = log.substr(0, log.find('\n'));
  std::cerr << kforge::kNvrtcFallbackMarker << " (NVRTC: " << (first.empty() ? "no cubin" : first) << ")" << std::endl;
  execvp(argv[sep + 1], argv + sep + 1);
  std::cerr << "kforge-nvrtc-cubin: cannot run " << argv[sep + 1] << ": " << std::strerror(errno) << "\n";
  return 127;
}
