// Compiled into every extension candidate's shared library (env/extension/extension_build.h): the
// symbol the GPU worker looks up. It runs the library's PYBIND11_MODULE bodies once, after every
// static initialiser has registered its bindings, as Python would at import.
#include <kforge_ext.h>

#include <mutex>

#include <pybind11/pybind11.h>

extern "C" __attribute__((visibility("default"))) std::vector<kforge_ext::Function>* kforge_ext_functions() {
  static std::once_flag once;
  std::call_once(once, [] {
    pybind11::module_ m("kforge_ext");
    for (auto init : kforge_ext::module_inits<pybind11::module_>()) init(m);
  });
  return &kforge_ext::registry();
}
