#pragma once
#include <string>

namespace kforge {

// SHA-256 of `data`, as 64 lowercase hex digits.
std::string sha256_hex(const std::string& data);

}  // namespace kforge
