// The project's one way to remove a folder (configs/remove_tree.h): everything under it goes, depth
// first; a symbolic link goes without what it points to; a missing path is no error; what cannot be
// removed is left, and the call says the path is still there.
#include "configs/remove_tree.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

using namespace kforge;
namespace fs = std::filesystem;

namespace {

fs::path fresh(const std::string& name) {
  fs::path p = fs::temp_directory_path() / ("kforge-remove-tree-" + std::to_string(getpid()) + "-" + name);
  remove_tree(p);
  fs::create_directories(p);
  return p;
}

}  // namespace

TEST(RemoveTree, RemovesANestedTreeWithItsFiles) {
  const fs::path root = fresh("nested");
  fs::create_directories(root / "a" / "b" / "c");
  std::ofstream(root / "top.txt") << "1";
  std::ofstream(root / "a" / "b" / "c" / "deep.txt") << "2";
  std::ofstream(root / "a" / "mid.bin") << std::string(1 << 16, 'x');
  EXPECT_TRUE(remove_tree(root));
  EXPECT_FALSE(fs::exists(root));
}

TEST(RemoveTree, RemovesALinkNotWhatItPointsTo) {
  const fs::path outside = fresh("outside");
  std::ofstream(outside / "keep.txt") << "kept";
  const fs::path root = fresh("links");
  fs::create_directory_symlink(outside, root / "to_outside");
  fs::create_symlink(outside / "keep.txt", root / "to_file");
  EXPECT_TRUE(remove_tree(root));
  EXPECT_FALSE(fs::exists(root));
  EXPECT_TRUE(fs::exists(outside / "keep.txt")) << "the link was followed";
  remove_tree(outside);
}

TEST(RemoveTree, AMissingPathIsNoErrorAndAFileIsRemovedAlone) {
  EXPECT_TRUE(remove_tree(fs::temp_directory_path() / "kforge-remove-tree-no-such-path"));
  const fs::path root = fresh("file");
  std::ofstream(root / "one.txt") << "1";
  EXPECT_TRUE(remove_tree(root / "one.txt"));
  EXPECT_FALSE(fs::exists(root / "one.txt"));
  EXPECT_TRUE(fs::exists(root));
  remove_tree(root);
}
