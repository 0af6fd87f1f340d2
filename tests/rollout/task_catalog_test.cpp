// The server's task catalog and the samples: they are source `samples`, served by name, but a
// listing beside a dataset holds them only when it asks for source `samples` (they are not rows of
// the dataset's splits or counts); a catalog of the samples alone lists them. The shipped config's
// catalog counts exactly the shipped dataset's rows, split by split.
#include "rollout/task_catalog.h"

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <tuple>

#include <gtest/gtest.h>

#include "configs/error.h"
#include "configs/file_reader.h"
#include "configs/remove_tree.h"
#include "data_synth/dataset/dataset_h5.h"
#include "data_synth/dataset/import_pack.h"
#include "env/episode/env_config.h"
#include "env/episode/prompt.h"
#include "reward/reward_config.h"
#include "rollout/server_config.h"
#include "tests/test_paths.h"

using namespace kforge;
using kforge::read_file;
namespace fs = std::filesystem;

namespace {

const size_t kSamples = 13;  // datasets/samples/*.yaml

TasksParams query(std::optional<std::string> split, std::optional<std::string> source = std::nullopt) {
  TasksParams p;
  p.split = std::move(split);
  p.source = std::move(source);
  return p;
}

int64_t total(const TaskCatalog& c, const TasksParams& p) { return c.list(p, 100000)["total"].get<int64_t>(); }

// A synthesised row of the linear_relu sample's spec.
DatasetRow linear_relu_row(const std::string& id, const std::string& split, const std::string& status, const std::string& spec) {
  DatasetRow r;
  r.id = id;
  r.split = split;
  r.status = status;
  r.source = "synth";
  r.dtype = "float32";
  r.ops = "linear,relu";
  r.n_ops = 2;
  r.spec_yaml = spec;
  return r;
}

// Two measured dataset rows, one per split, written as dataset.h5 under a fresh folder.
std::string small_dataset() {
  const std::string spec = read_file(resource_path("datasets/samples/linear_relu.yaml"));
  Dataset d;
  d.attrs["format"] = "kforge-dataset";
  for (const auto& [id, split] : std::vector<std::pair<std::string, std::string>>{{"syn_a", "train"}, {"syn_b", "heldout"}}) {
    DatasetRow r = linear_relu_row(id, split, "ok", spec);
    r.eager_ms = 10.0;
    r.compile_ms = 5.0;
    d.rows.push_back(r);
  }
  fs::path dir = fs::temp_directory_path() / ("kforge_catalog_test_" + std::to_string(::getpid()));
  remove_tree(dir);
  fs::create_directories(dir);
  const std::string h5 = (dir / "dataset.h5").string();
  write_dataset(h5, d);
  return h5;
}

}  // namespace

TEST(TaskCatalog, SamplesAreSourceSamplesAndListedBesideADatasetOnlyWhenAskedFor) {
  const std::string h5 = small_dataset();
  TaskCatalog c;
  c.add_spec_dir(resource_path("datasets/samples"));
  c.add_dataset(h5);
  ASSERT_EQ(c.size(), kSamples + 2);
  EXPECT_EQ(c.samples(), kSamples);
  // The dataset's rows alone in every listing that does not ask for the samples ...
  EXPECT_EQ(total(c, query(std::nullopt)), 2);
  EXPECT_EQ(total(c, query("train")), 1);
  const Json heldout = c.list(query("heldout"));
  ASSERT_EQ(heldout["total"], 1);
  EXPECT_EQ(heldout["tasks"][0]["name"], "syn_b") << "the sample gated_linear (split heldout) is not a heldout row";
  EXPECT_EQ(total(c, query(std::nullopt, "synth")), 2);
  // ... the samples under source `samples`, with their own split among themselves.
  const Json samples = c.list(query(std::nullopt, "samples"), 100);
  ASSERT_EQ(samples["total"].get<size_t>(), kSamples);
  for (const Json& t : samples["tasks"]) EXPECT_EQ(t["source"], "samples") << t.dump();
  EXPECT_EQ(total(c, query("heldout", "samples")), 1);
  // Served by name all the same, and their spec says where they came from.
  auto g = c.find("gated_linear");
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->source, TaskSource::samples);
  EXPECT_STREQ(task_source_name(g->source), "samples");
  EXPECT_EQ(task_source_from_name("samples"), TaskSource::samples);
  EXPECT_FALSE(task_source_from_name("sample").has_value());
  remove_tree(fs::path(h5).parent_path());
}

