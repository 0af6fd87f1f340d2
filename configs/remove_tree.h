#pragma once
// Removing a folder and everything under it, the project's one way: std::filesystem::remove_all
// is not used anywhere (tools/lint.sh refuses it). In a process that has libtorch loaded, the call
// can bind to libtorch.so's own copy of libstdc++'s filesystem code (torch 2.11.0's wheel), which
// calls recursive_directory_iterator::__erase, a weak symbol that neither this machine's libstdc++
// nor the GPU hosts' defines: a call through a null pointer on the first non-empty folder
// (imported_task_gpu_tests on an H100 host, 2026-12-08).
#include <filesystem>

namespace kforge {

// Removes `path` and, for a folder, everything under it, depth first, without following symbolic
// links (a link is removed, not what it points to). A missing path is not an error; an entry that
// cannot be removed is left, and so is every folder above it. True when the path is gone.
bool remove_tree(const std::filesystem::path& path);

}  // namespace kforge
