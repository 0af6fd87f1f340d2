// The sandbox of tool processes (env/process/child_sandbox.h), tried with real children: what they
// may read and write, the network, the environment, the parent's descriptors and the limits.
#include "env/process/child_sandbox.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "configs/file_reader.h"
#include "configs/remove_tree.h"

using namespace kforge;
namespace fs = std::filesystem;

namespace {

struct ChildRun {
  int status = -1;
  std::string log;
  bool exited_ok() const { return WIFEXITED(status) && WEXITSTATUS(status) == 0; }
};

class ChildSandboxTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("kforge-sandbox-" + std::to_string(getpid()) + "-" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    remove_tree(root_);
    fs::create_directories(root_ / "allowed");
    fs::create_directories(root_ / "writable");
    fs::create_directories(root_ / "outside");
    std::ofstream(root_ / "allowed" / "public.txt") << "public words\n";
    std::ofstream(root_ / "outside" / "secret.txt") << "the held-out answer\n";
  }
  void TearDown() override { remove_tree(root_); }

  ChildSandboxSpec spec() const {
    ChildSandboxSpec s;
    s.read_paths = {"/usr", "/lib", "/lib64", "/bin", "/etc/ld.so.cache", (root_ / "allowed").string()};
    s.read_paths.erase(std::remove_if(s.read_paths.begin(), s.read_paths.end(), [](const std::string& p) { return !fs::exists(p); }),
                       s.read_paths.end());
    s.write_paths = {(root_ / "writable").string(), "/dev/null"};
    s.env = {"PATH=/usr/bin:/bin", "KFORGE_PROBE=1"};
    s.limits.cpu_s = 20;
    s.limits.file_bytes = 1 << 20;
    return s;
  }

  ChildRun run(const ChildSandbox& box, const std::string& script) const {
    const std::string log = (root_ / "writable" / "log.txt").string();
    pid_t pid = box.spawn({{"/bin/bash", "-c", script}, log, ""});
    ChildRun r;
    waitpid(pid, &r.status, 0);
    r.log = try_read_file(log).value_or("");
    return r;
  }

  fs::path root_;
};

bool have_landlock(std::string* why) { return landlock_abi(why) > 0; }

}  // namespace

TEST_F(ChildSandboxTest, ReadsOnlyWhatTheSpecNamesAndWritesOnlyWhereItMay) {
  std::string why;
  if (!have_landlock(&why)) GTEST_SKIP() << "no Landlock on this kernel (" << why << "): the file system cannot be confined";
  ChildSandbox box(spec());
  EXPECT_EQ(box.confinement()["filesystem"], "confined");
  ChildRun ok = run(box, "cat " + (root_ / "allowed" / "public.txt").string() + " && echo made > " + (root_ / "writable" / "x").string());
  EXPECT_TRUE(ok.exited_ok()) << ok.log;
  EXPECT_NE(ok.log.find("public words"), std::string::npos) << ok.log;
  EXPECT_EQ(try_read_file((root_ / "writable" / "x").string()).value_or(""), "made\n");

  ChildRun secret = run(box, "cat " + (root_ / "outside" / "secret.txt").string());
  EXPECT_FALSE(secret.exited_ok());
  EXPECT_NE(secret.log.find("Permission denied"), std::string::npos) << secret.log;
  EXPECT_EQ(secret.log.find("held-out"), std::string::npos) << secret.log;
  ChildRun listing = run(box, "ls " + (root_ / "outside").string());
  EXPECT_FALSE(listing.exited_ok()) << listing.log;
  EXPECT_EQ(listing.log.find("secret.txt"), std::string::npos) << listing.log;

  ChildRun write = run(box, "echo x > " + (root_ / "allowed" / "new.txt").string());
  EXPECT_FALSE(write.exited_ok());
  EXPECT_FALSE(fs::exists(root_ / "allowed" / "new.txt"));
  ChildRun remove = run(box, "rm " + (root_ / "allowed" / "public.txt").string());
  EXPECT_FALSE(remove.exited_ok());
  EXPECT_TRUE(fs::exists(root_ / "allowed" / "public.txt"));
}

TEST_F(ChildSandboxTest, NoNetworkNoInheritedDescriptorsAndOnlyItsOwnEnvironment) {
  ChildSandbox box(spec());
  // bash opens a TCP socket for /dev/tcp: the filter refuses socket() whatever the address.
  ChildRun net = run(box, "exec 3<>/dev/tcp/127.0.0.1/9 && echo connected");
  EXPECT_FALSE(net.exited_ok());
  EXPECT_EQ(net.log.find("connected"), std::string::npos) << net.log;
  EXPECT_NE(net.log.find("not permitted"), std::string::npos) << net.log;

  // A descriptor the parent holds open without close-on-exec does not reach the child.
  int fd = ::open((root_ / "allowed" / "public.txt").c_str(), O_RDONLY);
  ASSERT_GE(fd, 3);
  ChildRun inherited = run(box, "cat <&" + std::to_string(fd));
  ::close(fd);
  EXPECT_FALSE(inherited.exited_ok());
  EXPECT_EQ(inherited.log.find("public words"), std::string::npos) << inherited.log;

  ::setenv("KFORGE_PARENT_SECRET", "token-123", 1);
  ChildRun env = run(box, "echo \"[$KFORGE_PROBE][$KFORGE_PARENT_SECRET][$HOME]\"");
  ::unsetenv("KFORGE_PARENT_SECRET");
  EXPECT_TRUE(env.exited_ok()) << env.log;
  EXPECT_NE(env.log.find("[1][][]"), std::string::npos) << env.log;
}

TEST_F(ChildSandboxTest, LimitsHoldAndAFailedExecSaysWhy) {
  ChildSandbox box(spec());
  // RLIMIT_FSIZE is 1 MiB: a 2 MiB file is cut, the writer stopped by SIGXFSZ.
  ChildRun big = run(box, "head -c 2097152 /dev/zero > " + (root_ / "writable" / "big").string());
  EXPECT_FALSE(big.exited_ok());
  EXPECT_LE(fs::file_size(root_ / "writable" / "big"), 1u << 20);

  const std::string log = (root_ / "writable" / "exec.txt").string();
  pid_t pid = box.spawn({{"/nonexistent/tool"}, log, ""});
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 127);
  EXPECT_NE(try_read_file(log).value_or("").find("kforge sandbox: /nonexistent/tool"), std::string::npos);

  const nlohmann::json c = box.confinement();
  EXPECT_EQ(c["limits"]["file_bytes"], 1 << 20);
  EXPECT_EQ(c["landlock_abi"].get<int>() > 0, c["filesystem"] == "confined") << c.dump();
}
