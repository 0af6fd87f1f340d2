# Device draws: the kernel compiles with NVRTC and its element code (compiled for the host) equals
# fill_draw byte for byte (no GPU); on a GPU, the device's bytes equal fill_draw's.
kforge_test(draw_kernel_tests SOURCES env/draw_kernel_test.cpp LIBS kforge_draw_kernel)
kforge_test(draw_kernel_gpu_tests GPU SOURCES env/draw_kernel_gpu_test.cpp LIBS kforge_draw_kernel CUDA::cudart)
# The verification's fused compare and fingerprint kernels: NVRTC compile and the host copy of
# their element code (no GPU); on a GPU, the device's results equal the host copy's.
kforge_test(check_kernel_tests SOURCES env/check_kernel_test.cpp LIBS kforge_draw_kernel)
kforge_test(check_kernel_gpu_tests GPU SOURCES env/check_kernel_gpu_test.cpp LIBS kforge_draw_kernel CUDA::cudart)
