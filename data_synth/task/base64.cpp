#include "data_synth/task/base64.h"

#include <cstdint>

#include "configs/error.h"

namespace kforge {

namespace {
const char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

int value_of(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}
}  // namespace

std::string base64_encode(const std::string& bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    uint32_t v = (uint8_t(bytes[i]) << 16) | (uint8_t(bytes[i + 1]) << 8) | uint8_t(bytes[i + 2]);
    for (int s = 18; s >= 0; s -= 6) out.push_back(kAlphabet[(v >> s) & 63]);
  }
  const size_t rest = bytes.size() - i;
  if (rest > 0) {
    uint32_t v = uint8_t(bytes[i]) << 16;
    if (rest == 2) v |= uint8_t(bytes[i + 1]) << 8;
    out.push_back(kAlphabet[(v >> 18) & 63]);
    out.push_back(kAlphabet[(v >> 12) & 63]);
    out.push_back(rest == 2 ? kAlphabet[(v >> 6) & 63] : '=');
    out.push_back('=');
  }
  return out;
}

std::string base64_decode(const std::string& text) {
  std::string out;
  out.reserve(text.size() / 4 * 3);
  uint32_t acc = 0;
  int n = 0, pad = 0;
  size_t symbols = 0;
  for (char c : text) {
    if (c == ' ' || c == '\n' || c == '\r' || c == '\t') continue;
    ++symbols;
    if (c == '=') {
      ++pad;
      continue;
    }
    int v = value_of(c);
    KFORGE_CHECK(v >= 0, spec, "base64: character '" << c << "' is not in the alphabet");
    KFORGE_CHECK(pad == 0, spec, "base64: data after the '=' padding");
    acc = (acc << 6) | static_cast<uint32_t>(v);
    if (++n == 4) {
      out.push_back(static_cast<char>((acc >> 16) & 255));
      out.push_back(static_cast<char>((acc >> 8) & 255));
      out.push_back(static_cast<char>(acc & 255));
      acc = 0;
      n = 0;
    }
  }
  KFORGE_CHECK(symbols % 4 == 0 && pad <= 2 && (n + pad) % 4 == 0, spec,
               "base64: " << symbols << " symbols is not a whole number of 4-symbol groups");
  if (n == 2) out.push_back(static_cast<char>((acc >> 4) & 255));
  if (n == 3) {
    out.push_back(static_cast<char>((acc >> 10) & 255));
    out.push_back(static_cast<char>((acc >> 2) & 255));
  }
  return out;
}

}  // namespace kforge
