// The rollout server over real sockets on 127.0.0.1, in process, without a GPU: every bad input
// gets its error kind and the same connection keeps working; capacity limits answer `busy` with a
// retry_after; episodes run write_file/list_files/compile (the real compile worker: NVRTC on the
// CPU) and verify/profile/submit answer no_gpu without ending the episode; cancel, close, idle
// reaping of a vanished client, the trajectory stream and file, and graceful shutdown; start-up:
// the GPU line, bind failures, missing config paths.
#include "rollout/server.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>
#include <zmq_addon.hpp>

#include "configs/error.h"
#include "configs/file_reader.h"
#include "configs/yaml_reader.h"
#include "data_synth/dataset/dataset_h5.h"
#include "env/episode/env_config.h"
#include "env/episode/tool_call.h"
#include "rollout/task_catalog.h"
#include "rollout/trajectory_file.h"
#include "tests/test_paths.h"

using namespace kforge;
using kforge::read_file;
namespace fs = std::filesystem;

namespace {

std::string candidate_file(const std::string& task, const std::string& name, const std::string& file) {
  return read_file(resource_path("datasets/samples/candidates/" + task + "/" + name + "/" + file));
}

std::string temp_path(const std::string& name) { return kforge::testing::temp_path("kforge_server_test", name); }

ServerConfig cpu_config() {
  ServerConfig c;
  c.bind = "tcp://127.0.0.1:*";
  c.scheduler.gpus = 0;
  c.scheduler.compile_workers = 1;
  return c;
}

// A real server on its own thread; stopped (gracefully) and joined on destruction.
class TestServer {
 public:
  explicit TestServer(ServerConfig config) : server_(config, ServerSetup::load(config)) {
    thread_ = std::thread([this] { server_.run(stop_); });
  }
  ~TestServer() { stop(); }
  void stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  const std::string& endpoint() const { return server_.endpoint(); }
  const std::string& stream_endpoint() const { return server_.stream_endpoint(); }

 private:
  std::atomic<bool> stop_{false};
  RolloutServer server_;
  std::thread thread_;
};

struct Reply {
  std::string request_id, status;
  Json payload;
  bool ok() const { return status == "ok"; }
  std::string kind() const { return payload.value("kind", ""); }
};

class Client {
 public:
  Client(zmq::context_t& ctx, const std::string& endpoint) : s_(ctx, zmq::socket_type::dealer) {
    s_.set(zmq::sockopt::linger, 0);
    s_.set(zmq::sockopt::rcvtimeo, 30000);
    s_.connect(endpoint);
  }
  void send_frames(const std::vector<std::string>& frames) {
    std::vector<zmq::const_buffer> b;
    for (const auto& f : frames) b.emplace_back(f.data(), f.size());
    zmq::send_multipart(s_, b);
  }
  void send(const std::string& id, const std::string& method, const Json& params) {
    auto bytes = Json::to_msgpack(params);
    send_frames({id, method, std::string(bytes.begin(), bytes.end())});
  }
  Reply receive() {
    std::vector<zmq::message_t> frames;
    if (!zmq::recv_multipart(s_, std::back_inserter(frames))) throw std::runtime_error("no reply within 30 s");
    if (frames.size() != 3) throw std::runtime_error("a reply of " + std::to_string(frames.size()) + " frames");
    return {frames[0].to_string(), frames[1].to_string(), Json::from_msgpack(frames[2].to_string_view())};
  }
  Reply raw(const std::vector<std::string>& frames) {
    send_frames(frames);
    return receive();
  }
  Reply call(const std::string& method, const Json& params = Json::object()) {
    std::string id = "r" + std::to_string(++n_);
    send(id, method, params);
    Reply r = receive();
    EXPECT_EQ(r.request_id, id);
    return r;
  }
  std::string reset(const std::string& task = "gelu_scale_residual", Json extra = Json::object()) {
    extra["task"] = task;
    Reply r = call("reset", extra);
    EXPECT_TRUE(r.ok()) << r.payload.dump();
    return r.payload.value("episode", "");
  }
  Reply step(const std::string& episode, const Json& action) { return call("step", {{"episode", episode}, {"action", action}}); }
  zmq::socket_t& socket() { return s_; }

