#pragma once
// kforge's stand-in for <cuda.h> under NVRTC (env/extension/nvrtc_cubin.h), which load_inline's source includes: empty.
// NVRTC refuses its host declarations; NVRTC builds only device halves that name none of its names (CU..., cuX...).
