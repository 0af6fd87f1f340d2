#pragma once
// The rollout protocol: what a trainer sends to the server's ZeroMQ ROUTER socket and what comes
// back (rollout/PROTOCOL.md is the reference a client author reads). Decoding is total: whatever
// frames a peer sends yield either a typed Request or a ProtocolError to reply with, never an
// exception and never a reason to drop the peer.
//
// Payloads are msgpack maps, decoded with nlohmann::json (the value type the worker protocol and
// the environment already use) through configs/bounded_json.h, which bounds nesting, rejects duplicate keys,
// bin/ext values and invalid UTF-8 while parsing, so a hostile payload costs at most its own size.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>
#include <zmq.hpp>

namespace kforge {

class YamlNode;

using Json = nlohmann::json;

// The protocol's major version. A request's "v" above it is refused with unsupported_version.
constexpr int64_t kProtocolVersion = 1;
// Names (task, episode, split, source, operator) longer than this are refused as bad_params.
constexpr size_t kMaxNameBytes = 256;
// Hard ceiling on ProtocolLimits::max_depth whatever the config says: the msgpack parser recurses
// once per level, so this bounds its stack use.
constexpr int kMaxDepthCeiling = 128;
// Nesting accepted in a trajectory on the stream (`kforge record`): a request's action at most
// kMaxDepthCeiling deep, under the trajectory's own few levels (trajectory, turns, turn, info).
constexpr int kMaxTrajectoryDepth = kMaxDepthCeiling + 32;

// Limits on what one request may carry; read from the server config's `protocol:` section.
struct ProtocolLimits {
  int64_t max_payload_bytes = int64_t{16} << 20;  // the msgpack payload frame; larger: payload_too_large
  int max_request_id_bytes = 64;                  // request ids are opaque bytes, 1 to this many
  int max_depth = 32;                             // msgpack nesting; the payload map itself is depth 1

  static ProtocolLimits from_yaml(const YamlNode& node);
};

// Wire names in PROTOCOL.md; the server appends its own kinds (unknown_episode, ...) here.
enum class ProtocolErrorKind {
  malformed_frames,     // wrong frame count, empty or too long request id, empty method frame
  payload_too_large,    // payload frame over max_payload_bytes
  bad_msgpack,          // not one complete msgpack value, too deep, bin/ext, non-string or duplicate key, bad UTF-8
  payload_not_map,      // valid msgpack, but not a map
  unsupported_version,  // "v" is not a version this server speaks
  unknown_method,       // the method frame names no method
  bad_params,           // unknown, missing or mistyped field, or a value out of range
  internal,             // a server bug; the request was not acted on
  // The server's own kinds (rollout/server.h):
  unknown_task,     // reset names no task the server serves
  unknown_episode,  // no open episode has this id (never opened, closed, or reaped when idle)
  episode_over,     // step on an episode that already ended (close it, reset another)
  episode_busy,     // step while the episode's previous step is still queued or running
  busy,             // the server is at capacity (episodes or a queue); retry after `retry_after` s
  cancelled,        // a queued step abandoned by cancel, close or shutdown
  shutting_down,    // the server stopped accepting work (SIGTERM)
  record_failed,    // the episode ended but its trajectory is not on disk yet (kept in memory, retried)
};

const char* protocol_error_kind_name(ProtocolErrorKind kind);

struct ProtocolError {
  ProtocolErrorKind kind = ProtocolErrorKind::internal;
  std::string message;
  std::string field;                  // the offending parameter for bad_params/unsupported_version; "" otherwise
  std::optional<double> retry_after;  // seconds, for busy (backpressure): when a retry is likely to succeed
};

// Who a reply goes to: the ROUTER's identity frame, whether the client put an empty delimiter
// before the request id (REQ sockets do, DEALER sockets need not), and the request id to echo.
struct Envelope {
  std::string identity;
  bool delimiter = false;
  std::string request_id;  // "" when the request could not be attributed (missing or too long)

  // Only an empty identity (never produced by a ROUTER socket) cannot be answered.
  bool answerable() const { return !identity.empty(); }
};

enum class Method { health, tools, tasks, reset, step, close, cancel };

const char* method_name(Method method);
std::optional<Method> method_from_name(std::string_view name);
const std::vector<std::string>& method_names();

// Parameters per method. Optional fields sent as nil count as absent.
struct HealthParams {};
struct ToolsParams {};
struct TasksParams {
  std::optional<std::string> split;
  std::optional<std::string> source;
  std::vector<std::string> ops;  // tasks using every one of these operators; empty: any
  std::optional<int64_t> limit;  // >= 1
  int64_t offset = 0;            // >= 0
};
struct ResetParams {
  std::string task;
  std::optional<uint64_t> seed;
  Json options = Json::object();  // a map; its keys are the environment's to judge
};
struct StepParams {
  std::string episode;
  Json action;  // a tool-call map, or Hermes <tool_call> text
};
struct CloseParams {
  std::string episode;
};
struct CancelParams {
  std::string episode;
};

using Params = std::variant<HealthParams, ToolsParams, TasksParams, ResetParams, StepParams, CloseParams, CancelParams>;

struct Request {
  Method method = Method::health;
  int64_t version = kProtocolVersion;  // the "v" the client sent, or kProtocolVersion
  Params params;
};

struct DecodeResult {
  Envelope envelope;  // filled as far as the frames allow, so that errors can be answered too
  std::variant<Request, ProtocolError> outcome;

  bool ok() const { return std::holds_alternative<Request>(outcome); }
  const Request& request() const { return std::get<Request>(outcome); }
  const ProtocolError& error() const { return std::get<ProtocolError>(outcome); }
};

// Frames as a ROUTER socket receives them: [identity, (""), request id, method, payload].
DecodeResult decode_request(const std::vector<std::string_view>& frames, const ProtocolLimits& limits);
DecodeResult decode_request(const std::vector<zmq::message_t>& frames, const ProtocolLimits& limits);

// The canonical payload of a request's parameters (absent optionals left out, "v" included), so
// that decode(encode(params_to_json(p))) == p; also what a trajectory record stores.
Json params_to_json(const Request& request);

// The error payload: {"kind", "message"} plus "field" when known and "supported" (the versions
// this server speaks) for unsupported_version.
Json error_payload(const ProtocolError& error);

// Reply frames for the ROUTER socket: [identity, ("" when the request had one), request id,
// "ok" | "error", msgpack payload]. encode_reply throws an internal error when data is not a map.
std::vector<zmq::message_t> encode_reply(const Envelope& to, const Json& data);
std::vector<zmq::message_t> encode_error(const Envelope& to, const ProtocolError& error);

}  // namespace kforge
