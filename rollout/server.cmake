# The rollout server (rollout/server.h) and the trajectory file (rollout/trajectory_file.h).
add_library(kforge_trajectory_file ${CMAKE_CURRENT_SOURCE_DIR}/trajectory_file.cpp)
target_link_libraries(kforge_trajectory_file PUBLIC kforge_config nlohmann_json::nlohmann_json PRIVATE HDF5::HDF5)

add_library(kforge_server
  ${CMAKE_CURRENT_SOURCE_DIR}/server_config.cpp ${CMAKE_CURRENT_SOURCE_DIR}/task_catalog.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/lanes.cpp ${CMAKE_CURRENT_SOURCE_DIR}/server.cpp)
target_link_libraries(kforge_server PUBLIC kforge_rollout kforge_episode kforge_trajectory_file kforge_dataset Threads::Threads
  PRIVATE kforge_cuda_probe)
target_compile_definitions(kforge_server PRIVATE KFORGE_VERSION="${PROJECT_VERSION}")
