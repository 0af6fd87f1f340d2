#pragma once
// Deterministic draws of task arguments. The tensors of trial k of a task are a pure function of
// (task seed, trial k, secret salt, argument index, element index): a counter-based hash, so the
// same triple gives the same bytes on every machine and thread count, and any element can be
// computed independently (a GPU kernel can reproduce it with the integer arithmetic below).
//
// Distributions (as written in task specs, `draw: {dist: ..., ...}`):
//   normal(mean, std)   approximately normal: the Irwin-Hall sum of four uniform 16-bit integers,
//                       standardised (z in [-3.46, 3.46]), then mean + std * z in double
//   uniform(low, high)  low + (high - low) * u, u a multiple of 2^-24 in [0, 1), in double
//   randint(low, high)  integers in [low, high), by multiply-shift of 32 random bits
//   constant(value)     every element equal to value
// Floating values are computed in double, rounded once to float32, then (for float16/bfloat16)
// rounded to nearest-even.
#include <cstdint>
#include <cstring>
#include <string>

#include "data_synth/task/dtype.h"

namespace kforge {

class YamlNode;

enum class DrawDist { normal, uniform, randint, constant };

struct Draw {
  DrawDist dist = DrawDist::normal;
  double a = 0.0;  // normal: mean; uniform/randint: low; constant: value
  double b = 1.0;  // normal: std;  uniform/randint: high

  static Draw normal(double mean, double std) { return {DrawDist::normal, mean, std}; }
  static Draw uniform(double low, double high) { return {DrawDist::uniform, low, high}; }
  static Draw randint(int64_t low, int64_t high) { return {DrawDist::randint, static_cast<double>(low), static_cast<double>(high)}; }
  static Draw constant(double value) { return {DrawDist::constant, value, 0.0}; }

  // "normal(mean=0, std=1)"
  std::string describe() const;
  // The same draw as a PyTorch expression for a tensor of the given shape text ("B, D").
  std::string python(const std::string& shape_args, DType dtype) const;
  // Throws a spec error when the draw cannot produce `dtype` or its parameters are invalid.
  void validate(DType dtype) const;
  bool operator==(const Draw& o) const { return dist == o.dist && a == o.a && b == o.b; }

  static Draw from_yaml(const YamlNode& node);
};

struct DrawKey {
  uint64_t task_seed = 0;
  uint64_t trial = 0;
  uint64_t salt = 0;
};

// splitmix64: x advanced by the golden gamma, then the finaliser. What seeds and per-call choices
// derived from a seed (the draw family's members, the sensitivity checks' rows) are mixed with.
uint64_t splitmix64(uint64_t x);

// The stream of one argument of one trial.
uint64_t draw_stream(const DrawKey& key, uint64_t argument_index);

// Writes numel elements of dtype into out (dtype_size(dtype) * numel bytes). Large fills use
// several threads; the bytes do not depend on how many.
void fill_draw(const Draw& draw, DType dtype, uint64_t stream, int64_t numel, void* out);

// The bits of a value as another type of the same size (C++20's std::bit_cast): a float's or a
// double's bits and back, for the conversions below and the host copies of the device element code.
template <class To, class From>
To bit_cast(const From& from) {
  static_assert(sizeof(To) == sizeof(From), "bit_cast between types of different sizes");
  To to;
  std::memcpy(&to, &from, sizeof to);
  return to;
}

// Round-to-nearest-even conversions used by fill_draw (exposed for tests).
uint16_t float_to_bfloat16_bits(float f);
uint16_t float_to_half_bits(float f);

}  // namespace kforge
