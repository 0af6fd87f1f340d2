#pragma once
// What the rollout protocol's tests share (protocol_test.cpp, protocol_hostile_test.cpp): payload
// and frame builders over the real decoder, and an assertion on the error kind a request earns.
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>
#include <zmq.hpp>

#include "rollout/protocol.h"

namespace kforge::protocol_test {

using Kind = ProtocolErrorKind;

inline std::string pack(const Json& j) {
  std::vector<uint8_t> b = Json::to_msgpack(j);
  return std::string(b.begin(), b.end());
}

inline std::string bytes(std::initializer_list<int> list) {
  std::string s;
  for (int b : list) s += static_cast<char>(b);
  return s;
}

inline DecodeResult decode(const std::vector<std::string>& frames, const ProtocolLimits& limits = {}) {
  std::vector<std::string_view> views(frames.begin(), frames.end());
  return decode_request(views, limits);
}

// A DEALER-style request: [identity, request id, method, payload].
inline DecodeResult call(const std::string& method, const std::string& payload, const ProtocolLimits& limits = {}) {
  return decode({"ID", "r1", method, payload}, limits);
}
inline DecodeResult call(const std::string& method, const Json& payload, const ProtocolLimits& limits = {}) {
  return call(method, pack(payload), limits);
}

// The error kind, or a failure naming what came back instead.
inline ::testing::AssertionResult refused(const DecodeResult& r, Kind kind) {
  if (r.ok()) return ::testing::AssertionFailure() << "decoded fine, expected " << protocol_error_kind_name(kind);
  if (r.error().kind != kind) {
    return ::testing::AssertionFailure() << "got " << protocol_error_kind_name(r.error().kind) << " (" << r.error().message
                                         << "), expected " << protocol_error_kind_name(kind);
  }
  if (r.error().message.empty()) return ::testing::AssertionFailure() << "empty message";
  return ::testing::AssertionSuccess();
}

inline std::string nested_arrays(int depth) {  // [[[...]]] inside the payload map's "options"
  Json inner = Json::array();
  for (int i = 1; i < depth; ++i) inner = Json::array({inner});
  return pack({{"task", "t"}, {"options", {{"x", inner}}}});
}

inline std::string frame_string(const zmq::message_t& m) { return std::string(static_cast<const char*>(m.data()), m.size()); }

}  // namespace kforge::protocol_test
