// Observations within their budget, the task prompt's template, and configs/env.yaml.
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "configs/error.h"
#include "configs/remove_tree.h"
#include "configs/yaml_reader.h"
#include "env/episode/env_config.h"
#include "env/episode/observation.h"
#include "env/episode/prompt.h"
#include "tests/test_paths.h"

using namespace kforge;
using kforge::testing::source_dir;

namespace {

std::string sample(const std::string& name) { return source_dir() + "/datasets/samples/" + name + ".yaml"; }

EnvConfig shipped_env() { return EnvConfig::load(source_dir() + "/configs/env.yaml"); }

}  // namespace

TEST(TrimMiddle, LeavesShortTextAlone) {
  EXPECT_EQ(trim_middle("short log", 100), "short log");
  std::string exact(100, 'x');
  EXPECT_EQ(trim_middle(exact, 100), exact);
}

TEST(TrimMiddle, CutsTheMiddleWithAMarkerSayingHowMuch) {
  std::string log;
  for (int i = 0; i < 1000; ++i) log += "line " + std::to_string(i) + ": warning\n";
  std::string t = trim_middle(log, 500);
  EXPECT_LE(t.size(), 500u);
  EXPECT_GE(t.size(), 480u);
  EXPECT_EQ(t.substr(0, 20), log.substr(0, 20));
  EXPECT_EQ(t.substr(t.size() - 20), log.substr(log.size() - 20));
  size_t m = t.find("[... ");
  ASSERT_NE(m, std::string::npos);
  size_t cut = std::stoul(t.substr(m + 5));
  std::string marker = "\n[... " + std::to_string(cut) + " characters cut ...]\n";
  EXPECT_NE(t.find(marker), std::string::npos);
  EXPECT_EQ(t.size() - marker.size() + cut, log.size()) << "the marker counts exactly what was cut";
}

TEST(TrimMiddle, NeverSplitsAUtf8Sequence) {
  std::string s;
  for (int i = 0; i < 500; ++i) s += "\xc3\xa9";  // é
  std::string t = trim_middle(s, 101);
  size_t m = t.find("\n[... ");
  ASSERT_NE(m, std::string::npos);
  EXPECT_EQ(m % 2, 0u) << "the head ends on a character boundary";
  size_t tail = t.find("cut ...]\n") + 9;
  EXPECT_EQ((t.size() - tail) % 2, 0u);
  EXPECT_EQ(static_cast<unsigned char>(t[tail]), 0xc3);
}

TEST(FillTemplate, FillsPlaceholdersAndDropsComments) {
  std::string out = fill_template("{{!-- a comment\nover lines --}}\nHello {{name}}, {{ name }}!", "t.md", {{"name", "GPU"}});
  EXPECT_EQ(out, "Hello GPU, GPU!");
}

TEST(FillTemplate, AnUnknownPlaceholderNamesFileLineAndTheClosestField) {
  try {
    fill_template("line one\nline two {{programm}}\n", "configs/prompt/x.md", {{"program", "p"}, {"tools", "t"}});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::config);
    EXPECT_EQ(std::string(e.what()), "configs/prompt/x.md:2: unknown placeholder {{programm}} (did you mean {{program}}?)");
  }
  EXPECT_THROW(fill_template("a {{open", "x.md", {}), Error);
  EXPECT_THROW(fill_template("{{!-- never closed", "x.md", {}), Error);
}

