// The rollout protocol: decoding every frame shape and payload a peer can send, strict parameter
// schemas, reply encoding, the limits' config section, a corpus of hostile payloads, and a real
// ROUTER/DEALER (and REQ) loopback over TCP that must answer every bad request and keep serving.
#include "rollout/protocol.h"

#include <atomic>
#include <chrono>
#include <future>
#include <iterator>
#include <map>
#include <thread>

#include <gtest/gtest.h>
#include <zmq_addon.hpp>

#include "configs/error.h"
#include "configs/yaml_reader.h"

using namespace kforge;

namespace {

using Kind = ProtocolErrorKind;

std::string pack(const Json& j) {
  std::vector<uint8_t> b = Json::to_msgpack(j);
  return std::string(b.begin(), b.end());
}

std::string bytes(std::initializer_list<int> list) {
  std::string s;
  for (int b : list) s += static_cast<char>(b);
  return s;
}

DecodeResult decode(const std::vector<std::string>& frames, const ProtocolLimits& limits = {}) {
  std::vector<std::string_view> views(frames.begin(), frames.end());
  return decode_request(views, limits);
}

// A DEALER-style request: [identity, request id, method, payload].
DecodeResult call(const std::string& method, const std::string& payload, const ProtocolLimits& limits = {}) {
  return decode({"ID", "r1", method, payload}, limits);
}
DecodeResult call(const std::string& method, const Json& payload, const ProtocolLimits& limits = {}) {
  return call(method, pack(payload), limits);
}

// The error kind, or a failure naming what came back instead.
::testing::AssertionResult refused(const DecodeResult& r, Kind kind) {
  if (r.ok()) return ::testing::AssertionFailure() << "decoded fine, expected " << protocol_error_kind_name(kind);
  if (r.error().kind != kind) {
    return ::testing::AssertionFailure() << "got " << protocol_error_kind_name(r.error().kind) << " ("
                                         << r.error().message << "), expected " << protocol_error_kind_name(kind);
  }
  if (r.error().message.empty()) return ::testing::AssertionFailure() << "empty message";
  return ::testing::AssertionSuccess();
}

std::string nested_arrays(int depth) {  // [[[...]]] inside the payload map's "options"
  Json inner = Json::array();
  for (int i = 1; i < depth; ++i) inner = Json::array({inner});
  return pack({{"task", "t"}, {"options", {{"x", inner}}}});
}

std::string frame_string(const zmq::message_t& m) { return std::string(static_cast<const char*>(m.data()), m.size()); }

}  // namespace

// ---- Frames -------------------------------------------------------------------------------------

TEST(RolloutFrames, DecodesDealerRequestWithoutDelimiter) {
  auto r = decode({"ID", "req-7", "health", pack(Json::object())});
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r.envelope.identity, "ID");
  EXPECT_FALSE(r.envelope.delimiter);
  EXPECT_EQ(r.envelope.request_id, "req-7");
  EXPECT_EQ(r.request().method, Method::health);
  EXPECT_EQ(r.request().version, 1);
}

TEST(RolloutFrames, DecodesReqRequestWithEmptyDelimiterAndRemembersIt) {
  auto r = decode({"ID", "", "req-7", "tools", pack(Json::object())});
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_TRUE(r.envelope.delimiter);
  EXPECT_EQ(r.envelope.request_id, "req-7");
  EXPECT_EQ(r.request().method, Method::tools);
}

TEST(RolloutFrames, RefusesWrongFrameCountButEchoesTheRequestId) {
  auto few = decode({"ID", "req-7", "health"});
  EXPECT_TRUE(refused(few, Kind::malformed_frames));
  EXPECT_EQ(few.envelope.request_id, "req-7");
  EXPECT_NE(few.error().message.find("got 2"), std::string::npos) << few.error().message;
  auto many = decode({"ID", "req-8", "health", pack(Json::object()), "extra"});
  EXPECT_TRUE(refused(many, Kind::malformed_frames));
  EXPECT_EQ(many.envelope.request_id, "req-8");
  EXPECT_TRUE(refused(decode({"ID"}), Kind::malformed_frames));
  auto none = decode({});
  EXPECT_TRUE(refused(none, Kind::malformed_frames));
  EXPECT_FALSE(none.envelope.answerable());
}

TEST(RolloutFrames, RefusesEmptyRequestIdExplainingTheDelimiterRule) {
  // A DEALER sending an empty request id looks like [identity, "", method, payload].
  auto r = decode({"ID", "", "health", pack(Json::object())});
  EXPECT_TRUE(refused(r, Kind::malformed_frames));
  EXPECT_NE(r.error().message.find("must not be empty"), std::string::npos) << r.error().message;
  EXPECT_TRUE(refused(decode({"ID", "", "", "health", pack(Json::object())}), Kind::malformed_frames));
}

