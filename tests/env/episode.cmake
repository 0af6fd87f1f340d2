# The gym-style environment: reward-free pieces (workspace, tool calls, prompt, config, policies)
# and the episode itself with the real compile worker (no GPU needed); whole episodes on a GPU.
kforge_test(episode_tests
  SOURCES env/workspace_test.cpp env/tool_call_test.cpp env/prompt_test.cpp env/scripted_policy_test.cpp env/episode_test.cpp
  LIBS kforge_episode)
kforge_test(episode_gpu_tests GPU SOURCES env/episode_gpu_test.cpp LIBS kforge_episode kforge_cuda_probe)
add_dependencies(episode_tests kforge-worker kforge-compile-worker)
add_dependencies(episode_gpu_tests kforge-worker kforge-compile-worker)
# kforge demo without a GPU: one line, non-zero exit.
add_test(NAME python.demo COMMAND ${Python3_EXECUTABLE} -m pytest -q -p no:cacheprovider ${CMAKE_CURRENT_SOURCE_DIR}/tools/test_demo.py)
set_tests_properties(python.demo PROPERTIES ENVIRONMENT "${pytest_env}" LABELS cpu)
