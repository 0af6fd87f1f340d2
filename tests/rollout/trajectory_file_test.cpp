// The trajectory file's durability (rollout/TRAJECTORY_FORMAT.md, Durability): the journal is the
// commit point; opening cuts a torn journal tail, rebuilds a damaged HDF5 file from the journal
// (the damaged one moved aside), folds in rows the HDF5 file lacks, and imports a file written
// before journals; an append that cannot be committed throws and leaves nothing half-written.
#include "rollout/trajectory_file.h"

#include <csignal>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <sys/resource.h>

#include "configs/error.h"
#include "rollout/trajectory_journal.h"
#include "tests/test_paths.h"

using namespace kforge;
namespace fs = std::filesystem;

namespace {

std::string fresh(const std::string& name) {
  std::string path = kforge::testing::temp_path("kforge_trajectory_file_test", name);
  fs::remove(TrajectoryFile::journal_path(path));
  return path;
}

Json trajectory(int i, size_t filler = 0) {
  return {
      {"episode", "ep-" + std::to_string(i)}, {"task", "t"}, {"seed", i}, {"turns", Json::array({i})}, {"pad", std::string(filler, 'x')}};
}

void write_three(const std::string& path) {
  TrajectoryFile f(path, false);
  for (int i = 0; i < 3; ++i) f.append(trajectory(i, 1000));
}

std::vector<std::string> episodes(const std::string& path) {
  std::vector<std::string> out;
  for (const Json& t : read_trajectories(path)) out.push_back(t["episode"]);
  return out;
}

bool any_note(const TrajectoryFile& f, const std::string& needle) {
  for (const auto& n : f.notes())
    if (n.find(needle) != std::string::npos) return true;
  return false;
}

const std::vector<std::string> kThree = {"ep-0", "ep-1", "ep-2"};

}  // namespace

TEST(TrajectoryFile, CutsATornJournalTailAndKeepsEveryCommittedTrajectory) {
  std::string path = fresh("torn_journal.h5");
  write_three(path);
  // What a kill in the middle of the fourth append's write leaves: a header and part of a payload.
  std::vector<uint8_t> bytes = Json::to_msgpack(trajectory(3, 5000));
  { std::ofstream(TrajectoryFile::journal_path(path), std::ios::app | std::ios::binary) << std::string(24, '\x4b') << "partial"; }
  TrajectoryFile f(path, false);
  EXPECT_EQ(f.count(), 3u);
  EXPECT_TRUE(any_note(f, "torn tail (31 bytes")) << (f.notes().empty() ? "no note" : f.notes()[0]);
  f.append_msgpack(bytes, TrajectorySummary::of(trajectory(3)));
  EXPECT_EQ(episodes(path), (std::vector<std::string>{"ep-0", "ep-1", "ep-2", "ep-3"}));
  TrajectoryJournal j(TrajectoryFile::journal_path(path), false);
  EXPECT_EQ(j.count(), 4u);
  EXPECT_EQ(j.torn_bytes(), 0u);
}

TEST(TrajectoryFile, RebuildsADamagedHdf5FileFromTheJournalAndMovesTheDamagedOneAside) {
  std::string path = fresh("damaged.h5");
  write_three(path);
  // Scribble over the file's second half (chunks and metadata alike), as a torn write might.
  auto size = fs::file_size(path);
  {
    std::fstream h5(path, std::ios::in | std::ios::out | std::ios::binary);
    h5.seekp(static_cast<std::streamoff>(size / 2));
    h5 << std::string(size / 2, '\xff');
  }
  EXPECT_THROW(read_trajectories(path), Error);
  {
    TrajectoryFile f(path, false);
    EXPECT_EQ(f.count(), 3u);
    EXPECT_TRUE(any_note(f, "moved aside to " + path + ".damaged-")) << (f.notes().empty() ? "no note" : f.notes()[0]);
    EXPECT_EQ(f.behind(), 0u);
  }
  EXPECT_EQ(episodes(path), kThree);
  int aside = 0;
  for (const auto& e : fs::directory_iterator(fs::path(path).parent_path()))
    aside += e.path().filename().string().rfind("damaged.h5.damaged-", 0) == 0;
  EXPECT_EQ(aside, 1);
}

TEST(TrajectoryFile, FoldsInTheJournalsRecordsTheHdf5FileLacks) {
  std::string path = fresh("behind.h5");
  write_three(path);
  fs::remove(path);  // the HDF5 file lost entirely: the journal alone rebuilds it
  { TrajectoryFile f(path, false); }
  EXPECT_EQ(episodes(path), kThree);
  {  // a record committed to the journal whose fold a kill interrupted
    TrajectoryJournal j(TrajectoryFile::journal_path(path), false);
    j.append(Json::to_msgpack(trajectory(3)));
  }
  TrajectoryFile f(path, false);
  EXPECT_EQ(f.count(), 4u);
  EXPECT_EQ(episodes(path).back(), "ep-3");
  EXPECT_EQ(read_trajectory_index(path).back().episode, "ep-3");
}

TEST(TrajectoryFile, ImportsAFileWrittenBeforeJournalsExisted) {
  std::string path = fresh("legacy.h5");
  write_three(path);
  fs::remove(TrajectoryFile::journal_path(path));
  {
    TrajectoryFile f(path, false);
    EXPECT_EQ(f.count(), 3u);
    f.append(trajectory(3));
  }
  EXPECT_EQ(TrajectoryJournal(TrajectoryFile::journal_path(path), false).count(), 4u);
  EXPECT_EQ(episodes(path).size(), 4u);
}

TEST(TrajectoryFile, AnAppendThatCannotBeCommittedThrowsAndLeavesNothingHalfWritten) {
  std::string path = fresh("full.h5");
  write_three(path);
  TrajectoryFile f(path, false);
  // A file size limit just above the journal: the next record cannot be written whole (EFBIG).
  std::signal(SIGXFSZ, SIG_IGN);
  rlimit old{};
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &old), 0);
  rlimit tight = old;
  tight.rlim_cur = fs::file_size(TrajectoryFile::journal_path(path)) + 100;
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &tight), 0);
  EXPECT_THROW(f.append(trajectory(3, 50000)), Error);
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &old), 0);
  EXPECT_EQ(f.count(), 3u);
  f.append(trajectory(4, 50000));  // the limit lifted: the next append goes through
  EXPECT_EQ(f.count(), 4u);
  EXPECT_EQ(episodes(path), (std::vector<std::string>{"ep-0", "ep-1", "ep-2", "ep-4"}));
  TrajectoryJournal j(TrajectoryFile::journal_path(path), false);
  EXPECT_EQ(j.count(), 4u);
  EXPECT_EQ(j.torn_bytes(), 0u);
}

TEST(TrajectoryFile, RefusesADamagedFileWithNoJournalToRebuildItFrom) {
  std::string path = fresh("hopeless.h5");
  write_three(path);
  fs::remove(TrajectoryFile::journal_path(path));
  fs::resize_file(path, 100);
  try {
    TrajectoryFile f(path, false);
    ADD_FAILURE() << "opened";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no journal"), std::string::npos) << e.what();
  }
}
