#pragma once
// Reading and writing the safetensors format (an 8-byte little-endian header length, a JSON
// header of {name: {dtype, shape, data_offsets}}, then the raw bytes). Used to hand arguments and
// outputs between the C++ reference and Python (torch, safetensors or numpy read it).
#include <cstdint>
#include <string>
#include <vector>

#include "data_synth/task/op_registry.h"

namespace kforge {

struct NamedBuffer {
  std::string name;
  TensorMeta meta;
  std::vector<uint8_t> bytes;
};

// Throws an io error when the file cannot be written.
void write_safetensors(const std::string& path, const std::vector<NamedBuffer>& tensors,
                       const std::vector<std::pair<std::string, std::string>>& metadata = {});
// Throws an io error for a missing file and a spec error for a malformed one; order as in the file.
std::vector<NamedBuffer> read_safetensors(const std::string& path);

}  // namespace kforge