TEST(RolloutFrames, RefusesRequestIdLongerThanTheLimitWithoutEchoingIt) {
  ProtocolLimits limits;
  limits.max_request_id_bytes = 8;
  auto at_limit = decode({"ID", std::string(8, 'x'), "health", pack(Json::object())}, limits);
  EXPECT_TRUE(at_limit.ok());
  auto over = decode({"ID", std::string(9, 'x'), "health", pack(Json::object())}, limits);
  EXPECT_TRUE(refused(over, Kind::malformed_frames));
  EXPECT_EQ(over.envelope.request_id, "");
  EXPECT_TRUE(over.envelope.answerable());
}

TEST(RolloutFrames, RefusesEmptyMethodFrame) {
  auto r = decode({"ID", "r1", "", pack(Json::object())});
  EXPECT_TRUE(refused(r, Kind::malformed_frames));
  EXPECT_EQ(r.envelope.request_id, "r1");
}

TEST(RolloutFrames, RefusesPayloadOverTheLimitBeforeLookingAtIt) {
  ProtocolLimits limits;
  limits.max_payload_bytes = 1024;
  // Garbage over the limit is payload_too_large, not bad_msgpack: the size is checked first.
  EXPECT_TRUE(refused(call("health", std::string(1025, '\xc1'), limits), Kind::payload_too_large));
  Json at_limit = {{"task", "t"}, {"options", {{"pad", ""}}}};
  // The pad's msgpack header grows with it (fixstr, str8, str16), so shrink it to fit exactly.
  std::string pad(1024, 'p');
  do {
    pad.pop_back();
    at_limit["options"]["pad"] = pad;
  } while (pack(at_limit).size() > 1024);
  ASSERT_EQ(pack(at_limit).size(), 1024u);
  EXPECT_TRUE(call("reset", at_limit, limits).ok());
}

// ---- msgpack ------------------------------------------------------------------------------------

TEST(RolloutMsgpack, RefusesEmptyTruncatedAndTrailingPayloads) {
  EXPECT_TRUE(refused(call("health", std::string()), Kind::bad_msgpack));
  std::string good = pack({{"task", "matmul"}, {"seed", 7}});
  for (size_t n = 1; n < good.size(); ++n) {
    EXPECT_TRUE(refused(call("reset", good.substr(0, n)), Kind::bad_msgpack)) << "prefix of " << n << " bytes";
  }
  EXPECT_TRUE(call("reset", good).ok());
  EXPECT_TRUE(refused(call("reset", good + '\x80'), Kind::bad_msgpack));
  EXPECT_TRUE(refused(call("health", bytes({0xc1})), Kind::bad_msgpack));  // never valid msgpack
}

TEST(RolloutMsgpack, RefusesNestingDeeperThanTheLimitAndAcceptsItsEdge) {
  ProtocolLimits limits;
  limits.max_depth = 8;
  // payload map (1) > options (2) > x's arrays (3..8)
  EXPECT_TRUE(call("reset", nested_arrays(6), limits).ok());
  auto r = call("reset", nested_arrays(7), limits);
  EXPECT_TRUE(refused(r, Kind::bad_msgpack));
  EXPECT_NE(r.error().message.find("deeper than 8"), std::string::npos) << r.error().message;
}

TEST(RolloutMsgpack, RefusesBinAndExtValues) {
  Json with_bin = {{"task", "t"}, {"options", {{"blob", Json::binary({1, 2, 3})}}}};
  EXPECT_TRUE(refused(call("reset", with_bin), Kind::bad_msgpack));
  // {"task": "t", "x": fixext1(type 1, 0x00)}
  std::string with_ext = bytes({0x82, 0xa4, 't', 'a', 's', 'k', 0xa1, 't', 0xa1, 'x', 0xd4, 0x01, 0x00});
  EXPECT_TRUE(refused(call("reset", with_ext), Kind::bad_msgpack));
}

TEST(RolloutMsgpack, RefusesNonStringMapKeys) {
  auto r = call("health", bytes({0x81, 0x01, 0x02}));  // {1: 2}
  EXPECT_TRUE(refused(r, Kind::bad_msgpack));
  EXPECT_NE(r.error().message.find("map keys must be strings"), std::string::npos) << r.error().message;
}

TEST(RolloutMsgpack, RefusesDuplicateKeys) {
  // {"task": "a", "task": "b"}: which one counts would be the decoder's choice.
  auto r = call("reset", bytes({0x82, 0xa4, 't', 'a', 's', 'k', 0xa1, 'a', 0xa4, 't', 'a', 's', 'k', 0xa1, 'b'}));
  EXPECT_TRUE(refused(r, Kind::bad_msgpack));
  EXPECT_NE(r.error().message.find("duplicate"), std::string::npos) << r.error().message;
}

