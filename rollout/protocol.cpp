#include "rollout/protocol.h"

#include <algorithm>
#include <limits>
#include <set>
#include <sstream>

#include "configs/bounded_json.h"
#include "configs/error.h"
#include "configs/yaml_reader.h"

namespace kforge {

namespace {

using Kind = ProtocolErrorKind;

std::string shown(std::string_view s, size_t max_bytes = 64) { return quoted_bytes(s, max_bytes); }

// The first max_bytes of valid UTF-8, cut at a character boundary (replies must stay valid UTF-8).
std::string utf8_prefix(std::string_view s, size_t max_bytes) {
  if (s.size() <= max_bytes) return std::string(s);
  size_t n = max_bytes;
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xc0) == 0x80) --n;
  return std::string(s.substr(0, n));
}

const char* type_name(const Json& j) {
  switch (j.type()) {
    case Json::value_t::null:
      return "nil";
    case Json::value_t::boolean:
      return "a boolean";
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned:
      return "an integer";
    case Json::value_t::number_float:
      return "a float";
    case Json::value_t::string:
      return "a string";
    case Json::value_t::array:
      return "an array";
    case Json::value_t::object:
      return "a map";
    case Json::value_t::binary:
      return "binary";
    case Json::value_t::discarded:
      break;
  }
  return "an unknown value";
}

// A refused field inside the decoder; decode_request turns it into a ProtocolError.
struct FieldError {
  Kind kind;
  std::string field;
  std::string message;
};

[[noreturn]] void refuse(const std::string& field, const std::string& message, Kind kind = Kind::bad_params) {
  throw FieldError{kind, field, message};
}

// One method's parameters: unknown fields are refused up front, then each field is read once.
class Fields {
 public:
  Fields(const Json& map, Method method, std::vector<std::string> allowed) : map_(map), method_(method) {
    allowed.push_back("v");
    for (const auto& [key, value] : map.items()) {
      if (std::find(allowed.begin(), allowed.end(), key) != allowed.end()) continue;
      std::ostringstream os;
      os << "unknown field " << shown(key) << " for " << method_name(method);
      std::string near = key.size() <= 64 ? closest_match(key, allowed) : "";
      if (!near.empty()) os << " (did you mean '" << near << "'?)";
      os << "; its fields are";
      for (size_t i = 0; i < allowed.size(); ++i) os << (i ? ", " : " ") << allowed[i];
      refuse(utf8_prefix(key, 64), os.str());
    }
  }

  // nil is absent: clients pass Python's None for "not given".
  const Json* find(const std::string& key) const {
    auto it = map_.find(key);
    return it == map_.end() || it->is_null() ? nullptr : &*it;
  }
  const Json& need(const std::string& key) const {
    const Json* v = find(key);
    if (!v) refuse(key, std::string(method_name(method_)) + " needs the field '" + key + "'");
    return *v;
  }

  std::string name(const std::string& key, const Json& v) const {
    if (!v.is_string()) refuse(key, "'" + key + "' must be a string, got " + type_name(v));
    const auto& s = v.get_ref<const std::string&>();
    if (s.empty()) refuse(key, "'" + key + "' must not be empty");
    if (s.size() > kMaxNameBytes) {
      refuse(key, "'" + key + "' is " + std::to_string(s.size()) + " bytes; at most " + std::to_string(kMaxNameBytes) + " are accepted");
    }
    return s;
  }
  std::string name(const std::string& key) const { return name(key, need(key)); }
  std::optional<std::string> opt_name(const std::string& key) const {
    const Json* v = find(key);
    return v ? std::optional<std::string>(name(key, *v)) : std::nullopt;
  }

  // Integers only: a float or a bool is not an integer, even 3.0 or true.
  std::optional<int64_t> opt_int(const std::string& key, int64_t min) const {
    const Json* v = find(key);
    if (!v) return std::nullopt;
    if (!v->is_number_integer()) refuse(key, "'" + key + "' must be an integer, got " + type_name(*v));
    if (v->is_number_unsigned() && v->get<uint64_t>() > uint64_t(std::numeric_limits<int64_t>::max())) {
      refuse(key, "'" + key + "' is out of range");
    }
    int64_t n = v->get<int64_t>();
    if (n < min) refuse(key, "'" + key + "' must be >= " + std::to_string(min) + ", got " + std::to_string(n));
    return n;
  }
  std::optional<uint64_t> opt_uint64(const std::string& key) const {
    const Json* v = find(key);
    if (!v) return std::nullopt;
    if (!v->is_number_integer()) refuse(key, "'" + key + "' must be an integer, got " + type_name(*v));
    if (!v->is_number_unsigned() && v->get<int64_t>() < 0) {
      refuse(key, "'" + key + "' must be >= 0, got " + std::to_string(v->get<int64_t>()));
    }
    return v->get<uint64_t>();
  }

