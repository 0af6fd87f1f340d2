#pragma once
// What kforge_eval_bench's modes share: their flags and the one JSON result each writes
// (tools/bench/results_doc.py reads it).
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kforge::bench {

// The value after `key` in argv, or `fallback`.
std::string arg_value(int argc, char** argv, const std::string& key, const std::string& fallback);

// The median of `v` (the mean of the middle two for an even count); 0 for none.
double median(std::vector<double> v);

// {gpu, driver, cuda, torch, date, commit, command, figures} at `path`; the device is the GPU
// worker's hello()["device"], the driver and commit come from KFORGE_DRIVER and KFORGE_COMMIT.
void write_result(const std::string& path, const nlohmann::json& device, const std::string& command, const nlohmann::json& figures);

}  // namespace kforge::bench
