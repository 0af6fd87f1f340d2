#pragma once
// kforge's stand-in for <stdlib.h> under NVRTC (env/extension/nvrtc_cubin.h), which cuda.h includes: empty (device code has
// no use for the C library's allocation and process functions; abs and its kin are CUDA's math API, NVRTC's own).
