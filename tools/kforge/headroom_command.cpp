// kforge tasks headroom: each row's torch.compile time over its roofline on the GPU its baselines
// were measured on (issue 32, "tasks that can pay"). The roofline is the speed-of-light floor of
// anticheat/dynamic_checks.h without its headroom: max(min_bytes / copy bandwidth, flops / the peak
// of the fastest math the task's precision contract admits), with the GPU's measured ceilings. The
// compile_headroom column gets compile_ms / roofline_ms (NaN where compile_ms or the cost is missing,
// or the baselines are another GPU's); every other column is kept.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "anticheat/task_precision.h"
#include "configs/error.h"
#include "data_synth/dataset/dataset_h5.h"
#include "data_synth/task/dtype.h"
#include "data_synth/task/task_spec.h"
#include "tools/kforge/commands.h"

using Json = nlohmann::ordered_json;

namespace kforge::cli {

namespace {

// The H200's ceilings as the GPU worker measures them (env/judge/gpu_worker.cpp: the best of 1 GiB
// device copies and of 8192^3 at::mm), recorded in the speed_of_light evidence of
// tools/bench/results/2026-12-03_anticheat_audit_8a5564e_h200.json (H200, driver 580.159.04, torch
// 2.11.0+cu130: the GPU and software the shipped dataset's baselines were measured with). The other
// H200 record of all four, ..._8933577_h200.json, is within 1.2 % of each (4250.6 GB/s, 51.45, 414.6,
// 771.0 TFLOP/s).
struct NamedCeilings {
  const char* gpu;
  DeviceCeilings ceilings;
  const char* source;
};
const NamedCeilings kH200{"NVIDIA H200",
                          {4280.721202511008, 51.4205666569578, 419.4099266707841, 779.4858910846802},
                          "tools/bench/results/2026-12-03_anticheat_audit_8a5564e_h200.json (speed_of_light evidence)"};

// Histogram bins of the headroom; a candidate pays (reward tier 3) only above 1.05 x torch.compile.
const std::vector<std::pair<double, std::string>>& bins() {
  static const std::vector<std::pair<double, std::string>> b = {
      {0.9, "<0.9"},     {1.0, "0.9-1"}, {1.05, "1-1.05"}, {1.15, "1.05-1.15"}, {1.25, "1.15-1.25"},
      {1.5, "1.25-1.5"}, {2.0, "1.5-2"}, {5.0, "2-5"},     {10.0, "5-10"},      {INFINITY, ">=10"},
  };
  return b;
}

std::string bin_of(double h) {
  if (!std::isfinite(h)) return "unknown";
  for (const auto& [hi, name] : bins())
    if (h < hi) return name;
  return bins().back().second;
}

// The payable split's default: 1.05 (tier 3) x 1.09, the most torch.compile's own times beat the
// copy bandwidth by on bytes-bound tasks of the shipped dataset (min_bytes / compile_ms up to 4652
// GB/s against 4281: reads stream faster than a copy's read and write), rounded up.
struct HeadroomArgs {
  std::string in, out;
  double payable = 1.15;
};

struct Counts {
  std::map<std::string, int64_t> hist, precision, bound;
  int64_t rows = 0, known = 0, payable = 0, no_compile = 0, no_flops = 0, other_gpu = 0;
  double best_bytes_gbps = 0;  // the highest min_bytes / compile_ms of a bytes-bound row: what a kernel did read at
  std::vector<double> values;

