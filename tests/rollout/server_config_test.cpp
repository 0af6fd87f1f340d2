// The server's config (strict keys, paths resolved against the config's folder and checked with
// the full path tried) and the trajectory file (appends across reopenings, refuses other files).
#include "rollout/server_config.h"

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "configs/error.h"
#include "configs/remove_tree.h"
#include "configs/yaml_reader.h"
#include "env/episode/env_config.h"
#include "rollout/server.h"
#include "rollout/task_catalog.h"
#include "rollout/trajectory_file.h"
#include "tests/test_paths.h"

using namespace kforge;
namespace fs = std::filesystem;

namespace {

std::string temp_path(const std::string& name) { return kforge::testing::temp_path("kforge_server_config_test", name); }

}  // namespace

TEST(RolloutServerConfig, RejectsUnknownKeysAndBadValues) {
  auto fails = [](const std::string& text, const std::string& needle) {
    try {
      ServerConfig::from_yaml(YamlNode::parse(text, "server.yaml"));
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
      return;
    }
    ADD_FAILURE() << "accepted: " << text;
  };
  fails("sessions: {max_episode: 3}\n", "max_episodes");
  fails("scheduler: {gpus: -2}\n", "gpus");
  fails("scheduler: {compile_workers: 0}\n", "compile_workers");
  fails("scheduler: {warm_compiles: sometimes}\n", "warm_compiles");
  EXPECT_FALSE(ServerConfig::from_yaml(YamlNode::parse("scheduler: {warm_compiles: false}\n", "s.yaml")).scheduler.warm_compiles);
  fails("protocol: {max_depth: 1000}\n", "max_depth");
  fails("recrod: {path: x.h5}\n", "record");
  fails("tasks: {serve_unmeasured: maybe}\n", "serve_unmeasured");
  EXPECT_FALSE(ServerConfig::from_yaml(YamlNode::parse("tasks: {serve_unmeasured: false}\n", "s.yaml")).tasks.serve_unmeasured);
  EXPECT_TRUE(ServerConfig::from_yaml(YamlNode::parse("tasks: {samples: true}\n", "s.yaml")).tasks.serve_unmeasured);
  fails("tasks: {min_headroom: -1}\n", "min_headroom");
  EXPECT_EQ(ServerConfig::from_yaml(YamlNode::parse("tasks: {samples: true}\n", "s.yaml")).tasks.min_headroom, 0);
  EXPECT_EQ(ServerConfig::from_yaml(YamlNode::parse("tasks: {min_headroom: 1.15}\n", "s.yaml")).tasks.min_headroom, 1.15);
  ServerConfig c = ServerConfig::from_yaml(YamlNode::parse("record: {path: out/t.h5}\nenv_config: env.yaml\n", "s.yaml"), "/base");
  EXPECT_EQ(c.record.path, "/base/out/t.h5");
  EXPECT_EQ(c.env_config, "/base/env.yaml");
  EXPECT_EQ(ServerConfig::from_yaml(YamlNode::parse("tasks: {baselines: b}\n", "s.yaml"), "/base").tasks.baselines, "/base/b");
}

TEST(RolloutServerConfig, AMissingPathNamesTheKeyTheFullPathTriedAndTheRule) {
  fs::path dir = fs::path(temp_path("copied")).parent_path() / "copied_config";
  fs::create_directories(dir);
  fs::copy_file(resource_path("configs/server.yaml"), dir / "server.yaml", fs::copy_options::overwrite_existing);
  ServerConfig c = ServerConfig::load((dir / "server.yaml").string());
  EXPECT_EQ(c.source, (dir / "server.yaml").string());
  auto io_error = [](const ServerConfig& cfg) {
    try {
      ServerSetup::load(cfg);
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::io);
      return std::string(e.what());
    }
    ADD_FAILURE() << "loaded";
    return std::string();
  };
  EXPECT_EQ(io_error(c), "env_config: the file " + (dir / "env.yaml").string() + " does not exist (relative paths in " +
                             (dir / "server.yaml").string() + " resolve against its folder, " + dir.string() + ")");
  c.env_config = c.reward_config = c.eval_config = c.anticheat_config = "";
  EXPECT_NE(io_error(c).find("tasks.datasets: the dataset " + (dir.parent_path() / "datasets/synth/dataset.h5.xz").string()),
            std::string::npos);
  c.tasks.datasets.clear();
  c.tasks.baselines = (dir / "baselines").string();
  EXPECT_NE(io_error(c).find("tasks.baselines: the folder " + (dir / "baselines").string() + " does not exist"), std::string::npos);
  c.tasks.baselines.clear();
  c.record.path = (dir / "no_such_folder" / "t.h5").string();
  EXPECT_NE(io_error(c).find("record.path: the folder of the trajectory file, " + (dir / "no_such_folder").string()), std::string::npos);
  remove_tree(dir);
}