 private:
  zmq::socket_t s_;
  int n_ = 0;
};

Json tool(const std::string& name, Json args = Json::object()) { return {{"name", name}, {"arguments", args}}; }
Json write(const std::string& path, const std::string& content) { return tool("write_file", {{"path", path}, {"content", content}}); }

std::string pack(const Json& j) {
  auto b = Json::to_msgpack(j);
  return std::string(b.begin(), b.end());
}

// Writes the fused GELU candidate (it compiles) into an episode.
void write_candidate(Client& c, const std::string& ep) {
  ASSERT_TRUE(c.step(ep, write("kernel.cu", candidate_file("gelu_scale_residual", "fused", "kernel.cu"))).ok());
  ASSERT_TRUE(c.step(ep, write("launch.yaml", candidate_file("gelu_scale_residual", "fused", "launch.yaml"))).ok());
}

template <class F>
bool eventually(F f, double seconds = 10) {
  auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < end) {
    if (f()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return f();
}

}  // namespace

TEST(RolloutServer, AnswersEveryBadInputWithItsKindAndKeepsServingTheConnection) {
  ServerConfig cfg = cpu_config();
  cfg.protocol.max_payload_bytes = 4096;
  TestServer server(cfg);
  zmq::context_t ctx;
  Client c(ctx, server.endpoint());
  std::string ep = c.reset();
  struct Case {
    const char* name;
    std::vector<std::string> frames;
    const char* kind;
  };
  std::vector<Case> cases = {
      {"two frames", {"b1", "health"}, "malformed_frames"},
      {"four frames", {"b2", "health", pack(Json::object()), "x"}, "malformed_frames"},
      {"empty method", {"b3", "", pack(Json::object())}, "malformed_frames"},
      {"bad msgpack", {"b4", "health", std::string(1, '\xc1')}, "bad_msgpack"},
      {"truncated msgpack", {"b5", "reset", std::string("\x81\xa4ta", 4)}, "bad_msgpack"},
      {"not a map", {"b6", "health", pack(Json::array({1, 2}))}, "payload_not_map"},
      {"unknown method", {"b7", "rest", pack(Json::object())}, "unknown_method"},
      {"oversized payload",
       {"b8", "step", pack({{"episode", ep}, {"action", write("kernel.cu", std::string(5000, 'x'))}})},
       "payload_too_large"},
      {"newer version", {"b9", "health", pack({{"v", 2}})}, "unsupported_version"},
      {"unknown field", {"b10", "reset", pack({{"task", "softmax_rows"}, {"sed", 1}})}, "bad_params"},
      {"unknown task", {"b11", "reset", pack({{"task", "no_such_task"}})}, "unknown_task"},
      {"unknown reset option", {"b12", "reset", pack({{"task", "softmax_rows"}, {"options", {{"turns", 3}}}})}, "bad_params"},
      {"unknown episode (step)", {"b13", "step", pack({{"episode", "ep-0"}, {"action", tool("list_files")}})}, "unknown_episode"},
      {"unknown episode (close)", {"b14", "close", pack({{"episode", "ep-0"}})}, "unknown_episode"},
      {"unknown episode (cancel)", {"b15", "cancel", pack({{"episode", "ep-0"}})}, "unknown_episode"},
  };
  for (const auto& k : cases) {
    Reply r = c.raw(k.frames);
    EXPECT_EQ(r.status, "error") << k.name;
    EXPECT_EQ(r.kind(), k.kind) << k.name << ": " << r.payload.dump();
    EXPECT_EQ(r.request_id, k.frames[0]) << k.name;
    // The same connection and the same episode still work after every refusal.
    Reply good = c.step(ep, tool("list_files"));
    ASSERT_TRUE(good.ok()) << "after " << k.name << ": " << good.payload.dump();
  }
  Reply h = c.call("health");
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(h.payload["episodes"]["open"], 1);
  EXPECT_EQ(h.payload["status"], "ok");
}

TEST(RolloutServer, UnparseableActionsCostATurnNotTheEpisode) {
  TestServer server(cpu_config());
  zmq::context_t ctx;
  Client c(ctx, server.endpoint());
  std::string ep = c.reset("softmax_rows");
  Reply r = c.step(ep, "I think I will write a kernel now.");
  ASSERT_TRUE(r.ok()) << r.payload.dump();
  EXPECT_EQ(r.payload["observation"].get<std::string>().rfind("error: ", 0), 0u) << r.payload["observation"];
  EXPECT_FALSE(r.payload["terminated"].get<bool>());
  Reply escape = c.step(ep, write("../../etc/passwd", "x"));
  ASSERT_TRUE(escape.ok());
  EXPECT_NE(escape.payload["observation"].get<std::string>().find("refused"), std::string::npos);
  EXPECT_EQ(escape.payload["info"]["turn"], 2);
}

// Issue 26: tool calls that crashed the server (150 000 nested '[' in the arguments) or gave
// `internal` (1e999) are malformed actions like any other: an observation, and the episode goes on.
TEST(RolloutServer, HostileToolCallJsonIsAMalformedActionNotACrashOrInternal) {
  TestServer server(cpu_config());
  zmq::context_t ctx;
  Client c(ctx, server.endpoint());
  std::string ep = c.reset("softmax_rows");
  std::string deep = std::string(150000, '[') + std::string(150000, ']');
  const std::vector<Json> actions = {
      Json("<tool_call>{\"name\": \"compile\", \"arguments\": " + deep + "}</tool_call>"),
      Json{{"type", "function"}, {"function", {{"name", "write_file"}, {"arguments", deep}}}},
      Json("<tool_call>{\"name\": \"compile\", \"arguments\": {\"x\": 1e999}}</tool_call>"),
      Json{{"name", "write_file"}, {"arguments", "{\"path\": \"a.cu\", \"path\": \"b.cu\", \"content\": \"x\"}"}},
  };
  for (const Json& a : actions) {
    Reply r = c.step(ep, a);
    ASSERT_TRUE(r.ok()) << r.payload.dump().substr(0, 300);
    EXPECT_EQ(r.payload["observation"].get<std::string>().rfind("error: ", 0), 0u) << r.payload["observation"];
    EXPECT_FALSE(r.payload["terminated"].get<bool>());
  }
  Reply list = c.step(ep, Json{{"name", "list_files"}});
  ASSERT_TRUE(list.ok());
  EXPECT_EQ(list.payload["info"]["turn"], static_cast<int>(actions.size()) + 1);
}

TEST(RolloutServer, RefusesResetsBeyondMaxEpisodesWithRetryAfter) {
  ServerConfig cfg = cpu_config();
  cfg.sessions.max_episodes = 2;
  TestServer server(cfg);
  zmq::context_t ctx;
  Client c(ctx, server.endpoint());
  std::string a = c.reset(), b = c.reset();
  Reply r = c.call("reset", {{"task", "softmax_rows"}});
  EXPECT_EQ(r.kind(), "busy") << r.payload.dump();
  ASSERT_TRUE(r.payload.contains("retry_after"));
  EXPECT_GE(r.payload["retry_after"].get<double>(), cfg.scheduler.min_retry_after_s);
  ASSERT_TRUE(c.call("close", {{"episode", a}}).ok());
  EXPECT_TRUE(c.call("reset", {{"task", "softmax_rows"}}).ok());
}

TEST(RolloutServer, RefusesStepsBeyondAFullQueueWithRetryAfter) {
  ServerConfig cfg = cpu_config();
  cfg.scheduler.max_compile_queue = 0;
  TestServer server(cfg);
  zmq::context_t ctx;
  Client c(ctx, server.endpoint());
  std::string ep = c.reset();
  Reply r = c.step(ep, tool("compile"));
  EXPECT_EQ(r.kind(), "busy") << r.payload.dump();
  EXPECT_GT(r.payload.value("retry_after", 0.0), 0.0);
  // The episode is untouched: the refused step cost no turn.
  Reply l = c.step(ep, tool("list_files"));
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l.payload["info"]["turn"], 1);
}