TEST(RolloutMsgpack, RefusesInvalidUtf8InValuesAndKeys) {
  auto with_task = [](std::string raw) {
    return bytes({0x81, 0xa4, 't', 'a', 's', 'k', 0xa0 | static_cast<int>(raw.size())}) + raw;
  };
  EXPECT_TRUE(call("reset", with_task("caf\xc3\xa9")).ok());                                  // é
  EXPECT_TRUE(refused(call("reset", with_task("\xc3\x28")), Kind::bad_msgpack));               // bad continuation
  EXPECT_TRUE(refused(call("reset", with_task("\xc0\xaf")), Kind::bad_msgpack));               // overlong '/'
  EXPECT_TRUE(refused(call("reset", with_task("\xed\xa0\x80")), Kind::bad_msgpack));           // surrogate
  EXPECT_TRUE(refused(call("reset", with_task("\xf4\x90\x80\x80")), Kind::bad_msgpack));       // > U+10FFFF
  EXPECT_TRUE(refused(call("reset", with_task("ab\xe2\x82")), Kind::bad_msgpack));             // cut short
  EXPECT_TRUE(refused(call("health", bytes({0x81, 0xa1, 0xff, 0x01})), Kind::bad_msgpack));    // key
}

TEST(RolloutMsgpack, RefusesPayloadsThatAreNotMaps) {
  for (const Json& j : {Json::array({1, 2}), Json(3), Json("health"), Json(nullptr), Json(true), Json(1.5)}) {
    auto r = call("health", j);
    EXPECT_TRUE(refused(r, Kind::payload_not_map)) << j.dump();
  }
}

// ---- Versions and methods -----------------------------------------------------------------------

TEST(RolloutVersion, AcceptsAbsentNilOrCurrentVersion) {
  EXPECT_EQ(call("health", Json::object()).request().version, 1);
  EXPECT_EQ(call("health", Json{{"v", nullptr}}).request().version, 1);
  EXPECT_EQ(call("health", Json{{"v", 1}}).request().version, 1);
}

TEST(RolloutVersion, RefusesNewerVersionNamingTheSupportedOnes) {
  auto r = call("health", Json{{"v", 2}});
  ASSERT_TRUE(refused(r, Kind::unsupported_version));
  EXPECT_EQ(r.error().field, "v");
  EXPECT_NE(r.error().message.find("speaks 1"), std::string::npos) << r.error().message;
  Json payload = error_payload(r.error());
  EXPECT_EQ(payload["kind"], "unsupported_version");
  EXPECT_EQ(payload["supported"], Json::array({1}));
  EXPECT_TRUE(refused(call("health", Json{{"v", uint64_t(1) << 63}}), Kind::unsupported_version));
}

TEST(RolloutVersion, RefusesVersionsThatDoNotExist) {
  EXPECT_TRUE(refused(call("health", Json{{"v", 0}}), Kind::unsupported_version));
  EXPECT_TRUE(refused(call("health", Json{{"v", -1}}), Kind::unsupported_version));
}

TEST(RolloutVersion, RefusesNonIntegerVersionAsBadParams) {
  for (const Json& v : {Json("1"), Json(1.0), Json(true), Json::array({1})}) {
    auto r = call("health", Json{{"v", v}});
    EXPECT_TRUE(refused(r, Kind::bad_params)) << v.dump();
    if (!r.ok()) {
      EXPECT_EQ(r.error().field, "v");
    }
  }
}

TEST(RolloutVersion, IsCheckedBeforeTheMethodAndItsFields) {
  // A newer client should hear "upgrade the server", not that its new method or field is unknown.
  EXPECT_TRUE(refused(call("frobnicate", Json{{"v", 2}}), Kind::unsupported_version));
  EXPECT_TRUE(refused(call("reset", Json{{"v", 2}, {"new_field", 1}}), Kind::unsupported_version));
}

TEST(RolloutMethods, RefusesUnknownMethodSuggestingTheClosest) {
  auto r = call("rest", Json::object());
  ASSERT_TRUE(refused(r, Kind::unknown_method));
  EXPECT_NE(r.error().message.find("did you mean 'reset'"), std::string::npos) << r.error().message;
  EXPECT_TRUE(refused(call("Reset", Json{{"task", "t"}}), Kind::unknown_method));  // case matters
  // A hostile method name is quoted, escaped and cut, never echoed whole.
  auto hostile = call(std::string(10000, '\x01'), Json::object());
  ASSERT_TRUE(refused(hostile, Kind::unknown_method));
  EXPECT_LT(hostile.error().message.size(), 400u);
  EXPECT_NE(hostile.error().message.find("\\x01"), std::string::npos);
}

TEST(RolloutMethods, NamesRoundTrip) {
  for (const auto& name : method_names()) {
    auto m = method_from_name(name);
    ASSERT_TRUE(m) << name;
    EXPECT_EQ(method_name(*m), name);
  }
  EXPECT_EQ(method_names().size(), 7u);
}

// ---- Parameters ---------------------------------------------------------------------------------

TEST(RolloutParams, ResetReadsTaskSeedAndOptions) {
  auto r = call("reset", Json{{"task", "softmax_3"}, {"seed", 42}, {"options", {{"max_turns", 8}}}, {"v", 1}});
  ASSERT_TRUE(r.ok()) << r.error().message;
  const auto& p = std::get<ResetParams>(r.request().params);
  EXPECT_EQ(p.task, "softmax_3");
  EXPECT_EQ(p.seed, 42u);
  EXPECT_EQ(p.options, (Json{{"max_turns", 8}}));
}

