// libFuzzer target for the rollout decoder (rollout/README.md says how to build and run it).
// The first input byte picks a shape: below 0xc0 the rest is the msgpack payload of a well-framed
// request (where nearly all the decoder's work is); otherwise it is frames, each a length byte
// and that many bytes, the last taking what remains. Besides crashes and sanitizer reports it
// traps on broken properties: an accepted request re-encodes canonically to the same request,
// and every error reply is well formed (valid UTF-8, bounded request id).
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "rollout/protocol.h"

using namespace kforge;

namespace {

std::vector<uint8_t> canonical_bytes(const Request& r) { return Json::to_msgpack(params_to_json(r)); }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  ProtocolLimits limits;
  limits.max_payload_bytes = 1 << 16;
  limits.max_request_id_bytes = 16;
  limits.max_depth = 16;

  const uint8_t mode = data[0];
  std::string_view rest(reinterpret_cast<const char*>(data + 1), size - 1);
  std::vector<std::string_view> frames;
  if (mode < 0xc0) {
    frames = {"ID", "r1", method_names()[mode % method_names().size()], rest};
  } else {
    size_t count = 1 + (mode & 7);
    while (frames.size() + 1 < count && !rest.empty()) {
      size_t n = std::min<size_t>(static_cast<uint8_t>(rest[0]), rest.size() - 1);
      frames.push_back(rest.substr(1, n));
      rest.remove_prefix(1 + n);
    }
    frames.push_back(rest);
  }

  DecodeResult r = decode_request(frames, limits);
  if (r.envelope.request_id.size() > static_cast<size_t>(limits.max_request_id_bytes)) abort();
  if (!r.ok()) {
    if (r.error().message.empty()) abort();
    error_payload(r.error()).dump();  // throws (-> libFuzzer reports it) on invalid UTF-8
    if (r.envelope.answerable()) encode_error(r.envelope, r.error());
    return 0;
  }
  // Round trip: the canonical payload decodes to a request with the same canonical payload.
  std::vector<uint8_t> first = canonical_bytes(r.request());
  std::string payload(first.begin(), first.end());
  ProtocolLimits roomy = limits;
  roomy.max_payload_bytes = 1 << 20;
  DecodeResult again = decode_request({"ID", "r1", method_name(r.request().method), payload}, roomy);
  if (!again.ok() || again.request().method != r.request().method) abort();
  if (canonical_bytes(again.request()) != first) abort();
  encode_reply(r.envelope, params_to_json(r.request()));
  return 0;
}