 private:
  const Json& map_;
  Method method_;
};

Params read_params(Method method, const Json& payload) {
  switch (method) {
    case Method::health:
      Fields{payload, method, {}};
      return HealthParams{};
    case Method::tools:
      Fields{payload, method, {}};
      return ToolsParams{};
    case Method::tasks: {
      Fields f(payload, method, {"split", "source", "ops", "limit", "offset"});
      TasksParams p;
      p.split = f.opt_name("split");
      p.source = f.opt_name("source");
      if (const Json* ops = f.find("ops")) {
        if (!ops->is_array()) refuse("ops", "'ops' must be an array of operator names, got " + std::string(type_name(*ops)));
        for (const Json& op : *ops) p.ops.push_back(f.name("ops", op));
      }
      p.limit = f.opt_int("limit", 1);
      p.offset = f.opt_int("offset", 0).value_or(0);
      return p;
    }
    case Method::reset: {
      Fields f(payload, method, {"task", "seed", "options"});
      ResetParams p;
      p.task = f.name("task");
      p.seed = f.opt_uint64("seed");
      if (const Json* options = f.find("options")) {
        if (!options->is_object()) refuse("options", "'options' must be a map, got " + std::string(type_name(*options)));
        p.options = *options;
      }
      return p;
    }
    case Method::step: {
      Fields f(payload, method, {"episode", "action"});
      StepParams p;
      p.episode = f.name("episode");
      const Json& action = f.need("action");
      if (!action.is_object() && !action.is_string()) {
        refuse("action", "'action' must be a tool-call map or <tool_call> text, got " + std::string(type_name(action)));
      }
      p.action = action;
      return p;
    }
    case Method::close: {
      Fields f(payload, method, {"episode"});
      return CloseParams{f.name("episode")};
    }
    case Method::cancel: {
      Fields f(payload, method, {"episode"});
      return CancelParams{f.name("episode")};
    }
  }
  refuse("", "method has no parameter schema", Kind::internal);
}

int64_t read_version(const Json& payload) {
  auto it = payload.find("v");
  if (it == payload.end() || it->is_null()) return kProtocolVersion;
  if (!it->is_number_integer()) refuse("v", "'v' must be an integer protocol version, got " + std::string(type_name(*it)));
  if (it->is_number_unsigned() && it->get<uint64_t>() > uint64_t(std::numeric_limits<int64_t>::max())) {
    refuse("v",
           "protocol version " + std::to_string(it->get<uint64_t>()) + " is not supported; this server speaks " +
               std::to_string(kProtocolVersion),
           Kind::unsupported_version);
  }
  int64_t v = it->get<int64_t>();
  if (v != kProtocolVersion) {
    refuse("v",
           "protocol version " + std::to_string(v) + (v > kProtocolVersion ? " is newer than this server's" : " does not exist") +
               "; this server speaks " + std::to_string(kProtocolVersion),
           Kind::unsupported_version);
  }
  return v;
}

std::vector<zmq::message_t> reply_frames(const Envelope& to, const char* status, const Json& payload) {
  std::vector<zmq::message_t> frames;
  frames.emplace_back(to.identity.data(), to.identity.size());
  if (to.delimiter) frames.emplace_back();
  frames.emplace_back(to.request_id.data(), to.request_id.size());
  frames.emplace_back(status, std::char_traits<char>::length(status));
  std::vector<uint8_t> bytes = Json::to_msgpack(payload);
  frames.emplace_back(bytes.data(), bytes.size());
  return frames;
}

}  // namespace

