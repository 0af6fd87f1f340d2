#pragma once
// Typed view of configs/server.yaml: where the server listens, which configs its episodes use,
// which tasks it serves, how work is scheduled, where trajectories go. Defaults live here beside
// the fields; loading validates every value once and rejects unknown keys.
#include <string>
#include <vector>

#include "rollout/protocol.h"

namespace kforge {

class YamlNode;

struct ServerConfig {
  std::string bind = "tcp://127.0.0.1:5555";  // the ROUTER endpoint; --bind overrides it
  // Configs of the episodes (paths resolved against this file's directory; "" means defaults).
  std::string env_config, reward_config, eval_config, anticheat_config;
  ProtocolLimits protocol;

  struct Tasks {
    bool samples = true;                // serve datasets/samples/*.yaml
    std::vector<std::string> dirs;      // more directories of task specs (*.yaml)
    std::vector<std::string> datasets;  // dataset files (kforge synth's dataset.h5) or directories holding one
    bool serve_unmeasured = true;       // dataset rows no GPU stage has measured yet: served, or left out
    double min_headroom = 0;            // > 0: only dataset rows whose compile_headroom is at least this
    // `kforge baseline`'s output folder (issue 32): the served dataset rows take the baselines of the
    // GPU model judging here from its key folder (<gpu>__torch-<v>__cuda-<v>/dataset.h5, the merge's)
    std::string baselines;
  } tasks;

  struct Sessions {
    int max_episodes = 4096;             // open episodes at most; reset beyond it is `busy`
    int max_episodes_per_client = 2048;  // open episodes one client identity (ROUTER socket) may hold; beyond it `busy`
    double idle_timeout_s = 900;         // an episode with no request for this long is reaped (recorded)
  } sessions;

  struct Scheduler {
    int compile_workers = 2;         // CPU threads for compile(), each with its own compile worker process
    int max_compile_queue = 1024;    // steps waiting for a compile thread; beyond it `busy`
    int gpus = -1;                   // GPU lanes: -1 = every visible device (cudaGetDeviceCount), 0 = none
    int max_gpu_queue = 256;         // steps waiting per GPU; beyond it `busy`
    double min_retry_after_s = 0.2;  // the smallest retry_after a busy reply advises
    // A queued verify/profile/submit's candidate is compiled at once on the compile pool, into the
    // server's shared compile cache, so that its GPU lane finds it built instead of compiling it
    // while the GPU idles (best effort: only while the compile queue is under half full; a waiting
    // compile() step goes first).
    bool warm_compiles = true;
  } scheduler;

  struct Stream {
    std::string bind;        // PUSH endpoint for finished trajectories ("" = no stream)
    int max_backlog = 4096;  // trajectories held while no puller keeps up; the oldest is dropped beyond
  } stream;

  struct Record {
    std::string path;   // HDF5 file the server appends trajectories to ("" = none)
    bool fsync = true;  // fsync after every trajectory (survives a machine crash, not only a process crash)
  } record;

  struct Shutdown {
    double grace_s = 30;  // on SIGTERM, how long running steps may take to finish
  } shutdown;

  // The file this config was read from (absolute; "" when built in code) and the folder its
  // relative paths were resolved against.
  std::string source, base_dir;

  static ServerConfig from_yaml(const YamlNode& node, const std::string& base_dir = ".");
  static ServerConfig load(const std::string& path);
  // Every path named (the four configs, tasks.dirs, tasks.datasets, record.path's folder) exists;
  // else an io error with the key, the full path tried and the rule for relative paths.
  void check_paths() const;
};

}  // namespace kforge
