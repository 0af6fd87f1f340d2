// The rollout server on a GPU host: whole episodes judged on the GPU through the server, and the
// GPU worker killed in the middle of a verify: that request gets a worker_crashed observation, the
// episode goes on, the other episodes are served, the worker is restarted and the next verify
// passes, and every finished trajectory is on disk. A queued verify's candidate is compiled on the
// compile pool while the GPU is busy (scheduler.warm_compiles). Skipped (visibly) without a CUDA device.
#include <dirent.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>
#include <zmq_addon.hpp>

#include "env/cuda/cuda_probe.h"
#include "env/episode/env_config.h"
#include "rollout/server.h"
#include "rollout/trajectory_file.h"

#include "configs/file_reader.h"
#include "tests/test_paths.h"

using namespace kforge;
using kforge::read_file;

namespace {

#define SKIP_WITHOUT_GPU()                                                                                                 \
  do {                                                                                                                     \
    std::string why;                                                                                                       \
    if (!cuda_device_present(&why)) {                                                                                      \
      std::printf("KFORGE_SKIPPED: no CUDA device on this machine (%s); run on a GPU host (ctest -L gpu)\n", why.c_str()); \
      GTEST_SKIP() << "no CUDA device";                                                                                    \
    }                                                                                                                      \
  } while (0)

// Child processes of this process whose command name is `name` (the server's GPU workers).
std::vector<pid_t> children_named(const std::string& name) {
  std::vector<pid_t> out;
  DIR* d = opendir("/proc");
  if (!d) return out;
  const pid_t self = getpid();
  while (dirent* e = readdir(d)) {
    pid_t pid = atoi(e->d_name);
    if (pid <= 0) continue;
    std::ifstream stat("/proc/" + std::string(e->d_name) + "/stat");
    std::string line;
    if (!std::getline(stat, line)) continue;
    auto open = line.find('('), close = line.rfind(')');
    if (open == std::string::npos || close == std::string::npos) continue;
    std::string comm = line.substr(open + 1, close - open - 1);
    std::istringstream rest(line.substr(close + 2));
    char state;
    pid_t ppid = 0;
    rest >> state >> ppid;
    if (ppid == self && name.rfind(comm, 0) == 0) out.push_back(pid);
  }
  closedir(d);
  return out;
}

struct Reply {
  std::string id, status;
  Json payload;
};

class Client {
 public:
  Client(zmq::context_t& ctx, const std::string& endpoint) : s_(ctx, zmq::socket_type::dealer) {
    s_.set(zmq::sockopt::linger, 0);
    s_.set(zmq::sockopt::rcvtimeo, 600000);
    s_.connect(endpoint);
  }
  void send(const std::string& id, const std::string& method, const Json& params) {
    auto b = Json::to_msgpack(params);
    std::vector<zmq::const_buffer> frames = {zmq::buffer(id), zmq::buffer(method), zmq::buffer(b.data(), b.size())};
    zmq::send_multipart(s_, frames);
  }
  Reply receive() {
    std::vector<zmq::message_t> f;
    if (!zmq::recv_multipart(s_, std::back_inserter(f)) || f.size() != 3) throw std::runtime_error("no reply");
    return {f[0].to_string(), f[1].to_string(), Json::from_msgpack(f[2].to_string_view())};
  }
  Reply call(const std::string& method, const Json& params = Json::object()) {
    send("c", method, params);
    return receive();
  }
  Reply step(const std::string& ep, const std::string& tool, Json args = Json::object()) {
    return call("step", {{"episode", ep}, {"action", {{"name", tool}, {"arguments", args}}}});
  }
  std::string reset_with_candidate() {
    std::string dir = resource_path("datasets/samples/candidates/gelu_scale_residual/fused/");
    Reply r =
        call("reset",
             {{"task", "gelu_scale_residual"},
              {"options", {{"files", {{"kernel.cu", read_file(dir + "kernel.cu")}, {"launch.yaml", read_file(dir + "launch.yaml")}}}}}});
    EXPECT_EQ(r.status, "ok") << r.payload.dump();
    return r.payload.value("episode", "");
  }

 private:
  zmq::socket_t s_;
};

}  // namespace

