// kforge serve --config configs/server.yaml [--bind ENDPOINT] [--record FILE.h5]: the rollout server.
// kforge record --connect ENDPOINT --out FILE.h5: appends a server's trajectory stream to HDF5.
// Both stop gracefully on SIGTERM or SIGINT: the signals are blocked in every thread and taken by
// one thread with sigwait, so no worker call is ever interrupted by EINTR.
#include <atomic>
#include <csignal>
#include <iostream>
#include <thread>

#include <pthread.h>

#include <CLI/CLI.hpp>
#include <zmq.hpp>

#include "configs/bounded_json.h"
#include "configs/error.h"
#include "rollout/protocol.h"
#include "rollout/server.h"
#include "rollout/trajectory_file.h"
#include "tools/kforge/commands.h"

namespace kforge::cli {

namespace {

// Blocks SIGTERM/SIGINT in this thread and every thread it starts afterwards; a watcher thread
// turns the first one into `stop`. Only a signal that really came is reported: the destructor
// wakes the watcher with a SIGTERM of its own, which it then takes silently.
class StopOnSignal {
 public:
  explicit StopOnSignal(std::atomic<bool>& stop) {
    sigemptyset(&set_);
    sigaddset(&set_, SIGTERM);
    sigaddset(&set_, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set_, nullptr);
    watcher_ = std::thread([this, &stop] {
      int sig = 0;
      sigwait(&set_, &sig);
      if (leaving_) return;
      if (sig == SIGTERM || sig == SIGINT) {
        std::cerr << "kforge: " << (sig == SIGTERM ? "SIGTERM" : "SIGINT") << ": stopping" << std::endl;
        stop = true;
      }
    });
  }
  ~StopOnSignal() {
    // Wakes the watcher if no signal came (it only waits for these two), without a report.
    leaving_ = true;
    pthread_kill(watcher_.native_handle(), SIGTERM);
    watcher_.join();
  }

 private:
  sigset_t set_;
  std::atomic<bool> leaving_{false};
  std::thread watcher_;
};

}  // namespace

void add_serve_commands(CLI::App& app) {
  auto* serve = app.add_subcommand("serve", "Serve episodes to trainers over ZeroMQ (rollout/PROTOCOL.md)");
  static std::string config_path, bind, record_path;
  serve->add_option("--config", config_path, "server config (configs/server.yaml); defaults when omitted");
  serve->add_option("--bind", bind, "ROUTER endpoint, overriding the config's bind (tcp://HOST:PORT, ipc://PATH)");
  serve->add_option("--record", record_path,
                    "HDF5 file every finished trajectory is appended to (created, or appended to; FILE.journal beside "
                    "it), overriding the config's record.path (rollout/TRAJECTORY_FORMAT.md)");
  serve->footer("Stops on SIGTERM/SIGINT: no new work, queued steps cancelled, running ones finished, open episodes recorded.");
  set_action(serve, [] {
    ServerConfig cfg = config_path.empty() ? ServerConfig{} : ServerConfig::load(config_path);
    if (!bind.empty()) cfg.bind = bind;
    if (!record_path.empty()) cfg.record.path = record_path;  // relative to the working directory, as shells expect
    // A file size limit (ulimit -f) reached while recording is an error the recorder reports and
    // retries (EFBIG), not a signal that kills the server with every open episode.
    std::signal(SIGXFSZ, SIG_IGN);
    std::atomic<bool> stop{false};
    StopOnSignal on_signal(stop);  // before any thread starts
    ServerSetup setup = ServerSetup::load(cfg);
    RolloutServer server(cfg, std::move(setup));
    std::cout << "kforge serve: listening on " << server.describe() << std::endl;
    server.run(stop);
    std::cout << "kforge serve: stopped" << std::endl;
    return 0;
  });

  auto* record = app.add_subcommand("record", "Append a server's trajectory stream to an HDF5 file (rollout/TRAJECTORY_FORMAT.md)");
  static std::string connect, out;
  static int64_t count = 0;
  record->add_option("--connect", connect, "the server's stream endpoint (its config's stream.bind)")->required();
  record->add_option("--out", out, "HDF5 file, created or appended to")->required();
  record->add_option("--count", count, "stop after this many trajectories (0: until SIGTERM/SIGINT)");
  set_action(record, [] {
    std::atomic<bool> stop{false};
    StopOnSignal on_signal(stop);
    TrajectoryFile file(out);
    zmq::context_t ctx;
    zmq::socket_t pull(ctx, zmq::socket_type::pull);
    pull.set(zmq::sockopt::linger, 0);
    pull.set(zmq::sockopt::rcvtimeo, 100);
    pull.connect(connect);
    std::cout << "kforge record: " << connect << " -> " << out << " (" << file.count() << " trajectories already there)" << std::endl;
    int64_t got = 0, refused = 0;
    while (!stop && (count == 0 || got < count)) {
      zmq::message_t msg;
      if (!pull.recv(msg)) continue;
      // Any PUSH peer can connect: the message is decoded with its nesting bounded (a 200 000-deep
      // array would otherwise overflow the stack of the recursive msgpack reader).
      JsonLimits bounds;
      bounds.max_depth = kMaxTrajectoryDepth;
      bounds.max_bytes = msg.size();
      BoundedJson decoded = parse_msgpack_bounded(msg.to_string_view(), bounds);
      if (decoded.ok() && !decoded.value.is_object()) decoded.error = "a trajectory is a map";
      if (!decoded.ok()) {
        ++refused;
        std::cerr << "kforge record: a message that is not a msgpack trajectory was skipped: " << decoded.error << std::endl;
        continue;
      }
      const Json& t = decoded.value;
      std::vector<uint8_t> bytes(static_cast<const uint8_t*>(msg.data()), static_cast<const uint8_t*>(msg.data()) + msg.size());
      file.append_msgpack(bytes, TrajectorySummary::of(t));
      ++got;
    }
    std::cout << "kforge record: " << got << " trajectories recorded" << (refused ? ", " + std::to_string(refused) + " skipped" : "")
              << "; the file holds " << file.count() << std::endl;
    return 0;
  });
}

}  // namespace kforge::cli