TEST(TaskCatalog, TheSamplesAloneAreListedAsTheTasks) {
  TaskCatalog c;
  c.add_spec_dir(resource_path("datasets/samples"));
  EXPECT_EQ(total(c, query(std::nullopt)), static_cast<int64_t>(kSamples));
  EXPECT_EQ(total(c, query("heldout")), 1);
  EXPECT_EQ(total(c, query(std::nullopt, "samples")), static_cast<int64_t>(kSamples));
  EXPECT_EQ(total(c, query(std::nullopt, "synth")), 0);
}

TEST(TaskCatalog, TheShippedConfigsCatalogCountsTheShippedDatasetAlone) {
  ServerConfig cfg = ServerConfig::load(resource_path("configs/server.yaml"));
  ASSERT_TRUE(cfg.tasks.samples);
  ASSERT_EQ(cfg.tasks.datasets.size(), 1u);
  TaskCatalog c;  // as the server builds it
  c.add_spec_dir(resource_path("datasets/samples"));
  for (const auto& d : cfg.tasks.datasets) c.add_dataset(d, cfg.tasks.serve_unmeasured);
  std::map<std::string, int64_t> rows;  // the dataset's rows the server serves, per split
  size_t input_checks = 0;              // rows the input checks (issue 25) rejected
  for (const DatasetRow& r : read_dataset(cfg.tasks.datasets[0]).rows) {
    if (!r.rejected()) ++rows[r.split];
    if (r.status == "rejected:input_matters") ++input_checks;
  }
  ASSERT_GT(rows["train"], 4500);
  ASSERT_GT(rows["heldout"], 300);
  ASSERT_GT(input_checks, 0u);
  size_t left_by_checks = 0;  // left out, and said to be the input checks', not the GPU stage's
  for (const auto& l : c.left_out())
    if (l.stage == LeftOutStage::input_checks) left_by_checks += l.rows;
  EXPECT_EQ(left_by_checks, input_checks);
  EXPECT_EQ(total(c, query("train")), rows["train"]);
  EXPECT_EQ(total(c, query("heldout")), rows["heldout"]);
  EXPECT_EQ(total(c, query(std::nullopt)), rows["train"] + rows["heldout"]);
  EXPECT_EQ(total(c, query(std::nullopt, "samples")), static_cast<int64_t>(kSamples));
  EXPECT_EQ(c.size(), static_cast<size_t>(rows["train"] + rows["heldout"]) + kSamples);
  // Heldout plays dataset rows: its first task is not a sample.
  EXPECT_EQ(c.list(query("heldout"), 1)["tasks"][0]["source"], "synth");
}

