#include "data_synth/synth/synth_config.h"

#include "configs/yaml_reader.h"

namespace kforge {

namespace {

// A map of name -> non-negative weight with at least one positive; names must be among `known`.
template <class K>
std::map<K, double> read_weights(const YamlNode& node, const std::map<K, double>& defaults) {
  std::map<K, double> out;
  double total = 0;
  for (const auto& key : node.keys()) {
    YamlNode v = node.at(key);
    K k{};
    if constexpr (std::is_same_v<K, int>) {
      try {
        size_t used = 0;
        k = std::stoi(key, &used);
        if (used != key.size()) throw std::invalid_argument(key);
      } catch (const std::exception&) {
        v.fail("'" + key + "' is not an operator count");
      }
      if (k < 1 || k > 5) v.fail("operator counts are 1 to 5, not " + key);
    } else {
      if (!defaults.count(key)) {
        std::vector<std::string> names;
        for (const auto& [n, w] : defaults) names.push_back(n);
        std::string hint = closest_match(key, names), list;
        for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
        v.fail("unknown name '" + key + "'" + (hint.empty() ? "" : " (did you mean '" + hint + "'?)") + " (known: " + list + ")");
      }
      k = key;
    }
    double w = v.as<double>();
    if (!(w >= 0)) v.fail("a weight must be >= 0");
    out[k] = w;
    total += w;
  }
  if (!(total > 0)) node.fail("needs at least one positive weight");
  return out;
}

}  // namespace

CostModelConfig CostModelConfig::from_yaml(const YamlNode& node) {
  CostModelConfig c;
  c.bandwidth_gb_s = node.get<double>("bandwidth_gb_s", c.bandwidth_gb_s);
  if (!(c.bandwidth_gb_s > 0)) node.at("bandwidth_gb_s").fail("must be > 0");
  if (auto p = node.find("peak_tflops")) {
    for (const auto& k : p->keys()) {
      if (!c.peak_tflops.count(k)) p->at(k).fail("peak_tflops is given for float32, float16 or bfloat16, not '" + k + "'");
      double v = p->at(k).as<double>();
      if (!(v > 0)) p->at(k).fail("must be > 0");
      c.peak_tflops[k] = v;
    }
  }
  c.launch_overhead_us = node.get<double>("launch_overhead_us", c.launch_overhead_us);
  if (!(c.launch_overhead_us >= 0)) node.at("launch_overhead_us").fail("must be >= 0");
  node.check_no_unknown_keys();
  return c;
}

TimingConfig SynthConfig::default_baseline_timing() {
  TimingConfig t;
  t.warmup_count = 3;
  t.warmup_ms = 50;
  t.min_reps = 10;
  t.max_reps = 100;
  t.target_rse = 0.01;
  t.budget_ms = 3000;
  t.l2_flush = true;
  t.l2_flush_factor = 2;
  return t;
}

SynthConfig SynthConfig::from_yaml(const YamlNode& node) {
  SynthConfig c;
  if (!node.is_map()) node.fail("a synthesis config is a mapping (see configs/synth.yaml)");
  c.origin = node.origin();
  c.seed = node.get<uint64_t>("seed", c.seed);
  c.target_tasks = node.get<int64_t>("target_tasks", c.target_tasks);
  if (c.target_tasks < 1) node.at("target_tasks").fail("must be >= 1");
  c.shard_candidates = node.get<int64_t>("shard_candidates", c.shard_candidates);
  if (c.shard_candidates < 1) node.at("shard_candidates").fail("must be >= 1");
  c.max_shards = node.get<int64_t>("max_shards", c.max_shards);
  if (c.max_shards < 1) node.at("max_shards").fail("must be >= 1");
  if (auto n = node.find("ops_per_task")) c.ops_per_task = read_weights<int>(*n, c.ops_per_task);
  if (auto n = node.find("families")) c.families = read_weights<std::string>(*n, c.families);
  if (auto n = node.find("dtypes")) c.dtypes = read_weights<std::string>(*n, c.dtypes);
  c.target_ms_low = node.get<double>("target_ms_low", c.target_ms_low);
  c.target_ms_high = node.get<double>("target_ms_high", c.target_ms_high);
  c.window_ms_low = node.get<double>("window_ms_low", c.window_ms_low);
  c.window_ms_high = node.get<double>("window_ms_high", c.window_ms_high);
  if (!(c.target_ms_low > 0)) node.at("target_ms_low").fail("must be > 0");
  if (!(c.target_ms_high >= c.target_ms_low)) node.at("target_ms_high").fail("must be >= target_ms_low");
  if (!(c.window_ms_low >= 0)) node.at("window_ms_low").fail("must be >= 0");
  if (!(c.window_ms_high > c.window_ms_low)) node.at("window_ms_high").fail("must be > window_ms_low");
  c.max_task_gb = node.get<double>("max_task_gb", c.max_task_gb);
  if (!(c.max_task_gb > 0)) node.at("max_task_gb").fail("must be > 0");
  c.max_batch = node.get<int64_t>("max_batch", c.max_batch);
  if (c.max_batch < 1) node.at("max_batch").fail("must be >= 1");
  c.residual_probability = node.get<double>("residual_probability", c.residual_probability);
  if (!(c.residual_probability >= 0 && c.residual_probability <= 1)) node.at("residual_probability").fail("must be in [0, 1]");
  c.heldout_fraction = node.get<double>("heldout_fraction", c.heldout_fraction);
  if (!(c.heldout_fraction >= 0.05 && c.heldout_fraction < 0.5))
    node.at("heldout_fraction").fail("must be in [0.05, 0.5) (heldout is at least 5 %)");
  if (auto n = node.find("cost_model")) c.cost = CostModelConfig::from_yaml(*n);
  if (auto n = node.find("cpu_check")) {
    CpuCheckConfig& k = c.cpu_check;
    k.enabled = n->get<bool>("enabled", k.enabled);
    k.check_batch = n->get<int64_t>("check_batch", k.check_batch);
    if (k.check_batch < 1) n->at("check_batch").fail("must be >= 1");
    k.check_spatial = n->get<int64_t>("check_spatial", k.check_spatial);
    if (k.check_spatial < 1) n->at("check_spatial").fail("must be >= 1");
    k.max_flops = n->get<double>("max_flops", k.max_flops);
    if (!(k.max_flops > 0)) n->at("max_flops").fail("must be > 0");
    k.max_bytes = n->get<double>("max_bytes", k.max_bytes);
    if (!(k.max_bytes > 0)) n->at("max_bytes").fail("must be > 0");
    k.min_informative_fraction = n->get<double>("min_informative_fraction", k.min_informative_fraction);
    if (!(k.min_informative_fraction > 0 && k.min_informative_fraction <= 1)) n->at("min_informative_fraction").fail("must be in (0, 1]");
    k.input_matters = n->get<bool>("input_matters", k.input_matters);
    k.input_slices = n->get<bool>("input_slices", k.input_slices);
    k.input_draws = n->get<int>("input_draws", k.input_draws);
    if (k.input_draws < 1) n->at("input_draws").fail("must be >= 1");
    n->check_no_unknown_keys();
  }
  if (auto n = node.find("extra_shapes")) {
    ExtraShapeConfig& x = c.extra_shapes;
    x.enabled = n->get<bool>("enabled", x.enabled);
    x.max_shapes = n->get<int>("max_shapes", x.max_shapes);
    if (x.max_shapes < 1 || x.max_shapes > 5)
      n->at("max_shapes").fail("must be in [1, 5] (one shape per kind: odd, batch one, off by one, empty, large)");
    x.large_bytes = n->get<double>("large_bytes", x.large_bytes);
    if (!(x.large_bytes >= 0)) n->at("large_bytes").fail("must be >= 0 (0: no large shape)");
    n->check_no_unknown_keys();
  }
  if (auto n = node.find("decontamination")) {
    DecontaminationConfig& d = c.decontamination;
    d.signatures = n->get<std::string>("signatures", d.signatures);
    d.op_similarity = n->get<double>("op_similarity", d.op_similarity);
    if (!(d.op_similarity > 0 && d.op_similarity <= 1)) n->at("op_similarity").fail("must be in (0, 1]");
    d.shape_similarity = n->get<double>("shape_similarity", d.shape_similarity);
    if (!(d.shape_similarity >= 0 && d.shape_similarity <= 1)) n->at("shape_similarity").fail("must be in [0, 1]");
    d.sequence_only_min_ops = n->get<int>("sequence_only_min_ops", d.sequence_only_min_ops);
    if (d.sequence_only_min_ops < 1) n->at("sequence_only_min_ops").fail("must be >= 1");
    n->check_no_unknown_keys();
  }
  if (auto n = node.find("baseline_timing")) c.baseline_timing = TimingConfig::from_yaml(*n, c.baseline_timing);
  node.check_no_unknown_keys();
  return c;
}

SynthConfig SynthConfig::load(const std::string& path) { return from_yaml(YamlNode::load_file(path, ErrorKind::config)); }

}  // namespace kforge
