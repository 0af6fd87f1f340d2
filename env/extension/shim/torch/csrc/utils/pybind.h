#pragma once
// kforge's stand-in for torch's pybind header in extension candidates (env/extension/shim/): torch's
// types and kforge's pybind11 stand-in, with the `py` alias binding files use.
#include <torch/types.h>

#include <pybind11/pybind11.h>

namespace py = pybind11;
