#pragma once
// Base64 (RFC 4648, standard alphabet, with padding): how an imported task's TorchScript artifact
// sits in its YAML file.
#include <string>

namespace kforge {

std::string base64_encode(const std::string& bytes);
// Skips whitespace (the line breaks of a YAML block); any other character outside the alphabet,
// misplaced padding or a length that is not a whole number of quads is a spec error.
std::string base64_decode(const std::string& text);

}  // namespace kforge