TEST(RolloutServer, EpisodeWithoutGpuCompilesAndVerifyIsAnErrorObservationThatDoesNotEndIt) {
  ServerConfig cfg = cpu_config();
  cfg.record.path = temp_path("cpu_episode.h5");
  TestServer server(cfg);
  zmq::context_t ctx;
  Client c(ctx, server.endpoint());
  std::string ep = c.reset("gelu_scale_residual", {{"seed", 5}, {"options", {{"max_turns", 6}}}});
  write_candidate(c, ep);
  Reply files = c.step(ep, tool("list_files"));
  EXPECT_NE(files.payload["observation"].get<std::string>().find("kernel.cu"), std::string::npos);
  Reply compiled = c.step(ep, tool("compile"));
  ASSERT_TRUE(compiled.ok()) << compiled.payload.dump();
  EXPECT_EQ(compiled.payload["observation"].get<std::string>().rfind("compile: ok", 0), 0u) << compiled.payload["observation"];
  EXPECT_EQ(compiled.payload["timings"]["lane"], "compile");
  EXPECT_EQ(compiled.payload["info"]["verdict"], "checked");
  Reply verify = c.step(ep, tool("verify"));
  ASSERT_TRUE(verify.ok());
  EXPECT_NE(verify.payload["observation"].get<std::string>().find("no GPU"), std::string::npos) << verify.payload["observation"];
  EXPECT_FALSE(verify.payload["terminated"].get<bool>());
  EXPECT_FALSE(verify.payload["truncated"].get<bool>());
  // The sixth turn reaches max_turns: truncated, and the trajectory is on disk when the reply lands.
  Reply last = c.step(ep, tool("read_file", {{"path", "launch.yaml"}}));
  ASSERT_TRUE(last.ok());
  EXPECT_TRUE(last.payload["truncated"].get<bool>());
  EXPECT_EQ(last.payload["info"]["termination_reason"], "max_turns");
  auto recorded = read_trajectories(cfg.record.path);
  ASSERT_EQ(recorded.size(), 1u);
  const Json& t = recorded[0];
  EXPECT_EQ(t["episode"], ep);
  EXPECT_EQ(t["task"], "gelu_scale_residual");
  EXPECT_EQ(t["seed"], 5);
  EXPECT_EQ(t["end_cause"], "finished");
  EXPECT_EQ(t["termination_reason"], "max_turns");
  ASSERT_EQ(t["turns"].size(), 6u);
  EXPECT_EQ(t["turns"][3]["action"]["name"], "compile");
  EXPECT_EQ(t["turns"][3]["info"]["report"]["compile"]["ok"], true);
  EXPECT_EQ(t["turns"][5]["reward"], last.payload["reward"]);
  EXPECT_EQ(t["kforge_version"], kforge_version());
  EXPECT_FALSE(t["reset"]["observation"].get<std::string>().empty());
  // After the end: episode_over; after close: unknown_episode.
  EXPECT_EQ(c.step(ep, tool("list_files")).kind(), "episode_over");
  ASSERT_TRUE(c.call("close", {{"episode", ep}}).ok());
  EXPECT_EQ(c.step(ep, tool("list_files")).kind(), "unknown_episode");
  EXPECT_EQ(read_trajectories(cfg.record.path).size(), 1u) << "closing a finished episode records it once";
}

