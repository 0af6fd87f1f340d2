#include "configs/bounded_json.h"

#include <algorithm>
#include <vector>

namespace kforge {

using Json = nlohmann::json;

namespace {

// "[json.exception.parse_error.101] parse error at byte 3: ..." -> "parse error at byte 3: ..."
std::string without_prefix(const std::string& what) {
  auto cut = what.find("] ");
  return what.rfind("[json.exception.", 0) == 0 && cut != std::string::npos ? what.substr(cut + 2) : what;
}

// Builds the document through nlohmann's SAX interface, refusing while parsing what kforge does
// not accept. Refusing early is what bounds the cost: both readers stop as soon as a handler
// returns false, and neither pre-allocates declared lengths, so an input costs at most its own
// size and max_depth levels.
class BoundedBuilder {
 public:
  BoundedBuilder(Json& root, size_t max_depth, bool allow_binary) : root_(root), max_depth_(max_depth), allow_binary_(allow_binary) {}

  const std::string& error() const { return error_; }

  bool null() { return place(Json(nullptr)) != nullptr; }
  bool boolean(bool v) { return place(Json(v)) != nullptr; }
  bool number_integer(Json::number_integer_t v) { return place(Json(v)) != nullptr; }
  bool number_unsigned(Json::number_unsigned_t v) { return place(Json(v)) != nullptr; }
  bool number_float(Json::number_float_t v, const Json::string_t&) { return place(Json(v)) != nullptr; }
  bool string(Json::string_t& v) {
    if (!valid_utf8(v)) return fail("a string is not valid UTF-8");
    return place(Json(std::move(v))) != nullptr;
  }
  // msgpack bin and ext (timestamps included) both arrive here: kforge's documents are text, but
  // for the workers' frames, which carry cubins.
  bool binary(Json::binary_t& v) {
    if (allow_binary_) return place(Json::binary(std::move(v))) != nullptr;
    return fail("bin and ext values are not accepted (values are nil, bool, int, float, str, array, map)");
  }
  bool start_object(std::size_t) { return open(Json::object()); }
  bool key(Json::string_t& k) {
    if (!valid_utf8(k)) return fail("a map key is not valid UTF-8");
    // Duplicate keys would make "which value counts" a matter of decoder choice; refuse them.
    if (stack_.back()->contains(k)) return fail("duplicate key " + quoted_bytes(k));
    key_ = std::move(k);
    return true;
  }
  bool end_object() { return close(); }
  bool start_array(std::size_t) { return open(Json::array()); }
  bool end_array() { return close(); }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) {
    // JSON text: a syntax error, or out_of_range 406 for a number that overflows a double (1e999).
    error_ = without_prefix(e.what());
    if (error_.find("expected length specification") != std::string::npos && !stack_.empty() && stack_.back()->is_object()) {
      error_ += " (map keys must be strings)";
    }
    return false;
  }

 private:
  bool fail(std::string message) {
    error_ = std::move(message);
    return false;
  }
  // Pointers stay valid: a parent only grows after the child it points into is closed, and
  // map values live in std::map nodes.
  Json* place(Json value) {
    if (stack_.empty()) {
      root_ = std::move(value);
      return &root_;
    }
    Json& parent = *stack_.back();
    if (parent.is_array()) {
      parent.push_back(std::move(value));
      return &parent.back();
    }
    Json& slot = parent[key_];
    slot = std::move(value);
    return &slot;
  }
  bool open(Json container) {
    if (stack_.size() >= max_depth_) return fail("nested deeper than " + std::to_string(max_depth_) + " levels");
    stack_.push_back(place(std::move(container)));
    return true;
  }
  bool close() {
    stack_.pop_back();
    return true;
  }

  Json& root_;
  size_t max_depth_;
  bool allow_binary_;
  std::vector<Json*> stack_;
  std::string key_;
  std::string error_;
};

BoundedJson parse_bounded(std::string_view input, const JsonLimits& limits, Json::input_format_t format) {
  BoundedJson out;
  if (input.size() > limits.max_bytes) {
    out.error = std::to_string(input.size()) + " bytes exceed the limit of " + std::to_string(limits.max_bytes);
    return out;
  }
  if (input.empty()) {
    out.error = "the input is empty";
    return out;
  }
  Json doc;
  BoundedBuilder builder(doc, static_cast<size_t>(std::max(1, limits.max_depth)), limits.allow_binary);
  try {
    if (!Json::sax_parse(input.begin(), input.end(), &builder, format, true)) {
      out.error = builder.error().empty() ? "not accepted" : builder.error();
      return out;
    }
  } catch (const std::exception& e) {  // the readers report through parse_error; this is a backstop
    out.error = without_prefix(e.what());
    return out;
  }
  out.value = std::move(doc);
  return out;
}

}  // namespace

bool valid_utf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t n;
    uint32_t cp, min;
    if ((c & 0xe0) == 0xc0) {
      n = 1, cp = c & 0x1f, min = 0x80;
    } else if ((c & 0xf0) == 0xe0) {
      n = 2, cp = c & 0x0f, min = 0x800;
    } else if ((c & 0xf8) == 0xf0) {
      n = 3, cp = c & 0x07, min = 0x10000;
    } else {
      return false;
    }
    if (s.size() - i <= n) return false;
    for (size_t k = 1; k <= n; ++k) {
      auto cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xc0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return false;
    i += n + 1;
  }
  return true;
}

std::string quoted_bytes(std::string_view s, size_t max_bytes) {
  static const char* hex = "0123456789abcdef";
  std::string out = "'";
  for (size_t i = 0; i < s.size() && i < max_bytes; ++i) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7f && c != '\\' && c != '\'') {
      out += static_cast<char>(c);
    } else {
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  out += s.size() > max_bytes ? "'..." : "'";
  return out;
}

BoundedJson parse_json_bounded(std::string_view text, const JsonLimits& limits) {
  return parse_bounded(text, limits, Json::input_format_t::json);
}

BoundedJson parse_msgpack_bounded(std::string_view bytes, const JsonLimits& limits) {
  return parse_bounded(bytes, limits, Json::input_format_t::msgpack);
}

}  // namespace kforge
