// The launchers of a split .cu and their launches from its cubin (split_launchers.h).
#include "env/extension/split_launchers.h"

namespace kforge {

std::string launcher_type(const LaunchedKernel& k) {
  const std::string t = "kforge_launch_" + k.name;
  std::string s = "struct " + t + " {\n  dim3 kforge_grid_, kforge_block_;\n  size_t kforge_smem_;\n  cudaStream_t kforge_stream_;\n  " +
                  t +
                  "(dim3 grid, dim3 block, size_t smem, cudaStream_t stream)\n      : kforge_grid_(grid), kforge_block_(block), "
                  "kforge_smem_(smem), kforge_stream_(stream) {}\n  void operator()(";
  for (size_t i = 0; i < k.params.size(); ++i) s += (i ? ", " : "") + k.params[i];
  return s + ") const;\n};\n";
}

std::string cubin_launchers(const std::vector<LaunchedKernel>& kernels, const std::string& cubin_symbol) {
  const std::string& c = cubin_symbol;
  std::string s =
      "\n// kforge: the kernels of this file's device half, a cubin linked into the library with their symbols\n"
      "// (env/extension/split_launchers.h), each launched with the configuration its launch gave.\n#include <kforge_cubin.h>\n"
      "extern \"C\" __attribute__((visibility(\"hidden\"))) const unsigned char " +
      c +
      "[];\n"
      "extern \"C\" __attribute__((visibility(\"hidden\"))) const char " +
      c +
      "_names[];\n"
      "static cudaLibrary_t " +
      c + "_library() {\n  static const cudaLibrary_t library = kforge_cubin::load(" + c + ");\n  return library;\n}\n";
  for (const LaunchedKernel& k : kernels) {
    s += "void kforge_launch_" + k.name + "::operator()(";
    for (size_t i = 0; i < k.params.size(); ++i) s += (i ? ", " : "") + k.params[i];
    s +=
        ") const {\n  static const cudaKernel_t kernel = kforge_cubin::kernel(" + c + "_library(), " + c + "_names, \"" + k.name + "\");\n";
    if (k.names.empty()) {
      s += "  void** args = nullptr;\n";
    } else {
      s += "  void* args[] = {";
      for (size_t i = 0; i < k.names.size(); ++i) s += (i ? ", " : "") + std::string("(void*)&") + k.names[i];
      s += "};\n";
    }
    s += "  kforge_cubin::launch(kernel, kforge_grid_, kforge_block_, args, kforge_smem_, kforge_stream_);\n}\n";
  }
  return s;
}

}  // namespace kforge