TEST(RolloutServer, GpuToolsWithoutAGpuLaneSayNoGpuAndNothingEndsTheEpisode) {
  TestServer server(cpu_config());
  zmq::context_t ctx;
  Client c(ctx, server.endpoint());
  EXPECT_TRUE(c.call("health").payload["gpus"].empty());
  std::string ep = c.reset("gelu_scale_residual", {{"options", {{"max_turns", 10}}}});
  write_candidate(c, ep);
  for (const char* name : {"verify", "profile", "submit"}) {
    Reply r = c.step(ep, tool(name));
    ASSERT_TRUE(r.ok()) << r.payload.dump();
    const std::string obs = r.payload["observation"];
    EXPECT_EQ(obs.rfind(std::string(name) + ": not run (no_gpu): nothing was judged: this server has no GPU", 0), 0u) << obs;
    const Json& info = r.payload["info"];
    EXPECT_EQ(info["report"]["harness_error"]["kind"], "no_gpu") << info.dump();
    EXPECT_EQ(info["tool_ok"], false);
    EXPECT_TRUE(info["verdict"].is_null());
    EXPECT_FALSE(r.payload["terminated"].get<bool>()) << name;
    EXPECT_FALSE(r.payload["truncated"].get<bool>()) << name;
    EXPECT_EQ(r.payload["reward"], 0.0) << name;
  }
  EXPECT_EQ(c.step(ep, tool("list_files")).payload["info"]["turn"], 6) << "each GPU tool cost its turn, nothing more";
}

