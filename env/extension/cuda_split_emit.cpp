// The split's writing half (cuda_split.h): host code checked to name no device symbol but in a
// launch, each launch rewritten to a call of its kernel's launcher, and the two files' text. The
// reading half is cuda_split.cpp (cuda_split_internal.h).
#include "env/extension/cuda_split.h"

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "env/extension/cuda_split_internal.h"
#include "env/extension/split_launchers.h"

namespace kforge::cuda_split_detail {

// Host code names no device symbol but in a launch; device code names no host declaration.
void Splitter::check_names() {
  std::set<std::string> dev, host;
  for (const auto& e : elements_) {
    if (e.directive) continue;
    if (e.side == Side::device) dev.insert(e.declares.begin(), e.declares.end());
    if (e.side == Side::host) host.insert(e.declares.begin(), e.declares.end());
  }
  for (auto& e : elements_) {
    if (e.directive) continue;
    for (size_t q = e.first; q <= e.last; ++q) {
      const CudaToken& x = t_[q];
      if (x.directive || x.kind != TokenKind::identifier) continue;
      if (q > e.first && (t_[q - 1].is(".") || t_[q - 1].is("->"))) continue;
      if (e.side != Side::device && kernels_.count(x.text) && q + 1 <= e.last && t_[q + 1].is("<"))
        refuse(x.line, "a launch with template arguments (or another use of the template kernel '" + x.text + "')");
      if (e.side != Side::device && dev.count(x.text) && !(e.side == Side::host && launch_open(q + 1)))
        refuse(x.line, "host code names the device symbol '" + x.text + "' other than in a launch");
      if (e.side != Side::host && host.count(x.text))
        refuse(x.line, "device code names '" + x.text + "', which the split puts in the host file");
      if (e.side == Side::both && launch_open(q + 1)) refuse(x.line, "a kernel launch outside a host-only function");
    }
    if (e.side == Side::host) e.text = rewrite_launches(e);
  }
}

// The item's text with every `K<<<cfg>>>(args)` made a call of K's launcher.
std::string Splitter::rewrite_launches(const Element& e) {
  std::string out;
  size_t at = t_[e.first].begin;
  for (size_t q = e.first; q <= e.last; ++q) {
    if (t_[q].directive || !launch_open(q)) continue;
    const int line = t_[q].line;
    if (q == e.first) refuse(line, "a launch of something other than a kernel's name");
    if (t_[q - 1].kind != TokenKind::identifier)
      refuse(line, t_[q - 1].is(">") ? "a launch with template arguments" : "a launch of something other than a kernel's name");
    const size_t nq = q - 1;
    const std::string& name = t_[nq].text;
    if (nq > e.first && (t_[nq - 1].is("::") || t_[nq - 1].is(".") || t_[nq - 1].is("->")))
      refuse(line, "a launch of a qualified name ('" + name + "')");
    auto it = kernels_.find(name);
    if (it == kernels_.end()) refuse(line, "a launch of '" + name + "', not a kernel of this source");
    if (it->second.templ) refuse(line, "a launch of the template kernel '" + name + "'");
    // The configuration: 2 to 4 expressions up to `>>>`.
    std::vector<std::pair<size_t, size_t>> parts;
    size_t p = q + 2, part_begin = p;
    int depth = 0, angle = 0;  // angle: `<` not yet closed at depth 0 (template arguments or a comparison)
    for (; p <= e.last; ++p) {
      const CudaToken& x = t_[p];
      if (x.directive) refuse(x.line, "a directive inside a launch");
      if (depth == 0 && launch_close(p)) break;
      if (x.is("(") || x.is("[") || x.is("{")) ++depth;
      if (x.is(")") || x.is("]") || x.is("}")) --depth;
      if (depth == 0 && x.is("<")) ++angle;
      if (depth == 0 && x.is(">") && angle > 0) --angle;
      if (depth == 0 && x.is(",")) {
        // A comma after an open `<` may be a template argument list's: which one is ambiguous.
        if (angle > 0) refuse(x.line, "a launch configuration with a ',' after an unclosed '<'");
        parts.push_back({part_begin, p});
        part_begin = p + 1;
      }
    }
    if (p > e.last) refuse(line, "a launch configuration that does not end");
    parts.push_back({part_begin, p});
    if (parts.size() < 2 || parts.size() > 4) refuse(line, "a launch configuration of " + std::to_string(parts.size()) + " expressions");
    for (const auto& [b, en] : parts)
      if (b >= en) refuse(line, "an empty launch configuration expression");
    const size_t open = p + 2;
    if (open > e.last || !t_[open].is("(")) refuse(line, "a launch without its argument list");
    size_t close = open + 1;
    for (depth = 0; close <= e.last; ++close) {
      if (t_[close].directive) continue;
      if (depth == 0 && t_[close].is(")")) break;
      if (t_[close].is("(") || t_[close].is("[") || t_[close].is("{")) ++depth;
      if (t_[close].is(")") || t_[close].is("]") || t_[close].is("}")) --depth;
    }
    if (close > e.last) refuse(line, "a launch whose argument list does not end");
    // (kforge_launch_K(grid, block, smem, stream))(args): the configuration is evaluated before the
    // arguments (C++17 sequences a call's callee before its arguments), as <<<>>> does.
    std::string call = "(kforge_launch_" + name + "(";
    for (size_t i = 0; i < 4; ++i) {
      if (i) call += ", ";
      call += i < parts.size() ? "(" + span(parts[i].first, parts[i].second - 1) + ")" : "0";
    }
    call += "))(" + chars(t_[open].end, t_[close].begin) + ")";
    out += chars(at, t_[nq].begin) + call;
    at = t_[close].end;
    it->second.launched = true;
    ++launches_;
    q = close;
  }
  return out + chars(at, t_[e.last].end);
}

CudaSplit Splitter::emit() {
  for (const auto& [name, k] : kernels_)
    if (k.launched && !k.defined) refuse(t_[elements_[k.first_decl].first].line, "kernel '" + name + "' is launched but not defined here");
  CudaSplit s;
  s.device_cu = "// kforge: the device half of " + path_ +
                " (issue 28's split; env/extension/cuda_split.h): torch-free, for nvcc -cubin. The standard headers\n"
                "// torch's would have brought, then the source's own device code and shared declarations.\n"
                "#include <cstddef>\n#include <cstdint>\n#include <cmath>\n#include <cfloat>\n#include <climits>\n"
                "#include <algorithm>\n#include <limits>\n#include <type_traits>\n#include <utility>\n#include <cuda_runtime.h>\n";
  s.host_cpp = "// kforge: the host half of " + path_ +
               " (issue 28's split; env/extension/cuda_split.h): each launch is a call of the kernel's launcher,\n"
               "// which launches it from the device half's cubin (split_launchers.h).\n#include <cuda_runtime.h>\n";
  for (size_t ei = 0; ei < elements_.size(); ++ei) {
    const Element& e = elements_[ei];
    const std::string mark = line_mark(t_[e.first].line);
    const std::string text = e.side == Side::host && !e.directive ? e.text : span(e.first, e.last);
    if (e.side != Side::host) s.device_cu += mark + text + "\n";
    if (e.side != Side::device) s.host_cpp += mark + text + "\n";
    if (e.kernel) {
      const std::string& name = *e.declares.begin();
      const Kernel& k = kernels_.at(name);
      if (k.launched && k.first_decl == ei) s.host_cpp += launcher_type(launched_kernel(name, k));
    }
  }
  std::vector<LaunchedKernel> all;
  for (const auto& [name, k] : kernels_)
    if (k.launched) {
      s.launched.push_back(name);
      all.push_back(launched_kernel(name, k));
    }
  if (!all.empty()) s.host_cpp += cubin_launchers(all, cubin_symbol_);
  s.host_uses_torch = host_uses_torch_;
  s.launches = launches_;
  s.ok = true;
  return s;
}

}  // namespace kforge::cuda_split_detail
