# Static anti-cheat checks (no GPU): each rule in several spellings, the exploit corpus under
# tests/anticheat/exploits/, every shipped candidate, and configs/anticheat.yaml.
kforge_test(anticheat_tests SOURCES anticheat/static_checks_test.cpp LIBS kforge_anticheat)
# The dynamic layers' config and rules (no GPU), and the audit of the exploit corpus
# (anticheat/corpus/) and the honest controls on a GPU.
kforge_test(anticheat_dynamic_tests SOURCES anticheat/dynamic_checks_test.cpp LIBS kforge_anticheat)
kforge_test(anticheat_audit_gpu_tests GPU SOURCES anticheat/audit_gpu_test.cpp LIBS kforge_evaluator kforge_eval)
add_dependencies(anticheat_audit_gpu_tests kforge-worker kforge-compile-worker)