TEST(RolloutParams, ResetTreatsNilOptionalsAsAbsent) {
  auto r = call("reset", Json{{"task", "t"}, {"seed", nullptr}, {"options", nullptr}});
  ASSERT_TRUE(r.ok()) << r.error().message;
  const auto& p = std::get<ResetParams>(r.request().params);
  EXPECT_FALSE(p.seed.has_value());
  EXPECT_TRUE(p.options.is_object() && p.options.empty());
}

TEST(RolloutParams, ResetRefusesMissingOrNilTask) {
  auto r = call("reset", Json{{"seed", 1}});
  ASSERT_TRUE(refused(r, Kind::bad_params));
  EXPECT_EQ(r.error().field, "task");
  EXPECT_TRUE(refused(call("reset", Json{{"task", nullptr}}), Kind::bad_params));
  EXPECT_TRUE(refused(call("reset", Json{{"task", ""}}), Kind::bad_params));
  EXPECT_TRUE(refused(call("reset", Json{{"task", 7}}), Kind::bad_params));
  EXPECT_TRUE(refused(call("reset", Json{{"task", std::string(kMaxNameBytes + 1, 'a')}}), Kind::bad_params));
  EXPECT_TRUE(call("reset", Json{{"task", std::string(kMaxNameBytes, 'a')}}).ok());
}

TEST(RolloutParams, ResetRefusesUnknownFieldSuggestingTheClosest) {
  auto r = call("reset", Json{{"task", "t"}, {"sed", 1}});
  ASSERT_TRUE(refused(r, Kind::bad_params));
  EXPECT_EQ(r.error().field, "sed");
  EXPECT_NE(r.error().message.find("did you mean 'seed'"), std::string::npos) << r.error().message;
}

TEST(RolloutParams, ResetSeedIsANonNegativeIntegerUpTo64Bits) {
  auto max = call("reset", Json{{"task", "t"}, {"seed", UINT64_MAX}});
  ASSERT_TRUE(max.ok()) << max.error().message;
  EXPECT_EQ(std::get<ResetParams>(max.request().params).seed, UINT64_MAX);
  for (const Json& seed : {Json(-1), Json(3.0), Json(true), Json("3")}) {
    auto r = call("reset", Json{{"task", "t"}, {"seed", seed}});
    EXPECT_TRUE(refused(r, Kind::bad_params)) << seed.dump();
  }
  // msgpack int64 0xd3 holding a positive value is an integer too.
  std::string signed_seed = bytes({0x82, 0xa4, 't', 'a', 's', 'k', 0xa1, 't', 0xa4, 's', 'e', 'e', 'd', 0xd3, 0, 0, 0, 0, 0, 0, 0, 9});
  auto r = call("reset", signed_seed);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(std::get<ResetParams>(r.request().params).seed, 9u);
}

TEST(RolloutParams, ResetRefusesOptionsThatAreNotAMap) {
  auto r = call("reset", Json{{"task", "t"}, {"options", Json::array()}});
  ASSERT_TRUE(refused(r, Kind::bad_params));
  EXPECT_EQ(r.error().field, "options");
}

TEST(RolloutParams, StepAcceptsToolCallMapOrText) {
  Json tool_call = {{"name", "compile"}, {"arguments", {{"source", "__global__ void k() {}"}}}};
  auto m = call("step", Json{{"episode", "e1"}, {"action", tool_call}});
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_EQ(std::get<StepParams>(m.request().params).action, tool_call);
  auto t = call("step", Json{{"episode", "e1"}, {"action", "<tool_call>{\"name\": \"submit\"}</tool_call>"}});
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_TRUE(std::get<StepParams>(t.request().params).action.is_string());
}

TEST(RolloutParams, StepRefusesMissingOrMistypedActionAndEpisode) {
  EXPECT_TRUE(refused(call("step", Json{{"episode", "e1"}}), Kind::bad_params));
  EXPECT_TRUE(refused(call("step", Json{{"episode", "e1"}, {"action", Json::array()}}), Kind::bad_params));
  EXPECT_TRUE(refused(call("step", Json{{"episode", "e1"}, {"action", 5}}), Kind::bad_params));
  auto r = call("step", Json{{"episode", 12}, {"action", "x"}});
  ASSERT_TRUE(refused(r, Kind::bad_params));
  EXPECT_EQ(r.error().field, "episode");
}

TEST(RolloutParams, CloseAndCancelNeedOnlyAnEpisode) {
  auto c = call("close", Json{{"episode", "e1"}});
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(std::get<CloseParams>(c.request().params).episode, "e1");
  auto k = call("cancel", Json{{"episode", "e2"}, {"v", 1}});
  ASSERT_TRUE(k.ok());
  EXPECT_EQ(std::get<CancelParams>(k.request().params).episode, "e2");
  EXPECT_TRUE(refused(call("close", Json::object()), Kind::bad_params));
  EXPECT_TRUE(refused(call("cancel", Json{{"episode", "e"}, {"reason", "x"}}), Kind::bad_params));
}