TEST(TaskCatalog, ServesADatasetFileItsXzAndADirectoryHoldingEither) {
  const std::string spec = read_file(resource_path("datasets/samples/linear_relu.yaml"));
  Dataset d;
  d.attrs["format"] = "kforge-dataset";
  for (const auto& [id, split, status] :
       std::vector<std::tuple<std::string, std::string, std::string>>{{"syn_a", "train", "ok"},
                                                                      {"syn_b", "train", "rejected:compile_mismatch"},
                                                                      {"syn_c", "heldout", "ok"},
                                                                      {"syn_d", "train", "cpu_ok"}}) {
    DatasetRow r = linear_relu_row(id, split, status, spec);
    r.eager_ms = id == "syn_a" ? 12.5 : std::nan("");  // syn_c: no time stored; syn_d: no GPU stage yet
    r.compile_ms = id == "syn_a" ? 5.0 : std::nan("");
    d.rows.push_back(r);
  }
  fs::path dir = fs::path(kforge::testing::temp_path("kforge_catalog_test", "catalog")) / "synth";
  remove_tree(dir);
  fs::create_directories(dir);
  const std::string h5 = (dir / "dataset.h5").string();
  write_dataset(h5, d);
  ASSERT_EQ(std::system(("xz -k -f " + h5).c_str()), 0) << "xz (xz-utils) is needed";

  auto served = [](const std::string& path) {
    TaskCatalog c;
    c.add_dataset(path);
    return c;
  };
  for (const std::string& path : {h5, h5 + ".xz", dir.string()}) {
    TaskCatalog c = served(path);
    EXPECT_EQ(c.size(), 3u) << path;
    EXPECT_EQ(c.unmeasured(), 1u) << "syn_d: served, and counted as not yet measured on a GPU";
    EXPECT_EQ(c.find("syn_b"), nullptr) << "a rejected row is not served";
    ASSERT_NE(c.find("syn_a"), nullptr) << path;
    EXPECT_EQ(c.find("syn_a")->graph.nodes.size(), 2u);
    TasksParams heldout;
    heldout.split = "heldout";
    EXPECT_EQ(c.list(heldout)["total"], 1) << path;
    EXPECT_TRUE(c.list(heldout)["tasks"][0]["eager_ms"].is_null()) << "no baseline yet";
    TasksParams train;
    train.split = "train";
    const Json a = c.list(train)["tasks"][0];
    EXPECT_EQ(a["name"], "syn_a");
    EXPECT_DOUBLE_EQ(a["eager_ms"].get<double>(), 12.5);
    EXPECT_DOUBLE_EQ(a["compile_ms"].get<double>(), 5.0);
  }
  TaskCatalog measured_only;
  measured_only.add_dataset(h5, /*serve_unmeasured=*/false);
  EXPECT_EQ(measured_only.size(), 2u);
  EXPECT_EQ(measured_only.find("syn_d"), nullptr) << "tasks.serve_unmeasured false: no GPU stage yet, not served";
  EXPECT_EQ(measured_only.unmeasured(), 0u);
  EXPECT_EQ(measured_only.unmeasured_left_out(), 1u);
  // What was left out, for an evaluation's denominator: the rejected row, the unmeasured one, and
  // the modules an import beside the dataset skipped (a line that does not parse counted too).
  std::ofstream(dir / "skipped.jsonl")
      << "{\"file\": \"a.py\", \"row\": null, \"reason\": \"stochastic\", \"detail\": \"x\"}\n"
      << "{\"file\": \"b.py\", \"row\": null, \"reason\": \"stochastic\", \"detail\": \"y\"}\n\n"
      << "{\"file\": \"c.py\", \"reason\": \"load_error\"}\n{not json\n"
      << "{\"file\": \"/kb/level4/hf.py\", \"row\": null, \"reason\": \"needs_network\", \"detail\": \"z\"}\n";
  TaskCatalog with_skips;
  with_skips.add_dataset(h5, /*serve_unmeasured=*/false);
  std::vector<std::tuple<std::string, std::string, std::string, size_t, int>> got;
  for (const auto& l : with_skips.left_out())
    got.emplace_back(l.source, left_out_stage_name(l.stage), l.reason, l.rows, l.level.value_or(-1));
  // A module under a levelN folder is counted at its level (KernelBench's level 4 needs the network).
  const std::vector<std::tuple<std::string, std::string, std::string, size_t, int>> want = {
      {"imported", "import", "load_error", 1, -1},       {"imported", "import", "needs_network", 1, 4},
      {"imported", "import", "stochastic", 2, -1},       {"imported", "import", "unreadable", 1, -1},
      {"synth", "gpu_stage", "compile_mismatch", 1, -1}, {"synth", "not_measured", "", 1, -1}};
  EXPECT_EQ(got, want);
  EXPECT_EQ(served(h5).left_out().size(), 5u) << "serve_unmeasured true: the cpu_ok row is served, not left out";
  fs::remove(dir / "skipped.jsonl");
  fs::remove(h5);  // as shipped: the directory holds dataset.h5.xz alone
  EXPECT_EQ(served(dir.string()).size(), 3u);

  auto error_of = [&](const std::string& path) -> std::string {
    try {
      served(path);
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  fs::create_directories(dir / "empty");
  EXPECT_NE(error_of((dir / "empty").string()).find("holds neither dataset.h5 nor dataset.h5.xz"), std::string::npos);
  std::ofstream((dir / "junk.h5.xz").string()) << "not xz";
  EXPECT_NE(error_of((dir / "junk.h5.xz").string()).find("junk.h5.xz: xz could not decompress it"), std::string::npos)
      << error_of((dir / "junk.h5.xz").string());
  remove_tree(dir);
}

// Imported tasks (TorchScript references, TASK_FORMAT.md "Imported tasks") packed as a dataset by
// `kforge tasks import`'s kforge half: the catalog serves them, the artifact survives the HDF5
// file byte for byte, and the prompt shows the module's program verbatim.
TEST(TaskCatalog, ServesImportedTasksWithTheirProgramVerbatim) {
  fs::path dir = fs::temp_directory_path() / ("kforge_catalog_imported_" + std::to_string(::getpid()));
  remove_tree(dir);
  fs::create_directories(dir / "tasks");
  const fs::path fixture = KFORGE_IMPORTED_FIXTURE_DIR;
  for (const auto& f : fs::directory_iterator(fixture / "tasks")) fs::copy_file(f.path(), dir / "tasks" / f.path().filename());
  fs::copy_file(fixture / "bad" / "kb_bad_sha.yaml", dir / "tasks" / "kb_bad_sha.yaml");
  ImportPack pack = pack_import_dir(dir.string(), "test");
  EXPECT_EQ(pack.dataset.rows.size(), 5u);
  EXPECT_EQ(pack.skipped_by_reason()["spec_error"], 1);
  EXPECT_EQ(pack.skipped_by_reason()["stochastic"], 0);  // no skipped.jsonl in this folder

  TaskCatalog c;
  c.add_dataset(dir.string());
  EXPECT_EQ(total(c, query(std::nullopt, std::string("kernelbench"))), 5);
  Json listed = c.list(query(std::string("train")), 100);
  bool seen = false;
  for (const auto& t : listed["tasks"])
    if (t["name"] == "kb_l2_linear_relu") {
      seen = true;  // the listing names what the report groups by: the level, the tolerance profile
      EXPECT_EQ(t.value("level", Json()), Json(2)) << t.dump();
      EXPECT_EQ(t.value("tolerance_profile", Json()), Json("kforge")) << t.dump();
    }
  EXPECT_TRUE(seen) << listed.dump();

  const TaskSpec original = load_task((fixture / "tasks" / "kb_l2_linear_relu.yaml").string());
  auto served = c.find("kb_l2_linear_relu");
  ASSERT_TRUE(served);
  EXPECT_TRUE(served->imported());
  EXPECT_EQ(served->reference.artifact, original.reference.artifact);
  EXPECT_EQ(served->reference.sha256, original.reference.sha256);
  EXPECT_EQ(served->program, original.program);
  std::string prompt = render_prompt(*served, EnvConfig::load(resource_path("configs/env.yaml")), RewardConfig{});
  EXPECT_NE(prompt.find(original.program.substr(0, original.program.size() - 1)), std::string::npos) << prompt;
  EXPECT_NE(prompt.find("fc.weight"), std::string::npos);  // the argument table lists the state
  EXPECT_EQ(c.find("kb_bad_sha"), nullptr);

  // A rejected imported row is left out at its level: a benchmark's per-level denominator counts it.
  Dataset d = read_dataset((dir / "dataset.h5").string());
  for (auto& r : d.rows)
    if (r.id == "kb_l2_linear_relu") r.status = "rejected:artifact_mismatch";
  fs::create_directories(dir / "rejected");
  write_dataset((dir / "rejected" / "dataset.h5").string(), d);
  TaskCatalog with_rejected;
  with_rejected.add_dataset((dir / "rejected").string());
  std::vector<std::tuple<std::string, std::string, size_t, std::optional<int>>> left;
  for (const auto& l : with_rejected.left_out()) left.emplace_back(left_out_stage_name(l.stage), l.reason, l.rows, l.level);
  const std::vector<std::tuple<std::string, std::string, size_t, std::optional<int>>> want = {{"gpu_stage", "artifact_mismatch", 1, 2}};
  EXPECT_EQ(left, want);

  // A task the pack's own input check refuses is a skipped module named by its module file, so it
  // is left out at its level too (a task file's path names none).
  fs::create_directories(dir / "checked" / "tasks");
  for (const auto& f : fs::directory_iterator(dir / "tasks"))
    if (f.path().filename() != "kb_bad_sha.yaml") fs::copy_file(f.path(), dir / "checked" / "tasks" / f.path().filename());
  ImportPack checked = pack_import_dir((dir / "checked").string(), "test", [](const TaskSpec& t, std::string& detail) -> std::string {
    if (t.id != "kb_l2_linear_relu") return "";
    detail = "x0 never matters";
    return "input_matters";
  });
  ASSERT_EQ(checked.skipped.size(), 1u);
  EXPECT_EQ(checked.skipped[0].file, original.provenance.file);
  EXPECT_EQ(checked.skipped[0].detail, "kb_l2_linear_relu: x0 never matters");
  TaskCatalog with_check;
  with_check.add_dataset((dir / "checked").string());
  left.clear();
  for (const auto& l : with_check.left_out()) left.emplace_back(left_out_stage_name(l.stage), l.reason, l.rows, l.level);
  const std::vector<std::tuple<std::string, std::string, size_t, std::optional<int>>> want_checked = {{"import", "input_matters", 1, 2}};
  EXPECT_EQ(left, want_checked);
  remove_tree(dir);
}

// `kforge baseline`'s merge for one GPU model (issue 32) overlaid on a served dataset: each ok row
// with the same id and graph hash replaces the row's baselines, in the listing and in the spec an
// episode gets (gpu, torch, method and flags from its baseline_json); a row whose graph differs, a
// rejected row and a task the catalog does not serve are left alone.
TEST(TaskCatalog, ABaselineOverlayOfAnotherGpuModelReplacesTheServedRowsBaselines) {
  const std::string spec = read_file(resource_path("datasets/samples/linear_relu.yaml"));
  // A dataset of these rows; `merged`: as the GPU stage's merge writes them (kforge tasks set-baselines),
  // each ok row's spec given the baselines measured there.
  auto dataset = [&](const std::string& file, const std::vector<std::tuple<std::string, std::string, std::string, double>>& rows,
                     const std::string& baseline_json, const std::optional<Baselines>& merged) {
    Dataset d;
    d.attrs["format"] = "kforge-dataset";
    for (const auto& [id, hash, status, eager] : rows) {
      DatasetRow r = linear_relu_row(id, "train", status, spec);
      r.graph_hash = hash;
      r.eager_ms = eager;
      r.compile_ms = eager / 2;
      r.baseline_json = baseline_json;
      if (merged && status == "ok") {
        Baselines b = *merged;
        b.eager_ms = eager;
        b.compile_ms = eager / 2;
        r.spec_yaml = spec_with_baselines(spec, b, id);
      }
      d.rows.push_back(r);
    }
    write_dataset(file, d);
  };
  fs::path dir = fs::path(kforge::testing::temp_path("kforge_catalog_test", "overlay"));
  remove_tree(dir);
  fs::create_directories(dir / "key");
  const std::string served = (dir / "dataset.h5").string(), merged = (dir / "key" / "dataset.h5").string();
  dataset(served, {{"syn_a", "h_a", "ok", 12.0}, {"syn_b", "h_b", "ok", 20.0}, {"syn_c", "h_c", "ok", 30.0}},
          R"({"gpu": "NVIDIA H200", "torch": "2.11.0", "cuda": "13.0", "method": "m"})", std::nullopt);
  Baselines h100;
  h100.gpu = "NVIDIA H100 80GB HBM3";
  h100.torch_version = "2.11.0";
  h100.cuda_version = "13.0";
  h100.method = "h100 method";
  h100.flags = {{"allow_tf32", "false"}};
  dataset(
      merged,
      {{"syn_a", "h_a", "ok", 8.0},
       {"syn_b", "other", "ok", 9.0},
       {"syn_c", "h_c", "rejected:compile_mismatch", 7.0},
       {"syn_z", "h_z", "ok", 6.0}},
      R"({"gpu": "NVIDIA H100 80GB HBM3", "torch": "2.11.0", "cuda": "13.0", "method": "h100 method", "flags": {"allow_tf32": "false"}})",
      h100);
  TaskCatalog c;
  c.add_dataset(served);
  const Baselines before = c.find("syn_a")->baselines;  // the sample's, as its spec has them
  ASSERT_NE(before.eager_ms, std::optional<double>(8.0));
  EXPECT_EQ(c.overlay_baselines(merged), 1u) << "syn_a only: syn_b's graph differs, syn_c was rejected there, syn_z is not served";
  const std::shared_ptr<const TaskSpec> a = c.find("syn_a");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->baselines.gpu, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(a->baselines.eager_ms, 8.0);
  EXPECT_EQ(a->baselines.compile_ms, 4.0);
  EXPECT_EQ(a->baselines.method, "h100 method");
  EXPECT_EQ(a->baselines.flags.at("allow_tf32"), "false");
  EXPECT_EQ(c.find("syn_a"), a) << "replaced once, then kept";
  EXPECT_EQ(c.compile_baselines_by_gpu(), (std::map<std::string, size_t>{{"NVIDIA H100 80GB HBM3", 1}, {"NVIDIA H200", 2}}));
  TasksParams all;
  const Json listed = c.list(all)["tasks"];
  ASSERT_EQ(listed.size(), 3u);
  EXPECT_DOUBLE_EQ(listed[0]["eager_ms"].get<double>(), 8.0);
  EXPECT_DOUBLE_EQ(listed[1]["eager_ms"].get<double>(), 20.0);
  EXPECT_EQ(c.find("syn_b")->baselines.eager_ms, before.eager_ms) << "as the served spec has them";
  EXPECT_EQ(c.find("syn_c")->baselines.gpu, before.gpu);
  remove_tree(dir);
}

// The server finds its GPU model's merge by the key folder's name, spelt as keys.py spells it (the
// expected names below are keys.py's slug of each text); of two torch versions, the newer merge.
TEST(TaskCatalog, TheMergedBaselinesOfAGpuModelAreFoundByItsKeyFolder) {
  for (const auto& [text, want] : std::vector<std::pair<std::string, std::string>>{{"NVIDIA H100 80GB HBM3", "nvidia-h100-80gb-hbm3"},
                                                                                   {"NVIDIA H200", "nvidia-h200"},
                                                                                   {"  Tesla (V100)... ", "tesla-v100"},
                                                                                   {std::string(70, 'A') + " x", std::string(64, 'a')},
                                                                                   {"--", "unknown"}})
    EXPECT_EQ(baseline_key_slug(text), want) << text;
  fs::path dir = fs::path(kforge::testing::temp_path("kforge_catalog_test", "keys"));
  remove_tree(dir);
  auto merged = [&](const std::string& key) {
    fs::create_directories(dir / key);
    std::ofstream(dir / key / "dataset.h5") << "x";
    return (dir / key / "dataset.h5").string();
  };
  EXPECT_EQ(merged_baselines_of(dir.string(), "NVIDIA H100 80GB HBM3"), "") << "an empty folder";
  const std::string old_torch = merged("nvidia-h100-80gb-hbm3__torch-2.10.0__cuda-12.8");
  merged("nvidia-h200__torch-2.11.0__cuda-13.0");
  fs::create_directories(dir / "nvidia-h100-80gb-hbm3__torch-2.12.0__cuda-13.0");  // parts only, not merged
  fs::create_directories(dir / "nvidia-h100-pcie__torch-2.11.0__cuda-13.0");
  EXPECT_EQ(merged_baselines_of(dir.string(), "NVIDIA H100 80GB HBM3"), old_torch);
  const std::string new_torch = merged("nvidia-h100-80gb-hbm3__torch-2.11.0__cuda-13.0");
  fs::last_write_time(old_torch, fs::last_write_time(new_torch) - std::chrono::hours(1));
  EXPECT_EQ(merged_baselines_of(dir.string(), "NVIDIA H100 80GB HBM3"), new_torch);
  EXPECT_EQ(merged_baselines_of(dir.string(), "NVIDIA A100-SXM4-80GB"), "");
  EXPECT_EQ(merged_baselines_of((dir / "none").string(), "NVIDIA H200"), "") << "no such folder";
  remove_tree(dir);
}