const char* protocol_error_kind_name(ProtocolErrorKind kind) {
  switch (kind) {
    case Kind::malformed_frames:
      return "malformed_frames";
    case Kind::payload_too_large:
      return "payload_too_large";
    case Kind::bad_msgpack:
      return "bad_msgpack";
    case Kind::payload_not_map:
      return "payload_not_map";
    case Kind::unsupported_version:
      return "unsupported_version";
    case Kind::unknown_method:
      return "unknown_method";
    case Kind::bad_params:
      return "bad_params";
    case Kind::internal:
      return "internal";
    case Kind::unknown_task:
      return "unknown_task";
    case Kind::unknown_episode:
      return "unknown_episode";
    case Kind::episode_over:
      return "episode_over";
    case Kind::episode_busy:
      return "episode_busy";
    case Kind::busy:
      return "busy";
    case Kind::cancelled:
      return "cancelled";
    case Kind::shutting_down:
      return "shutting_down";
    case Kind::record_failed:
      return "record_failed";
  }
  return "internal";
}

const char* method_name(Method method) {
  switch (method) {
    case Method::health:
      return "health";
    case Method::tools:
      return "tools";
    case Method::tasks:
      return "tasks";
    case Method::reset:
      return "reset";
    case Method::step:
      return "step";
    case Method::close:
      return "close";
    case Method::cancel:
      return "cancel";
  }
  return "?";
}

const std::vector<std::string>& method_names() {
  static const std::vector<std::string> names = {"health", "tools", "tasks", "reset", "step", "close", "cancel"};
  return names;
}

std::optional<Method> method_from_name(std::string_view name) {
  for (Method m : {Method::health, Method::tools, Method::tasks, Method::reset, Method::step, Method::close, Method::cancel}) {
    if (name == method_name(m)) return m;
  }
  return std::nullopt;
}

ProtocolLimits ProtocolLimits::from_yaml(const YamlNode& node) {
  ProtocolLimits l;
  if (node.is_null()) return l;
  l.max_payload_bytes = node.get<int64_t>("max_payload_bytes", l.max_payload_bytes);
  l.max_request_id_bytes = node.get<int>("max_request_id_bytes", l.max_request_id_bytes);
  l.max_depth = node.get<int>("max_depth", l.max_depth);
  if (l.max_payload_bytes < 1024 || l.max_payload_bytes > (int64_t{1} << 30)) {
    node.at("max_payload_bytes").fail("must be in [1024, 1073741824] (1 KiB to 1 GiB)");
  }
  if (l.max_request_id_bytes < 1 || l.max_request_id_bytes > 255) {
    node.at("max_request_id_bytes").fail("must be in [1, 255]");
  }
  // A step's action map with an arguments map inside is depth 3; the ceiling bounds the parser's stack.
  if (l.max_depth < 4 || l.max_depth > kMaxDepthCeiling) {
    node.at("max_depth").fail("must be in [4, " + std::to_string(kMaxDepthCeiling) + "]");
  }
  node.check_no_unknown_keys();
  return l;
}

