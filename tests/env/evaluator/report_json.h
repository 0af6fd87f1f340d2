#pragma once
// The GPU suites read a report as a user of `kforge eval --json` does: its JSON
// (env/evaluator/EVAL_REPORT.md), written by to_json(EvalReport) at the evaluator's edge.
#include <string>

#include "env/evaluator/eval_report.h"

namespace kforge {

// The report's verdict as the JSON says it (to_json writes the settled verdict).
inline std::string report_verdict(const Json& report) { return report.at("verdict").get<std::string>(); }
// format_report() of a report's JSON, read back through the schema.
inline std::string format_report(const Json& report) { return format_report(parse_eval_report(report)); }

}  // namespace kforge
