# The reward rules (tiers, failures, the torch.compile baseline, shaping) and their typed config
# (configs/reward.yaml). Torch-free; the evidence is JSON.
target_sources(kforge_reward PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/reward_config.cpp ${CMAKE_CURRENT_SOURCE_DIR}/episode_reward.cpp)
target_link_libraries(kforge_reward PUBLIC nlohmann_json::nlohmann_json)
