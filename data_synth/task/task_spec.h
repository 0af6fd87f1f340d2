#pragma once
// A task on disk: what function a candidate must compute (an operator graph over named
// dimensions), the arguments it receives in order with their draws, its outputs, tolerance, cost,
// baselines and provenance. The format is documented in data_synth/task/TASK_FORMAT.md.
//
// Loading checks everything and fills what can be derived (argument list, outputs, cost,
// tolerance); where the file states a derived field, it must agree with the graph.
//
// An imported task (KernelBench, CUDA-Agent) has no graph: its reference is the module itself,
// exported as TorchScript (`reference.kind: torchscript`), its program is the module's source as
// read, and its arguments, outputs and cost are taken as written (and validated), not derived.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "configs/eval_config.h"
#include "data_synth/task/op_graph.h"

namespace kforge {

// samples: the shipped sample tasks (datasets/samples/), never rows of a dataset or its splits.
enum class TaskSource { synth, kernelbench, cuda_agent_ops, samples, other };
enum class Split { train, heldout };
const char* task_source_name(TaskSource s);
// The source named `name`, if any; task_source_names() lists them ("synth, kernelbench, ...").
std::optional<TaskSource> task_source_from_name(const std::string& name);
const char* task_source_names();
const char* split_name(Split s);

struct TaskArgument {
  ArgumentDecl decl;  // name, role, shape, dtype, default draw
  Draw draw;          // the draw in effect (the spec's, else the default)
};

struct TaskOutput {
  std::string name;
  TensorMeta meta;
};

struct Baselines {
  std::optional<double> eager_ms;
  std::optional<double> compile_ms;
  std::string gpu, torch_version, cuda_version, method;
  std::map<std::string, std::string> flags;  // e.g. allow_tf32: "false"
  bool empty() const { return !eager_ms && !compile_ms && gpu.empty() && method.empty(); }
};

struct Provenance {
  std::string generator;  // "kforge-synth 0.1", "hand-written", "kforge tasks import"
  uint64_t seed = 0;      // the generator's seed
  // Imported tasks only (empty / absent otherwise): where the module came from.
  std::string format;                           // kernelbench, cuda-agent
  std::string file, file_sha256;                // the path as given to the importer, the file's hash
  std::optional<int64_t> row;                   // the row of a cuda-agent file
  std::optional<int64_t> level;                 // KernelBench level 1-3
  std::optional<std::vector<std::string>> ops;  // cuda-agent's op list
  std::string tolerance_profile;                // kforge, cuda-agent
};

// What judges a candidate: the task's operator graph executed with ATen calls, or the task's own
// PyTorch module exported as TorchScript (data_synth/reference/reference.h runs both).
enum class ReferenceKind { graph, torchscript };
enum class ModuleMode { train, eval };
const char* reference_kind_name(ReferenceKind k);
const char* module_mode_name(ModuleMode m);

struct TaskReference {
  ReferenceKind kind = ReferenceKind::graph;
  ModuleMode module_mode = ModuleMode::eval;  // the mode the module was traced in (torchscript)
  std::string sha256;                         // hex SHA-256 of `artifact`
  std::string artifact;                       // the bytes torch.jit.save wrote (base64 in YAML)
};

// The speed-of-light floor's inputs. An imported task may lack the FLOP count (the importer's
// counter did not cover every op): then the speed-of-light check is off for it.
struct TaskCost {
  std::optional<double> flops;
  double min_bytes = 0;  // every argument read once, every output written once
};

// An imported task's constructor argument (the module's get_init_inputs()): a bool, an integer
// or a number. An extension candidate's ModelNew.__init__ receives them in order.
using InitValue = std::variant<bool, int64_t, double>;

// One other shape of an imported task (issue 30): the module at other values of the size constants
// only its get_inputs() reads, so its state keeps its shapes and only the inputs and outputs change;
// the importer checked the artifact against the module's eager forward there. The artifact is the
// same (TASK_FORMAT.md "Imported tasks", `extra_shapes`).
struct ImportedShape {
  std::string kind;            // what the importer made it: odd, batch_one
  DimEnv constants;            // the constants' values (a tuple's entries as NAME_0, NAME_1, ...)
  std::vector<Shape> inputs;   // the shapes of the arguments of role input, in order
  std::vector<Shape> outputs;  // every output's shape, in order
};

struct TaskSpec {
  static constexpr int kFormatVersion = 1;

