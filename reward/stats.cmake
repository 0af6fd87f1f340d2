# Speedups with bootstrap confidence intervals (what the reward tiers decide on). Torch-free.
target_sources(kforge_reward PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/speedup.cpp)
