// The rollout protocol: decoding every frame shape and payload a peer can send, strict parameter
// schemas, reply encoding and the limits' config section. The hostile corpus and the loopback over
// real sockets are in protocol_hostile_test.cpp.
#include "rollout/protocol.h"

#include <gtest/gtest.h>

#include "configs/error.h"
#include "configs/yaml_reader.h"
#include "tests/rollout/protocol_test_util.h"

using namespace kforge;
using namespace kforge::protocol_test;

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
  auto with_task = [](std::string raw) { return bytes({0x81, 0xa4, 't', 'a', 's', 'k', 0xa0 | static_cast<int>(raw.size())}) + raw; };
  EXPECT_TRUE(call("reset", with_task("caf\xc3\xa9")).ok());                                 // é
  EXPECT_TRUE(refused(call("reset", with_task("\xc3\x28")), Kind::bad_msgpack));             // bad continuation
  EXPECT_TRUE(refused(call("reset", with_task("\xc0\xaf")), Kind::bad_msgpack));             // overlong '/'
  EXPECT_TRUE(refused(call("reset", with_task("\xed\xa0\x80")), Kind::bad_msgpack));         // surrogate
  EXPECT_TRUE(refused(call("reset", with_task("\xf4\x90\x80\x80")), Kind::bad_msgpack));     // > U+10FFFF
  EXPECT_TRUE(refused(call("reset", with_task("ab\xe2\x82")), Kind::bad_msgpack));           // cut short
  EXPECT_TRUE(refused(call("health", bytes({0x81, 0xa1, 0xff, 0x01})), Kind::bad_msgpack));  // key
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
  auto r = call("tasks", Json{{"split", "train"}, {"source", "synth"}, {"ops", {"matmul", "softmax"}}, {"limit", 50}, {"offset", 100}});
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
  EXPECT_EQ(ProtocolLimits::from_yaml(YamlNode::parse("", "rollout.yaml")).max_payload_bytes, ProtocolLimits{}.max_payload_bytes);
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
