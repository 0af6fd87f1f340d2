#pragma once
// The pieces of the task format's reader and writer that graph tasks (task_spec.cpp reads, task_spec_writer.cpp writes) and imported
// tasks (task_imported.cpp) share. Internal to data_synth.
#include <string>

#include <yaml-cpp/yaml.h>

#include "configs/error.h"
#include "configs/yaml_reader.h"
#include "data_synth/task/task_spec.h"

namespace kforge::task_yaml {

// Wraps a step so its errors carry the YAML location.
template <class F>
auto at_node(const YamlNode& node, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const Error& e) {
    std::string what = e.what();
    if (what.rfind(node.origin(), 0) == 0) throw;  // already located
    throw Error(e.kind() == ErrorKind::shape ? ErrorKind::shape : ErrorKind::spec, node.where() + ": " + what);
  }
}

inline Shape read_shape(const YamlNode& node) { return node.as<std::vector<int64_t>>(); }
inline std::string num(double v) { return shortest_double(v); }

void emit_shape(YAML::Emitter& e, const Shape& s);
void emit_draw(YAML::Emitter& e, const Draw& d);
// One argument / output as task_to_yaml writes them (flow maps).
void emit_argument(YAML::Emitter& e, const TaskArgument& a);
void emit_output(YAML::Emitter& e, const TaskOutput& o);

// Imported tasks (task_imported.cpp): the body after `dtype` (program, reference, arguments,
// outputs, cost), read from `root` whose `reference` (`ref`, its kind already read: the same node,
// so that its keys count as read) is torchscript; and written.
void read_imported_body(const YamlNode& root, const YamlNode& ref, TaskSpec& t);
// Every argument and output once, in bytes: an imported task's min_bytes where its file states none.
double footprint(const TaskSpec& t);
void emit_imported_body(YAML::Emitter& e, const TaskSpec& t);

// `reference:` of a graph task, when written: only `kind: graph`.
void read_graph_reference(const YamlNode& ref);
// The kind `reference.kind` names (spec error naming the key otherwise).
ReferenceKind read_reference_kind(const YamlNode& ref);

}  // namespace kforge::task_yaml
