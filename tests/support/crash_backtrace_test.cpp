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

namespace {
// Out of line: a call from another frame (or a jump from it, where the compiler makes f() a tail call).
__attribute__((noinline)) void call_through(void (*volatile f)()) { f(); }
}  // namespace

// A call through a null function pointer leaves the unwinder nothing to walk (the program counter
// is 0): the word at the stack pointer, the caller's return address, still names the caller.
TEST(CrashBacktrace, ACallThroughANullPointerStillNamesItsCaller) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(call_through(nullptr),
               "program counter 0x0000000000000000(.|\n)*word at the stack pointer 0x[0-9a-f]+\n[^\n]*(call_through|StillNamesItsCaller)");
}