TEST(ServerSetup, SaysPlainlyWhetherGpusWereFoundAndWhichOnes) {
  ServerConfig cfg = cpu_config();
  EXPECT_EQ(ServerSetup::load(cfg).gpu_summary,
            "no GPU lanes (scheduler.gpus is 0); verify, profile and submit answer no_gpu (compile still works)");
  cfg.scheduler.gpus = -1;
  ServerSetup s = ServerSetup::load(cfg);
  ASSERT_EQ(static_cast<int>(s.gpu_names.size()), s.gpus);
  if (s.gpus == 0) {
    EXPECT_TRUE(s.gpu_summary.rfind("no GPU lanes: no GPU is", 0) == 0) << s.gpu_summary;
    // The CUDA runtime's "driver version is insufficient" is not said when there is no driver at all.
    if (!fs::exists("/proc/driver/nvidia/version") && !fs::exists("/dev/nvidiactl")) {
      EXPECT_EQ(s.gpu_summary.find("insufficient"), std::string::npos) << s.gpu_summary;
    }
  } else {
    EXPECT_NE(s.gpu_summary.find("GPU 0 " + s.gpu_names[0]), std::string::npos) << s.gpu_summary;
  }
  cfg.scheduler.gpus = 64;  // more lanes than this machine shows
  try {
    ServerSetup::load(cfg);
    ADD_FAILURE() << "scheduler.gpus 64 accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::config);
    EXPECT_NE(std::string(e.what()).find("scheduler.gpus is 64 but " + std::to_string(s.gpus) + " GPU(s) are visible"), std::string::npos)
        << e.what();
  }
}

TEST(RolloutServer, BindFailuresSayWhatToDo) {
  auto bind_error = [](const std::string& endpoint) {
    ServerConfig cfg = cpu_config();
    cfg.bind = endpoint;
    try {
      RolloutServer server(cfg, ServerSetup::load(cfg));
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::io);
      return std::string(e.what());
    }
    ADD_FAILURE() << "bound " << endpoint;
    return std::string();
  };
  TestServer first(cpu_config());
  std::string taken = bind_error(first.endpoint());
  EXPECT_NE(taken.find("cannot bind the server socket to '" + first.endpoint() + "'"), std::string::npos) << taken;
  EXPECT_NE(taken.find("--bind picks another port"), std::string::npos) << taken;
  std::string bad = bind_error("tcp://127.0.0.1:notaport");
  EXPECT_NE(bad.find("endpoints look like tcp://HOST:PORT"), std::string::npos) << bad;
  std::string no_dir = bind_error("ipc:///nonexistent/kforge/x.sock");
  EXPECT_NE(no_dir.find("the folder of the ipc path does not exist"), std::string::npos) << no_dir;
}

