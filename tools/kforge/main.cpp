// The kforge command line. Built twice: kforge-full has every command; kforge (KFORGE_CLI_LIGHT)
// has those that need no libtorch in this process (eval, demo: they judge through worker
// processes; serve, record: the rollout server, whose GPU work is its workers') and hands every
// other command line to kforge-full, so that these do not spend their first few hundred
// milliseconds loading libtorch and running its static initialisers.
#include <cstring>
#include <iostream>

#include <CLI/CLI.hpp>

#include "configs/error.h"
#include "tools/kforge/commands.h"

int main(int argc, char** argv) {
  kforge::cli::mark_main();
  // Both executables: every argument goes to the Python command (its own --help included).
  if (argc > 1 && (std::strcmp(argv[1], "report") == 0 || std::strcmp(argv[1], "baseline") == 0))
    return kforge::cli::exec_python_command(argc, argv);
#ifdef KFORGE_CLI_LIGHT
  {
    bool mine = false;
    for (const char* c : {"eval", "demo", "serve", "record"}) mine = mine || (argc > 1 && std::strcmp(argv[1], c) == 0);
    if (!mine) return kforge::cli::exec_full(argv);
  }
#endif
  CLI::App app{"kforge: an RL environment in which policies learn to write fast CUDA kernels"};
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "Show help for every subcommand");
#ifndef KFORGE_CLI_LIGHT
  kforge::cli::add_task_commands(app);
  kforge::cli::add_ops_command(app);
#endif
  kforge::cli::add_eval_command(app);
  kforge::cli::add_demo_command(app);
  app.add_subcommand("report", "the checkpoint evaluation report of kforge-evaluate's JSONL (kforge report --help)");
  app.add_subcommand("baseline",
                     "eager and torch.compile baselines of a dataset on every GPU of a Ray cluster, kept by GPU model "
                     "(kforge baseline --help)");
#ifndef KFORGE_CLI_LIGHT
  kforge::cli::add_synth_commands(app);
  kforge::cli::add_gpu_stage_commands(app);
  kforge::cli::add_import_command(app);
  kforge::cli::add_sensitivity_command(app);
  kforge::cli::add_extra_shapes_command(app);
  kforge::cli::add_recost_command(app);
  kforge::cli::add_headroom_command(app);
  kforge::cli::add_counters_command(app);
#endif
  kforge::cli::add_serve_commands(app);
  try {
    app.parse(argc, argv);
    return kforge::cli::run_selected(app);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "kforge: usage error: " << e.what() << " (see kforge --help)\n";
    return 2;
  } catch (const kforge::Error& e) {
    std::cerr << "kforge: " << kforge::error_kind_name(e.kind()) << ": " << e.what() << "\n";
    return e.kind() == kforge::ErrorKind::usage ? 2 : 1;
  } catch (const std::exception& e) {
    std::cerr << "kforge: internal_error: " << e.what() << "\n";
    return 1;
  }
}
