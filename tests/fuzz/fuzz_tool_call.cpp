// libFuzzer target for actions (env/episode/tool_call.h). The first byte picks the form: even, the
// rest is raw assistant text (Hermes <tool_call>, <think> blocks); odd, the rest is JSON text for a
// structured action, decoded with the protocol's bounds and then parsed. An action never throws:
// it is a call or an error sentence; anything else (an exception, an empty error, a signal, a
// sanitizer report) is reported as a crash.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "configs/bounded_json.h"
#include "env/episode/tool_call.h"

using namespace kforge;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string rest(reinterpret_cast<const char*>(data + 1), size - 1);
  ParsedAction a;
  if (data[0] % 2 == 0) {
    a = parse_action_text(rest);
  } else {
    BoundedJson j = parse_json_bounded(rest, JsonLimits{});
    if (!j.ok()) return 0;
    a = parse_action(j.value);
  }
  if (!a.call && a.error.empty()) abort();
  if (a.call) a.call->arguments.dump();
  return 0;
}