TEST(RolloutParams, TasksReadsEveryFilter) {
  auto r = call("tasks", Json{{"split", "train"}, {"source", "synth"}, {"ops", {"matmul", "softmax"}},
                              {"limit", 50}, {"offset", 100}});
  ASSERT_TRUE(r.ok()) << r.error().message;
  const auto& p = std::get<TasksParams>(r.request().params);
  EXPECT_EQ(p.split, "train");
  EXPECT_EQ(p.source, "synth");
  EXPECT_EQ(p.ops, (std::vector<std::string>{"matmul", "softmax"}));
  EXPECT_EQ(p.limit, 50);
  EXPECT_EQ(p.offset, 100);
  auto empty = call("tasks", Json::object());
  ASSERT_TRUE(empty.ok());
  const auto& none = std::get<TasksParams>(empty.request().params);
  EXPECT_FALSE(none.limit.has_value());
  EXPECT_EQ(none.offset, 0);
}

TEST(RolloutParams, TasksRefusesOutOfRangeAndMistypedFilters) {
  EXPECT_TRUE(refused(call("tasks", Json{{"limit", 0}}), Kind::bad_params));
  EXPECT_TRUE(refused(call("tasks", Json{{"offset", -1}}), Kind::bad_params));
  EXPECT_TRUE(refused(call("tasks", Json{{"limit", 2.5}}), Kind::bad_params));
  EXPECT_TRUE(refused(call("tasks", Json{{"limit", UINT64_MAX}}), Kind::bad_params));
  EXPECT_TRUE(refused(call("tasks", Json{{"ops", "matmul"}}), Kind::bad_params));
  EXPECT_TRUE(refused(call("tasks", Json{{"ops", {"matmul", 3}}}), Kind::bad_params));
  EXPECT_TRUE(refused(call("tasks", Json{{"split", true}}), Kind::bad_params));
}

TEST(RolloutParams, HealthAndToolsAcceptOnlyTheVersion) {
  EXPECT_TRUE(call("health", Json{{"v", 1}}).ok());
  EXPECT_TRUE(call("tools", Json::object()).ok());
  EXPECT_TRUE(refused(call("health", Json{{"verbose", true}}), Kind::bad_params));
  EXPECT_TRUE(refused(call("tools", Json{{"format", "openai"}}), Kind::bad_params));
}

TEST(RolloutParams, CanonicalParamsRoundTripThroughTheDecoder) {
  std::vector<std::pair<std::string, Json>> cases = {
      {"health", Json::object()},
      {"tasks", {{"split", "eval"}, {"ops", {"conv2d"}}, {"limit", 3}, {"offset", 9}}},
      {"reset", {{"task", "t"}, {"seed", UINT64_MAX}, {"options", {{"a", {1, 2.5, "x", nullptr}}}}}},
      {"step", {{"episode", "e"}, {"action", {{"name", "submit"}, {"arguments", Json::object()}}}}},
      {"cancel", {{"episode", "e"}}},
  };
  for (const auto& [method, payload] : cases) {
    auto first = call(method, payload);
    ASSERT_TRUE(first.ok()) << method << ": " << first.error().message;
    Json canonical = params_to_json(first.request());
    EXPECT_EQ(canonical["v"], 1);
    auto second = call(method, canonical);
    ASSERT_TRUE(second.ok()) << method << ": " << second.error().message;
    EXPECT_EQ(params_to_json(second.request()), canonical) << method;
  }
}

// ---- Replies ------------------------------------------------------------------------------------

TEST(RolloutReplies, EchoTheEnvelopeWithOrWithoutTheDelimiter) {
  Envelope dealer{"ID", false, "r9"};
  auto frames = encode_reply(dealer, Json{{"status", "ok"}});
  ASSERT_EQ(frames.size(), 4u);
  EXPECT_EQ(frame_string(frames[0]), "ID");
  EXPECT_EQ(frame_string(frames[1]), "r9");
  EXPECT_EQ(frame_string(frames[2]), "ok");
  std::string payload = frame_string(frames[3]);
  EXPECT_EQ(Json::from_msgpack(payload), (Json{{"status", "ok"}}));

  Envelope req{"ID", true, "r9"};
  auto with = encode_error(req, ProtocolError{Kind::bad_params, "no", "seed"});
  ASSERT_EQ(with.size(), 5u);
  EXPECT_EQ(with[1].size(), 0u);
  EXPECT_EQ(frame_string(with[3]), "error");
  std::string error = frame_string(with[4]);
  EXPECT_EQ(Json::from_msgpack(error), (Json{{"kind", "bad_params"}, {"message", "no"}, {"field", "seed"}}));
}

TEST(RolloutReplies, RefuseDataThatIsNotAMap) {
  try {
    encode_reply(Envelope{"ID", false, "r"}, Json::array());
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::internal);
  }
}

TEST(RolloutReplies, StayValidUtf8ForHostileKeys) {
  // A 3000-byte unknown key of two-byte characters: the field is cut on a character boundary.
  std::string key;
  for (int i = 0; i < 1500; ++i) key += "\xc3\xa9";
  auto r = call("health", Json{{key, 1}});
  ASSERT_TRUE(refused(r, Kind::bad_params));
  EXPECT_LE(r.error().field.size(), 64u);
  EXPECT_LT(r.error().message.size(), 400u);
  // Python's msgpack.unpackb(raw=False) would fail on invalid UTF-8; nlohmann's dump() checks it.
  EXPECT_NO_THROW(error_payload(r.error()).dump());
}

