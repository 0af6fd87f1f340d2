# Suites of the synthesizer (issue 7): pure synthesis (no libtorch), the CPU reference filters,
# and the Python side (h5py reading, `kforge synth` / `kforge tasks`, plots).
kforge_test(synth_tests SOURCES data_synth/synth_test.cpp LIBS kforge_synth kforge_dataset)
kforge_test(synth_cpu_tests SOURCES data_synth/cpu_checks_test.cpp LIBS kforge_synth_cpu)
add_test(NAME python.synth
  COMMAND ${Python3_EXECUTABLE} -m pytest -q -p no:cacheprovider ${CMAKE_CURRENT_SOURCE_DIR}/data_synth/test_synth.py)
set_tests_properties(python.synth PROPERTIES ENVIRONMENT "${pytest_env}" LABELS cpu)