TEST(TaskPrompt, HasTheProgramArgumentsOutputsToleranceFormatPageAndTools) {
  TaskSpec task = load_task(sample("layernorm_gelu_bf16"));
  task.baselines = Baselines{};  // whatever the sample file stores: this prompt is for a task without them
  std::string p = render_prompt(task, shipped_env(), RewardConfig{});
  EXPECT_NE(p.find("class Model(nn.Module)"), std::string::npos);
  EXPECT_NE(p.find("def get_inputs()"), std::string::npos);
  EXPECT_NE(p.find("## The task: " + task.id), std::string::npos);
  for (size_t i = 0; i < task.arguments.size(); ++i) {
    const auto& a = task.arguments[i].decl;
    std::string row = "| " + std::to_string(i) + " | " + a.name + " | " + arg_role_name(a.role) + " | " + shape_str(a.meta.shape) + " | " +
                      dtype_name(a.meta.dtype) + " |";
    EXPECT_NE(p.find(row), std::string::npos) << row;
  }
  for (const auto& o : task.outputs) EXPECT_NE(p.find("| " + o.name + " | " + shape_str(o.meta.shape)), std::string::npos);
  EXPECT_NE(p.find("Tolerance: atol = 0.01, rtol = 0.01"), std::string::npos);
  EXPECT_NE(p.find("# Writing a `kernel` candidate"), std::string::npos) << "the format page, read at run time";
  EXPECT_NE(p.find("- submit(version): "), std::string::npos);
  EXPECT_NE(p.find("at most 24 turns"), std::string::npos);
  EXPECT_NE(p.find("stores no torch.compile time"), std::string::npos);
  EXPECT_EQ(p.find("{{"), std::string::npos) << "every placeholder filled, the comment dropped";
}

// An imported task's other shapes (issue 30) judge extension candidates only: their prompt names the
// module's size constants there; a kernel's prompt says nothing of them (its plan is in numbers).
TEST(TaskPrompt, AnImportedTasksOtherShapesAreNamedToExtensionsAlone) {
  TaskSpec task = load_task(sample("gelu_scale_residual"));
  task.reference.kind = ReferenceKind::torchscript;
  task.program = "class Model: ...\n";
  task.extra_dims = {{{"batch_size", 1}}, {{"batch_size", 9}, {"dim", 255}}};
  const std::string ext = render_prompt(task, shipped_env(), RewardConfig{}, CandidateKind::extension);
  EXPECT_NE(ext.find("verified again at 2 other values of the module's size constants (batch_size = 1; batch_size = 9, dim = 255)"),
            std::string::npos)
      << ext;
  const std::string kernel = render_prompt(task, shipped_env(), RewardConfig{}, CandidateKind::kernel);
  EXPECT_EQ(kernel.find("verified again at"), std::string::npos) << kernel;
}

TEST(TaskPrompt, EverySampleTaskRendersWithTheShippedTemplate) {
  EnvConfig env = shipped_env();
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator(source_dir() + "/datasets/samples")) {
    if (e.path().extension() != ".yaml") continue;
    TaskSpec t = load_task(e.path().string());
    std::string p = render_prompt(t, env, RewardConfig{});
    EXPECT_NE(p.find(t.id), std::string::npos);
    ++n;
  }
  EXPECT_GE(n, 13);
}

TEST(TaskPrompt, TheWordingComesFromTheTemplateFile) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("kforge_prompt_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "short.md") << "Make {{task_id}} fast; {{dtype}}.";
  std::ofstream(dir / "env.yaml") << "prompt: {template: short.md}\nlimits: {max_turns: 5}\n";
  EnvConfig env = EnvConfig::load((dir / "env.yaml").string());
  EXPECT_EQ(env.limits.max_turns, 5);
  EXPECT_EQ(render_prompt(load_task(sample("softmax_rows")), env, RewardConfig{}), "Make softmax_rows fast; float32.");
  remove_tree(dir);
}