TEST(RolloutServer, CancelTakesAQueuedStepOutAndLeavesARunningOne) {
  TestServer server(cpu_config());  // one compile thread
  zmq::context_t ctx;
  Client c(ctx, server.endpoint());
  std::string a = c.reset(), b = c.reset();
  write_candidate(c, a);
  write_candidate(c, b);
  c.send("ca", "step", {{"episode", a}, {"action", tool("compile")}});
  c.send("cb", "step", {{"episode", b}, {"action", tool("compile")}});
  // b's compile waits behind a's on the only compile thread.
  Reply busy = c.step(b, tool("list_files"));
  EXPECT_EQ(busy.kind(), "episode_busy") << busy.payload.dump();
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // a's compile has started
  c.send("x1", "cancel", {{"episode", b}});
  c.send("x2", "cancel", {{"episode", a}});
  std::map<std::string, Reply> replies;
  for (int i = 0; i < 4; ++i) {
    Reply r = c.receive();
    replies[r.request_id] = r;
  }
  EXPECT_EQ(replies["cb"].kind(), "cancelled") << replies["cb"].payload.dump();
  EXPECT_EQ(replies["x1"].payload["cancelled"], true);
  EXPECT_EQ(replies["x1"].payload["state"], "queued");
  EXPECT_EQ(replies["x2"].payload["cancelled"], false);
  EXPECT_EQ(replies["x2"].payload["state"], "running");
  EXPECT_TRUE(replies["ca"].ok()) << replies["ca"].payload.dump();
  // The cancelled step cost b no turn.
  Reply next = c.step(b, tool("list_files"));
  ASSERT_TRUE(next.ok());
  EXPECT_EQ(next.payload["info"]["turn"], 3);
}

TEST(RolloutServer, AVanishedClientsEpisodeIsReapedAndRecordedWhileOthersAreServed) {
  ServerConfig cfg = cpu_config();
  // Long enough that the episode kept alive by a step every loop round is not reaped on a loaded
  // machine (CI runs tests in parallel), short enough to keep the test quick.
  cfg.sessions.idle_timeout_s = 1.5;
  cfg.record.path = temp_path("reaped.h5");
  cfg.stream.bind = "tcp://127.0.0.1:*";
  TestServer server(cfg);
  zmq::context_t ctx;
  zmq::socket_t pull(ctx, zmq::socket_type::pull);
  pull.set(zmq::sockopt::rcvtimeo, 10000);
  pull.connect(server.stream_endpoint());
  std::string gone_ep;
  {
    Client gone(ctx, server.endpoint());
    gone_ep = gone.reset("softmax_rows");
    ASSERT_TRUE(gone.step(gone_ep, write("notes.md", "half done")).ok());
  }  // the client's socket closes mid-episode
  Client stays(ctx, server.endpoint());
  std::string ep = stays.reset("softmax_rows");
  auto last_step = std::chrono::steady_clock::now();
  bool reaped = eventually([&] {
    // A step every 0.3 s keeps this episode alive (each step costs a turn: not every round).
    if (std::chrono::steady_clock::now() - last_step > std::chrono::milliseconds(300)) {
      Reply kept = stays.step(ep, tool("list_files"));
      EXPECT_TRUE(kept.ok()) << kept.payload.dump();
      last_step = std::chrono::steady_clock::now();
    }
    if (stays.call("health").payload["episodes"]["open"] != 1) return false;
    try {
      return read_trajectory_index(cfg.record.path).size() == 1;
    } catch (const Error&) {
      return false;  // read while the recorder was appending
    }
  });
  ASSERT_TRUE(reaped);
  auto index = read_trajectory_index(cfg.record.path);
  EXPECT_EQ(index[0].episode, gone_ep);
  EXPECT_EQ(index[0].end_cause, "idle_timeout");
  EXPECT_EQ(index[0].turns, 1);
  // The stream carried the same trajectory.
  zmq::message_t msg;
  ASSERT_TRUE(pull.recv(msg));
  Json t = Json::from_msgpack(msg.to_string_view());
  EXPECT_EQ(t["episode"], gone_ep);
  EXPECT_EQ(t["turns"][0]["action"]["arguments"]["content"], "half done");
  EXPECT_EQ(stays.step(gone_ep, tool("list_files")).kind(), "unknown_episode");
}

