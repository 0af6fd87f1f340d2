#pragma once
// Structure of a task for dedup, splits and decontamination: a canonical hash over operator types,
// resolved attributes and shapes (independent of names and of the order independent nodes are
// listed in), and the canonical operator sequence that splits keep apart.
#include <cstdint>
#include <string>
#include <vector>

#include "data_synth/task/task_spec.h"

namespace kforge {

// Hex digest; equal for tasks that compute the same graph on the same shapes and dtypes.
std::string canonical_graph_hash(const TaskSpec& task);
// "linear(#)>relu" style nesting for DAGs: "add(relu(linear(#)),#)"; shapes and attributes left out.
std::string canonical_op_sequence(const TaskSpec& task);
// The operator names in node order.
std::vector<std::string> op_names(const TaskSpec& task);

// One KernelBench problem reduced to what decontamination compares.
struct KernelBenchSignature {
  std::string name;  // "level2/12_Gemm_Multiply_LeakyReLU.py"
  int level = 0;
  std::vector<std::string> ops;  // kforge operator names in forward order
  std::vector<std::vector<int64_t>> input_shapes;
};

// Reads the list written by tools/dataset/kernelbench_signatures.py; throws an io or config error.
std::vector<KernelBenchSignature> load_kernelbench_signatures(const std::string& path);

// Longest common subsequence over the longer length: 1 for identical sequences.
double op_sequence_similarity(const std::vector<std::string>& a, const std::vector<std::string>& b);
// Best match of input shapes: per pair of the same rank, the mean of min/max over dims.
double shape_similarity(const std::vector<std::vector<int64_t>>& a, const std::vector<std::vector<int64_t>>& b);

struct DecontaminationRule {
  double op_similarity = 1.0;
  double shape_similarity = 0.5;
  int sequence_only_min_ops = 3;
};

// The first KernelBench problem the task is too similar to, or "" when none.
std::string kernelbench_match(const TaskSpec& task, const std::vector<KernelBenchSignature>& sigs, const DecontaminationRule& rule);

// Assigns splits: whole groups of tasks with the same canonical operator sequence go to heldout,
// chosen by a seeded hash, until at least `fraction` of the tasks are heldout. Returns the
// heldout count.
size_t assign_splits(std::vector<TaskSpec>& tasks, double fraction, uint64_t seed);

}  // namespace kforge
