#include "data_synth/task/safetensors.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>

#include <nlohmann/json.hpp>

#include "configs/error.h"
#include "configs/file_reader.h"

namespace kforge {

namespace {

const char* st_dtype(DType t) {
  switch (t) {
    case DType::float32:
      return "F32";
    case DType::float16:
      return "F16";
    case DType::bfloat16:
      return "BF16";
    case DType::int32:
      return "I32";
    case DType::int64:
      return "I64";
    case DType::boolean:
      return "BOOL";
  }
  return "?";
}

DType from_st_dtype(const std::string& s, const std::string& path) {
  for (DType t : {DType::float32, DType::float16, DType::bfloat16, DType::int32, DType::int64, DType::boolean})
    if (s == st_dtype(t)) return t;
  KFORGE_FAIL(spec, path << ": unsupported safetensors dtype '" << s << "'");
}

}  // namespace

void write_safetensors(const std::string& path, const std::vector<NamedBuffer>& tensors,
                       const std::vector<std::pair<std::string, std::string>>& metadata) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) {
    nlohmann::ordered_json meta = nlohmann::ordered_json::object();
    for (const auto& [k, v] : metadata) meta[k] = v;
    header["__metadata__"] = meta;
  }
  uint64_t offset = 0;
  for (const auto& t : tensors) {
    uint64_t expected = static_cast<uint64_t>(numel(t.meta.shape)) * dtype_size(t.meta.dtype);
    KFORGE_CHECK(t.bytes.size() == expected, internal,
                 "tensor '" << t.name << "' holds " << t.bytes.size() << " bytes, its shape needs " << expected);
    header[t.name] = {{"dtype", st_dtype(t.meta.dtype)}, {"shape", t.meta.shape}, {"data_offsets", {offset, offset + expected}}};
    offset += expected;
  }
  std::string h = header.dump();
  h.append((8 - h.size() % 8) % 8, ' ');  // keep the data 8-byte aligned
  std::ofstream out(path, std::ios::binary);
  if (!out) KFORGE_FAIL(io, path << ": cannot write (" << std::strerror(errno) << ")");
  uint64_t len = h.size();
  uint8_t le[8];
  for (int i = 0; i < 8; ++i) le[i] = static_cast<uint8_t>(len >> (8 * i));
  out.write(reinterpret_cast<const char*>(le), 8);
  out.write(h.data(), static_cast<std::streamsize>(h.size()));
  for (const auto& t : tensors) out.write(reinterpret_cast<const char*>(t.bytes.data()), static_cast<std::streamsize>(t.bytes.size()));
  if (!out) KFORGE_FAIL(io, path << ": write failed");
}

std::vector<NamedBuffer> read_safetensors(const std::string& path) {
  const std::string all = read_file(path, "the safetensors file");
  KFORGE_CHECK(all.size() >= 8, spec, path << ": too short for a safetensors file");
  uint64_t len = 0;
  for (int i = 0; i < 8; ++i) len |= static_cast<uint64_t>(static_cast<uint8_t>(all[i])) << (8 * i);
  KFORGE_CHECK(len <= all.size() - 8, spec, path << ": header length " << len << " exceeds the file");
  nlohmann::ordered_json header;
  try {
    header = nlohmann::ordered_json::parse(all.begin() + 8, all.begin() + 8 + static_cast<int64_t>(len));
  } catch (const nlohmann::json::exception& e) {
    KFORGE_FAIL(spec, path << ": header is not JSON: " << e.what());
  }
  size_t base = 8 + len;
  std::vector<NamedBuffer> out;
  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() == "__metadata__") continue;
    NamedBuffer b;
    b.name = it.key();
    try {
      b.meta.dtype = from_st_dtype(it.value().at("dtype").get<std::string>(), path);
      b.meta.shape = it.value().at("shape").get<std::vector<int64_t>>();
      auto off = it.value().at("data_offsets").get<std::vector<uint64_t>>();
      KFORGE_CHECK(off.size() == 2 && off[0] <= off[1] && base + off[1] <= all.size(), spec,
                   path << ": tensor '" << b.name << "' has bad data offsets");
      KFORGE_CHECK(off[1] - off[0] == static_cast<uint64_t>(numel(b.meta.shape)) * dtype_size(b.meta.dtype), spec,
                   path << ": tensor '" << b.name << "' size does not match its shape");
      b.bytes.assign(all.begin() + static_cast<int64_t>(base + off[0]), all.begin() + static_cast<int64_t>(base + off[1]));
    } catch (const nlohmann::json::exception& e) {
      KFORGE_FAIL(spec, path << ": tensor '" << b.name << "': " << e.what());
    }
    out.push_back(std::move(b));
  }
  return out;
}

}  // namespace kforge
