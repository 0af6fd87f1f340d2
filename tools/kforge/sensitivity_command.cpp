// kforge tasks sensitivity: every input matters (issue 25; data_synth/reference/sensitivity.h) over a
// dataset or a folder of task files, one JSON line per task, resumable.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <random>
#include <regex>
#include <set>
#include <sstream>

#include <ATen/Parallel.h>
#include <ATen/cuda/CUDAContext.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "configs/error.h"
#include "configs/file_reader.h"
#include "data_synth/dataset/dataset_h5.h"
#include "data_synth/reference/reference.h"
#include "data_synth/reference/sensitivity.h"
#include "data_synth/task/task_spec.h"
#include "env/cuda/cuda_probe.h"
#include "env/judge/call_bench.h"
#include "env/judge/draw_kernel.h"
#include "env/judge/timing.h"
#include "tools/kforge/commands.h"

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

namespace kforge::cli {

namespace {

struct SensitivityArgs {
  std::string source, device = "cpu", dims = "check", shard = "0/1", out, status;
  int64_t limit = -1, sample = -1, progress = 50;
  int ablation_trials = 16, draws = 2, threads = 1;
  uint64_t seed = 1;
  bool family_diagnosis = false;
};

// One task to check: its name (the task id) and where its spec comes from.
struct Item {
  std::string name, origin, spec_yaml, ops, dtype;
};

std::vector<Item> read_items(const SensitivityArgs& a) {
  std::vector<Item> items;
  if (fs::is_directory(a.source)) {
    KFORGE_CHECK(a.status.empty(), usage, "--status selects dataset rows; " << a.source << " is a folder of task files");
    std::vector<fs::path> files;
    for (const auto& f : fs::directory_iterator(a.source))
      if (f.is_regular_file() && f.path().extension() == ".yaml") files.push_back(f.path());
    std::sort(files.begin(), files.end());
    for (const auto& f : files) {
      std::string text = read_file(f.string(), "the task file");
      TaskSpec t = parse_task(text, f.string());
      std::string ops;
      for (const auto& n : t.graph.nodes) ops += (ops.empty() ? "" : ",") + n.op;
      items.push_back({t.id, f.string(), text, ops, dtype_name(t.dtype)});
    }
    return items;
  }
  Dataset d = read_dataset(a.source);
  RowFilter f;
  f.status = StatusFilter::parse(a.status);
  for (const auto& r : d.rows)
    if (f.matches(r)) items.push_back({r.id, a.source + ":" + r.id, r.spec_yaml, r.ops, r.dtype});
  return items;
}

// --shard I/N: every N-th item from the I-th (so that each shard mixes the whole set).
std::pair<int, int> parse_shard(const std::string& text) {
  std::smatch m;
  static const std::regex re("(\\d+)/(\\d+)");
  KFORGE_CHECK(std::regex_match(text, m, re), usage, "--shard is I/N with 0 <= I < N, not '" << text << "'");
  int i = std::stoi(m[1].str()), n = std::stoi(m[2].str());
  KFORGE_CHECK(n >= 1 && i < n, usage, "--shard is I/N with 0 <= I < N, not '" << text << "'");
  return {i, n};
}

// Names already in --out (a line cut short by a killed run is dropped from the file).
std::set<std::string> done_names(const std::string& path) {
  std::set<std::string> names;
  if (!fs::exists(path)) return names;
  std::string text = read_file(path, "the results so far (--out)");
  size_t keep = text.rfind('\n');
  keep = keep == std::string::npos ? 0 : keep + 1;
  if (keep != text.size()) fs::resize_file(path, keep);
  std::istringstream lines(text.substr(0, keep));
  std::string line;
  while (std::getline(lines, line)) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    Json j = Json::parse(line, nullptr, false);
    KFORGE_CHECK(j.is_object() && j.contains("name") && j["name"].is_string(), io,
                 path << ": a line that is not one of kforge tasks sensitivity's (no \"name\")");
    names.insert(j["name"].get<std::string>());
  }
  return names;
}

Json opt_num(const std::optional<double>& v) { return v ? Json(*v) : Json(nullptr); }
Json opt_int(const std::optional<int>& v) { return v ? Json(*v) : Json(nullptr); }

Json report_json(const Item& it, const SensitivityReport& r, double ms, const SensitivityArgs& a) {
  Json inputs = Json::array();
  for (const auto& s : r.inputs)
    inputs.push_back({{"name", s.name},
                      {"role", s.role},
                      {"floating", s.floating},
                      {"matters_whole", s.matters_whole},
                      {"matters_row", s.moved_row ? Json(s.matters_row) : Json(nullptr)},
                      {"matters_channel", s.moved_channel ? Json(s.matters_channel) : Json(nullptr)},
                      {"moved_whole", s.moved_whole},
                      {"moved_row", opt_int(s.moved_row)},
                      {"moved_channel", opt_int(s.moved_channel)},
                      {"family_member",
                       {{"whole", s.whole_member.empty() ? Json(nullptr) : Json(s.whole_member)},
                        {"row", s.row_member.empty() ? Json(nullptr) : Json(s.row_member)},
                        {"channel", s.channel_member.empty() ? Json(nullptr) : Json(s.channel_member)}}},
                      {"ablation_rate_plain", opt_num(s.ablation_rate_plain)},
                      {"best_member", s.best_member.empty() ? Json(nullptr) : Json(s.best_member)},
                      {"ablation_rate_best", opt_num(s.ablation_rate_best)}});
  return {{"name", it.name},
          {"passed", r.passed()},
          {"reason_code", r.reason_code},
          {"reason", r.reason},
          {"inputs_matter", r.inputs_matter},
          {"ablation_passed", r.ablation_passed},
          {"inputs", inputs},
          {"min_best_ablation_rate", opt_num(r.min_best_ablation_rate)},
          {"ms", std::round(ms * 10) / 10},
          {"reference_runs", r.reference_runs},
          {"ops", it.ops},
          {"dtype", it.dtype},
          {"dims", a.dims},
          {"device", a.device},
          {"draws", a.draws},
          {"ablation_trials", a.ablation_trials},
          {"seed", a.seed}};
}

int run_sensitivity(const SensitivityArgs& a) {
  KFORGE_CHECK(a.device == "cpu" || a.device == "cuda", usage, "--device is cpu or cuda, not '" << a.device << "'");
  KFORGE_CHECK(a.dims == "check" || a.dims == "full", usage, "--dims is check or full, not '" << a.dims << "'");
  KFORGE_CHECK(a.ablation_trials >= 0 && a.draws >= 1 && a.threads >= 1, usage,
               "--ablation-trials must be >= 0, --draws and --threads >= 1");
  KFORGE_CHECK(a.progress >= 1, usage, "--progress must be >= 1");
  auto [shard_i, shard_n] = parse_shard(a.shard);
  at::Device device = a.device == "cuda" ? at::Device(at::kCUDA, 0) : at::Device(at::kCPU);
  if (device.is_cuda() && !cuda_available()) KFORGE_FAIL(runtime, "--device cuda: no CUDA device is available on this machine");
  apply_reference_precision();
  at::set_num_threads(a.threads);

  std::vector<Item> all = read_items(a), items;
  for (size_t i = 0; i < all.size(); ++i)
    if (static_cast<int>(i % shard_n) == shard_i) items.push_back(std::move(all[i]));
  if (a.sample >= 0 && a.sample < static_cast<int64_t>(items.size())) {
    // A random sample (seeded by --seed), kept in the source's order.
    std::vector<size_t> order(items.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::mt19937_64 gen(a.seed);
    std::shuffle(order.begin(), order.end(), gen);
    order.resize(static_cast<size_t>(a.sample));
    std::sort(order.begin(), order.end());
    std::vector<Item> picked;
    for (size_t i : order) picked.push_back(std::move(items[i]));
    items = std::move(picked);
  }
  if (a.limit >= 0 && a.limit < static_cast<int64_t>(items.size())) items.resize(static_cast<size_t>(a.limit));

  std::set<std::string> done = done_names(a.out);
  std::ofstream out(a.out, std::ios::app);
  KFORGE_CHECK(out, io, a.out << ": cannot write");
  SensitivityOptions o;
  o.draws = a.draws;
  o.ablation_trials = a.ablation_trials;
  o.seed = a.seed;
  o.family_diagnosis = a.family_diagnosis;
  std::unique_ptr<DeviceDrawer> drawer;  // on a GPU: the worker's draw kernel, the bytes fill_draw writes
  if (device.is_cuda()) {
    drawer = std::make_unique<DeviceDrawer>(device_arch(0));
    o.draw = [&drawer, device](const TaskSpec& t, const DrawKey& key) {  // on the stream the reference runs on
      return draw_arguments_on_device(t, key, *drawer, device, at::cuda::getCurrentCUDAStream().stream());
    };
    o.member = device_member(*drawer);
  }

  size_t todo = 0;
  for (const auto& it : items) todo += done.count(it.name) ? 0 : 1;
  std::fprintf(stderr, "sensitivity: %zu task(s) selected, %zu already in %s, %zu to check (%s, %s dims)\n", items.size(),
               items.size() - todo, a.out.c_str(), todo, a.device.c_str(), a.dims.c_str());
  std::map<std::string, int64_t> by_reason;
  int64_t checked = 0, failed = 0;
  const auto t0 = std::chrono::steady_clock::now();
  auto progress = [&](bool last) {
    const double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double rate = el > 0 ? checked / el : 0;
    std::string reasons;
    for (const auto& [k, v] : by_reason) reasons += (reasons.empty() ? "" : ", ") + k + " " + std::to_string(v);
    std::fprintf(stderr, "sensitivity: %lld/%zu checked, %lld failed%s%s%s | %.2f tasks/s | elapsed %s | left ~%s%s\n",
                 static_cast<long long>(checked), todo, static_cast<long long>(failed), reasons.empty() ? "" : " (", reasons.c_str(),
                 reasons.empty() ? "" : ")", rate, duration(el).c_str(), duration(rate > 0 ? (todo - checked) / rate : -1).c_str(),
                 last ? " (done)" : "");
  };
  for (const auto& it : items) {
    if (done.count(it.name)) continue;
    const auto s0 = std::chrono::steady_clock::now();
    Json line;
    try {
      TaskSpec t = parse_task(it.spec_yaml, it.origin);
      if (a.dims == "check") t = t.at_check_dims();
      SensitivityReport r = check_sensitivity(t, device, o);
      const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - s0).count();
      line = report_json(it, r, ms, a);
    } catch (const std::exception& e) {
      // A task whose reference fails here is reported, not dropped: the input checks did not run.
      const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - s0).count();
      line = {{"name", it.name},
              {"passed", false},
              {"reason_code", "error"},
              {"reason", e.what()},
              {"inputs", Json::array()},
              {"min_best_ablation_rate", nullptr},
              {"ms", std::round(ms * 10) / 10},
              {"ops", it.ops},
              {"dtype", it.dtype},
              {"dims", a.dims},
              {"device", a.device}};
    }
    out << line.dump() << "\n";
    out.flush();
    KFORGE_CHECK(out, io, a.out << ": write failed");
    ++checked;
    if (!line["passed"].get<bool>()) {
      ++failed;
      ++by_reason[line["reason_code"].get<std::string>()];
    }
    if (checked % a.progress == 0) progress(false);
  }
  progress(true);
  std::cout << "sensitivity: " << checked << " checked (" << items.size() - todo << " skipped, already in " << a.out << "), "
            << checked - failed << " passed, " << failed << " failed";
  for (const auto& [k, v] : by_reason) std::cout << "; " << k << " " << v;
  std::cout << "\n";
  return 0;
}

}  // namespace

