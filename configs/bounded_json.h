#pragma once
// Decoding untrusted JSON text and msgpack into nlohmann::json with bounded cost. A value nested
// past `max_depth`, a duplicate map key, a number that overflows a double (JSON `1e999`), a bin or
// ext value, invalid UTF-8 or trailing bytes are refused while parsing, as a sentence, never as an
// exception.
//
// Why a bound at all: nlohmann's msgpack reader recurses once per nesting level, and although its
// JSON text parser is iterative, copying, comparing, dumping or re-encoding a document recurses
// once per level too, so a 150 000-deep `[[[...` that parsed would crash whatever touched it next.
// The SAX handler here stops the parser at the first level too deep, before anything is built.
#include <cstddef>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace kforge {

struct JsonLimits {
  int max_depth = 32;                   // arrays and maps; a top-level map is depth 1
  size_t max_bytes = size_t{16} << 20;  // the encoded input; larger is refused before parsing
  bool allow_binary = false;            // msgpack bin/ext kept as binary values (a worker's cubin)
};

struct BoundedJson {
  nlohmann::json value;
  std::string error;  // "" when value holds the decoded document, else why it was refused
  bool ok() const { return error.empty(); }
};

// JSON text (RFC 8259, one value, surrounding whitespace allowed). Errors name the byte position
// where nlohmann reports one: "syntax error at byte 7: ...".
BoundedJson parse_json_bounded(std::string_view text, const JsonLimits& limits);
// One complete msgpack value; nil, bool, int, float, str, array and map (and bin/ext with allow_binary).
BoundedJson parse_msgpack_bounded(std::string_view bytes, const JsonLimits& limits);

// Strict UTF-8: no overlong forms, no surrogates, nothing above U+10FFFF (what Python's
// msgpack.unpackb(raw=False) also refuses), so every string kforge holds can be re-sent.
bool valid_utf8(std::string_view s);
// A peer's bytes quoted for a message: printable ASCII kept, the rest as \xNN, cut at max_bytes so
// that a hostile input cannot inflate the error that quotes it.
std::string quoted_bytes(std::string_view s, size_t max_bytes = 64);

}  // namespace kforge
