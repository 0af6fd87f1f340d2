#pragma once
// kforge's registry for CUDA-Agent-format binding files (`REGISTER_BINDING(name, register_fn)`,
// where register_fn(m) calls m.def(...)): the same interface as that format's header, built on
// kforge's pybind11 stand-in. The build puts it where the binding files look for it
// ("../binding_registry.h" from kernels/).
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <pybind11/pybind11.h>

class BindingRegistry {
 public:
  using BindingFunction = std::function<void(pybind11::module_&)>;
  static BindingRegistry& getInstance() {
    static BindingRegistry r;
    return r;
  }
  void registerBinding(const std::string& name, BindingFunction f) { bindings_.emplace_back(name, std::move(f)); }
  void applyBindings(pybind11::module_& m) {
    for (auto& b : bindings_) b.second(m);
  }

 private:
  BindingRegistry() = default;
  std::vector<std::pair<std::string, BindingFunction>> bindings_;
};

class BindingRegistrar {
 public:
  BindingRegistrar(const std::string& name, BindingRegistry::BindingFunction f) {
    BindingRegistry::getInstance().registerBinding(name, std::move(f));
  }
};

#define REGISTER_BINDING(name, func) static BindingRegistrar kforge_binding_registrar_##name(#name, [](pybind11::module_& m) { func(m); })
