# The reward rules and configs/reward.yaml (synthetic measurements; no GPU).
kforge_test(reward_rules_tests SOURCES reward/episode_reward_test.cpp reward/reward_config_test.cpp LIBS kforge_reward)
