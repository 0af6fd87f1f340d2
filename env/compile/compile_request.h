#pragma once
// The one contract between the evaluator and the compile worker (kforge-compile-worker): both
// sides include this header, and neither builds or reads a compile request or reply by hand. A
// request and its reply travel as msgpack maps (worker_protocol.h's framing); the parse functions
// accept exactly the keys the encoders write, each with its type, so a missing, misspelt or
// mistyped key is a spec error naming its path (the worker answers bad_request), never a silent
// default. Like gpu_request.h for the GPU worker.
#include <string>

#include "env/compile/nvrtc_compiler.h"
#include "env/process/worker_protocol.h"

namespace kforge {

struct CompileRequest {
  std::string source;  // kernel.cu
  // arch, use_fast_math and maxrregcount travel; line_info is always the worker's default.
  CompileOptions options;
};

Json to_json(const CompileRequest& r);
CompileRequest parse_compile_request(const Json& j);

// The reply of a compile: {"ok": true, "compile": {...}, "cubin": binary}. `compile` is the
// report's compile section as the compiler gives it (env/evaluator/EVAL_REPORT.md); the cubin travels
// beside it. CompileResult::prelude stays in the worker.
Json compile_reply_json(const CompileResult& r);
CompileResult parse_compile_reply(const Json& j);

// The `compile` map of a reply alone (the report's compile section writes it back).
Json compile_result_json(const CompileResult& r);
CompileResult parse_compile_result(const Json& j, const std::string& path);

}  // namespace kforge
