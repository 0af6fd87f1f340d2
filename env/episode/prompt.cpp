#include "env/episode/prompt.h"

#include <iomanip>
#include <sstream>
#include <vector>

#include "configs/error.h"
#include "configs/file_reader.h"
#include "configs/yaml_reader.h"
#include "data_synth/task/render_python.h"
#include "env/episode/tool_call.h"
#include "env/evaluator/evaluator.h"

namespace kforge {

namespace {

int line_of(const std::string& text, size_t pos) {
  int line = 1;
  for (size_t i = 0; i < pos && i < text.size(); ++i) line += text[i] == '\n';
  return line;
}

std::string number(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

std::string seconds(double s) {
  if (s <= 0) return "no limit";
  std::ostringstream os;
  if (s >= 120)
    os << s / 60 << " min";
  else
    os << s << " s";
  return os.str();
}

}  // namespace

std::string fill_template(const std::string& text, const std::string& origin, const std::map<std::string, std::string>& fields) {
  std::string out;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t open = text.find("{{", pos);
    if (open == std::string::npos) {
      out += text.substr(pos);
      break;
    }
    out += text.substr(pos, open - pos);
    if (text.compare(open, 5, "{{!--") == 0) {
      size_t end = text.find("--}}", open + 5);
      KFORGE_CHECK(end != std::string::npos, config, origin << ":" << line_of(text, open) << ": a {{!-- comment is not closed by --}}");
      pos = end + 4;
      if (pos < text.size() && text[pos] == '\n') ++pos;  // a comment on its own lines leaves no blank line
      continue;
    }
    size_t close = text.find("}}", open + 2);
    KFORGE_CHECK(close != std::string::npos, config, origin << ":" << line_of(text, open) << ": '{{' is not closed by '}}'");
    std::string name = text.substr(open + 2, close - open - 2);
    while (!name.empty() && name.front() == ' ') name.erase(name.begin());
    while (!name.empty() && name.back() == ' ') name.pop_back();
    auto it = fields.find(name);
    if (it == fields.end()) {
      std::vector<std::string> known;
      for (const auto& [k, v] : fields) known.push_back(k);
      std::string close_match = closest_match(name, known);
      KFORGE_FAIL(config, origin << ":" << line_of(text, open) << ": unknown placeholder {{" << name << "}}"
                                 << (close_match.empty() ? "" : " (did you mean {{" + close_match + "}}?)"));
    }
    out += it->second;
    pos = close + 2;
  }
  return out;
}

namespace {

// What the reward's text says of the other shapes and layouts a passing candidate is verified at.
std::string other_shapes_text(const TaskSpec& task, const RewardConfig& reward, bool extension) {
  if (!judged_at_other_shapes(task, extension)) return "";
  std::vector<std::string> kinds;
  bool empty = false;
  for (const DimEnv& d : task.extra_dims)
    for (const auto& [k, v] : d) empty = empty || v == 0;
  if (!task.extra_dims.empty() && task.imported()) {
    std::string at;
    for (const DimEnv& d : task.extra_dims) {
      std::string one;
      for (const auto& [k, v] : d) one += (one.empty() ? "" : ", ") + k + " = " + std::to_string(v);
      at += (at.empty() ? "" : "; ") + one;
    }
    kinds.push_back(std::to_string(task.extra_dims.size()) + " other values of the module's size constants (" + at + ")");
  } else if (!task.extra_dims.empty()) {
    kinds.push_back(std::to_string(task.extra_dims.size()) +
                    " other sizes of the same dimensions (odd sizes, sizes off by one, a batch of 1" +
                    (empty ? std::string(", an empty batch B = 0") : "") + ")");
  }
  if (extension) kinds.push_back("its inputs in other memory layouts (strided, channels-last for 4-D inputs) at the sizes above");
  std::string what = kinds[0] + (kinds.size() > 1 ? " and with " + kinds[1] : "");
  std::string how = extension ? "forward must accept any size and layout PyTorch allows (call .contiguous() where a kernel needs it" +
                                    std::string(empty ? "; with no element, launch nothing" : "") + ")"
                              : "Write the launch plan's grids and arguments over the dimensions' names" +
                                    std::string(empty ? " (a launch whose grid has no block at B = 0 is skipped)" : "");
  return "Once it passes, it is verified again at " + what +
         ": a candidate right only at the sizes above is no kernel for the operator and gets " +
         (reward.shapes.not_general == NotGeneral::penalty ? number(reward.shapes.penalty) : std::string("its tier all the same")) + ". " +
         how + ".\n";
}

}  // namespace

std::map<std::string, std::string> prompt_fields(const TaskSpec& task, const std::string& format_page, const EnvConfig& env,
                                                 const RewardConfig& reward, bool extension) {
  std::map<std::string, std::string> f;
  f["task_id"] = task.id;
  f["description"] = task.description.empty() ? "(no description)" : task.description;
  std::string program = render_python(task);
  while (!program.empty() && program.back() == '\n') program.pop_back();
  f["program"] = program;
  std::string dims;
  for (const auto& [name, value] : task.dims) dims += (dims.empty() ? "" : ", ") + name + " = " + std::to_string(value);
  f["dimensions"] = dims.empty() ? "(none)" : dims;
  f["dtype"] = dtype_name(task.dtype);

  std::ostringstream args;
  args << "| # | name | role | shape | dtype |\n| --- | --- | --- | --- | --- |\n";
  for (size_t i = 0; i < task.arguments.size(); ++i) {
    const ArgumentDecl& a = task.arguments[i].decl;
    args << "| " << i << " | " << a.name << " | " << arg_role_name(a.role) << " | " << shape_str(a.meta.shape) << " | "
         << dtype_name(a.meta.dtype) << " |\n";
  }
  f["arguments"] = args.str();
  std::ostringstream outs;
  outs << "| name | shape | dtype |\n| --- | --- | --- |\n";
  for (const auto& o : task.outputs)
    outs << "| " << o.name << " | " << shape_str(o.meta.shape) << " | " << dtype_name(o.meta.dtype) << " |\n";
  f["outputs"] = outs.str();
  f["tolerance"] = "atol = " + number(task.tolerance.atol) + ", rtol = " + number(task.tolerance.rtol);
  std::string page = format_page;
  while (!page.empty() && page.back() == '\n') page.pop_back();
  f["format"] = page;
  f["tools"] = tool_summary();

  const EpisodeLimits& l = env.limits;
  std::ostringstream lim;
  lim << "- at most " << l.max_turns << " turns (one tool call each); the episode ends without a reward for the "
      << "candidate if none is submitted by then\n"
      << "- wall time: " << seconds(l.wall_clock_s) << "; GPU time (verify, profile, submit): " << seconds(l.gpu_time_s) << "\n"
      << "- observations longer than " << l.observation_max_chars << " characters are cut in the middle\n"
      << "- the workspace takes at most " << env.workspace.max_files << " files of " << env.workspace.max_file_bytes << " bytes each";
  f["limits"] = lim.str();

  const TierConfig& t = reward.tiers;
  const FailureConfig& fl = reward.failures;
  const DecisionConfig& d = reward.decision;
  std::ostringstream rw;
  rw << "submit() judges the workspace's candidate once more (more trials, full timing) and ends the episode:\n"
     << "- " << number(fl.compile_error) << " if it does not compile, " << number(fl.run_error) << " if it faults or hangs, "
     << number(fl.verify_fail) << " if its outputs are wrong, " << number(fl.cheat) << " if it is caught cheating\n"
     << "- " << number(fl.cheat) << " as well when a candidate was caught cheating earlier in the episode (by any tool) and the "
     << "submission is that candidate or does not pass, or nothing is submitted\n"
     << "- " << number(t.correct) << " if it is correct\n"
     << "- " << number(t.faster_than_eager) << " if it is also faster than eager PyTorch by more than "
     << number((d.eager_threshold - 1) * 100) << " %\n"
     << "- " << number(t.faster_than_both) << " if it is faster than both eager PyTorch and torch.compile by more than "
     << number((d.compile_threshold - 1) * 100) << " %\n"
     << (d.mode == DecisionMode::ci_lower_bound ? "Faster means the lower bound of the speedup's " + number(d.interval.confidence * 100) +
                                                      " % confidence interval clears the threshold, not one lucky measurement.\n"
                                                : std::string("Faster is decided on the median speedup.\n"))
     << other_shapes_text(task, reward, extension) << "Ending without submit() gives " << number(fl.no_submission) << ".";
  if (env.history.reward_from == RewardFrom::best_verified)
    rw << "\nEvery candidate verify(), profile() or submit() judges is kept as a version (history()). The episode's reward is "
       << "the highest of the submission's and that of every version all of whose checks passed, scored as if submitted "
       << "(profile() a version to count its speed). That version is judged once more as a submission at the end, and the "
       << "lower of its two rewards counts; a caught cheat still gets " << number(fl.cheat) << ".";
  if (!task.baselines.compile_ms) rw << " (This task stores no torch.compile time.)";
  f["reward"] = rw.str();
  return f;
}

std::string render_prompt(const TaskSpec& task, const EnvConfig& env, const RewardConfig& reward, CandidateKind kind) {
  const bool ext = kind == CandidateKind::extension;
  const std::string& template_path = ext ? env.prompt.extension_template_path : env.prompt.template_path;
  const std::string& page_path = ext ? env.prompt.extension_format_page : env.prompt.format_page;
  std::string tmpl =
      read_file(template_path, ext ? "the extension prompt template (prompt.extension_template)" : "the prompt template (prompt.template)");
  std::string page = read_file(
      page_path, ext ? "the extension format page (prompt.extension_format_page)" : "the candidate format page (prompt.format_page)");
  return fill_template(tmpl, template_path, prompt_fields(task, page, env, reward, ext));
}

}  // namespace kforge
