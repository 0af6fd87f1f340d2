#pragma once
// The include sandbox of kernel candidates: a scan of kernel.cu's preprocessor directives made
// before NVRTC sees it.
//
// Why: NVRTC runs inside kforge's compile worker, which can read whatever that process can read.
// An `#include` with an absolute path, `..` components or a quoted name (searched next to the
// source, i.e. in the worker's working directory) would pull a harness file (a task's reference
// data, a config, the verdict channel) into the compile, and the compiler's error messages
// print the included lines back to the policy. A candidate is one file: it may include only
// NVRTC's built-in headers and headers under the configured include directories (the CUDA
// toolkit's headers and CCCL), always as `#include <relative/name.h>`.
//
// What is refused, each with "kernel.cu:LINE: ..." (line numbers of the original file):
//   - `#include "x.h"` (quoted), `#include MACRO` (computed: the scan cannot see the final name),
//     `#include <...>` with an absolute path, a backslash, a `..` component or unusual characters;
//   - `#include_next`, `#import`, `#embed` and `#include_alias`-style directives;
//   - `__has_include`/`__has_include_next` probes with the same kinds of names (they reveal
//     whether a file exists);
//   - pragmas that name or create files (`include_alias`, `GCC dependency`, `hdrstop`, `no_pch`,
//     anything mentioning pch or include), as `#pragma` or as `_Pragma("...")`/`__pragma(...)`;
//   - `#define`/`#undef` of macros that configure the toolkit headers: names starting with `_`
//     (reserved to the implementation) or `THRUST_`, `CUB_`, `CCCL_`, `LIBCUDACXX_`, `NV_`.
//     Thrust computes include names from such macros (`#include THRUST_MR_STD_MR_HEADER`), so a
//     candidate defining one could make a toolkit header include any file.
// Directives are scanned whatever the `#if` state around them (a refused include inside `#if 0`
// is refused too): the scan reads the tokens of env/cuda_source/cuda_lexer.h, the lexer every scan of
// candidate source shares (backslash-newline continuations joined, comments as spaces, string,
// character and raw string literals as one token each, header names as the compiler reads them).
//
// The scan is one layer; the compile worker's process limits are the other (see env/process/sandbox.h).
#include <string>
#include <vector>

namespace kforge {

struct IncludeDirective {
  int line = 0;        // 1-based line of kernel.cu
  std::string header;  // the name between < and >
};

struct SourceScan {
  std::vector<std::string> errors;         // "kernel.cu:LINE: ..." for every refused construct
  std::vector<IncludeDirective> includes;  // every accepted #include <...>, in order
  // Line of the first thing that is neither a blank line, a comment, an `#include <...>` nor a
  // `#pragma` (code or another directive); 0 when there is none.
  int first_non_include_line = 0;
  bool ok() const { return errors.empty(); }
};

// What a scan allows beyond the kernel kind's one file (the extension kind's sources,
// env/extension/source_rules.h).
struct IncludePolicy {
  // `#include "x.h"` and `__has_include("x.h")` naming a header of the candidate (.h, .cuh, .hpp,
  // .inl): resolved next to `file_name`, never leaving the candidate, no absolute path. The kernel
  // kind allows none.
  bool quoted_in_candidate = false;
  // Refuse `#define` of names that configure the toolkit's headers (`_*`, THRUST_, CUB_, ...).
  bool reserved_macros = true;
};

// Whether `path` names a header by its extension: .h, .cuh, .hpp or .inl.
bool is_header_path(const std::string& path);

// Scans a candidate's source; `file_name` prefixes the messages (and places quoted includes).
// Whatever the policy, string literals that hold the assembler's file directives (`.incbin`,
// `.include`) are refused.
SourceScan scan_kernel_source(const std::string& source, const std::string& file_name = "kernel.cu", IncludePolicy policy = {});

}  // namespace kforge