TEST(RolloutServerGpu, KilledGpuWorkerCostsOneRequestAndEveryOtherEpisodeIsServed) {
  SKIP_WITHOUT_GPU();
  ServerConfig cfg;
  cfg.bind = "tcp://127.0.0.1:*";
  cfg.scheduler.gpus = 1;
  cfg.record.path = (std::filesystem::temp_directory_path() / ("kforge_gpu_fault_" + std::to_string(getpid()) + ".h5")).string();
  std::filesystem::remove(cfg.record.path);
  std::atomic<bool> stop{false};
  RolloutServer server(cfg, ServerSetup::load(cfg));
  std::thread serving([&] { server.run(stop); });
  zmq::context_t ctx;
  Client c(ctx, server.endpoint());
  Client other(ctx, server.endpoint());
  std::string victim = c.reset_with_candidate(), bystander = other.reset_with_candidate();

  // Warm: the worker is up and this candidate passes.
  Reply warm = c.step(victim, "verify");
  ASSERT_EQ(warm.payload["info"]["verdict"], "pass") << warm.payload["observation"];
  int starts_before = c.call("health").payload["gpus"][0]["worker_starts"];

  // A profile (long: timing) is running when its worker is killed.
  c.send("p", "step", {{"episode", victim}, {"action", {{"name", "profile"}, {"arguments", Json::object()}}}});
  Client watcher(ctx, server.endpoint());
  for (int i = 0; i < 2000 && watcher.call("health").payload["gpus"][0]["running"] != 1; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // inside the request
  auto workers = children_named("kforge-worker");
  ASSERT_EQ(workers.size(), 1u) << "expected one GPU worker child";
  ::kill(workers[0], SIGKILL);
  Reply crashed = c.receive();
  ASSERT_EQ(crashed.status, "ok") << crashed.payload.dump();
  EXPECT_EQ(crashed.payload["info"]["report"]["error"]["kind"], "worker_crashed") << crashed.payload["observation"];
  EXPECT_FALSE(crashed.payload["terminated"].get<bool>());

  // The other episode is served (its worker restarted), and the victim's episode goes on.
  Reply b = other.step(bystander, "verify");
  EXPECT_EQ(b.payload["info"]["verdict"], "pass") << b.payload["observation"];
  Reply again = c.step(victim, "verify");
  EXPECT_EQ(again.payload["info"]["verdict"], "pass") << again.payload["observation"];
  EXPECT_GT(c.call("health").payload["gpus"][0]["worker_starts"].get<int>(), starts_before);

  Reply submitted = other.step(bystander, "submit");
  EXPECT_TRUE(submitted.payload["terminated"].get<bool>());
  EXPECT_GE(submitted.payload["reward"].get<double>(), 1.0) << submitted.payload["observation"];
  auto index = read_trajectory_index(cfg.record.path);
  ASSERT_EQ(index.size(), 1u);
  EXPECT_EQ(index[0].episode, bystander);
  EXPECT_EQ(index[0].termination_reason, "submitted");
  stop = true;
  serving.join();
  EXPECT_EQ(read_trajectory_index(cfg.record.path).size(), 2u);
}

// scheduler.warm_compiles: while the GPU lane judges one episode's submission, another episode's
// verify of a candidate never compiled before waits in its queue; a compile thread builds it into
// the shared cache meanwhile, and the GPU lane's compile is a cache hit. Off, the lane compiles it.
TEST(RolloutServerGpu, AQueuedVerifysCandidateIsCompiledWhileTheGpuIsBusy) {
  SKIP_WITHOUT_GPU();
  for (bool warm : {true, false}) {
    SCOPED_TRACE(warm ? "warm_compiles: true" : "warm_compiles: false");
    ServerConfig cfg;
    cfg.bind = "tcp://127.0.0.1:*";
    cfg.scheduler.gpus = 1;
    cfg.scheduler.warm_compiles = warm;
    std::atomic<bool> stop{false};
    RolloutServer server(cfg, ServerSetup::load(cfg));
    std::thread serving([&] { server.run(stop); });
    zmq::context_t ctx;
    Client busy(ctx, server.endpoint()), queued(ctx, server.endpoint());
    for (int i = 0; i < 3000 && busy.call("health").payload["gpus"][0]["arch"] == ""; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    std::string a = busy.reset_with_candidate(), b = queued.reset_with_candidate();
    ASSERT_EQ(busy.step(a, "verify").payload["info"]["verdict"], "pass");  // the worker is up, this candidate built

    // A source nobody compiled before: the fused kernel with a comment of this run's own.
    std::string dir = resource_path("datasets/samples/candidates/gelu_scale_residual/fused/");
    std::string fresh = read_file(dir + "kernel.cu") + "// " + std::to_string(getpid()) + (warm ? " warm" : " cold") + " " +
                        std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()) + "\n";
    ASSERT_EQ(queued.step(b, "write_file", {{"path", "kernel.cu"}, {"content", fresh}}).status, "ok");
    busy.send("s", "step", {{"episode", a}, {"action", {{"name", "submit"}, {"arguments", Json::object()}}}});
    for (int i = 0; i < 2000 && queued.call("health").payload["gpus"][0]["running"] != 1; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    Reply v = queued.step(b, "verify");
    Reply s = busy.receive();
    EXPECT_TRUE(s.payload["terminated"].get<bool>()) << s.payload.dump();
    ASSERT_EQ(v.payload["info"]["verdict"], "pass") << v.payload["observation"];
    const Json& compile = v.payload["info"]["report"]["compile"];
    const Json health = queued.call("health").payload["compile"]["warm"];
    std::printf("warm_compiles %s: the queued verify's compile cache_hit %s, compile_ms %.1f, queued %.0f ms, ran %.0f ms; warm %s\n",
                warm ? "true" : "false", compile["cache_hit"].dump().c_str(), compile.value("compile_ms", 0.0),
                v.payload["timings"].value("queued_ms", 0.0), v.payload["timings"].value("run_ms", 0.0), health.dump().c_str());
    EXPECT_EQ(compile["cache_hit"].get<bool>(), warm) << compile.dump();
    EXPECT_EQ(health["enabled"].get<bool>(), warm);
    EXPECT_EQ(health["done"].get<int>() >= 2, warm) << "the first verify's and this one's candidates, built ahead";
    stop = true;
    serving.join();
  }
}
