# launch.yaml plans and the extern "C" kernel signatures they are checked against (torch-free).
add_library(kforge_plan ${CMAKE_CURRENT_SOURCE_DIR}/launch_plan.cpp ${CMAKE_CURRENT_SOURCE_DIR}/kernel_signature.cpp)
target_link_libraries(kforge_plan PUBLIC kforge_task)
