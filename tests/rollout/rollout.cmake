# The rollout protocol's suites (included from tests/CMakeLists.txt): the decoder, reply encoding,
# a hostile-payload corpus and a real ROUTER/DEALER/REQ loopback over 127.0.0.1.
kforge_test(rollout_protocol_tests SOURCES rollout/protocol_test.cpp LIBS kforge_rollout Threads::Threads)

# libFuzzer target for decode_request (clang only). The decoder is compiled into the target itself
# so that it carries the fuzzer's coverage instrumentation and ASan. See rollout/README.md:
#   cmake -B build-fuzz ... -DCMAKE_CXX_COMPILER=clang++ -DKFORGE_FUZZ=ON
#   cmake --build build-fuzz --target kforge_fuzz_decode && build-fuzz/tests/kforge_fuzz_decode -max_total_time=60
option(KFORGE_FUZZ "Build the libFuzzer target for the rollout decoder (clang only)" OFF)
if(KFORGE_FUZZ)
  if(CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    add_executable(kforge_fuzz_decode rollout/fuzz_decode.cpp ${PROJECT_SOURCE_DIR}/rollout/protocol.cpp)
    target_compile_options(kforge_fuzz_decode PRIVATE -g -O1 -fno-omit-frame-pointer -fsanitize=fuzzer,address,undefined)
    target_link_options(kforge_fuzz_decode PRIVATE -fsanitize=fuzzer,address,undefined)
    if(TARGET cppzmq)
      target_link_libraries(kforge_fuzz_decode PRIVATE cppzmq)
    else()
      target_link_libraries(kforge_fuzz_decode PRIVATE cppzmq-static)
    endif()
    target_link_libraries(kforge_fuzz_decode PRIVATE kforge_config nlohmann_json::nlohmann_json)
  else()
    message(WARNING "KFORGE_FUZZ needs clang (libFuzzer); ${CMAKE_CXX_COMPILER_ID} found, no fuzz target")
  endif()
endif()

# The server over real sockets in process (no GPU: compile() runs the real compile worker), the
# trajectory file, the server config.
kforge_test(rollout_server_tests SOURCES rollout/server_test.cpp LIBS kforge_server Threads::Threads)
add_dependencies(rollout_server_tests kforge-worker kforge-compile-worker)
# The task catalog and the samples (source `samples`: listed beside a dataset only when asked for).
kforge_test(rollout_catalog_tests SOURCES rollout/task_catalog_test.cpp LIBS kforge_server)

# The Python client (tools/python/kforge_client) against the real `kforge serve` binary.
add_test(NAME python.rollout_client
  COMMAND ${Python3_EXECUTABLE} -m pytest -q -p no:cacheprovider ${CMAKE_CURRENT_SOURCE_DIR}/rollout/test_client.py)
set_tests_properties(python.rollout_client PROPERTIES LABELS cpu TIMEOUT 300
  ENVIRONMENT "KFORGE_BIN=$<TARGET_FILE:kforge>;KFORGE_SOURCE_DIR=${PROJECT_SOURCE_DIR}")

# On a GPU host: the GPU worker killed mid-request through the server (skipped without a GPU).
kforge_test(rollout_server_gpu_tests GPU SOURCES rollout/server_gpu_test.cpp LIBS kforge_server kforge_cuda_probe Threads::Threads)
add_dependencies(rollout_server_gpu_tests kforge-worker kforge-compile-worker)
