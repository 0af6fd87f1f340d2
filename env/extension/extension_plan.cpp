// Reading the extension plan strictly, and the build it implies (extension_plan.h).
#include "env/extension/extension_plan.h"

#include <algorithm>
#include <set>

#include "configs/error.h"
#include "env/process/strict_json.h"

namespace kforge {

namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

ExtensionArg parse_arg(const Json& j, const std::string& path) {
  StrictObject o(j, path);
  ExtensionArg a;
  int kinds = 0;
  auto take = [&](const char* key, ExtensionArg::Kind k) {
    if (!o.has(key)) return;
    ++kinds;
    a.kind = k;
    if (k == ExtensionArg::Kind::literal) {
      a.literal = o.raw(key);
      KFORGE_CHECK(a.literal.is_number() || a.literal.is_boolean() || a.literal.is_null(), spec,
                   o.path(key) << " must be a number, a bool or null");
    } else {
      a.name = o.req<std::string>(key);
    }
  };
  take("input", ExtensionArg::Kind::input);
  take("init_arg", ExtensionArg::Kind::init_arg);
  take("parameter", ExtensionArg::Kind::parameter);
  take("literal", ExtensionArg::Kind::literal);
  take("value", ExtensionArg::Kind::value);
  KFORGE_CHECK(kinds == 1, spec, path << " must have exactly one of input, init_arg, parameter, literal, value");
  a.index = o.opt<int64_t>("index");
  KFORGE_CHECK(!a.index || a.kind == ExtensionArg::Kind::init_arg || a.kind == ExtensionArg::Kind::value, spec,
               path << ".index applies to init_arg and value only");
  a.contiguous = o.opt<bool>("contiguous").value_or(false);
  o.done();
  return a;
}

ExtensionCall parse_call(const Json& j, const std::string& path, const std::set<std::string>& made) {
  StrictObject o(j, path);
  ExtensionCall c;
  c.fn = o.req<std::string>("fn");
  const Json& args = o.raw("args");
  KFORGE_CHECK(args.is_array(), spec, o.path("args") << " must be a list");
  for (size_t i = 0; i < args.size(); ++i) c.args.push_back(parse_arg(args[i], o.path("args") + "[" + std::to_string(i) + "]"));
  const Json& kw = o.raw("kwargs");
  KFORGE_CHECK(kw.is_object(), spec, o.path("kwargs") << " must be a map");
  for (auto it = kw.begin(); it != kw.end(); ++it)
    c.kwargs.emplace_back(it.key(), parse_arg(it.value(), o.path("kwargs") + "." + it.key()));
  c.result = o.req<std::string>("result");
  c.line = o.req<int64_t>("line");
  o.done();
  auto check_made = [&](const ExtensionArg& a) {
    KFORGE_CHECK(a.kind != ExtensionArg::Kind::value || made.count(a.name), spec,
                 path << " reads '" << a.name << "' before a call made it");
  };
  for (const auto& a : c.args) check_made(a);
  for (const auto& [k, a] : c.kwargs) check_made(a);
  return c;
}

}  // namespace

std::vector<std::string> ExtensionPlan::parameters() const {
  std::vector<std::string> out;
  auto add = [&](const ExtensionArg& a) {
    if (a.kind == ExtensionArg::Kind::parameter && std::find(out.begin(), out.end(), a.name) == out.end()) out.push_back(a.name);
  };
  for (const auto& c : calls) {
    for (const auto& a : c.args) add(a);
    for (const auto& [k, a] : c.kwargs) add(a);
  }
  for (const auto& r : returns) add(r);
  return out;
}

