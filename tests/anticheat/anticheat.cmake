# Static anti-cheat checks (no GPU): each rule in several spellings, the exploit corpus under
# tests/anticheat/exploits/, every shipped candidate, and configs/anticheat.yaml.
kforge_test(anticheat_tests SOURCES anticheat/static_checks_test.cpp LIBS kforge_anticheat)
