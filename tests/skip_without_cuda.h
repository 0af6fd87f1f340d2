#pragma once
// GPU tests call this first. Without a CUDA device the test is skipped with the reason printed;
// the KFORGE_SKIPPED token lets ctest count it as skipped (SKIP_REGULAR_EXPRESSION in
// tests/CMakeLists.txt), not passed.
#include <cstdio>

#include <gtest/gtest.h>

#include "env/judge/timing.h"

#define KFORGE_SKIP_WITHOUT_CUDA()                                                                       \
  do {                                                                                                   \
    if (!::kforge::cuda_available()) {                                                                   \
      std::printf("KFORGE_SKIPPED: no CUDA device on this machine; run on a GPU host (ctest -L gpu)\n"); \
      GTEST_SKIP() << "no CUDA device on this machine";                                                  \
    }                                                                                                    \
  } while (0)