TEST(RolloutServer, ShutdownCancelsQueuedStepsFinishesRunningOnesAndRecordsOpenEpisodes) {
  ServerConfig cfg = cpu_config();
  cfg.record.path = temp_path("shutdown.h5");
  auto server = std::make_unique<TestServer>(cfg);
  zmq::context_t ctx;
  Client c(ctx, server->endpoint());
  std::string a = c.reset(), b = c.reset(), idle = c.reset("softmax_rows");
  write_candidate(c, a);
  write_candidate(c, b);
  c.send("ca", "step", {{"episode", a}, {"action", tool("compile")}});
  c.send("cb", "step", {{"episode", b}, {"action", tool("compile")}});
  ASSERT_TRUE(c.call("health").ok());                           // both steps are in (the front answers in order)
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // a's compile has started
  std::thread stopper([&] { server->stop(); });
  std::map<std::string, Reply> replies;
  for (int i = 0; i < 2; ++i) {
    Reply r = c.receive();
    replies[r.request_id] = r;
  }
  stopper.join();
  EXPECT_TRUE(replies["ca"].ok()) << replies["ca"].payload.dump();
  EXPECT_EQ(replies["cb"].kind(), "cancelled");
  auto index = read_trajectory_index(cfg.record.path);
  ASSERT_EQ(index.size(), 3u);
  std::map<std::string, TrajectorySummary> by_episode;
  for (const auto& s : index) by_episode[s.episode] = s;
  EXPECT_EQ(by_episode[a].end_cause, "shutdown");
  EXPECT_EQ(by_episode[a].turns, 3);  // two writes and the compile that finished
  EXPECT_EQ(by_episode[b].turns, 2);  // the cancelled compile is not a turn
  EXPECT_EQ(by_episode[idle].turns, 0);
}

TEST(RolloutServer, PipelinedRequestsOfManyEpisodesAreAllAnswered) {
  TestServer server(cpu_config());
  zmq::context_t ctx;
  Client c(ctx, server.endpoint());
  const int n = 200;
  for (int i = 0; i < n; ++i) c.send("r" + std::to_string(i), "reset", {{"task", "softmax_rows"}, {"seed", i}});
  std::vector<std::string> eps(n);
  for (int i = 0; i < n; ++i) {
    Reply r = c.receive();
    ASSERT_TRUE(r.ok()) << r.payload.dump();
    eps[std::stoi(r.request_id.substr(1))] = r.payload["episode"];
  }
  for (int i = 0; i < n; ++i) c.send("w" + std::to_string(i), "step", {{"episode", eps[i]}, {"action", write("a.txt", std::to_string(i))}});
  for (int i = 0; i < n; ++i) {
    Reply r = c.receive();
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r.payload["episode"], eps[std::stoi(r.request_id.substr(1))]);
  }
  for (int i = 0; i < n; i += 37) {
    Reply r = c.step(eps[i], tool("read_file", {{"path", "a.txt"}}));
    EXPECT_EQ(r.payload["observation"], std::to_string(i));
  }
  EXPECT_EQ(c.call("health").payload["episodes"]["open"], n);
}

TEST(RolloutServer, ListsAndFiltersTasks) {
  TestServer server(cpu_config());
  zmq::context_t ctx;
  Client c(ctx, server.endpoint());
  Reply all = c.call("tasks");
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all.payload["total"], 13);
  Reply page = c.call("tasks", {{"limit", 5}, {"offset", 10}});
  EXPECT_EQ(page.payload["tasks"].size(), 3u);
  EXPECT_TRUE(page.payload["next_offset"].is_null());
  Reply first = c.call("tasks", {{"limit", 5}});
  EXPECT_EQ(first.payload["next_offset"], 5);
  Reply gelu = c.call("tasks", {{"ops", {"gelu"}}});
  ASSERT_GE(gelu.payload["total"].get<int>(), 1);
  for (const Json& t : gelu.payload["tasks"]) {
    auto ops = t["ops"].get<std::vector<std::string>>();
    EXPECT_NE(std::find(ops.begin(), ops.end(), "gelu"), ops.end()) << t.dump();
  }
  EXPECT_EQ(c.call("tasks", {{"split", "no_such_split"}}).payload["total"], 0);
  Reply tools = c.call("tools");
  ASSERT_TRUE(tools.ok());
  EXPECT_EQ(tools.payload["tools"], tool_schemas()) << "the tools method answers the tool table's schemas";
}

// A synthesised dataset as the server's tasks: the HDF5 file, the shipped .h5.xz, a directory holding
// either; rows a GPU stage rejected are left out; the splits filter; a missing or broken file is named.
