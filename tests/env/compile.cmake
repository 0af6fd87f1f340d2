# NVRTC compiler of kernel candidates (real NVRTC; no GPU needed).
kforge_test(compile_tests SOURCES env/nvrtc_compiler_test.cpp LIBS kforge_compile)