  Json histogram() const {
    Json j = Json::object();
    for (const auto& [hi, name] : bins()) j[name] = hist.count(name) ? hist.at(name) : 0;
    j["unknown"] = hist.count("unknown") ? hist.at("unknown") : 0;
    return j;
  }
  Json json(double payable_at) const {
    std::vector<double> v = values;
    std::sort(v.begin(), v.end());
    auto q = [&](double p) { return v.empty() ? Json(nullptr) : Json(v[static_cast<size_t>(p * static_cast<double>(v.size() - 1))]); };
    return {{"rows", rows},
            {"known", known},
            {"payable", payable},
            {"payable_share", rows ? static_cast<double>(payable) / static_cast<double>(rows) : 0.0},
            {"at_least_1.05", std::count_if(v.begin(), v.end(), [](double h) { return h >= 1.05; })},
            {"at_least_1.1", std::count_if(v.begin(), v.end(), [](double h) { return h >= 1.1; })},
            {"at_least_1.15", std::count_if(v.begin(), v.end(), [](double h) { return h >= 1.15; })},
            {"at_least_1.25", std::count_if(v.begin(), v.end(), [](double h) { return h >= 1.25; })},
            {"roofline_share_at_least_0.9", std::count_if(v.begin(), v.end(), [](double h) { return 1.0 / h >= 0.9; })},
            {"median", q(0.5)},
            {"p10", q(0.1)},
            {"p90", q(0.9)},
            {"unknown", {{"no_compile_ms", no_compile}, {"no_flops", no_flops}, {"other_gpu", other_gpu}}},
            {"compile_best_bytes_gbps", best_bytes_gbps},
            {"by_precision", precision},
            {"bound_by", bound},
            {"histogram", histogram()},
            {"payable_min_headroom", payable_at}};
  }
};

// The dataset's summary_json with this run's `headroom` block (synth_readme.py shows it).
std::string summary_with_headroom(const std::string& summary, const Json& block) {
  Json j;
  try {
    j = summary.empty() ? Json::object() : Json::parse(summary);
  } catch (const nlohmann::json::exception&) {
    return summary;  // not ours to rewrite
  }
  if (!j.is_object()) return summary;
  j["headroom"] = block;
  return j.dump(2);
}

int headroom(const HeadroomArgs& a) {
  check_dataset_rewrite(a.in, a.out);
  KFORGE_CHECK(a.payable >= 1.0, usage, "--payable must be >= 1, not " << a.payable);
  Dataset d = read_dataset(a.in);
  const NamedCeilings& gpu = kH200;
  Counts all, served;
  for (DatasetRow& r : d.rows) {
    const std::string origin = a.in + ":" + r.id;
    double h = NAN;
    std::string precision, bound;
    std::string baseline_gpu;
    if (!r.baseline_json.empty()) baseline_gpu = Json::parse(r.baseline_json).value("gpu", "");
    const bool compiled = std::isfinite(r.compile_ms) && r.compile_ms > 0;
    int64_t Counts::*why = nullptr;
    if (!compiled) {
      why = &Counts::no_compile;
    } else if (baseline_gpu != gpu.gpu) {
      why = &Counts::other_gpu;  // no ceilings recorded for it: its roofline is unknown here
    } else if (!std::isfinite(r.flops) || !std::isfinite(r.min_bytes)) {
      why = &Counts::no_flops;  // an imported module with no stated count: no roofline
    } else {
      const MathPrecision p = task_math_precision(parse_task(r.spec_yaml, origin));
      const SpeedOfLight s = speed_of_light(r.min_bytes, r.flops, p, gpu.ceilings, 1.0);
      if (s.floor_ms > 0) {
        h = r.compile_ms / s.floor_ms;
        precision = math_precision_name(p);
        bound = s.flops_ms > s.bytes_ms ? "flops" : "bytes";
      } else {
        why = &Counts::no_flops;
      }
    }
    r.compile_headroom = h;
    for (Counts* c : {&all, &served}) {
      if (c == &served && r.rejected()) continue;
      ++c->rows;
      ++c->hist[bin_of(h)];
      if (why) ++(c->*why);
      if (std::isfinite(h)) {
        ++c->known;
        c->values.push_back(h);
        ++c->precision[precision];
        ++c->bound[bound];
        if (h >= a.payable) ++c->payable;
        if (bound == "bytes") c->best_bytes_gbps = std::max(c->best_bytes_gbps, r.min_bytes / (r.compile_ms * 1e-3) / 1e9);
      }
    }
  }
  Json block = {
      {"tool", "kforge tasks headroom"},
      {"definition", "compile_ms / max(min_bytes / copy_gbps, flops / peak_tflops of the task's precision contract) on the baselines' GPU"},
      {"gpu", gpu.gpu},
      {"ceilings",
       {{"copy_gbps", gpu.ceilings.copy_gbps},
        {"matmul_tflops_fp32", gpu.ceilings.matmul_tflops_fp32},
        {"matmul_tflops_tf32", gpu.ceilings.matmul_tflops_tf32},
        {"matmul_tflops_fp16", gpu.ceilings.matmul_tflops_fp16},
        {"peak_tflops",
         {{"float16", peak_tflops(gpu.ceilings, MathPrecision::float16)},
          {"float32", peak_tflops(gpu.ceilings, MathPrecision::float32)},
          {"integer", peak_tflops(gpu.ceilings, MathPrecision::integer)}}}}},
      {"source", gpu.source},
      {"payable_min_headroom", a.payable},
      {"all", all.json(a.payable)},
      {"served", served.json(a.payable)}};
  d.attrs["summary_json"] = summary_with_headroom(d.attrs["summary_json"], block);
  write_dataset(a.out, d);
  std::cout << "headroom: wrote " << a.out << " (" << d.rows.size() << " rows; " << gpu.gpu << " ceilings: " << gpu.ceilings.copy_gbps
            << " GB/s, peaks " << peak_tflops(gpu.ceilings, MathPrecision::float16) << " / "
            << peak_tflops(gpu.ceilings, MathPrecision::float32) << " / " << peak_tflops(gpu.ceilings, MathPrecision::integer)
            << " TFLOP/s float16 / float32 / integer)\n";
  for (const auto& [name, c] : {std::pair<const char*, const Counts*>{"every row", &all}, {"not rejected (served)", &served}}) {
    std::cout << "  " << name << ": " << c->rows << " rows, " << c->known << " with a headroom, " << c->payable
              << " payable (>= " << a.payable << "); unknown: no compile_ms " << c->no_compile << ", no cost " << c->no_flops
              << ", other GPU " << c->other_gpu << "\n    ";
    bool first = true;
    const Json hist = c->histogram();
    for (const auto& [bin, n] : hist.items()) {
      std::cout << (first ? "" : ", ") << bin << ": " << n.get<int64_t>();
      first = false;
    }
    std::cout << "\n";
  }
  return 0;
}

}  // namespace

void add_headroom_command(CLI::App& app) {
  CLI::App* tasks = app.get_subcommand("tasks");
  auto* sub = tasks->add_subcommand("headroom",
                                    "Give each row its compile_headroom: torch.compile's time over the task's roofline on the "
                                    "baselines' GPU (measured ceilings); every other column is kept");
  static HeadroomArgs a;
  add_dataset_rewrite_options(sub, a.in, a.out);
  sub->add_option("--payable", a.payable, "the headroom the summary counts as payable (the training split's --min-headroom)")
      ->capture_default_str();
  set_action(sub, [] { return headroom(a); });
}

}  // namespace kforge::cli
