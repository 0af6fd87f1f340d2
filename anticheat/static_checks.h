#pragma once
// Static anti-cheat checks of `kernel` candidates (env/launch/KERNEL_FORMAT.md): a scan of kernel.cu's
// text, before anything is compiled, for what an honest kernel never needs and a cheating one
// does. Rules (each a `check` name of the findings):
//   timer         reading a clock or timer (%globaltimer, %clock, %clock64, %pm0..7 in inline
//                 PTX; clock(), clock64(), cuda::std::chrono, cuda::ptx::get_sreg_globaltimer and
//                 the like) or sleeping (__nanosleep): a kernel that knows the time can tell the
//                 timed calls from the checked ones;
//   global_state  mutable __device__ / __managed__ variables, static variables (function-local or
//                 not), .global variables declared in inline PTX, device-heap allocations
//                 (malloc, new) and atomics on such variables: state that outlives a call can
//                 count calls or cache answers by pointer. __constant__, __shared__, const and
//                 constexpr tables and local variables are fine;
//   printf        device printf (it floods the log and is a side channel);
//   l2_residency  L2 persistence / priority hints that could keep lines resident across the
//                 harness's L2 flush: PTX createpolicy, evict_last (.L2::evict_last,
//                 .L1::evict_last, EVICT_LAST, cuda::ptx::..._evict_last...), .L2::cache_hint,
//                 cuda::access_property (persisting), cuda::annotated_ptr,
//                 cuda::apply_access_property / associate_access_property,
//                 cudaAccessPropertyPersisting. The flush writes twice the L2's size with normal
//                 priority; lines marked evict_last or persisting may survive it, so a timed call
//                 would read its data from a warm cache;
//   launch_identity  reading which launch a call is: %gridid and %current_graph_exec in inline
//                 PTX; __nvvm_read_ptx_sreg_gridid, cuda::ptx::get_sreg_gridid /
//                 get_sreg_current_graph_exec, cudaGetCurrentGraphExec. The grid id numbers the
//                 launches in the CUDA context, so the distance between a kernel's calls tells how
//                 many harness kernels ran in between, which can differ between verified and timed
//                 calls; and the driver-defined %envreg0..31 (inline PTX, sreg readers), whose
//                 per-launch contents the harness does not fix;
//   inline_asm    any inline assembly (off by default: honest kernels use PTX for cp.async,
//                 ldmatrix, mma; the asm text is scanned by the rules above either way);
//   forbidden_identifier  a name listed in the config;
//   macro_expansion       macros expanding beyond what the scan follows (the source is refused).
//
// What the scan sees, so that a rule is not dodged by spelling: backslash-newline continuations
// are joined, comments dropped, digraphs and universal character names (\u0063lock64) read as
// the compiler reads them; `#if 0` groups are skipped and every other conditional group is
// scanned; macros are expanded as the preprocessor does (object- and function-like, # and ##,
// rescanning), and every #define body is scanned too, used or not; adjacent string literals are
// concatenated after expansion and their escapes decoded. String literals are otherwise not
// scanned, except inside asm(...), where they are the PTX. A finding names the line of kernel.cu
// (for text a macro produced, the line that uses the macro).
//
// A text scan cannot see everything (a const table written through a cast, state reached through
// a raw address); the checks on compiled code and the dynamic checks are the other layers
// (anticheat/README.md).
#include <string>
#include <vector>

#include "anticheat/dynamic_checks.h"

namespace kforge {

class YamlNode;

// configs/anticheat.yaml, section `static:`. Defaults here; the YAML file documents them.
struct StaticCheckConfig {
  bool forbid_timers = true;                       // clocks, timers and sleeps, in C++ and in inline PTX
  bool forbid_inline_asm = false;                  // any asm(...) at all
  bool forbid_printf = true;                       // device printf / vprintf
  bool forbid_global_state = true;                 // state that persists between calls (see above)
  bool forbid_l2_residency = true;                 // L2 evict_last / persisting / cache-policy hints (see above)
  bool forbid_launch_identity = true;              // %gridid, %current_graph_exec and their wrappers (see above)
  std::vector<std::string> forbidden_identifiers;  // extra names, e.g. __trap

  static StaticCheckConfig from_yaml(const YamlNode& node);
};

struct AnticheatConfig {
  StaticCheckConfig static_checks;  // `static:`
  DynamicCheckConfig dynamic;       // `dynamic:` (dynamic_checks.h)

  static AnticheatConfig from_yaml(const YamlNode& node);
  static AnticheatConfig load(const std::string& path);
};

struct CheckFinding {
  std::string
      check;         // timer | global_state | printf | l2_residency | launch_identity | inline_asm | forbidden_identifier | macro_expansion
  std::string file;  // "kernel.cu"
  int line = 0;      // 1-based line in `file`
  std::string evidence;  // that line's text, trimmed
  std::string message;   // the rule broken, for the policy to read
};

struct StaticReport {
  bool passed = true;                  // no findings
  std::vector<CheckFinding> findings;  // by line
};

// Scans a candidate. Never throws for odd input: what cannot be read is scanned as far as it goes.
// `launch_yaml` is taken for plan-level rules; none of today's rules needs it.
StaticReport run_static_checks(const std::string& kernel_source, const std::string& launch_yaml, const StaticCheckConfig& config);

// "kernel.cu:12: <message>\n    <evidence>" for observations and logs.
std::string format_finding(const CheckFinding& finding);

}  // namespace kforge