DecodeResult decode_request(const std::vector<std::string_view>& frames, const ProtocolLimits& limits) {
  DecodeResult r;
  auto fail = [&r](Kind kind, std::string message, std::string field = "") {
    r.outcome = ProtocolError{kind, std::move(message), std::move(field)};
    return r;
  };
  if (frames.empty()) return fail(Kind::malformed_frames, "no frames (not even the identity)");
  r.envelope.identity = std::string(frames[0]);

  // Request ids are never empty, so an empty frame right after the identity is a REQ socket's
  // delimiter; it is echoed so that a REQ client accepts the reply.
  size_t body = 1;
  if (frames.size() >= 2 && frames[1].empty()) {
    r.envelope.delimiter = true;
    body = 2;
  }
  const size_t n = frames.size() - body;
  const auto max_id = static_cast<size_t>(std::max(1, limits.max_request_id_bytes));
  // Echo whatever plausible request id there is, so that even a malformed request can be matched.
  if (n >= 1 && !frames[body].empty() && frames[body].size() <= max_id) r.envelope.request_id = std::string(frames[body]);

  if (n != 3) {
    std::string hint =
        r.envelope.delimiter && n < 3 ? " (request ids must not be empty: an empty frame after the identity is a delimiter)" : "";
    return fail(Kind::malformed_frames,
                "expected 3 frames after the envelope (request id, method, payload), got " + std::to_string(n) + hint);
  }
  const std::string_view request_id = frames[body], method = frames[body + 1], payload = frames[body + 2];
  if (request_id.empty()) return fail(Kind::malformed_frames, "the request id frame is empty");
  if (request_id.size() > max_id) {
    return fail(Kind::malformed_frames,
                "request id of " + std::to_string(request_id.size()) + " bytes exceeds the limit of " + std::to_string(max_id));
  }
  if (method.empty()) return fail(Kind::malformed_frames, "the method frame is empty");
  if (static_cast<int64_t>(payload.size()) > limits.max_payload_bytes) {
    return fail(Kind::payload_too_large,
                "payload of " + std::to_string(payload.size()) + " bytes exceeds the limit of " + std::to_string(limits.max_payload_bytes));
  }

  try {
    if (payload.empty()) return fail(Kind::bad_msgpack, "the payload frame is empty; send a map (an empty one is 0x80)");
    JsonLimits bounds;
    bounds.max_depth = std::clamp(limits.max_depth, 1, kMaxDepthCeiling);
    bounds.max_bytes = payload.size();  // the frame's size was checked above
    BoundedJson decoded = parse_msgpack_bounded(payload, bounds);
    if (!decoded.ok()) return fail(Kind::bad_msgpack, "payload is not accepted msgpack: " + decoded.error);
    Json doc = std::move(decoded.value);
    if (!doc.is_object()) return fail(Kind::payload_not_map, std::string("payload must be a map, got ") + type_name(doc));

    // The version comes before the method and fields: a newer client is told so, not that its
    // new method or field is unknown.
    Request req;
    req.version = read_version(doc);
    auto m = method_from_name(method);
    if (!m) {
      std::string message = "unknown method " + shown(method, 32);
      std::string near = closest_match(std::string(method.substr(0, 32)), method_names());
      if (!near.empty()) message += " (did you mean '" + near + "'?)";
      message += "; methods are health, tools, tasks, reset, step, close, cancel";
      return fail(Kind::unknown_method, message);
    }
    req.method = *m;
    req.params = read_params(*m, doc);
    r.outcome = std::move(req);
    return r;
  } catch (const FieldError& e) {
    return fail(e.kind, e.message, e.field);
  } catch (const std::exception& e) {
    return fail(Kind::internal, std::string("decoding failed: ") + e.what());
  }
}

DecodeResult decode_request(const std::vector<zmq::message_t>& frames, const ProtocolLimits& limits) {
  std::vector<std::string_view> views;
  views.reserve(frames.size());
  for (const auto& f : frames) views.emplace_back(static_cast<const char*>(f.data()), f.size());
  return decode_request(views, limits);
}

Json params_to_json(const Request& request) {
  Json j = Json::object();
  j["v"] = request.version;
  std::visit(
      [&j](const auto& p) {
        using P = std::decay_t<decltype(p)>;
        if constexpr (std::is_same_v<P, TasksParams>) {
          if (p.split) j["split"] = *p.split;
          if (p.source) j["source"] = *p.source;
          if (!p.ops.empty()) j["ops"] = p.ops;
          if (p.limit) j["limit"] = *p.limit;
          if (p.offset != 0) j["offset"] = p.offset;
        } else if constexpr (std::is_same_v<P, ResetParams>) {
          j["task"] = p.task;
          if (p.seed) j["seed"] = *p.seed;
          if (!p.options.empty()) j["options"] = p.options;
        } else if constexpr (std::is_same_v<P, StepParams>) {
          j["episode"] = p.episode;
          j["action"] = p.action;
        } else if constexpr (std::is_same_v<P, CloseParams> || std::is_same_v<P, CancelParams>) {
          j["episode"] = p.episode;
        }
      },
      request.params);
  return j;
}

Json error_payload(const ProtocolError& error) {
  Json j = {{"kind", protocol_error_kind_name(error.kind)}, {"message", error.message}};
  if (!error.field.empty()) j["field"] = error.field;
  if (error.kind == Kind::unsupported_version) j["supported"] = Json::array({kProtocolVersion});
  if (error.retry_after) j["retry_after"] = *error.retry_after;
  return j;
}

std::vector<zmq::message_t> encode_reply(const Envelope& to, const Json& data) {
  KFORGE_CHECK(data.is_object(), internal, "a reply payload must be a map, got " << type_name(data));
  return reply_frames(to, "ok", data);
}

std::vector<zmq::message_t> encode_error(const Envelope& to, const ProtocolError& error) {
  return reply_frames(to, "error", error_payload(error));
}

}  // namespace kforge
