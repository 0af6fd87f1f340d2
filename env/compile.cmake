# NVRTC compilation of kernel candidates: the include sandbox, NVRTC with automatic precompiled
# headers, a content-hash cache, ptxas resources. No libtorch, no CUDA context.
add_library(kforge_compile
  ${CMAKE_CURRENT_SOURCE_DIR}/nvrtc_compiler.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/include_guard.cpp)
target_link_libraries(kforge_compile PUBLIC kforge_config PRIVATE kforge_anticheat CUDA::nvrtc Threads::Threads)
# The toolkit this build found: where find_cccl_include_dir() looks first.
list(GET CUDAToolkit_INCLUDE_DIRS 0 kforge_cuda_include_dir)
target_compile_definitions(kforge_compile PRIVATE KFORGE_CUDA_TOOLKIT_INCLUDE="${kforge_cuda_include_dir}")

# Compile-time benchmark (tools/bench/compile_bench.cpp): cold and cached NVRTC compiles.
add_executable(kforge_compile_bench ${PROJECT_SOURCE_DIR}/tools/bench/compile_bench.cpp)
target_link_libraries(kforge_compile_bench PRIVATE kforge_compile nlohmann_json::nlohmann_json)
target_compile_definitions(kforge_compile_bench PRIVATE KFORGE_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
