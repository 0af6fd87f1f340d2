// The GPU test binaries' crash handler (crash_backtrace.cpp): a test process that dies of a fatal
// signal prints its frames, by function name, and still dies of that signal.
#include <csignal>

#include <gtest/gtest.h>

TEST(CrashBacktrace, AFatalSignalPrintsTheFramesByNameAndStillKills) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(std::raise(SIGSEGV), ::testing::KilledBySignal(SIGSEGV), "KFORGE_BACKTRACE");
  // The frame of this test's body, by its (mangled) name: -rdynamic exports it.
  EXPECT_DEATH(std::raise(SIGSEGV), "CrashBacktrace_AFatalSignalPrintsTheFramesByNameAndStillKills_Test8TestBody");
}
