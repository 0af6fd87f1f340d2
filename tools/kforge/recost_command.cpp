// kforge tasks recost: an existing dataset's graph tasks given the cost their graph gives now (issue
// 32: causal sdpa counted the masked pairs). Each graph row's spec_yaml `cost:` line and its flops and
// min_bytes columns are re-derived from the graph; every other line and column is left as it was.
#include <cstdio>
#include <iostream>
#include <sstream>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "configs/error.h"
#include "data_synth/dataset/dataset_h5.h"
#include "data_synth/task/task_spec.h"
#include "tools/kforge/commands.h"

using Json = nlohmann::ordered_json;

namespace kforge::cli {

namespace {

struct RecostArgs {
  std::string in, out;
};

// A top-level key starts a line with neither indentation, comment nor list marker.
bool top_level(const std::string& ln) {
  return !ln.empty() && ln[0] != ' ' && ln[0] != '\t' && ln[0] != '#' && ln[0] != '-' && ln.find(':') != std::string::npos;
}

// The spec's text with its top-level `cost:` block replaced by `cost_block` (which ends in a newline;
// empty: removed). Every other line is kept as it was; `found` says whether there was one.
std::string replace_cost(const std::string& text, const std::string& cost_block, bool& found) {
  std::istringstream in(text);
  std::string ln, out;
  bool skip = false, last_kept = false;
  found = false;
  while (std::getline(in, ln)) {
    if (top_level(ln)) {
      skip = ln.rfind("cost:", 0) == 0;
      if (skip) {
        found = true;
        out += cost_block;
      }
    }
    last_kept = !skip;
    if (!skip) out += ln + "\n";
  }
  if (!text.empty() && text.back() != '\n' && (last_kept || !cost_block.empty())) out.pop_back();  // the last line as it was
  return out;
}

// The `cost:` line task_to_yaml writes for the task, with its newline.
std::string cost_block(const TaskSpec& t, const std::string& origin) {
  std::istringstream in(task_to_yaml(t));
  std::string ln;
  while (std::getline(in, ln))
    if (ln.rfind("cost:", 0) == 0) return ln + "\n";
  KFORGE_FAIL(internal, origin << ": task_to_yaml wrote no cost line");
}

// The dataset's summary_json with what this run changed under `recost` (synth_readme.py says it);
// a run that changes nothing leaves it as it was.
std::string summary_with_recost(const std::string& summary, int64_t graph, int64_t changed, int64_t changed_served) {
  Json j;
  try {
    j = summary.empty() ? Json::object() : Json::parse(summary);
  } catch (const nlohmann::json::exception&) {
    return summary;  // not ours to rewrite
  }
  if (!j.is_object()) return summary;
  j["recost"] = {{"tool", "kforge tasks recost"}, {"graph_tasks", graph}, {"changed", changed}, {"changed_served", changed_served}};
  return j.dump(2);
}

int recost(const RecostArgs& a) {
  check_dataset_rewrite(a.in, a.out);
  Dataset d = read_dataset(a.in);
  int64_t changed = 0, changed_served = 0, imported = 0, graph = 0;
  for (DatasetRow& r : d.rows) {
    const std::string origin = a.in + ":" + r.id;
    bool found = false;
    const std::string bare = replace_cost(r.spec_yaml, "", found);
    TaskSpec t = parse_task(bare, origin);  // the stated cost may no longer agree: parse without it
    if (t.imported()) {
      ++imported;  // its cost is not a graph's
      continue;
    }
    ++graph;
    // A spec that states no cost (a task file packed as written) keeps its text: only the columns change.
    const std::string spec = found ? replace_cost(r.spec_yaml, cost_block(t, origin), found) : r.spec_yaml;
    KFORGE_CHECK(task_to_yaml(parse_task(spec, origin)) == task_to_yaml(t), spec,
                 origin << ": the spec with its cost rewritten is not the same task");
    const double flops = t.cost.flops.value_or(0);
    if (spec == r.spec_yaml && flops == r.flops && t.cost.min_bytes == r.min_bytes) continue;
    std::cout << r.id << ": flops " << static_cast<int64_t>(r.flops) << " -> " << static_cast<int64_t>(flops) << ", min_bytes "
              << static_cast<int64_t>(r.min_bytes) << " -> " << static_cast<int64_t>(t.cost.min_bytes) << "\n";
    r.spec_yaml = spec;
    r.flops = flops;
    r.min_bytes = t.cost.min_bytes;
    ++changed;
    if (!r.rejected()) ++changed_served;
  }
  if (changed) d.attrs["summary_json"] = summary_with_recost(d.attrs["summary_json"], graph, changed, changed_served);
  write_dataset(a.out, d);
  std::cout << "recost: wrote " << a.out << " (" << d.rows.size() << " rows)\n";
  std::cout << "  changed: " << changed << " of " << graph << " graph tasks (" << changed_served << " not rejected)\n";
  std::cout << "  imported: left as they are: " << imported << "\n";
  return 0;
}

}  // namespace

void add_recost_command(CLI::App& app) {
  CLI::App* tasks = app.get_subcommand("tasks");
  auto* sub = tasks->add_subcommand("recost",
                                    "Re-derive each graph task's cost from its graph (spec_yaml cost, the flops and min_bytes "
                                    "columns); every other column is kept");
  static RecostArgs a;
  add_dataset_rewrite_options(sub, a.in, a.out);
  set_action(sub, [] { return recost(a); });
}

}  // namespace kforge::cli