ExtensionPlan parse_extension_plan(const Json& j) {
  StrictObject o(j, "plan");
  const int64_t version = o.req<int64_t>("version");
  KFORGE_CHECK(version == 1, spec, "plan.version " << version << " is not one this kforge reads (1)");
  ExtensionPlan p;
  p.format = o.req<std::string>("format");
  KFORGE_CHECK(p.format == "cuda_agent" || p.format == "load_inline" || p.format == "cpp_extension_load", spec,
               "plan.format '" << p.format << "' is not cuda_agent, load_inline or cpp_extension_load");
  p.module = o.req<std::string>("module");
  p.sources = o.raw("sources");
  KFORGE_CHECK(p.sources.is_object(), spec, "plan.sources must be a map");
  const Json& init = o.raw("init_args");
  KFORGE_CHECK(init.is_array(), spec, "plan.init_args must be a list");
  for (size_t i = 0; i < init.size(); ++i) {
    StrictObject a(init[i], "plan.init_args[" + std::to_string(i) + "]");
    ExtensionInitArg ia{a.req<std::string>("name"), std::nullopt};
    if (a.has("default")) ia.dflt = a.raw("default");
    a.done();
    p.init_args.push_back(ia);
  }
  o.raw("attrs");  // what __init__ set: informational here (the calls already resolve every read)
  const Json& fa = o.raw("forward_args");
  KFORGE_CHECK(fa.is_array(), spec, "plan.forward_args must be a list");
  for (const auto& n : fa) {
    KFORGE_CHECK(n.is_string(), spec, "plan.forward_args holds names");
    p.forward_args.push_back(n.get<std::string>());
  }
  const Json& calls = o.raw("calls");
  KFORGE_CHECK(calls.is_array(), spec, "plan.calls must be a list");
  std::set<std::string> made;
  for (size_t i = 0; i < calls.size(); ++i) {
    p.calls.push_back(parse_call(calls[i], "plan.calls[" + std::to_string(i) + "]", made));
    KFORGE_CHECK(made.insert(p.calls.back().result).second, spec,
                 "plan.calls[" << i << "].result '" << p.calls.back().result << "' is made twice");
  }
  const Json& ret = o.raw("returns");
  KFORGE_CHECK(ret.is_array() && !ret.empty(), spec, "plan.returns must be a non-empty list");
  for (size_t i = 0; i < ret.size(); ++i) {
    const std::string path = "plan.returns[" + std::to_string(i) + "]";
    p.returns.push_back(parse_arg(ret[i], path));
    const ExtensionArg& r = p.returns.back();
    KFORGE_CHECK(r.kind == ExtensionArg::Kind::input || r.kind == ExtensionArg::Kind::parameter || r.kind == ExtensionArg::Kind::value,
                 spec, path << " must be a tensor: an input, a parameter or a call's value");
    KFORGE_CHECK(r.kind != ExtensionArg::Kind::value || made.count(r.name), spec, path << " reads '" << r.name << "', which no call made");
  }
  o.done();
  return p;
}

namespace {

std::vector<std::string> string_list(const Json& sources, const std::string& key) {
  std::vector<std::string> out;
  if (!sources.contains(key)) return out;
  const Json& v = sources.at(key);
  KFORGE_CHECK(v.is_array(), spec, "plan.sources." << key << " must be a list");
  for (const auto& s : v) {
    KFORGE_CHECK(s.is_string(), spec, "plan.sources." << key << " holds strings");
    out.push_back(s.get<std::string>());
  }
  return out;
}

bool is_source_or_header(const std::string& p) {
  for (const char* e : {".cu", ".cpp", ".cc", ".cxx", ".h", ".cuh", ".hpp", ".inl"})
    if (ends_with(p, e)) return true;
  return false;
}

}  // namespace

ExtensionBuildRequest plan_build_request(const ExtensionPlan& plan, const std::map<std::string, std::string>& files) {
  ExtensionBuildRequest r;
  const Json& s = plan.sources;
  if (plan.format == "load_inline") {
    r = load_inline_request(s.at("name").get<std::string>(), s.at("cpp_sources").get<std::string>(),
                            s.at("cuda_sources").get<std::string>(), string_list(s, "functions"));
  } else if (plan.format == "cpp_extension_load") {
    r.module_name = s.at("name").get<std::string>();
    r.cuda_agent_module = false;
    std::vector<std::string> named = string_list(s, "files");
    for (const auto& [path, text] : files) {
      const bool is_named = std::find(named.begin(), named.end(), path) != named.end();
      const bool header = is_source_or_header(path) && !ends_with(path, ".cu") && !ends_with(path, ".cpp") && !ends_with(path, ".cc") &&
                          !ends_with(path, ".cxx");
      if (is_named || header) r.files.push_back({path, text});
    }
    for (const auto& n : named) KFORGE_CHECK(files.count(n), spec, "plan.sources.files names '" << n << "', which the candidate lacks");
  } else {  // cuda_agent: kernels/ and the top level, as CUDA Agent's compile step takes them
    r.module_name = "cuda_extension";
    for (const auto& [path, text] : files) {
      const bool top = path.find('/') == std::string::npos;
      const bool kernels = path.rfind("kernels/", 0) == 0 && path.find('/', 8) == std::string::npos;
      if ((top || kernels) && is_source_or_header(path) && path != "binding.cpp" && path != "binding_registry.h")
        r.files.push_back({path, text});
    }
  }
  if (plan.format != "cuda_agent") {
    for (const auto& f : string_list(s, "extra_ldflags"))
      KFORGE_CHECK(f.empty(), spec,
                   "plan.sources.extra_ldflags: '" << f << "' is not allowed (the library links torch and the CUDA runtime only)");
    r.extra_cflags = string_list(s, "extra_cflags");
    r.extra_cuda_cflags = string_list(s, "extra_cuda_cflags");
  }
  return r;
}

}  // namespace kforge
