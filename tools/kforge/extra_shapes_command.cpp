// kforge tasks extra-shapes: an existing dataset's graph tasks given extra shapes (issue 30;
// data_synth/synth/extra_shapes.h), as `kforge synth` gives new ones: each row's spec_yaml gets its
// extra_dims, every other column is left as it was.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <map>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "configs/error.h"
#include "data_synth/dataset/dataset_h5.h"
#include "data_synth/synth/composer.h"
#include "data_synth/synth/cpu_checks.h"
#include "data_synth/synth/extra_shapes.h"
#include "data_synth/task/task_spec.h"
#include "tools/kforge/commands.h"

using Json = nlohmann::ordered_json;

namespace kforge::cli {

namespace {

struct ExtraShapesArgs {
  std::string in, out;
  int max_shapes = ExtraShapeConfig{}.max_shapes;
  double large_bytes = ExtraShapeConfig{}.large_bytes;
  int64_t progress = 500;
};

// Tasks by their number of extra shapes, over every graph row and over those the server serves.
struct ExtraShapeCounts {
  std::map<int, int64_t> all, served;
  std::map<std::string, int64_t> by_kind;
  int64_t imported = 0;
  std::vector<double> large_growth;  // per large shape: its footprint over the task's own

  // p10, p50, p90 of the large shapes' growth ({} without any).
  Json growth_quantiles() const {
    if (large_growth.empty()) return Json::object();
    std::vector<double> v = large_growth;
    std::sort(v.begin(), v.end());
    auto at = [&](double q) { return v[static_cast<size_t>(q * static_cast<double>(v.size() - 1))]; };
    return {{"p10", at(0.1)}, {"p50", at(0.5)}, {"p90", at(0.9)}};
  }