  std::string id;
  TaskSource source = TaskSource::synth;
  Split split = Split::train;
  std::string description;
  uint64_t seed = 0;  // the task seed of every draw: (seed, trial, salt)
  DType dtype = DType::float32;
  DimEnv dims;                       // graph tasks only
  std::optional<DimEnv> check_dims;  // small dims for CPU consistency checks (graph tasks only)
  // Other shapes verification also runs the candidate at (issue 30): a graph task's entry overrides
  // some of `dims`, and the task resolves there (data_synth/synth/extra_shapes.h draws them: odd
  // sizes, a batch of 1, every dim one smaller); an imported task's is imported_shapes[i].constants.
  // Empty: the task's own shape only.
  std::vector<DimEnv> extra_dims;
  std::vector<ImportedShape> imported_shapes;  // imported tasks: their file's `extra_shapes`
  OpGraph graph;                               // graph tasks only
  TaskReference reference;
  std::string program;  // imported tasks: the module's Python source, verbatim (render_python returns it)
  // Imported tasks: get_init_inputs() at the module's size when every value is a bool or a number
  // (the file's `init_inputs`); empty otherwise and for graph tasks (their Model() takes none).
  std::vector<InitValue> init_inputs;

  // Derived from the graph (and checked against the file when it states them); an imported
  // task's arguments, outputs and cost are its file's, `resolved` is empty.
  ResolvedGraph resolved;
  std::vector<TaskArgument> arguments;
  std::vector<TaskOutput> outputs;
  TaskCost cost;
  Tolerance tolerance;
  Baselines baselines;
  Provenance provenance;

  bool imported() const { return reference.kind == ReferenceKind::torchscript; }

  // The same task with some dimensions replaced (draws kept by argument name). An imported task
  // has no dimensions: empty overrides give it back unchanged, any other is a spec error.
  TaskSpec with_dims(const DimEnv& overrides) const;
  // The same task at its check_dims (or itself when it has none, as imported tasks).
  TaskSpec at_check_dims() const;
  // The same task at extra_dims[i] (a spec error when i is out of range); an imported task with its
  // inputs' and outputs' shapes those of imported_shapes[i] (no FLOP count there).
  TaskSpec at_extra_dims(size_t i) const;
};

// Throws io errors for missing files and spec errors ("file:line:col: key: what") for the rest.
TaskSpec load_task(const std::string& path);
TaskSpec parse_task(const std::string& yaml_text, const std::string& origin);
// The full spec, derived fields included; parse_task(task_to_yaml(t)) gives t back.
std::string task_to_yaml(const TaskSpec& task);

// Builds and checks a task from its parts (derived fields filled), e.g. one operator on its example.
TaskSpec make_task(std::string id, OpGraph graph, DimEnv dims, DType dtype, uint64_t seed);

// A one-operator task on the operator's example inputs (inputs x0, x1, ...; the node is 'y').
TaskSpec make_op_example_task(const OpDef& op, DType dtype = DType::float32);

// Re-derives arguments, outputs and cost after the graph or dims changed; keeps draws by name.
// An imported task has nothing to derive from: a spec error.
void derive_task(TaskSpec& task);

// The spec text with its top-level `baselines:` block replaced by `b` (or inserted before
// `provenance:`, where task_to_yaml writes it, else at the end); every other line is kept as it
// was, comments included (hand-written samples keep their layout). The block is the one
// task_to_yaml emits. Throws a spec error when the result does not parse.
std::string spec_with_baselines(const std::string& yaml_text, const Baselines& b, const std::string& origin);
// The spec text's top-level `baselines:` block as parse_task reads it (empty when there is none),
// without parsing the rest of the task; spec errors name `origin`.
Baselines spec_baselines(const std::string& yaml_text, const std::string& origin);

}  // namespace kforge