// ---- Limits from config -------------------------------------------------------------------------

TEST(RolloutLimits, ReadFromYamlWithDefaultsForMissingKeys) {
  auto l = ProtocolLimits::from_yaml(YamlNode::parse("max_payload_bytes: 4096\nmax_depth: 10\n", "rollout.yaml"));
  EXPECT_EQ(l.max_payload_bytes, 4096);
  EXPECT_EQ(l.max_depth, 10);
  EXPECT_EQ(l.max_request_id_bytes, ProtocolLimits{}.max_request_id_bytes);
  EXPECT_EQ(ProtocolLimits::from_yaml(YamlNode::parse("", "rollout.yaml")).max_payload_bytes,
            ProtocolLimits{}.max_payload_bytes);
}

TEST(RolloutLimits, RefuseUnknownKeysAndOutOfRangeValues) {
  auto fails = [](const std::string& text, const std::string& needle) {
    try {
      ProtocolLimits::from_yaml(YamlNode::parse(text, "rollout.yaml"));
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::config);
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
      return;
    }
    ADD_FAILURE() << "accepted: " << text;
  };
  fails("max_payload_byte: 4096\n", "did you mean 'max_payload_bytes'");
  fails("max_payload_bytes: 10\n", "max_payload_bytes");
  fails("max_request_id_bytes: 0\n", "max_request_id_bytes");
  fails("max_depth: 1000\n", "max_depth");
  fails("max_depth: deep\n", "max_depth");
}

// ---- Hostile corpus -----------------------------------------------------------------------------

// Inputs a fuzzer (or an attacker) reaches for: deep nesting far past the limit, lengths that
// claim gigabytes, truncations, every single byte. Each must come back as data, promptly.
TEST(RolloutCorpus, HostilePayloadsDecodeToErrorsWithoutCrashing) {
  std::vector<std::pair<std::string, std::string>> corpus = {
      {"100k nested arrays", std::string(100000, '\x91')},
      {"100k nested maps", [] {
         std::string s;
         for (int i = 0; i < 100000; ++i) s += bytes({0x81, 0xa1, 'k'});
         return s;
       }()},
      {"map of 100k nested arrays", bytes({0x81, 0xa1, 'k'}) + std::string(100000, '\x91') + '\x00'},
      {"array32 claiming 4G elements", bytes({0xdd, 0xff, 0xff, 0xff, 0xff})},
      {"map32 claiming 4G pairs", bytes({0xdf, 0xff, 0xff, 0xff, 0xff, 0xa1, 'k', 0x01})},
      {"str32 claiming 4 GiB", bytes({0x81, 0xa1, 'k', 0xdb, 0xff, 0xff, 0xff, 0xff, 'x'})},
      {"key str32 claiming 4 GiB", bytes({0x81, 0xdb, 0xff, 0xff, 0xff, 0xff, 'x'})},
      {"bin32 claiming 4 GiB", bytes({0x81, 0xa1, 'k', 0xc6, 0xff, 0xff, 0xff, 0xff})},
      {"ext32 claiming 4 GiB", bytes({0x81, 0xa1, 'k', 0xc9, 0xff, 0xff, 0xff, 0xff, 0x01})},
      {"array16 of maps, truncated", bytes({0x81, 0xa1, 'k', 0xdc, 0xff, 0xff, 0x80, 0x80})},
      {"float64 truncated", bytes({0x81, 0xa1, 'k', 0xcb, 0x00})},
      {"uint64 truncated", bytes({0x81, 0xa1, 'k', 0xcf, 0xff})},
      {"never-used byte inside a map", bytes({0x81, 0xa1, 'k', 0xc1})},
      {"nil key", bytes({0x81, 0xc0, 0x01})},
      {"array key", bytes({0x81, 0x90, 0x01})},
      {"map inside key position", bytes({0x81, 0x80, 0x01})},
      {"timestamp ext", bytes({0x81, 0xa1, 'k', 0xd6, 0xff, 0, 0, 0, 1})},
  };
  for (int b = 0; b < 256; ++b) corpus.emplace_back("byte " + std::to_string(b), std::string(1, static_cast<char>(b)));

  for (const auto& [name, payload] : corpus) {
    for (const char* method : {"health", "reset", "step", "tasks"}) {
      auto start = std::chrono::steady_clock::now();
      DecodeResult r = call(method, payload);
      auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count();
      EXPECT_LT(ms, 1000) << name;
      if (payload == "\x80") {
        EXPECT_TRUE(r.ok() || r.error().kind == Kind::bad_params) << name;  // {} is a valid health/tasks
        continue;
      }
      ASSERT_FALSE(r.ok()) << name << " decoded for " << method;
      EXPECT_NE(r.error().kind, Kind::internal) << name << ": " << r.error().message;
      EXPECT_FALSE(r.error().message.empty()) << name;
      EXPECT_NO_THROW(error_payload(r.error()).dump()) << name;
    }
  }
}

