// The rollout protocol under attack: a corpus of hostile payloads, every byte flip of a valid
// request, and a real ROUTER/DEALER (and REQ) loopback over TCP that must answer every bad request
// and keep serving.
#include "rollout/protocol.h"

#include <atomic>
#include <chrono>
#include <future>
#include <iterator>
#include <map>
#include <thread>

#include <gtest/gtest.h>
#include <zmq_addon.hpp>

#include "tests/rollout/protocol_test_util.h"

using namespace kforge;
using namespace kforge::protocol_test;

// ---- Hostile corpus -----------------------------------------------------------------------------

// Inputs a fuzzer (or an attacker) reaches for: deep nesting far past the limit, lengths that
// claim gigabytes, truncations, every single byte. Each must come back as data, promptly.
TEST(RolloutCorpus, HostilePayloadsDecodeToErrorsWithoutCrashing) {
  std::vector<std::pair<std::string, std::string>> corpus = {
      {"100k nested arrays", std::string(100000, '\x91')},
      {"100k nested maps",
       [] {
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
      auto reply = r.ok() ? encode_reply(r.envelope, {{"method", method_name(r.request().method)}, {"params", params_to_json(r.request())}})
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
