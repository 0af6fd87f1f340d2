#pragma once
// What an extension candidate's sources and flags may name (issue 28), checked before any compiler
// runs. They keep honest sources readable and errors early; the guarantee that no source reads a
// file outside the toolchain, torch and the build is the compilers' sandbox
// (env/process/child_sandbox.h), which also holds for the routes no text check can see (a header
// name built by macros, an assembler directive assembled from string pieces).
#include <string>
#include <vector>

namespace kforge {

// What the build makes of a file of the candidate: .cu files go to nvcc, .cpp (.cc, .cxx) to the
// C++ compiler, headers (include_guard.h, is_header_path) are included; anything else is not built.
enum class ExtensionFileKind { cuda, host, header, other };
ExtensionFileKind extension_file_kind(const std::string& path);

// A path inside the candidate: relative, no "..", letters, digits, '_', '-', '.'. Throws a spec error.
void check_extension_path(const std::string& path);

// The include sandbox's scan (env/compile/include_guard.h, the kernel kind's, on the one lexer of
// CUDA source): every #include and __has_include names a <header> without "..", an absolute path
// or a computed name, or a "file" of the candidate that stays inside it; #include_next, #import,
// #embed, file-naming pragmas and strings holding the assembler's .incbin or .include are refused.
// Throws a spec error listing every finding, each as "path:line: ...".
void check_extension_includes(const std::string& path, const std::string& text);

// Flags a candidate may pass to its compiles (load_inline's extra_cflags / extra_cuda_cflags):
// optimisation, architecture-neutral code generation and warnings. Anything else (include paths,
// -D of reserved names, plugins, output files, linker flags) is a spec error naming the flag.
std::vector<std::string> extension_flags(const std::vector<std::string>& flags, const std::string& what);

}  // namespace kforge