TEST(RolloutCorpus, EveryByteFlipOfAValidRequestIsDataNotACrash) {
  std::string good = pack({{"episode", "ep-1"}, {"action", {{"name", "compile"}, {"arguments", {{"src", "x"}}}}}, {"v", 1}});
  int ok = 0, refused_count = 0;
  for (size_t i = 0; i < good.size(); ++i) {
    for (int bit = 0; bit < 8; ++bit) {
      std::string bad = good;
      bad[i] = static_cast<char>(bad[i] ^ (1 << bit));
      DecodeResult r = call("step", bad);
      if (r.ok()) {
        ++ok;
      } else {
        ++refused_count;
        EXPECT_NE(r.error().kind, Kind::internal) << "byte " << i << " bit " << bit << ": " << r.error().message;
      }
    }
  }
  EXPECT_GT(refused_count, 0);
  EXPECT_EQ(ok + refused_count, static_cast<int>(good.size() * 8));
}

// ---- Loopback over real sockets -----------------------------------------------------------------

namespace {

// A ROUTER on 127.0.0.1 answering with the decoder: ok replies echo the method and canonical
// params, errors carry the decoder's kind. One socket, owned by its thread (zguide rule).
class EchoServer {
 public:
  explicit EchoServer(zmq::context_t& ctx, ProtocolLimits limits) : ctx_(ctx), limits_(limits) {
    std::promise<std::string> bound;
    auto endpoint = bound.get_future();
    thread_ = std::thread([this, p = std::move(bound)]() mutable { serve(p); });
    endpoint_ = endpoint.get();
  }
  ~EchoServer() {
    stop_ = true;
    thread_.join();
  }
  const std::string& endpoint() const { return endpoint_; }
  int served() const { return served_; }

 private:
  void serve(std::promise<std::string>& bound) {
    zmq::socket_t router(ctx_, zmq::socket_type::router);
    router.set(zmq::sockopt::linger, 0);
    router.bind("tcp://127.0.0.1:*");
    bound.set_value(router.get(zmq::sockopt::last_endpoint));
    while (!stop_) {
      zmq::pollitem_t item{router.handle(), 0, ZMQ_POLLIN, 0};
      zmq::poll(&item, 1, std::chrono::milliseconds(20));
      if (!(item.revents & ZMQ_POLLIN)) continue;
      std::vector<zmq::message_t> frames;
      if (!zmq::recv_multipart(router, std::back_inserter(frames))) continue;
      DecodeResult r = decode_request(frames, limits_);
      if (!r.envelope.answerable()) continue;
      auto reply = r.ok() ? encode_reply(r.envelope, {{"method", method_name(r.request().method)},
                                                      {"params", params_to_json(r.request())}})
                          : encode_error(r.envelope, r.error());
      ++served_;  // before sending: the client may check the count as soon as the reply lands
      zmq::send_multipart(router, reply);
    }
  }

  zmq::context_t& ctx_;
  ProtocolLimits limits_;
  std::atomic<bool> stop_{false};
  std::atomic<int> served_{0};
  std::string endpoint_;
  std::thread thread_;
};

struct Reply {
  std::string request_id;
  std::string status;
  Json payload;
};

Reply receive(zmq::socket_t& s) {
  std::vector<zmq::message_t> frames;
  auto got = zmq::recv_multipart(s, std::back_inserter(frames));
  if (!got) throw std::runtime_error("no reply within the receive timeout");
  if (frames.size() != 3) throw std::runtime_error("reply of " + std::to_string(frames.size()) + " frames");
  return {frame_string(frames[0]), frame_string(frames[1]), Json::from_msgpack(frame_string(frames[2]))};
}

Reply round_trip(zmq::socket_t& s, const std::vector<std::string>& frames) {
  std::vector<zmq::const_buffer> buffers;
  for (const auto& f : frames) buffers.emplace_back(f.data(), f.size());
  zmq::send_multipart(s, buffers);
  return receive(s);
}

zmq::socket_t client(zmq::context_t& ctx, zmq::socket_type type, const std::string& endpoint) {
  zmq::socket_t s(ctx, type);
  s.set(zmq::sockopt::linger, 0);
  s.set(zmq::sockopt::rcvtimeo, 5000);
  s.connect(endpoint);
  return s;
}

}  // namespace

