#pragma once
// The rollout server (rollout/PROTOCOL.md): one ZeroMQ ROUTER socket owned by one front thread,
// episodes (a KernelEnv and its workspace each) held in a table that only the front thread
// touches, steps scheduled on lanes (rollout/lanes.h), every finished trajectory pushed on a
// PUSH socket and appended to an HDF5 file by a recorder thread (rollout/trajectory_file.h).
//
// Thousands of open episodes cost memory, not threads: an episode is data until one of its steps
// needs a compiler or a GPU, and then only that step waits in a queue.
#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "anticheat/static_checks.h"
#include "configs/eval_config.h"
#include "env/episode/env_config.h"
#include "reward/reward_config.h"
#include "rollout/server_config.h"

namespace kforge {

// The configs a server's episodes use, loaded once (from the paths in ServerConfig, or defaults).
struct ServerSetup {
  EnvConfig env;
  RewardConfig reward;
  EvalConfig eval;
  AnticheatConfig anticheat;
  int gpus = 0;                        // GPU lanes (after resolving scheduler.gpus = -1)
  std::vector<std::string> gpu_names;  // the visible devices' names
  std::string gpu_summary;             // what was found, for the start line (rollout/lanes.h, GpuLanes)
  // Checks that every path the config names exists (an io error gives the full path tried and the
  // rule for relative paths), loads the configs, finds the GPUs.
  static ServerSetup load(const ServerConfig& config);
};

// The kforge version every trajectory records.
const char* kforge_version();

class RolloutServer {
 public:
  // Binds the sockets, opens the trajectory file and starts the lane threads. Throws io errors
  // for an endpoint that cannot be bound or a file that cannot be opened.
  RolloutServer(ServerConfig config, ServerSetup setup);
  ~RolloutServer();
  RolloutServer(const RolloutServer&) = delete;
  RolloutServer& operator=(const RolloutServer&) = delete;

  // Serves on the calling thread until `stop` becomes true, then shuts down gracefully: new
  // resets and steps are refused (`shutting_down`), queued steps cancelled, running ones given
  // shutdown.grace_s to finish, every open episode recorded (end_cause "shutdown"), records flushed.
  void run(const std::atomic<bool>& stop);

  // The endpoints actually bound (a tcp port of * resolved).
  const std::string& endpoint() const;
  const std::string& stream_endpoint() const;
  // A one-line description for the start-up message.
  std::string describe() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kforge
