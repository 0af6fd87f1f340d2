#include "env/evaluator/eval_report.h"

#include <algorithm>
#include <iomanip>
#include <sstream>

#include "configs/error.h"
#include "env/process/strict_json.h"

namespace kforge {

namespace {

constexpr const char* kSchema = "kforge.eval/1";

const std::pair<Verdict, const char*> kVerdicts[] = {
    {Verdict::pass, "pass"}, {Verdict::fail, "fail"}, {Verdict::cheat, "cheat"}, {Verdict::error, "error"}, {Verdict::checked, "checked"}};

Json compile_json(const CompileSection& c) {
  Json j = c.result ? compile_result_json(*c.result) : Json::object();
  j["ok"] = c.ok;
  j["log"] = c.log;
  j["arch"] = c.arch;
  j["wall_ms"] = c.wall_ms;
  return j;
}

CompileSection parse_compile_section(const Json& j, const std::string& path) {
  KFORGE_CHECK(j.is_object(), spec, path << " must be a map, got " << j.type_name());
  CompileSection c;
  Json rest = j;
  {
    StrictObject o(j, path);
    c.arch = o.req<std::string>("arch");
    c.wall_ms = o.req<double>("wall_ms");
    c.ok = o.req<bool>("ok");
    c.log = o.req<std::string>("log");
  }
  rest.erase("arch");
  rest.erase("wall_ms");
  if (rest.size() > 2) {
    c.result = parse_compile_result(rest, path);
  } else {
    StrictObject o(rest, path);
    o.raw("ok");
    o.raw("log");
    o.done();
  }
  return c;
}

Json extension_json(const ExtensionSection& e) {
  Json steps = Json::array();
  for (const auto& st : e.steps) steps.push_back({{"what", st.what}, {"tool", st.tool}, {"ms", st.ms}, {"cached", st.cached}});
  return {{"format", e.format},     {"glue_ms", e.glue_ms},
          {"build_ms", e.build_ms}, {"library_cached", e.library_cached},
          {"steps", steps},         {"build_filesystem", e.build_filesystem}};
}

ExtensionSection parse_extension_section(const Json& j, const std::string& path) {
  StrictObject o(j, path);
  ExtensionSection e;
  e.format = o.req<std::string>("format");
  e.glue_ms = o.req<double>("glue_ms");
  e.build_ms = o.req<double>("build_ms");
  e.library_cached = o.req<bool>("library_cached");
  e.build_filesystem = o.opt<std::string>("build_filesystem").value_or("");  // absent in reports before it existed
  const Json& steps = o.raw("steps");
  KFORGE_CHECK(steps.is_array(), spec, o.path("steps") << " must be a list");
  for (size_t i = 0; i < steps.size(); ++i) {
    StrictObject so(steps[i], o.path("steps") + "[" + std::to_string(i) + "]");
    e.steps.push_back({so.req<std::string>("what"), so.req<std::string>("tool"), so.req<double>("ms"), so.req<bool>("cached")});
    so.done();
  }
  o.done();
  return e;
}

Json plan_json(const PlanSection& p) { return {{"launches", p.launches}, {"workspace_bytes", p.workspace_bytes}}; }

AnticheatSection parse_anticheat_section(const Json& j, const std::string& path) {
  StrictObject o(j, path);
  AnticheatSection a;
  const Json& checks = o.raw("checks");
  KFORGE_CHECK(checks.is_array(), spec, o.path("checks") << " must be a list");
  for (size_t i = 0; i < checks.size(); ++i) a.checks.push_back(parse_check(checks[i], o.path("checks") + "[" + std::to_string(i) + "]"));
  // verdict, check and message follow from the checks (to_json writes them so).
  o.req<std::string>("verdict");
  o.opt<std::string>("check");
  o.req<std::string>("message");
  o.done();
  return a;
}

}  // namespace

int ShapesSection::counted() const {
  return static_cast<int>(std::count_if(trials.begin(), trials.end(), [](const ShapeTrial& t) { return t.counted; }));
}

int ShapesSection::counted_passed() const {
  return static_cast<int>(
      std::count_if(trials.begin(), trials.end(), [](const ShapeTrial& t) { return t.counted && t.verdict == Verdict::pass; }));
}

void ShapesSection::settle() {
  const int n = counted(), uncounted = static_cast<int>(trials.size()) - n;
  if (trials.empty()) {
    status = "not_tested";
    note = "no other shape or layout applies to this task";
  } else if (n == 0) {
    status = "not_tested";
    note = "the harness could not run any of its " + std::to_string(uncounted) + " trial(s) on this GPU";
  } else {
    status = counted_passed() == n ? "general" : "not_general";
    if (uncounted > 0) note = std::to_string(uncounted) + " trial(s) the harness could not run on this GPU are not counted";
  }
}

Json to_json(const ShapesSection& s) {
  Json trials = Json::array();
  for (const auto& t : s.trials) {
    Json one = {{"dims", t.dims}, {"verdict", verdict_name(t.verdict)}, {"reason", t.reason}, {"wall_ms", t.wall_ms}};
    if (!t.layout.empty()) one["layout"] = t.layout;  // a layout trial; a shape trial has none
    if (!t.counted) one["counted"] = false;           // the harness could not run it
    trials.push_back(std::move(one));
  }
  return {{"status", s.status}, {"trials", trials}, {"note", s.note}, {"wall_ms", s.wall_ms}};
}

namespace {

ShapesSection parse_shapes_section(const Json& j, const std::string& path) {
  StrictObject o(j, path);
  ShapesSection s;
  s.status = o.req<std::string>("status");
  KFORGE_CHECK(s.status == "general" || s.status == "not_general" || s.status == "not_tested", spec,
               o.path("status") << " is '" << s.status << "', not general, not_general or not_tested");
  s.note = o.req<std::string>("note");
  s.wall_ms = o.req<double>("wall_ms");
  const Json& trials = o.raw("trials");
  KFORGE_CHECK(trials.is_array(), spec, o.path("trials") << " must be a list");
  for (size_t i = 0; i < trials.size(); ++i) {
    StrictObject to(trials[i], o.path("trials") + "[" + std::to_string(i) + "]");
    ShapeTrial t;
    const Json& dims = to.raw("dims");
    KFORGE_CHECK(dims.is_object(), spec, to.path("dims") << " must be a map of dimension sizes");
    for (const auto& [k, v] : dims.items()) {
      KFORGE_CHECK(v.is_number_integer(), spec, to.path("dims") << "." << k << " must be an integer");
      t.dims[k] = v.get<int64_t>();
    }
    t.layout = to.opt<std::string>("layout").value_or("");  // absent: a shape trial
    t.verdict = parse_verdict(to.req<std::string>("verdict"));
    t.reason = to.req<std::string>("reason");
    t.wall_ms = to.req<double>("wall_ms");
    t.counted = to.opt<bool>("counted").value_or(true);
    to.done();
    s.trials.push_back(std::move(t));
  }
  o.done();
  return s;
}

template <typename T>
Json section(const std::optional<T>& s) {
  return s ? to_json(*s) : Json(nullptr);
}

}  // namespace

const char* verdict_name(Verdict v) {
  for (const auto& [verdict, name] : kVerdicts)
    if (verdict == v) return name;
  return "error";
}

Verdict parse_verdict(const std::string& name) {
  for (const auto& [verdict, n] : kVerdicts)
    if (name == n) return verdict;
  KFORGE_FAIL(spec, "'" << name << "' is not a verdict (pass, fail, cheat, error, checked)");
}

const CheckOutcome* AnticheatSection::failed() const {
  for (const auto& c : checks)
    if (!c.passed) return &c;
  return nullptr;
}

void EvalReport::settle_verdict() {
  if (anticheat && anticheat->failed()) verdict = Verdict::cheat;
}

Json to_json(const AnticheatSection& a) {
  std::vector<Json> checks;
  for (const auto& c : a.checks) checks.push_back(check_to_json(c));
  return anticheat_section(checks);
}

Json to_json(const EvalReport& r) {
  Json j = {{"schema", kSchema},
            {"task", r.task},
            {"candidate", r.candidate},
            {"kind", r.kind},
            {"verdict", verdict_name(r.verdict)},
            {"error", r.error ? Json{{"kind", r.error->kind}, {"message", r.error->message}} : Json(nullptr)},
            {"compile", r.compile ? compile_json(*r.compile) : Json(nullptr)},
            {"plan", r.plan ? plan_json(*r.plan) : Json(nullptr)},
            {"load", section(r.load)},
            {"verify", section(r.verify)},
            {"timing", section(r.timing)},
            {"anticheat", section(r.anticheat)}};
  if (r.device) j["device"] = to_json(*r.device);
  if (r.extension) j["extension"] = extension_json(*r.extension);
  if (r.profile) j["profile"] = to_json(*r.profile);
  if (r.shapes) j["shapes"] = to_json(*r.shapes);
  if (r.phases) j["phases"] = measured_map_json(*r.phases);
  if (r.cold_start) j["cold_start"] = *r.cold_start;
  if (r.gpu_request_wall_ms) j["gpu_request_wall_ms"] = *r.gpu_request_wall_ms;
  if (r.wall_ms) j["wall_ms"] = *r.wall_ms;
  return j;
}

EvalReport parse_eval_report(const Json& j) {
  StrictObject o(j, "report");
  const std::string schema = o.req<std::string>("schema");
  KFORGE_CHECK(schema == kSchema, spec, "report.schema is '" << schema << "', not " << kSchema);
  EvalReport r;
  r.task = o.req<std::string>("task");
  r.candidate = o.req<std::string>("candidate");
  if (auto k = o.opt<std::string>("kind")) r.kind = *k;  // reports before the extension kind have none
  KFORGE_CHECK(r.kind == "kernel" || r.kind == "extension", spec, "report.kind is '" << r.kind << "', not kernel or extension");
  r.verdict = parse_verdict(o.req<std::string>("verdict"));
  if (auto e = o.opt<Json>("error")) {
    StrictObject eo(*e, o.path("error"));
    r.error = ReportError{eo.req<std::string>("kind"), eo.req<std::string>("message")};
    eo.done();
  }
  if (auto d = o.opt<Json>("device")) r.device = parse_gpu_device(*d, o.path("device"));
  if (auto c = o.opt<Json>("compile")) r.compile = parse_compile_section(*c, o.path("compile"));
  if (auto e = o.opt<Json>("extension")) r.extension = parse_extension_section(*e, o.path("extension"));
  if (auto p = o.opt<Json>("plan")) {
    StrictObject po(*p, o.path("plan"));
    r.plan = PlanSection{po.req<int64_t>("launches"), po.req<int64_t>("workspace_bytes")};
    po.done();
  }
  if (auto s = o.opt<Json>("load")) r.load = parse_load_section(*s, o.path("load"));
  if (auto s = o.opt<Json>("verify")) r.verify = parse_verify_section(*s, o.path("verify"));
  if (auto s = o.opt<Json>("timing")) r.timing = parse_timing_section(*s, o.path("timing"));
  if (auto s = o.opt<Json>("anticheat")) r.anticheat = parse_anticheat_section(*s, o.path("anticheat"));
  if (auto s = o.opt<Json>("profile")) r.profile = parse_profile_section(*s, o.path("profile"));
  if (auto s = o.opt<Json>("shapes")) r.shapes = parse_shapes_section(*s, o.path("shapes"));
  if (auto p = o.opt<Json>("phases")) r.phases = parse_measured_map(*p, o.path("phases"));
  r.cold_start = o.opt<Json>("cold_start");
  r.gpu_request_wall_ms = o.opt<double>("gpu_request_wall_ms");
  r.wall_ms = o.opt<double>("wall_ms");
  o.done();
  r.settle_verdict();
  return r;
}

std::string format_report(const EvalReport& r) {
  std::ostringstream os;
  os << std::fixed;
  os << "task " << r.task << ", candidate " << r.candidate << (r.kind == "extension" ? " (extension)" : "") << "\n";
  if (r.device) os << "device: " << r.device->name << " (" << r.device->arch << ")\n";
  if (r.compile) {
    const CompileSection& c = *r.compile;
    const bool cached = c.result && c.result->cache_hit;
    os << "compile: " << (c.ok ? "ok" : "FAILED") << std::setprecision(1) << " in " << (c.result ? c.result->compile_ms : c.wall_ms)
       << " ms" << (cached ? " (cached)" : "") << ", " << c.arch << "\n";
    if (c.result)
      for (const auto& k : c.result->resources)
        os << "  " << std::left << std::setw(24) << k.name << std::right << " registers " << k.registers << ", static smem "
           << k.static_shared_bytes << " B, local " << k.local_bytes << " B, spills " << k.spill_store_bytes << "/" << k.spill_load_bytes
           << " B\n";
    if (!c.log.empty() && !c.ok) os << c.log << (c.log.back() == '\n' ? "" : "\n");
  }
  if (r.extension) {
    const ExtensionSection& e = *r.extension;
    os << "extension (" << e.format << "): model_new.py read in " << std::setprecision(1) << e.glue_ms << " ms, built in " << e.build_ms
       << " ms" << (e.library_cached ? " (library cached)" : "") << "\n";
    if (e.build_filesystem.rfind("unconfined", 0) == 0) os << "  the compilers' file system was " << e.build_filesystem << "\n";
    for (const auto& st : e.steps)
      os << "  " << std::left << std::setw(32) << st.what << std::right << " " << st.tool << " " << st.ms << " ms"
         << (st.cached ? " (cached)" : "") << "\n";
  }
  if (r.load)
    for (const auto& k : r.load->kernels) os << "  loaded " << k.name << ": max threads per block " << k.max_threads_per_block << "\n";
  if (r.verify) {
    const VerifySection& v = *r.verify;
    os << "verify: " << (v.passed ? "passed" : "FAILED") << " (" << v.trials_run << " trial(s))";
    if (!v.passed) os << ": " << v.reason;
    os << "\n";
    for (const auto& o : v.outputs) {
      os << std::setprecision(3) << std::scientific << "  " << o.name << ": max abs error " << o.max_abs_error << ", max rel error "
         << o.max_rel_error << std::fixed << ", mismatches " << o.mismatches << ", unwritten " << o.unwritten << "\n";
      for (const auto& e : o.examples)
        os << "    at " << e.index.dump() << ": candidate " << e.candidate.dump() << ", reference " << e.reference.dump() << "\n";
    }
  }
  if (r.timing) {
    const TimingSection& t = *r.timing;
    auto row = [&](const char* name, const TimingStats& s) {
      os << std::setprecision(4) << "  " << std::left << std::setw(10) << name << std::right << " median " << s.median << " ms  mean "
         << s.mean << "  std " << s.std << "  min " << s.min << "  p10 " << s.p10 << "  p90 " << s.p90 << "  n " << s.n << "\n";
    };
    os << "timing:\n";
    row("candidate", t.candidate);
    row("eager", t.reference);
    const SpeedupSection& sp = t.speedup;
    os << std::setprecision(3) << "  speedup over eager " << sp.point << "x (" << static_cast<int>(sp.confidence * 100) << "% CI " << sp.lo
       << " - " << sp.hi << ")\n";
    if (!t.stop.empty()) os << "  pairs: " << t.candidate.n << " (stopped: " << t.stop << ")\n";
    os << "  method: " << t.method << "\n";
  }
  if (r.anticheat) {
    const CheckOutcome* failed = r.anticheat->failed();
    os << "anti-cheat: " << (failed ? "cheat" : "clean") << " (";
    bool first = true;
    for (const auto& c : r.anticheat->checks) {
      os << (first ? "" : ", ") << c.name << (c.passed ? " ok" : " FAILED");
      first = false;
    }
    os << ")\n";
    if (failed) os << "  " << failed->name << ": " << failed->message << "\n";
  }
  if (r.shapes) {
    const ShapesSection& sh = *r.shapes;
    os << "other shapes: " << sh.status << " (" << sh.counted_passed() << " of " << sh.counted() << " passed)";
    if (!sh.note.empty()) os << ": " << sh.note;
    os << "\n";
    for (const auto& t : sh.trials) {
      os << "  " << (t.layout.empty() ? "" : t.layout + " inputs ");
      for (const auto& [k, v] : t.dims) os << k << "=" << v << " ";
      os << (t.counted ? "" : "not counted, ") << verdict_name(t.verdict) << (t.reason.empty() ? "" : ": " + t.reason) << "\n";
    }
  }
  os << "verdict: " << verdict_name(r.verdict);
  if (r.error) os << " (" << r.error->kind << ": " << r.error->message << ")";
  os << "\n";
  return os.str();
}

}  // namespace kforge