void add_sensitivity_command(CLI::App& app) {
  CLI::App* tasks = app.get_subcommand("tasks");
  auto* sub = tasks->add_subcommand(
      "sensitivity",
      "Every input matters (data_synth/reference/sensitivity.h): per task, each argument, a row and a channel of it replaced "
      "by its mean must move the answer beyond tolerance, and the 1 % ablation figure; one JSON line per task");
  static SensitivityArgs a;
  sub->add_option("SOURCE", a.source, "dataset.h5 (or .h5.xz), or a folder of task files (*.yaml)")->required();
  sub->add_option("--out", a.out, "JSONL file; tasks already in it are skipped (resumable)")->required();
  sub->add_option("--device", a.device, "cpu or cuda")->capture_default_str();
  sub->add_option("--dims", a.dims, "check (the task's check_dims) or full")->capture_default_str();
  sub->add_option("--status", a.status, "dataset rows: as kforge tasks count's --status (default: every row not rejected)");
  sub->add_option("--shard", a.shard, "I/N: every N-th task from the I-th")->capture_default_str();
  sub->add_option("--sample", a.sample, "a random sample of this many tasks (of the shard), seeded by --seed");
  sub->add_option("--limit", a.limit, "at most this many tasks (after --shard and --sample)");
  sub->add_option("--ablation-trials", a.ablation_trials, "trials per draw-family member of the 1 % ablation; 0 skips it")
      ->capture_default_str();
  sub->add_option("--draws", a.draws, "draws of the task's own distribution for the input checks")->capture_default_str();
  sub->add_option("--seed", a.seed, "the checks' seed")->capture_default_str();
  sub->add_flag("--family-diagnosis", a.family_diagnosis,
                "for each failing input check, record the first other draw-family member under which it passes (the verdict "
                "is unchanged)");
  sub->add_option("--threads", a.threads, "intra-op threads (CPU)")->capture_default_str();
  sub->add_option("--progress", a.progress, "a progress line on stderr every this many tasks")->capture_default_str();
  set_action(sub, [] { return run_sensitivity(a); });
}

}  // namespace kforge::cli
