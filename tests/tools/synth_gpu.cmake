# tools/synth_gpu.py (the GPU stage of the synthesizer, issue 7) in its CPU mode: records, window
# rejection, time budget, kill-and-resume, merge into dataset.h5 and the specs, one-line errors.
add_test(NAME python.synth_gpu
  COMMAND ${Python3_EXECUTABLE} -m pytest -q -p no:cacheprovider ${CMAKE_CURRENT_SOURCE_DIR}/tools/test_synth_gpu.py)
set_tests_properties(python.synth_gpu PROPERTIES ENVIRONMENT "${pytest_env}" LABELS cpu TIMEOUT 900)

# tools/synth_dataset.sh: the dataset driver's steps (prepare, GPU step in CPU mode, collect, resume, finish).
add_test(NAME python.synth_dataset
  COMMAND ${Python3_EXECUTABLE} -m pytest -q -p no:cacheprovider ${CMAKE_CURRENT_SOURCE_DIR}/tools/test_synth_dataset.py)
set_tests_properties(python.synth_dataset PROPERTIES ENVIRONMENT "${pytest_env}" LABELS cpu TIMEOUT 900)

# The fused Triton kernel of synth_gpu.py's checks on a GPU (skips, saying why, without one).
add_test(NAME python.synth_gpu_fused
  COMMAND ${Python3_EXECUTABLE} -m pytest -q -rs -s -p no:cacheprovider ${CMAKE_CURRENT_SOURCE_DIR}/tools/test_synth_gpu_fused.py)
set_tests_properties(python.synth_gpu_fused PROPERTIES ENVIRONMENT "${pytest_env}" LABELS gpu TIMEOUT 900)

# tools/sample_baselines.py: the samples packed, measured (CPU mode), merged and written back.
add_test(NAME python.sample_baselines
  COMMAND ${Python3_EXECUTABLE} -m pytest -q -p no:cacheprovider ${CMAKE_CURRENT_SOURCE_DIR}/tools/test_sample_baselines.py)
set_tests_properties(python.sample_baselines PROPERTIES ENVIRONMENT "${pytest_env}" LABELS cpu TIMEOUT 900)

# One Python everywhere (tools/python_env.sh): no script, CMake file or test starts python by name;
# the scripts' cheap steps run with a failing python3 first on PATH; setup.sh's venv modes.
add_test(NAME python.python_setting
  COMMAND ${Python3_EXECUTABLE} -m pytest -q -p no:cacheprovider ${CMAKE_CURRENT_SOURCE_DIR}/tools/test_python_setting.py)
set_tests_properties(python.python_setting PROPERTIES ENVIRONMENT "${pytest_env}" LABELS cpu TIMEOUT 600)
