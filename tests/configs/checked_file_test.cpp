// Reading a file kforge does not control: symbolic links, FIFOs and oversized files are refused,
// with an io error naming the file, before anything is read.
#include "configs/checked_file.h"

#include <chrono>
#include <filesystem>
#include <fstream>

#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "configs/error.h"
#include "configs/remove_tree.h"

using namespace kforge;
namespace fs = std::filesystem;

namespace {

class CheckedFile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("kforge_checked_file_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { remove_tree(dir_); }
  std::string path(const char* name) const { return (dir_ / name).string(); }
  // The io error read_untrusted_file throws, or "" when it read the file.
  static std::string refusal(const std::string& p, int64_t max_bytes) {
    try {
      read_untrusted_file(p, max_bytes, "the candidate file");
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::io);
      return e.what();
    }
    return "";
  }
  fs::path dir_;
};

}  // namespace

TEST_F(CheckedFile, ReadsARegularFileWholeAtTheLimit) {
  std::ofstream(path("kernel.cu")) << "0123456789";
  EXPECT_EQ(read_untrusted_file(path("kernel.cu"), 10, "the candidate file"), "0123456789");
  EXPECT_EQ(read_untrusted_file(path("kernel.cu"), 1 << 20, "x"), "0123456789");
}

TEST_F(CheckedFile, RefusesASymlinkToAHostFile) {
  fs::create_symlink("/etc/passwd", path("kernel.cu"));
  std::string why = refusal(path("kernel.cu"), 1 << 20);
  EXPECT_NE(why.find("is a symbolic link"), std::string::npos) << why;
  EXPECT_EQ(why.find("root:"), std::string::npos) << "nothing of the target is echoed";
}

TEST_F(CheckedFile, RefusesAFifoWithoutBlocking) {
  ASSERT_EQ(::mkfifo(path("kernel.cu").c_str(), 0600), 0);
  auto start = std::chrono::steady_clock::now();
  std::string why = refusal(path("kernel.cu"), 1 << 20);
  EXPECT_NE(why.find("is a FIFO"), std::string::npos) << why;
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
  EXPECT_NE(refusal(dir_.string(), 1 << 20).find("is a directory"), std::string::npos);
}

TEST_F(CheckedFile, RefusesAnOversizedFileByItsSizeNamingTheLimit) {
  // A sparse 10 GB file: were it read, the test would run out of memory long before it failed.
  { std::ofstream(path("kernel.cu")) << "x"; }
  fs::resize_file(path("kernel.cu"), int64_t{10} << 30);
  std::string why = refusal(path("kernel.cu"), 1 << 20);
  EXPECT_NE(why.find("is 10737418240 bytes; at most 1048576 are accepted"), std::string::npos) << why;
  EXPECT_NE(refusal(path("missing.cu"), 10).find("cannot open"), std::string::npos);
}
