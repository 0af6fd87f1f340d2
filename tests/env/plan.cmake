# Launch plans and kernel signatures (no GPU): each error with its location, good plans resolved,
# and every shipped candidate under datasets/samples/candidates/ against its task.
kforge_test(plan_tests SOURCES env/launch_plan_test.cpp env/kernel_signature_test.cpp LIBS kforge_plan)
