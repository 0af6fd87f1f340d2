#pragma once
// kforge's stand-in for <stdio.h> under NVRTC (env/extension/nvrtc_cubin.h): device printf is NVRTC's own.
