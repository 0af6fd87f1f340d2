#pragma once
// kforge's stand-in for <math.h> under NVRTC (env/extension/nvrtc_cubin.h): the functions are NVRTC's own (CUDA's math API, as nvcc's device code gets it); glibc's M_ constants, and its infinities and NaN by their bits.
// (NVRTC does not fold 1.0f / 0.0f everywhere: it would compute an rcp where nvcc has a constant. The
// bits fold to the constant; in a constant expression they fail NVRTC, and nvcc builds the file.)
#define INFINITY (__int_as_float(0x7f800000))
#define HUGE_VALF (__int_as_float(0x7f800000))
#define HUGE_VAL (__longlong_as_double(0x7ff0000000000000LL))
#define NAN (__int_as_float(0x7fc00000))
#define M_E 2.7182818284590452354
#define M_LOG2E 1.4426950408889634074
#define M_LOG10E 0.43429448190325182765
#define M_LN2 0.69314718055994530942
#define M_LN10 2.30258509299404568402
#define M_PI 3.14159265358979323846
#define M_PI_2 1.57079632679489661923
#define M_PI_4 0.78539816339744830962
#define M_1_PI 0.31830988618379067154
#define M_2_PI 0.63661977236758134308
#define M_2_SQRTPI 1.12837916709551257390
#define M_SQRT2 1.41421356237309504880
#define M_SQRT1_2 0.70710678118654752440