TEST(EnvConfig, ShippedFileLoadsAndMatchesTheDefaults) {
  EnvConfig c = shipped_env();
  EnvConfig d;
  EXPECT_EQ(c.limits.max_turns, d.limits.max_turns);
  EXPECT_DOUBLE_EQ(c.limits.wall_clock_s, d.limits.wall_clock_s);
  EXPECT_DOUBLE_EQ(c.limits.gpu_time_s, d.limits.gpu_time_s);
  EXPECT_EQ(c.limits.observation_max_chars, d.limits.observation_max_chars);
  EXPECT_EQ(c.limits.prompt_max_chars, d.limits.prompt_max_chars);
  EXPECT_EQ(c.workspace.max_files, d.workspace.max_files);
  EXPECT_EQ(c.workspace.max_file_bytes, d.workspace.max_file_bytes);
  EXPECT_EQ(c.workspace.max_total_bytes, d.workspace.max_total_bytes);
  EXPECT_EQ(c.workspace.allowed_extensions, d.workspace.allowed_extensions);
  EXPECT_EQ(c.workspace.allowed_names, d.workspace.allowed_names);
  EXPECT_EQ(std::filesystem::canonical(c.prompt.template_path), std::filesystem::canonical(d.prompt.template_path));
  EXPECT_EQ(std::filesystem::canonical(c.prompt.format_page), std::filesystem::canonical(d.prompt.format_page));
  EXPECT_EQ(c.tools.verify_trials, 0);
  EXPECT_EQ(c.tools.profile_times, d.tools.profile_times);
  EXPECT_EQ(c.tools.profile_counters, d.tools.profile_counters);
  EXPECT_EQ(c.tools.profile_counters, CountersWhen::asked) << "counters only when profile() asks";
  auto counters = [](const char* v) {
    return EnvConfig::from_yaml(YamlNode::parse(std::string("tools: {profile_counters: ") + v + "}\n", "env.yaml"), ".")
        .tools.profile_counters;
  };
  EXPECT_EQ(counters("always"), CountersWhen::always);
  EXPECT_EQ(counters("never"), CountersWhen::never);
  EXPECT_EQ(counters("true"), CountersWhen::always) << "the switch it was: true is always";
  EXPECT_EQ(counters("false"), CountersWhen::never);
  // profile_metrics: empty in the shipped file and by default (the worker's list), or the metrics given, in order.
  EXPECT_EQ(c.tools.profile_metrics, d.tools.profile_metrics);
  EXPECT_TRUE(c.tools.profile_metrics.empty());
  EXPECT_EQ(
      EnvConfig::from_yaml(YamlNode::parse("tools: {profile_metrics: [dram__bytes_write.sum, gpu__time_duration.sum]}\n", "env.yaml"), ".")
          .tools.profile_metrics,
      (std::vector<std::string>{"dram__bytes_write.sum", "gpu__time_duration.sum"}));
}

TEST(EnvConfig, ErrorsNameFileLineAndKey) {
  auto err = [](const std::string& yaml) -> std::string {
    try {
      EnvConfig::from_yaml(YamlNode::parse(yaml, "env.yaml"), ".");
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_EQ(err("limits:\n  max_turn: 3\n"), "env.yaml:2:3: limits.max_turn: unknown key (did you mean 'max_turns'?)");
  EXPECT_NE(err("limits: {max_turns: many}\n").find("limits.max_turns: expected an integer"), std::string::npos)
      << err("limits: {max_turns: many}\n");
  EXPECT_NE(err("limits: {max_turns: 0}\n").find("limits.max_turns: must be >= 1"), std::string::npos);
  EXPECT_NE(err("limits: {observation_max_chars: 10}\n").find("must be >= 256"), std::string::npos);
  EXPECT_NE(err("workspace: {allowed_extensions: [cu]}\n").find("'cu' is not an extension"), std::string::npos);
  EXPECT_NE(err("workspace: {max_total_bytes: 2000}\n").find("must be >= max_file_bytes"), std::string::npos);
  EXPECT_NE(err("prompt: {template: no_such.md}\n").find("prompt.template: no such file"), std::string::npos);
  EXPECT_NE(err("tools: {profile_times: maybe}\n").find("tools.profile_times: expected true or false"), std::string::npos);
  EXPECT_NE(err("tools: {profile_counters: 2}\n").find("tools.profile_counters: '2' is not asked, always or never"), std::string::npos);
  EXPECT_NE(err("tools: {profile_metrics: [DRAM bytes]}\n").find("tools.profile_metrics: 'DRAM bytes' is not a metric name"),
            std::string::npos)
      << err("tools: {profile_metrics: [DRAM bytes]}\n");
  EXPECT_NE(err("tools: {profile_metrics: [dram__bytes_read.sum, dram__bytes_read.sum]}\n").find("'dram__bytes_read.sum' is listed twice"),
            std::string::npos);
  EXPECT_NE(err("tools: {profile_metrics: dram__bytes_read.sum}\n").find("tools.profile_metrics"), std::string::npos)
      << err("tools: {profile_metrics: dram__bytes_read.sum}\n");
}