TEST(RolloutLoopback, AnswersEveryKindOfBadRequestAndKeepsServingTheSameClient) {
  zmq::context_t ctx;
  ProtocolLimits limits;
  limits.max_payload_bytes = 4096;
  EchoServer server(ctx, limits);
  zmq::socket_t dealer = client(ctx, zmq::socket_type::dealer, server.endpoint());

  struct Case {
    const char* name;
    std::vector<std::string> frames;  // as the DEALER sends them
    const char* kind;
    std::string echoed_id;
  };
  std::vector<Case> cases = {
      {"two frames", {"b1", "health"}, "malformed_frames", "b1"},
      {"four frames", {"b2", "health", pack(Json::object()), "extra"}, "malformed_frames", "b2"},
      {"empty method", {"b3", "", pack(Json::object())}, "malformed_frames", "b3"},
      {"request id too long", {std::string(65, 'x'), "health", pack(Json::object())}, "malformed_frames", ""},
      {"bad msgpack", {"b5", "health", bytes({0xc1})}, "bad_msgpack", "b5"},
      {"truncated msgpack", {"b6", "reset", bytes({0x81, 0xa4, 't', 'a'})}, "bad_msgpack", "b6"},
      {"deep nesting", {"b7", "reset", bytes({0x81, 0xa1, 'o'}) + std::string(2000, '\x91')}, "bad_msgpack", "b7"},
      {"payload not a map", {"b8", "health", pack(Json::array())}, "payload_not_map", "b8"},
      {"unknown method", {"b9", "resett", pack(Json{{"task", "t"}})}, "unknown_method", "b9"},
      {"oversized payload", {"b10", "reset", pack(Json{{"task", std::string(5000, 't')}})}, "payload_too_large", "b10"},
      {"unknown field", {"b11", "reset", pack(Json{{"task", "t"}, {"seeds", 1}})}, "bad_params", "b11"},
      {"wrong type", {"b12", "step", pack(Json{{"episode", "e"}, {"action", 3}})}, "bad_params", "b12"},
      {"missing field", {"b13", "close", pack(Json::object())}, "bad_params", "b13"},
      {"newer version", {"b14", "health", pack(Json{{"v", 2}})}, "unsupported_version", "b14"},
  };
  for (const auto& c : cases) {
    Reply bad = round_trip(dealer, c.frames);
    EXPECT_EQ(bad.status, "error") << c.name;
    EXPECT_EQ(bad.payload.value("kind", ""), c.kind) << c.name << ": " << bad.payload.dump();
    EXPECT_FALSE(bad.payload.value("message", "").empty()) << c.name;
    EXPECT_EQ(bad.request_id, c.echoed_id) << c.name;
    // The same connection still works after every refusal.
    Reply good = round_trip(dealer, {"g", "reset", pack(Json{{"task", "matmul"}, {"seed", 3}})});
    ASSERT_EQ(good.status, "ok") << "after " << c.name << ": " << good.payload.dump();
    EXPECT_EQ(good.request_id, "g");
    EXPECT_EQ(good.payload["method"], "reset");
    EXPECT_EQ(good.payload["params"], (Json{{"task", "matmul"}, {"seed", 3}, {"v", 1}}));
  }
  EXPECT_EQ(server.served(), static_cast<int>(2 * cases.size()));
}

TEST(RolloutLoopback, PipelinedRequestsAreMatchedByRequestId) {
  zmq::context_t ctx;
  EchoServer server(ctx, ProtocolLimits{});
  zmq::socket_t dealer = client(ctx, zmq::socket_type::dealer, server.endpoint());
  const int n = 40;
  for (int i = 0; i < n; ++i) {
    std::string id = "p" + std::to_string(i);
    std::string payload = i % 2 ? pack(Json{{"episode", "e" + std::to_string(i)}}) : pack(Json{{"nope", i}});
    std::vector<zmq::const_buffer> frames = {zmq::buffer(id), zmq::buffer(std::string_view("close")), zmq::buffer(payload)};
    zmq::send_multipart(dealer, frames);
  }
  std::map<std::string, Reply> replies;
  for (int i = 0; i < n; ++i) {
    Reply r = receive(dealer);
    replies[r.request_id] = r;
  }
  ASSERT_EQ(replies.size(), static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    const Reply& r = replies.at("p" + std::to_string(i));
    if (i % 2) {
      EXPECT_EQ(r.status, "ok");
      EXPECT_EQ(r.payload["params"]["episode"], "e" + std::to_string(i));
    } else {
      EXPECT_EQ(r.status, "error");
      EXPECT_EQ(r.payload["kind"], "bad_params");
    }
  }
}

TEST(RolloutLoopback, ReqClientGetsRepliesThroughItsDelimiter) {
  // A REQ socket adds the empty delimiter and drops any reply without one, so a reply arriving
  // at all shows that the delimiter was echoed.
  zmq::context_t ctx;
  EchoServer server(ctx, ProtocolLimits{});
  zmq::socket_t req = client(ctx, zmq::socket_type::req, server.endpoint());
  Reply ok = round_trip(req, {"q1", "health", pack(Json{{"v", 1}})});
  EXPECT_EQ(ok.request_id, "q1");
  EXPECT_EQ(ok.status, "ok");
  Reply bad = round_trip(req, {"q2", "health", pack(Json{{"v", 7}})});
  EXPECT_EQ(bad.request_id, "q2");
  EXPECT_EQ(bad.status, "error");
  EXPECT_EQ(bad.payload["kind"], "unsupported_version");
  EXPECT_EQ(bad.payload["supported"], Json::array({1}));
  Reply wrong_count = round_trip(req, {"q3", "health"});
  EXPECT_EQ(wrong_count.request_id, "q3");
  EXPECT_EQ(wrong_count.payload["kind"], "malformed_frames");
}
