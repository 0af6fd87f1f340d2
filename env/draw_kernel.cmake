# Task-argument draws on the device (NVRTC-compiled at run time, launched through the driver API),
# byte-identical to data_synth's fill_draw. Torch-free. The driver is reached through the CUDA
# runtime's entry-point query (cuda_driver.h) rather than by linking libcuda, so binaries start on
# GPU-less machines.
# The verification's fused compare and input-fingerprint kernels (check_kernel.h) live here too.
add_library(kforge_draw_kernel ${CMAKE_CURRENT_SOURCE_DIR}/draw_kernel.cpp ${CMAKE_CURRENT_SOURCE_DIR}/check_kernel.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/harness_nvrtc.cpp ${CMAKE_CURRENT_SOURCE_DIR}/cuda_driver.cpp)
target_link_libraries(kforge_draw_kernel PUBLIC kforge_task CUDA::toolkit PRIVATE CUDA::nvrtc CUDA::cudart)
# The host copy of the element code must round every double operation on its own, as the device
# does: no multiply-add contraction (GCC contracts C++ by default wherever FMA exists).
set_source_files_properties(${CMAKE_CURRENT_SOURCE_DIR}/draw_kernel.cpp ${CMAKE_CURRENT_SOURCE_DIR}/check_kernel.cpp
  PROPERTIES COMPILE_OPTIONS -ffp-contract=off)
