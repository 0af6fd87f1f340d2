#pragma once
// kforge's stand-in for <stddef.h> under NVRTC (env/extension/nvrtc_cubin.h): size_t is NVRTC's own; GCC's ptrdiff_t and nullptr_t on x86-64 Linux (NULL is NVRTC's own).
typedef long ptrdiff_t;
typedef decltype(nullptr) nullptr_t;
