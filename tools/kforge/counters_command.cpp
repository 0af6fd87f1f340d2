// kforge counters [--chip CHIP] [METRIC ...]: what a list of hardware-counter metrics costs
// profile() (configs/env.yaml tools.profile_metrics), in replay passes, from CUPTI's host API alone.
#include <iomanip>
#include <iostream>

#include <CLI/CLI.hpp>

#include "env/judge/kernel_counters.h"
#include "tools/kforge/commands.h"

namespace kforge::cli {

void add_counters_command(CLI::App& app) {
  auto* counters = app.add_subcommand("counters", "Count the replay passes a list of counter metrics needs on a GPU chip (no GPU needed)");
  static std::string chip = "GH100";
  static std::vector<std::string> metrics;
  counters->add_option("--chip", chip, "CUPTI's chip name (GH100: H100 and H200)")->capture_default_str();
  counters->add_option("metrics", metrics, "metric names (default: the list profile() reads by default)");
  counters->footer("Each pass replays the profiled call once (about 31 ms on the H200 for the shipped candidates).");
  set_action(counters, [] {
    const std::vector<std::string>& list = metrics.empty() ? default_counter_metrics() : metrics;
    CounterPasses all = counter_passes(chip, list);
    std::cout << "chip " << chip << " (CUPTI host API)\n";
    size_t width = 6;
    for (const auto& m : all.metrics) width = std::max(width, m.size());
    std::cout << std::left << std::setw(static_cast<int>(width)) << "metric"
              << "  passes alone\n";
    for (const auto& m : all.metrics)
      std::cout << std::setw(static_cast<int>(width)) << m << "  " << counter_passes(chip, {m}).passes << "\n";
    for (const auto& m : all.unsupported) std::cout << std::setw(static_cast<int>(width)) << m << "  unknown on " << chip << "\n";
    std::cout << "together: " << all.passes << " pass(es) for " << all.metrics.size() << " metric(s)\n";
    return 0;
  });
}

}  // namespace kforge::cli