TEST(RolloutServerConfig, TheShippedConfigLoads) {
  ServerConfig c = ServerConfig::load(resource_path("configs/server.yaml"));
  EXPECT_EQ(c.bind, "tcp://127.0.0.1:5555");
  EXPECT_EQ(c.scheduler.gpus, -1);
  EXPECT_TRUE(c.scheduler.warm_compiles) << "a GPU step's candidate is compiled ahead by default";
  EXPECT_NO_THROW(ServerSetup::load(c));
  // It serves the shipped dataset: at least 5 800 tasks (5 882 after issue 25's input checks), each
  // with both baselines, heldout at least 5 %.
  ASSERT_EQ(c.tasks.datasets.size(), 1u);
  EXPECT_EQ(fs::path(c.tasks.datasets[0]), fs::path(resource_path("datasets/synth/dataset.h5.xz")).lexically_normal());
  TaskCatalog catalog;
  catalog.add_dataset(c.tasks.datasets[0], c.tasks.serve_unmeasured);
  EXPECT_GE(catalog.size(), 5800u);
  EXPECT_EQ(catalog.unmeasured(), 0u);
  TasksParams all, heldout;
  heldout.split = "heldout";
  const Json page = catalog.list(all, 100000);
  ASSERT_EQ(page["total"].get<size_t>(), catalog.size());
  for (const Json& t : page["tasks"]) {
    ASSERT_TRUE(t["eager_ms"].is_number() && t["compile_ms"].is_number()) << t.dump();
    ASSERT_GE(t["eager_ms"].get<double>(), 1.0) << t.dump();
    ASSERT_LE(t["eager_ms"].get<double>(), 100.0) << t.dump();
  }
  EXPECT_GE(catalog.list(heldout)["total"].get<double>(), 0.05 * catalog.size());
}

TEST(TrajectoryFile, AppendsAcrossReopeningsAndReadsBackInOrder) {
  std::string path = temp_path("append.h5");
  {
    TrajectoryFile f(path, false);
    f.append({{"episode", "e1"}, {"task", "t"}, {"seed", 1}, {"turns", Json::array({1, 2})}, {"episode_reward", -1.0}});
    f.append({{"episode", "e2"}, {"task", "t"}, {"seed", 2}, {"turns", Json::array()}});
  }
  {
    TrajectoryFile f(path, false);
    EXPECT_EQ(f.count(), 2u);
    f.append({{"episode", "e3"}, {"task", std::string(300, 'x')}, {"seed", 3}});
  }
  auto all = read_trajectories(path);
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0]["turns"], Json::array({1, 2}));
  EXPECT_EQ(all[2]["episode"], "e3");
  auto index = read_trajectory_index(path);
  EXPECT_EQ(index[0].turns, 2);
  EXPECT_EQ(index[0].episode_reward, -1.0);
  EXPECT_EQ(index[2].task.size(), 256u);  // the index column is cut; the record keeps the whole name
  EXPECT_EQ(all[2]["task"].get<std::string>().size(), 300u);
}

TEST(TrajectoryFile, RefusesAFileThatIsNotATrajectoryFile) {
  std::string path = temp_path("not.h5");
  { std::ofstream(path) << "hello"; }
  EXPECT_THROW(TrajectoryFile f(path), Error);
}

// Issue 26: with a key written twice the first value used to win silently.
TEST(RolloutServerConfig, RefusesADuplicateKeyWithItsLine) {
  const std::string path = temp_path("dup_server.yaml");
  std::ofstream(path) << "sessions:\n  max_episodes: 8\nscheduler: {gpus: 1}\nsessions:\n  max_episodes: 4096\n";
  try {
    ServerConfig::load(path);
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::config);
    EXPECT_NE(std::string(e.what()).find(path + ":4:1: duplicate key 'sessions' (first at line 1)"), std::string::npos) << e.what();
  }
}
