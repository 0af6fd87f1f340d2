# Speedup confidence intervals: coverage on synthetic samples, A/A comparisons, determinism, input checks.
kforge_test(speedup_tests SOURCES reward/speedup_test.cpp LIBS kforge_reward)
