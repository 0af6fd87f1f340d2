# tools/synth_gpu.py (the GPU stage of the synthesizer, issue 7) in its CPU mode: records, window
# rejection, time budget, kill-and-resume, merge into dataset.h5 and the specs, one-line errors.
add_test(NAME python.synth_gpu
  COMMAND ${Python3_EXECUTABLE} -m pytest -q -p no:cacheprovider ${CMAKE_CURRENT_SOURCE_DIR}/tools/test_synth_gpu.py)
set_tests_properties(python.synth_gpu PROPERTIES ENVIRONMENT "${pytest_env}" LABELS cpu TIMEOUT 900)
