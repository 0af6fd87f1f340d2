# Launch plans and kernel signatures (no GPU): each error with its location, good plans resolved,
# and every shipped candidate under datasets/samples/candidates/ against its task.
kforge_test(plan_tests SOURCES env/launch_plan_test.cpp env/kernel_signature_test.cpp LIBS kforge_plan)
# The evaluator/GPU-worker contract (gpu_request.h): strict in both directions, no GPU.
kforge_test(gpu_contract_tests SOURCES env/gpu_request_test.cpp LIBS kforge_gpu_contract)
# Robustness draws and their conditioning, on the CPU (libtorch), at the sample tasks' check sizes.
kforge_test(robust_draws_tests SOURCES env/robust_draws_test.cpp LIBS kforge_gpu_worker)
