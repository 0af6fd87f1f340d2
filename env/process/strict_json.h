#pragma once
// Reading one JSON object of a contract strictly (gpu_request.h, compile_request.h, eval_report.h):
// every key is asked for by name with its type, and done() fails on any key that was not asked
// for, so a misspelt, missing or mistyped key is a spec error naming its path ("request.verify.trials"),
// never a silent default.
#include <optional>
#include <set>
#include <string>
#include <type_traits>

#include "configs/error.h"
#include "env/process/worker_protocol.h"

namespace kforge {

class StrictObject {
 public:
  StrictObject(const Json& j, std::string path) : j_(j), path_(std::move(path)) {
    KFORGE_CHECK(j_.is_object(), spec, path_ << " must be a map, got " << j_.type_name());
  }
  // A required key of type T.
  template <typename T>
  T req(const std::string& key) {
    return as<T>(raw(key), key);
  }
  // An optional key: absent or null gives nullopt; present with the wrong type is an error.
  template <typename T>
  std::optional<T> opt(const std::string& key) {
    seen_.insert(key);
    auto it = j_.find(key);
    if (it == j_.end() || it->is_null()) return std::nullopt;
    return as<T>(*it, key);
  }
  bool has(const std::string& key) const { return j_.contains(key); }
  // A required key, as it is (for a nested object read with its own StrictObject).
  const Json& raw(const std::string& key) {
    seen_.insert(key);
    auto it = j_.find(key);
    KFORGE_CHECK(it != j_.end(), spec, path_ << "." << key << " is missing");
    return *it;
  }
  std::string path(const std::string& key) const { return path_ + "." + key; }
  void done() const {
    for (auto it = j_.begin(); it != j_.end(); ++it)
      KFORGE_CHECK(seen_.count(it.key()), spec, path_ << "." << it.key() << " is not a key of this map");
  }

 private:
  template <typename T>
  T as(const Json& v, const std::string& key) const {
    // nlohmann converts numbers and bools into each other silently; a contract does not.
    bool ok = true;
    if constexpr (std::is_same_v<T, bool>)
      ok = v.is_boolean();
    else if constexpr (std::is_integral_v<T>)
      ok = v.is_number_integer();
    else if constexpr (std::is_floating_point_v<T>)
      ok = v.is_number();
    else if constexpr (std::is_same_v<T, std::string>)
      ok = v.is_string();
    KFORGE_CHECK(ok, spec, path_ << "." << key << " has the wrong type (" << v.type_name() << ")");
    try {
      return v.get<T>();
    } catch (const Json::exception&) {
      KFORGE_FAIL(spec, path_ << "." << key << " has the wrong type (" << v.type_name() << ")");
    }
  }

  const Json& j_;
  std::string path_;
  std::set<std::string> seen_;
};

}  // namespace kforge
