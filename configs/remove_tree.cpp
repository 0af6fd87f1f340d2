#include "configs/remove_tree.h"

#include <ftw.h>
#include <sys/stat.h>

#include <cstdio>

namespace kforge {

namespace {

int remove_entry(const char* path, const struct stat*, int, struct FTW*) {
  ::remove(path);  // what cannot be removed stays, and so does every folder above it
  return 0;
}

}  // namespace

bool remove_tree(const std::filesystem::path& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return true;
  nftw(path.c_str(), remove_entry, 16, FTW_DEPTH | FTW_PHYS);
  return ::lstat(path.c_str(), &st) != 0;
}

}  // namespace kforge