  static Json histogram(const std::map<int, int64_t>& h, int max_shapes) {
    Json j = Json::object();
    for (int n = 0; n <= max_shapes; ++n) j[std::to_string(n)] = h.count(n) ? h.at(n) : 0;
    return j;
  }
  static std::string line(const std::map<int, int64_t>& h, int max_shapes) {
    int64_t total = 0;
    for (const auto& [n, c] : h) total += c;
    std::string s;
    for (int n = 0; n <= max_shapes; ++n)
      s += (s.empty() ? "" : ", ") + std::to_string(n) + ": " + std::to_string(h.count(n) ? h.at(n) : 0);
    int64_t none = h.count(0) ? h.at(0) : 0;
    char share[64];
    std::snprintf(share, sizeof share, "%.1f %%", total ? 100.0 * static_cast<double>(total - none) / static_cast<double>(total) : 0.0);
    return std::to_string(total) + " tasks (" + s + "); with any: " + share;
  }
};

// The dataset's summary_json with what this run added: `extra_shapes` as kforge synth writes it
// (every graph row by its number of shapes) and `extra_shapes_added` (how, by kind, the served rows).
std::string summary_with_counts(const std::string& summary, const ExtraShapeCounts& c, int max_shapes) {
  Json j;
  try {
    j = summary.empty() ? Json::object() : Json::parse(summary);
  } catch (const nlohmann::json::exception&) {
    return summary;  // not ours to rewrite
  }
  if (!j.is_object()) return summary;
  j["extra_shapes"] = ExtraShapeCounts::histogram(c.all, max_shapes);
  j["extra_shapes_added"] = {{"tool", "kforge tasks extra-shapes"},
                             {"max_shapes", max_shapes},
                             {"imported", c.imported},
                             {"by_kind", c.by_kind},
                             {"served", ExtraShapeCounts::histogram(c.served, max_shapes)},
                             {"large_footprint_growth", c.growth_quantiles()}};
  return j.dump(2);
}

int add_extra_shapes(const ExtraShapesArgs& a) {
  KFORGE_CHECK(a.max_shapes >= 1 && a.max_shapes <= 5, usage,
               "--max-shapes is 1 to 5 (one shape per kind: odd, batch one, off by one, empty, large), not " << a.max_shapes);
  KFORGE_CHECK(a.large_bytes >= 0, usage, "--large-bytes must be >= 0 (0: no large shape), not " << a.large_bytes);
  KFORGE_CHECK(a.progress >= 1, usage, "--progress must be >= 1");
  check_dataset_rewrite(a.in, a.out);
  Dataset d = read_dataset(a.in);
  ExtraShapeConfig cfg;
  cfg.max_shapes = a.max_shapes;
  cfg.large_bytes = a.large_bytes;
  ExtraShapeCounts counts;
  const auto t0 = std::chrono::steady_clock::now();
  auto progress = [&](size_t done) {
    const double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double rate = el > 0 ? static_cast<double>(done) / el : 0;
    std::fprintf(stderr, "extra-shapes: %zu/%zu rows | %.0f rows/s | elapsed %s | left ~%s\n", done, d.rows.size(), rate,
                 duration(el).c_str(), duration(rate > 0 ? static_cast<double>(d.rows.size() - done) / rate : -1).c_str());
  };
  for (size_t i = 0; i < d.rows.size(); ++i) {
    DatasetRow& r = d.rows[i];
    const std::string origin = a.in + ":" + r.id;
    TaskSpec t = parse_task(r.spec_yaml, origin);
    if (t.imported()) {
      ++counts.imported;  // no dims to vary: its other shapes are the importer's (`extra_shapes`), left as they are
    } else {
      std::vector<DimEnv> extra;
      for (ExtraShape& s : draw_extra_shapes(t, cfg, reference_accepts_empty)) {
        ++counts.by_kind[s.kind];
        if (s.kind == "large") counts.large_growth.push_back(s.bytes / footprint_bytes(t.resolved));
        extra.push_back(std::move(s.dims));
      }
      r.spec_yaml = spec_with_extra_dims(r.spec_yaml, extra, origin);
      const int n = static_cast<int>(extra.size());
      ++counts.all[n];
      if (!r.rejected()) ++counts.served[n];
    }
    if ((i + 1) % static_cast<size_t>(a.progress) == 0) progress(i + 1);
  }
  progress(d.rows.size());
  d.attrs["summary_json"] = summary_with_counts(d.attrs["summary_json"], counts, a.max_shapes);
  write_dataset(a.out, d);
  std::cout << "extra-shapes: wrote " << a.out << " (" << d.rows.size() << " rows)\n";
  std::cout << "  every graph task: " << ExtraShapeCounts::line(counts.all, a.max_shapes) << "\n";
  std::cout << "  not rejected (served): " << ExtraShapeCounts::line(counts.served, a.max_shapes) << "\n";
  std::string kinds;
  for (const auto& [k, v] : counts.by_kind) kinds += (kinds.empty() ? "" : ", ") + k + " " + std::to_string(v);
  std::cout << "  shapes by kind: " << (kinds.empty() ? "none" : kinds) << "\n";
  if (const Json g = counts.growth_quantiles(); !g.empty())
    std::cout << "  large shapes' footprint over the task's own: p10 x" << g["p10"].get<double>() << ", p50 x" << g["p50"].get<double>()
              << ", p90 x" << g["p90"].get<double>() << "\n";
  std::cout << "  imported: no dims: " << counts.imported << "\n";
  return 0;
}

}  // namespace

void add_extra_shapes_command(CLI::App& app) {
  CLI::App* tasks = app.get_subcommand("tasks");
  auto* sub = tasks->add_subcommand("extra-shapes",
                                    "Give a dataset's graph tasks extra shapes (extra_dims: odd sizes, a batch of 1, every dim one "
                                    "smaller, an empty batch, with --large-bytes the largest batch that fits) that verification "
                                    "also runs; every other column is kept");
  static ExtraShapesArgs a;
  add_dataset_rewrite_options(sub, a.in, a.out);
  sub->add_option("--max-shapes", a.max_shapes, "at most this many shapes per task (1-5)")->capture_default_str();
  sub->add_option("--large-bytes", a.large_bytes, "> 0: a large shape too, the largest batch whose footprint is at most this")
      ->capture_default_str();
  sub->add_option("--progress", a.progress, "a progress line on stderr every this many rows")->capture_default_str();
  set_action(sub, [] { return add_extra_shapes(a); });
}

}  // namespace kforge::cli
