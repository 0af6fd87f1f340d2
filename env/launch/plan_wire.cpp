#include "env/launch/plan_wire.h"

#include <map>

#include "configs/error.h"
#include "env/launch/launch_plan.h"
#include "env/process/strict_json.h"

namespace kforge {

namespace {

const std::map<std::string, WireArg::Kind>& arg_kinds() {
  static const std::map<std::string, WireArg::Kind> kinds = {
      {"argument", WireArg::argument}, {"output", WireArg::output}, {"workspace", WireArg::workspace},
      {"i32", WireArg::i32},           {"u32", WireArg::u32},       {"i64", WireArg::i64},
      {"u64", WireArg::u64},           {"f32", WireArg::f32},       {"f64", WireArg::f64}};
  return kinds;
}

const char* kind_name(WireArg::Kind k) {
  for (const auto& [name, kind] : arg_kinds())
    if (kind == k) return name.c_str();
  return "?";
}

Json arg_json(const WireArg& a) {
  if (a.is_buffer()) return {{"kind", kind_name(a.kind)}, {"index", a.index}};
  if (a.kind == WireArg::f32 || a.kind == WireArg::f64) return {{"kind", kind_name(a.kind)}, {"value", a.f}};
  return {{"kind", kind_name(a.kind)}, {"value", a.i}};
}

WireArg parse_arg(const Json& j, const std::string& path) {
  StrictObject o(j, path);
  const std::string kind = o.req<std::string>("kind");
  auto it = arg_kinds().find(kind);
  KFORGE_CHECK(it != arg_kinds().end(), spec, path << ".kind: unknown argument kind '" << kind << "'");
  WireArg a;
  a.kind = it->second;
  if (a.is_buffer())
    a.index = o.req<int>("index");
  else if (a.kind == WireArg::f32 || a.kind == WireArg::f64)
    a.f = o.req<double>("value");
  else
    a.i = o.req<int64_t>("value");
  o.done();
  return a;
}

WireLaunch parse_launch(const Json& j, const std::string& path) {
  StrictObject o(j, path);
  WireLaunch l;
  l.kernel = o.req<std::string>("kernel");
  l.where = o.req<std::string>("where");
  const auto grid = o.req<std::vector<uint32_t>>("grid"), block = o.req<std::vector<uint32_t>>("block");
  KFORGE_CHECK(grid.size() == 3 && block.size() == 3, spec, path << ": grid and block must have three dimensions");
  for (int d = 0; d < 3; ++d) {
    l.grid[d] = grid[d];
    l.block[d] = block[d];
    KFORGE_CHECK(l.grid[d] >= 1 && l.block[d] >= 1, spec, "launch of " << l.kernel << " has an empty grid or block");
  }
  l.smem = o.req<uint32_t>("shared_mem");
  const Json& args = o.raw("args");
  KFORGE_CHECK(args.is_array(), spec, o.path("args") << " must be a list");
  for (size_t i = 0; i < args.size(); ++i) l.args.push_back(parse_arg(args[i], o.path("args") + "[" + std::to_string(i) + "]"));
  o.done();
  return l;
}

}  // namespace

Json to_json(const WirePlan& p) {
  Json ws = Json::array();
  for (const auto& w : p.workspace)
    ws.push_back({{"name", w.name}, {"dtype", dtype_name(w.dtype)}, {"elements", w.elements}, {"zero", w.zero}});
  Json launches = Json::array();
  for (const auto& l : p.launches) {
    Json args = Json::array();
    for (const auto& a : l.args) args.push_back(arg_json(a));
    launches.push_back({{"kernel", l.kernel},
                        {"grid", {l.grid[0], l.grid[1], l.grid[2]}},
                        {"block", {l.block[0], l.block[1], l.block[2]}},
                        {"shared_mem", l.smem},
                        {"args", args},
                        {"where", l.where}});
  }
  return {{"workspace", ws}, {"launches", launches}};
}

WirePlan parse_wire_plan(const Json& j, const std::string& path) {
  StrictObject o(j, path);
  WirePlan p;
  const Json& ws = o.raw("workspace");
  KFORGE_CHECK(ws.is_array(), spec, o.path("workspace") << " must be a list");
  for (size_t i = 0; i < ws.size(); ++i) {
    StrictObject w(ws[i], o.path("workspace") + "[" + std::to_string(i) + "]");
    WireWorkspace b{w.req<std::string>("name"), dtype_from_name(w.req<std::string>("dtype")), w.req<int64_t>("elements"),
                    w.req<bool>("zero")};
    w.done();
    KFORGE_CHECK(b.elements >= 1, spec, "workspace " << b.name << " has no elements");
    p.workspace.push_back(std::move(b));
  }
  const Json& launches = o.raw("launches");
  KFORGE_CHECK(launches.is_array(), spec, o.path("launches") << " must be a list");
  for (size_t i = 0; i < launches.size(); ++i)
    p.launches.push_back(parse_launch(launches[i], o.path("launches") + "[" + std::to_string(i) + "]"));
  o.done();
  // No launch only at an empty shape, where each launch's grid had no block (resolve_plan).
  return p;
}

WirePlan wire_plan_of(const ResolvedPlan& p) {
  WirePlan w;
  for (const auto& ws : p.workspace) w.workspace.push_back({ws.name, ws.dtype, ws.elements, ws.zero});
  for (const auto& l : p.launches) {
    WireLaunch wl;
    wl.kernel = l.kernel;
    wl.where = l.where;
    for (int d = 0; d < 3; ++d) {
      wl.grid[d] = l.grid[d];
      wl.block[d] = l.block[d];
    }
    wl.smem = l.shared_mem;
    for (const auto& a : l.args) {
      WireArg arg;
      switch (a.kind) {
        case ResolvedArg::buffer:
          arg.kind = a.ref.role == BufferRole::output      ? WireArg::output
                     : a.ref.role == BufferRole::workspace ? WireArg::workspace
                                                           : WireArg::argument;
          arg.index = a.ref.index;
          break;
        case ResolvedArg::i32:
          arg.kind = WireArg::i32;
          break;
        case ResolvedArg::u32:
          arg.kind = WireArg::u32;
          break;
        case ResolvedArg::i64:
          arg.kind = WireArg::i64;
          break;
        case ResolvedArg::u64:
          arg.kind = WireArg::u64;
          break;
        case ResolvedArg::f32:
          arg.kind = WireArg::f32;
          break;
        case ResolvedArg::f64:
          arg.kind = WireArg::f64;
          break;
      }
      arg.i = a.i;
      arg.f = a.f;
      wl.args.push_back(arg);
    }
    w.launches.push_back(std::move(wl));
  }
  return w;
}

}  // namespace kforge
