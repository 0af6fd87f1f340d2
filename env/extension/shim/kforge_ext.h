#pragma once
// The extension kind's registry (issue 28; env/extension/EXTENSION_FORMAT.md): what a candidate's
// binding code registers with `m.def("name", &fn, py::arg("a"), py::arg("k") = 0)` lands here, not
// in Python. The shim headers beside this one stand in for pybind11's and torch's binding headers,
// so the binding files compile unchanged, and each registered function becomes a Function the GPU
// worker calls by name with the task's tensors and scalars (the extension plan says which).
//
// This header is compiled into the candidate's shared library and into the worker; both are built
// with the same compiler and libtorch, so the types below cross the dlopen boundary as they are.
#include <ATen/ATen.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

namespace kforge_ext {

// An argument's value: None, a tensor, or a Python scalar (float, int, bool).
using Value = std::variant<std::monostate, at::Tensor, double, int64_t, bool>;

struct Param {
  std::string name;           // from py::arg (empty when the binding named none)
  std::optional<Value> dflt;  // py::arg("k") = v
};

struct Function {
  std::string name;
  std::vector<Param> params;  // as many as the C++ function takes when the binding named them
  size_t arity = 0;
  // Calls the function with exactly `arity` values; returns its tensors (a Tensor, a tuple or a
  // vector of them; none for void).
  std::function<std::vector<at::Tensor>(const std::vector<Value>&)> call;
};

// The functions of this shared library, in registration order.
inline std::vector<Function>& registry() {
  static std::vector<Function> r;
  return r;
}

// An argument that cannot become the C++ parameter's type.
struct ArgumentError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

namespace detail {

inline const char* value_kind(const Value& v) {
  switch (v.index()) {
    case 0:
      return "None";
    case 1:
      return "a tensor";
    case 2:
      return "a float";
    case 3:
      return "an int";
    default:
      return "a bool";
  }
}

template <class T>
struct From;  // Value -> a C++ parameter type, as pybind11 would convert the Python value

template <>
struct From<at::Tensor> {
  static at::Tensor get(const Value& v, size_t i) {
    if (const auto* t = std::get_if<at::Tensor>(&v)) return *t;
    throw ArgumentError("argument " + std::to_string(i) + " must be a tensor, got " + value_kind(v));
  }
};
template <>
struct From<std::optional<at::Tensor>> {
  static std::optional<at::Tensor> get(const Value& v, size_t i) {
    if (std::holds_alternative<std::monostate>(v)) return std::nullopt;
    return From<at::Tensor>::get(v, i);
  }
};
template <>
struct From<bool> {
  static bool get(const Value& v, size_t i) {
    if (const auto* b = std::get_if<bool>(&v)) return *b;
    throw ArgumentError("argument " + std::to_string(i) + " must be a bool, got " + value_kind(v));
  }
};
template <class T>
struct FromInteger {
  static T get(const Value& v, size_t i) {
    if (const auto* n = std::get_if<int64_t>(&v)) return static_cast<T>(*n);
    if (const auto* b = std::get_if<bool>(&v)) return static_cast<T>(*b);
    throw ArgumentError("argument " + std::to_string(i) + " must be an int, got " + value_kind(v));
  }
};
template <class T>
struct FromFloat {
  static T get(const Value& v, size_t i) {
    if (const auto* d = std::get_if<double>(&v)) return static_cast<T>(*d);
    if (const auto* n = std::get_if<int64_t>(&v)) return static_cast<T>(*n);
    throw ArgumentError("argument " + std::to_string(i) + " must be a float, got " + value_kind(v));
  }
};
template <>
struct From<int> : FromInteger<int> {};
template <>
struct From<long> : FromInteger<long> {};
template <>
struct From<long long> : FromInteger<long long> {};
template <>
struct From<unsigned> : FromInteger<unsigned> {};
template <>
struct From<unsigned long> : FromInteger<unsigned long> {};
template <>
struct From<float> : FromFloat<float> {};
template <>
struct From<double> : FromFloat<double> {};

template <class R>
struct Outputs {  // a return value -> the tensors it holds
  static std::vector<at::Tensor> of(R&& r) {
    if constexpr (std::is_same_v<R, at::Tensor>) {
      return {std::move(r)};
    } else if constexpr (std::is_same_v<R, std::vector<at::Tensor>>) {
      return std::move(r);
    } else {
      static_assert(sizeof(R) == 0, "an extension function returns a tensor, a tuple or vector of tensors, or nothing");
    }
  }
};
template <class... T>
struct Outputs<std::tuple<T...>> {
  static std::vector<at::Tensor> of(std::tuple<T...>&& r) {
    static_assert((std::is_same_v<T, at::Tensor> && ...), "a returned tuple holds tensors only");
    return std::apply([](auto&&... t) { return std::vector<at::Tensor>{std::move(t)...}; }, std::move(r));
  }
};

template <class R, class... A, size_t... I>
std::vector<at::Tensor> call_with(R (*f)(A...), const std::vector<Value>& v, std::index_sequence<I...>) {
  if constexpr (std::is_void_v<R>) {
    f(From<std::decay_t<A>>::get(v[I], I)...);
    return {};
  } else {
    return Outputs<std::decay_t<R>>::of(f(From<std::decay_t<A>>::get(v[I], I)...));
  }
}

}  // namespace detail

// A Function for a C++ function pointer (what `m.def` receives; a captureless lambda converts).
template <class R, class... A>
Function make_function(std::string name, R (*f)(A...), std::vector<Param> params) {
  Function fn;
  fn.name = std::move(name);
  fn.arity = sizeof...(A);
  fn.params = std::move(params);
  fn.call = [f](const std::vector<Value>& v) -> std::vector<at::Tensor> {
    if (v.size() != sizeof...(A))
      throw ArgumentError("takes " + std::to_string(sizeof...(A)) + " arguments, got " + std::to_string(v.size()));
    return detail::call_with(f, v, std::index_sequence_for<A...>{});
  };
  return fn;
}

// The module-init functions (PYBIND11_MODULE bodies) of this shared library: run once, after every
// static initialiser, by kforge_ext_functions(), as Python runs them at import.
template <class Module>
std::vector<void (*)(Module&)>& module_inits() {
  static std::vector<void (*)(Module&)> r;
  return r;
}

// Positional and keyword values -> exactly the function's arguments (defaults filled in), as
// Python would bind them; a missing, doubled or unknown argument is an ArgumentError.
inline std::vector<Value> bind_arguments(const Function& fn, const std::vector<Value>& args,
                                         const std::vector<std::pair<std::string, Value>>& kwargs) {
  const std::string who = fn.name + "()";
  if (args.size() > fn.arity)
    throw ArgumentError(who + " takes " + std::to_string(fn.arity) + " arguments, " + std::to_string(args.size()) + " given");
  std::vector<std::optional<Value>> bound(fn.arity);
  for (size_t i = 0; i < args.size(); ++i) bound[i] = args[i];
  for (const auto& [name, v] : kwargs) {
    size_t i = 0;
    while (i < fn.params.size() && fn.params[i].name != name) ++i;
    if (i >= fn.params.size() || i >= fn.arity) throw ArgumentError(who + " has no argument named '" + name + "'");
    if (bound[i]) throw ArgumentError(who + " got argument '" + name + "' twice");
    bound[i] = v;
  }
  std::vector<Value> out;
  for (size_t i = 0; i < fn.arity; ++i) {
    if (!bound[i] && i < fn.params.size() && fn.params[i].dflt) bound[i] = *fn.params[i].dflt;
    if (!bound[i]) {
      const std::string n = i < fn.params.size() && !fn.params[i].name.empty() ? "'" + fn.params[i].name + "'" : std::to_string(i);
      throw ArgumentError(who + " is missing argument " + n);
    }
    out.push_back(*bound[i]);
  }
  return out;
}

}  // namespace kforge_ext

// The symbol the worker looks up in a candidate's shared library: its registry, after every
// binding (REGISTER_BINDING, PYBIND11_MODULE) has run.
extern "C" __attribute__((visibility("default"))) std::vector<kforge_ext::Function>* kforge_ext_functions();
