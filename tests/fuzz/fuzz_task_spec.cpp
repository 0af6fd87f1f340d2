// libFuzzer target for task specs (data_synth/task/task_spec.h): a task file, read; an accepted
// one is written back with task_to_yaml and must read again. Anything but a kforge::Error escaping
// is reported as a crash, as are signals and sanitizer reports.
#include <cstdint>
#include <string>

#include "configs/error.h"
#include "data_synth/task/task_spec.h"

using namespace kforge;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  TaskSpec t;
  try {
    t = parse_task(text, "task.yaml");
  } catch (const Error&) {
    return 0;
  }
  parse_task(task_to_yaml(t), "again.yaml");  // throws (-> reported) if kforge cannot read what it wrote
  return 0;
}
