# The gym-style environment (no libtorch, no CUDA context): config, workspace, tool calls, the task
# prompt, observations, the episode and scripted policies. It reaches the GPU only through the
# evaluator's worker processes.
add_library(kforge_episode
  ${CMAKE_CURRENT_SOURCE_DIR}/env_config.cpp ${CMAKE_CURRENT_SOURCE_DIR}/workspace.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/tool_call.cpp ${CMAKE_CURRENT_SOURCE_DIR}/observation.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/prompt.cpp ${CMAKE_CURRENT_SOURCE_DIR}/report_text.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/episode.cpp ${CMAKE_CURRENT_SOURCE_DIR}/scripted_policy.cpp)
target_link_libraries(kforge_episode PUBLIC kforge_evaluator kforge_reward kforge_task)
# Where shipped files (the prompt template, the format page) are found when $KFORGE_SOURCE_DIR is unset.
target_compile_definitions(kforge_episode PRIVATE KFORGE_SOURCE_DIR="${PROJECT_SOURCE_DIR}")

# Is there a CUDA device? Asked of the CUDA runtime only (kforge demo, the episode's GPU tests).
add_library(kforge_cuda_probe ${CMAKE_CURRENT_SOURCE_DIR}/cuda_probe.cpp)
target_link_libraries(kforge_cuda_probe PUBLIC CUDA::cudart)
