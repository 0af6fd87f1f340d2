// The project's file reader (configs/file_reader.h): a file whole, or an io error that names the
// file and the path; a size limit checked before reading; try_read_file for callers with a fallback.
#include "configs/file_reader.h"

#include <filesystem>
#include <fstream>
#include <string>

#include <unistd.h>

#include <gtest/gtest.h>

using namespace kforge;
namespace fs = std::filesystem;

namespace {

class FileReader : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("kforge_file_reader_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string write(const char* name, const std::string& text) const {
    std::string p = (dir_ / name).string();
    std::ofstream(p, std::ios::binary) << text;
    return p;
  }
  fs::path dir_;
};

}  // namespace

TEST_F(FileReader, ReadsAFileWholeBytesAsTheyAre) {
  const std::string text("a: 1\r\n\0b\xff", 9);
  EXPECT_EQ(read_file(write("x.yaml", text)), text);
  EXPECT_EQ(read_file(write("empty.yaml", ""), "the config"), "");
}

TEST_F(FileReader, AMissingFileIsAFileErrorNamingWhatAndThePath) {
  const std::string p = (dir_ / "task.yaml").string();
  try {
    read_file(p, "the task file");
    FAIL();
  } catch (const FileError& e) {
    EXPECT_EQ(e.kind(), ErrorKind::io);
    EXPECT_EQ(e.path(), p);
    EXPECT_EQ(std::string(e.what()), p + ": cannot open the task file (No such file or directory)");
  }
}

TEST_F(FileReader, ARelativePathThatCannotBeOpenedNamesTheFullPathTried) {
  try {
    read_file("no/such/kforge.yaml");
    FAIL();
  } catch (const FileError& e) {
    const std::string full = (fs::current_path() / "no/such/kforge.yaml").string();
    EXPECT_EQ(std::string(e.what()), "no/such/kforge.yaml: cannot open file (No such file or directory); the full path tried: " + full);
  }
}

TEST_F(FileReader, ADirectoryIsAFileError) {
  try {
    read_file(dir_.string(), "the task file");
    FAIL();
  } catch (const FileError& e) {
    EXPECT_EQ(std::string(e.what()), dir_.string() + ": cannot read the task file: it is a directory");
  }
}

TEST_F(FileReader, AFileOverItsLimitIsAnErrorOfTheLimitsKind) {
  const std::string p = write("launch.yaml", std::string(11, 'x'));
  EXPECT_EQ(read_file(p, "the launch plan", {11, ErrorKind::spec}), std::string(11, 'x'));
  try {
    read_file(p, "the launch plan", {10, ErrorKind::spec});
    FAIL();
  } catch (const FileError&) {
    FAIL() << "too large is the content's fault, not an io error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::spec);
    EXPECT_EQ(std::string(e.what()), p + ": 11 bytes, over the limit of 10");
  }
}

TEST_F(FileReader, AFileWithoutASizeIsReadToItsEnd) {
  // /proc files report size 0; the reader reads until end of file, not fstat's size.
  EXPECT_NE(read_file("/proc/self/stat").find(')'), std::string::npos);
}

TEST_F(FileReader, TryReadFileGivesNothingWhenTheFileCannotBeRead) {
  EXPECT_EQ(try_read_file((dir_ / "missing").string()), std::nullopt);
  EXPECT_EQ(try_read_file(dir_.string()), std::nullopt);
  EXPECT_EQ(try_read_file(write("cache.bin", "entry")), std::optional<std::string>("entry"));
}
