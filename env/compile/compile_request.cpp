#include "env/compile/compile_request.h"

#include "configs/error.h"
#include "env/process/strict_json.h"

namespace kforge {

namespace {

Json resources_json(const KernelResources& k) {
  return {{"name", k.name},
          {"registers", k.registers},
          {"static_shared_bytes", k.static_shared_bytes},
          {"local_bytes", k.local_bytes},
          {"spill_store_bytes", k.spill_store_bytes},
          {"spill_load_bytes", k.spill_load_bytes},
          {"const_bytes", k.const_bytes},
          {"max_threads_per_block", k.max_threads_per_block}};
}

KernelResources parse_resources(const Json& j, const std::string& path) {
  StrictObject o(j, path);
  KernelResources k;
  k.name = o.req<std::string>("name");
  k.registers = o.req<int>("registers");
  k.static_shared_bytes = o.req<int>("static_shared_bytes");
  k.local_bytes = o.req<int>("local_bytes");
  k.spill_store_bytes = o.req<int>("spill_store_bytes");
  k.spill_load_bytes = o.req<int>("spill_load_bytes");
  k.const_bytes = o.req<int>("const_bytes");
  k.max_threads_per_block = o.req<int>("max_threads_per_block");
  o.done();
  return k;
}

}  // namespace

Json to_json(const CompileRequest& r) {
  return {{"type", "compile"},
          {"source", r.source},
          {"options", {{"arch", r.options.arch}, {"use_fast_math", r.options.use_fast_math}, {"maxrregcount", r.options.maxrregcount}}}};
}

CompileRequest parse_compile_request(const Json& j) {
  StrictObject o(j, "request");
  const std::string type = o.req<std::string>("type");
  KFORGE_CHECK(type == "compile", spec, "request.type must be compile, got '" << type << "' (a compile worker)");
  CompileRequest r;
  r.source = o.req<std::string>("source");
  StrictObject opt(o.raw("options"), o.path("options"));
  r.options.arch = opt.req<std::string>("arch");
  r.options.use_fast_math = opt.req<bool>("use_fast_math");
  r.options.maxrregcount = opt.req<int>("maxrregcount");
  opt.done();
  o.done();
  return r;
}

Json compile_result_json(const CompileResult& r) {
  Json resources = Json::array();
  for (const auto& k : r.resources) resources.push_back(resources_json(k));
  return {{"ok", r.ok},
          {"log", r.log},
          {"kernels", r.kernels},
          {"resources", resources},
          {"compile_ms", r.compile_ms},
          {"cache_hit", r.cache_hit},
          {"hash", r.hash},
          {"pch", r.pch}};
}

CompileResult parse_compile_result(const Json& j, const std::string& path) {
  StrictObject o(j, path);
  CompileResult r;
  r.ok = o.req<bool>("ok");
  r.log = o.req<std::string>("log");
  r.kernels = o.req<std::vector<std::string>>("kernels");
  const Json& res = o.raw("resources");
  KFORGE_CHECK(res.is_array(), spec, o.path("resources") << " must be a list");
  for (size_t i = 0; i < res.size(); ++i)
    r.resources.push_back(parse_resources(res[i], o.path("resources") + "[" + std::to_string(i) + "]"));
  r.compile_ms = o.req<double>("compile_ms");
  r.cache_hit = o.req<bool>("cache_hit");
  r.hash = o.req<std::string>("hash");
  r.pch = o.req<std::string>("pch");
  o.done();
  return r;
}

Json compile_reply_json(const CompileResult& r) {
  return {{"ok", true}, {"compile", compile_result_json(r)}, {"cubin", Json::binary(r.cubin)}};
}

CompileResult parse_compile_reply(const Json& j) {
  StrictObject o(j, "reply");
  KFORGE_CHECK(o.req<bool>("ok"), spec, "reply.ok must be true for a compile's result");
  CompileResult r = parse_compile_result(o.raw("compile"), o.path("compile"));
  const Json& bin = o.raw("cubin");
  KFORGE_CHECK(bin.is_binary(), spec, "reply.cubin must be binary");
  r.cubin = bin.get_binary();
  o.done();
  return r;
}

}  // namespace kforge
