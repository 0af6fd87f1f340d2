// The project's file reader (configs/file_reader.h): a file whole, or an io error that names the
// file and the path; a size limit checked before reading; try_read_file for callers with a fallback.
#include "configs/file_reader.h"

#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "tests/test_paths.h"

using namespace kforge;
namespace fs = std::filesystem;

namespace {

// A file of this suite's temporary folder holding `text`.
std::string write(const char* name, const std::string& text) {
  std::string p = kforge::testing::temp_path("kforge_file_reader", name);
  std::ofstream(p, std::ios::binary) << text;
  return p;
}

}  // namespace

TEST(FileReader, ReadsAFileWholeBytesAsTheyAre) {
  const std::string text("a: 1\r\n\0b\xff", 9);
  EXPECT_EQ(read_file(write("x.yaml", text)), text);
  EXPECT_EQ(read_file(write("empty.yaml", ""), "the config"), "");
}

TEST(FileReader, AMissingFileIsAFileErrorNamingWhatAndThePath) {
  const std::string p = kforge::testing::temp_path("kforge_file_reader", "task.yaml");
  try {
    read_file(p, "the task file");
    FAIL();
  } catch (const FileError& e) {
    EXPECT_EQ(e.kind(), ErrorKind::io);
    EXPECT_EQ(e.path(), p);
    EXPECT_EQ(std::string(e.what()), p + ": cannot open the task file (No such file or directory)");
  }
}

TEST(FileReader, ARelativePathThatCannotBeOpenedNamesTheFullPathTried) {
  try {
    read_file("no/such/kforge.yaml");
    FAIL();
  } catch (const FileError& e) {
    const std::string full = (fs::current_path() / "no/such/kforge.yaml").string();
    EXPECT_EQ(std::string(e.what()), "no/such/kforge.yaml: cannot open file (No such file or directory); the full path tried: " + full);
  }
}

TEST(FileReader, ADirectoryIsAFileError) {
  const std::string dir = fs::path(kforge::testing::temp_path("kforge_file_reader", "x")).parent_path().string();
  try {
    read_file(dir, "the task file");
    FAIL();
  } catch (const FileError& e) {
    EXPECT_EQ(std::string(e.what()), dir + ": cannot read the task file: it is a directory");
  }
}

TEST(FileReader, AFileOverItsLimitIsAnErrorOfTheLimitsKind) {
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

TEST(FileReader, AFileWithoutASizeIsReadToItsEnd) {
  // /proc files report size 0; the reader reads until end of file, not fstat's size.
  EXPECT_NE(read_file("/proc/self/stat").find(')'), std::string::npos);
}

TEST(FileReader, TryReadFileGivesNothingWhenTheFileCannotBeRead) {
  const std::string missing = kforge::testing::temp_path("kforge_file_reader", "missing");
  EXPECT_EQ(try_read_file(missing), std::nullopt);
  EXPECT_EQ(try_read_file(fs::path(missing).parent_path().string()), std::nullopt);
  EXPECT_EQ(try_read_file(write("cache.bin", "entry")), std::optional<std::string>("entry"));
}
