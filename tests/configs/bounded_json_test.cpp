// Bounded decoding of untrusted JSON text and msgpack: whatever the bytes, a value or a sentence,
// never an exception or a stack overflow.
#include "configs/bounded_json.h"

#include <string>

#include <gtest/gtest.h>

using namespace kforge;
using Json = nlohmann::json;

namespace {

bool mentions(const BoundedJson& r, const std::string& what) { return r.error.find(what) != std::string::npos; }

}  // namespace

TEST(BoundedJson, DecodesJsonTextAndMsgpackWithinTheLimits) {
  BoundedJson t = parse_json_bounded(R"( {"a": [1, 2.5, "x", null, true], "b": {"c": {}}} )", {});
  ASSERT_TRUE(t.ok()) << t.error;
  EXPECT_EQ(t.value["a"][2], "x");
  std::vector<uint8_t> packed = Json::to_msgpack(t.value);
  BoundedJson m = parse_msgpack_bounded(std::string_view(reinterpret_cast<const char*>(packed.data()), packed.size()), {});
  ASSERT_TRUE(m.ok()) << m.error;
  EXPECT_EQ(m.value, t.value);
}

TEST(BoundedJson, RefusesJsonText150000LevelsDeepWithoutRecursing) {
  std::string deep(150000, '[');
  BoundedJson r = parse_json_bounded(deep + std::string(150000, ']'), {});
  EXPECT_FALSE(r.ok());
  EXPECT_TRUE(mentions(r, "nested deeper than 32 levels")) << r.error;
  JsonLimits two;
  two.max_depth = 2;
  EXPECT_TRUE(parse_json_bounded("[[1]]", two).ok());
  EXPECT_TRUE(mentions(parse_json_bounded("[[[1]]]", two), "nested deeper than 2 levels"));
}

TEST(BoundedJson, RefusesMsgpack200000LevelsDeepWithoutRecursing) {
  std::string deep(200000, '\x91');  // fixarray of one element, nested
  deep += '\xc0';
  BoundedJson r = parse_msgpack_bounded(deep, {});
  EXPECT_FALSE(r.ok());
  EXPECT_TRUE(mentions(r, "nested deeper than 32 levels")) << r.error;
}

TEST(BoundedJson, RefusesANumberThatOverflowsADoubleAsASentence) {
  BoundedJson r = parse_json_bounded(R"({"x": 1e999})", {});
  EXPECT_FALSE(r.ok());
  EXPECT_TRUE(mentions(r, "number overflow parsing '1e999'")) << r.error;
}

TEST(BoundedJson, RefusesDuplicateKeysInsteadOfKeepingTheLast) {
  BoundedJson r = parse_json_bounded(R"({"path": "a.cu", "path": "b.cu"})", {});
  EXPECT_FALSE(r.ok());
  EXPECT_TRUE(mentions(r, "duplicate key 'path'")) << r.error;
  EXPECT_TRUE(parse_json_bounded(R"({"a": {"k": 1}, "b": {"k": 2}})", {}).ok()) << "the same key in two maps is not a duplicate";
}

TEST(BoundedJson, RefusesOversizedInputBeforeParsingAndSaysTheLimit) {
  JsonLimits small;
  small.max_bytes = 16;
  BoundedJson r = parse_json_bounded(R"(["0123456789abcdef"])", small);
  EXPECT_FALSE(r.ok());
  EXPECT_TRUE(mentions(r, "exceed the limit of 16")) << r.error;
}

TEST(BoundedJson, RefusesSyntaxErrorsTrailingBytesAndBinWithTheirReason) {
  EXPECT_TRUE(mentions(parse_json_bounded(R"({"a": )", {}), "parse error at"));
  EXPECT_TRUE(mentions(parse_json_bounded("{} {}", {}), "parse error at"));
  EXPECT_TRUE(mentions(parse_json_bounded("", {}), "empty"));
  EXPECT_TRUE(mentions(parse_msgpack_bounded(std::string("\xc4\x01x", 3), {}), "bin and ext"));
  EXPECT_TRUE(mentions(parse_msgpack_bounded(std::string("\xa1\xff", 2), {}), "not valid UTF-8"));
}

TEST(BoundedJson, KeepsBinWhenAllowedForTheWorkersFrames) {
  JsonLimits worker;
  worker.allow_binary = true;
  BoundedJson r = parse_msgpack_bounded(std::string("\x81\xa5"
                                                    "cubin"
                                                    "\xc4\x02\x01\x02",
                                                    11),
                                        worker);
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.value["cubin"].get_binary(), (std::vector<uint8_t>{1, 2}));
}
