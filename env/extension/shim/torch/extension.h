#pragma once
// kforge's stand-in for <torch/extension.h> in extension candidates (env/extension/shim/): torch's
// tensor API, the current CUDA stream and device guards, and kforge's pybind11 stand-in; no Python.
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/types.h>

#include <pybind11/pybind11.h>

namespace py = pybind11;
