#pragma once
// kforge's stand-in for pybind11 in extension candidates (env/extension/shim/kforge_ext.h): the
// part of its API that binding code uses (module_::def with py::arg and defaults, PYBIND11_MODULE),
// registering C++ functions for the GPU worker instead of making Python objects. Nothing here runs
// Python.
#include <kforge_ext.h>

#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace pybind11 {

struct arg_v;

struct arg {
  explicit arg(const char* n) : name(n) {}
  template <class T>
  arg_v operator=(T&& value) const;
  const char* name;
};

struct arg_v : arg {
  arg_v(const arg& a, kforge_ext::Value v) : arg(a), value(std::move(v)) {}
  kforge_ext::Value value;
};

namespace detail {
template <class T>
kforge_ext::Value to_value(const T& v) {
  if constexpr (std::is_same_v<T, bool>) {
    return v;
  } else if constexpr (std::is_integral_v<T> || std::is_enum_v<T>) {
    return static_cast<int64_t>(v);
  } else if constexpr (std::is_floating_point_v<T>) {
    return static_cast<double>(v);
  } else if constexpr (std::is_same_v<T, std::nullptr_t>) {
    return std::monostate{};
  } else {
    static_assert(sizeof(T) == 0, "a default argument is a bool, an int, a float or None");
  }
}
template <class T>
void add_extra(std::vector<kforge_ext::Param>& params, const T& extra) {
  if constexpr (std::is_same_v<T, arg>) {
    params.push_back({extra.name, std::nullopt});
  } else if constexpr (std::is_same_v<T, arg_v>) {
    params.push_back({extra.name, extra.value});
  }  // docstrings and policies change nothing here
}
template <class F>
auto as_pointer(F&& f) {
  if constexpr (std::is_pointer_v<std::decay_t<F>>) {
    return f;
  } else {
    return +f;  // a captureless lambda; one that captures cannot be an extension function
  }
}
}  // namespace detail

template <class T>
arg_v arg::operator=(T&& value) const {
  return arg_v(*this, detail::to_value(std::decay_t<T>(value)));
}

class module_ {
 public:
  explicit module_(const char* name = "") : name_(name) {}
  template <class F, class... Extra>
  module_& def(const char* name, F&& f, const Extra&... extra) {
    std::vector<kforge_ext::Param> params;
    (detail::add_extra(params, extra), ...);
    kforge_ext::registry().push_back(kforge_ext::make_function(name, detail::as_pointer(std::forward<F>(f)), std::move(params)));
    return *this;
  }
  std::string& doc() { return doc_; }
  const std::string& name() const { return name_; }

 private:
  std::string name_, doc_;
};
using module = module_;

namespace detail {
struct module_registrar {
  explicit module_registrar(void (*init)(module_&)) { kforge_ext::module_inits<module_>().push_back(init); }
};
}  // namespace detail

}  // namespace pybind11

#define PYBIND11_MODULE(name, variable)                                                                                 \
  static void kforge_ext_module_init_##name(::pybind11::module_&);                                                      \
  static const ::pybind11::detail::module_registrar kforge_ext_module_registrar_##name(&kforge_ext_module_init_##name); \
  static void kforge_ext_module_init_##name(::pybind11::module_& variable)
