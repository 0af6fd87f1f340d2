#include "data_synth/task/draw.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <thread>
#include <vector>

#include "configs/yaml_reader.h"

namespace kforge {

namespace {

inline uint64_t mix64(uint64_t z) {  // splitmix64's finaliser
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

constexpr uint64_t kGolden = 0x9e3779b97f4a7c15ULL;
// Irwin-Hall of four uniform integers in [0, 65535]: mean 131070, sd sqrt((65536^2 - 1) / 3).
constexpr double kIrwinHallMean = 131070.0;
const double kIrwinHallInvSd = 1.0 / std::sqrt((65536.0 * 65536.0 - 1.0) / 3.0);

std::string num(double v) {
  std::ostringstream os;
  os.precision(9);
  os << v;
  return os.str();
}

// The value of element i, as a double, for floating draws.
inline double draw_double(const Draw& d, uint64_t bits) {
  switch (d.dist) {
    case DrawDist::normal: {
      uint64_t s = (bits & 0xffff) + ((bits >> 16) & 0xffff) + ((bits >> 32) & 0xffff) + (bits >> 48);
      double z = (static_cast<double>(s) - kIrwinHallMean) * kIrwinHallInvSd;
      return d.a + d.b * z;
    }
    case DrawDist::uniform: {
      double u = static_cast<double>(bits >> 40) * (1.0 / 16777216.0);
      return d.a + (d.b - d.a) * u;
    }
    case DrawDist::randint: {
      uint64_t range = static_cast<uint64_t>(d.b - d.a);
      return d.a + static_cast<double>(((bits >> 32) * range) >> 32);
    }
    case DrawDist::constant:
      return d.a;
  }
  return 0.0;
}

inline int64_t draw_int(const Draw& d, uint64_t bits) {
  if (d.dist == DrawDist::constant) return static_cast<int64_t>(d.a);
  uint64_t range = static_cast<uint64_t>(d.b - d.a);
  return static_cast<int64_t>(d.a) + static_cast<int64_t>(((bits >> 32) * range) >> 32);
}

void fill_range(const Draw& d, DType dtype, uint64_t stream, int64_t begin, int64_t end, void* out) {
  for (int64_t i = begin; i < end; ++i) {
    uint64_t bits = mix64(stream + static_cast<uint64_t>(i + 1) * kGolden);
    switch (dtype) {
      case DType::float32:
        static_cast<float*>(out)[i] = static_cast<float>(draw_double(d, bits));
        break;
      case DType::float16:
        static_cast<uint16_t*>(out)[i] = float_to_half_bits(static_cast<float>(draw_double(d, bits)));
        break;
      case DType::bfloat16:
        static_cast<uint16_t*>(out)[i] = float_to_bfloat16_bits(static_cast<float>(draw_double(d, bits)));
        break;
      case DType::int32:
        static_cast<int32_t*>(out)[i] = static_cast<int32_t>(draw_int(d, bits));
        break;
      case DType::int64:
        static_cast<int64_t*>(out)[i] = draw_int(d, bits);
        break;
      case DType::boolean:
        static_cast<uint8_t*>(out)[i] = draw_int(d, bits) != 0;
        break;
    }
  }
}

}  // namespace

uint16_t float_to_bfloat16_bits(float f) {
  uint32_t u = bit_cast<uint32_t>(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40);  // quiet NaN
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

uint16_t float_to_half_bits(float f) {
  uint32_t x = bit_cast<uint32_t>(f);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t absx = x & 0x7fffffffu;
  if (absx > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u);   // NaN
  if (absx >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds to >= 65520: inf
  if (absx < 0x38800000u) {                                               // below the smallest normal half: subnormal or zero
    // Add 0.5 (as a float) so the FPU rounds the mantissa to the half's subnormal grid.
    float r = bit_cast<float>(absx) + 0.5f;
    uint32_t ru = bit_cast<uint32_t>(r);
    return static_cast<uint16_t>(sign | (ru - 0x3f000000u));
  }
  uint32_t mant_odd = (absx >> 13) & 1u;
  absx += 0xc8000fffu + mant_odd;  // rebias exponent (-112 << 23) and round to nearest even
  return static_cast<uint16_t>(sign | (absx >> 13));
}

uint64_t splitmix64(uint64_t x) { return mix64(x + kGolden); }

uint64_t draw_stream(const DrawKey& key, uint64_t argument_index) {
  uint64_t h = mix64(key.task_seed ^ 0x6b666f7267650001ULL);
  h = mix64(h ^ (key.trial * kGolden + 0x2545f4914f6cdd1dULL));
  h = mix64(h ^ (key.salt + 0x1b03738712fad5c9ULL));
  h = mix64(h ^ (argument_index * 0xd1342543de82ef95ULL + 1));
  return h;
}

void fill_draw(const Draw& draw, DType dtype, uint64_t stream, int64_t numel, void* out) {
  draw.validate(dtype);
  constexpr int64_t kChunk = 1 << 20;
  int64_t max_threads = std::max(1u, std::thread::hardware_concurrency());
  int64_t threads = std::min<int64_t>(std::min<int64_t>(max_threads, 16), (numel + kChunk - 1) / kChunk);
  if (threads <= 1) {
    fill_range(draw, dtype, stream, 0, numel, out);
    return;
  }
  std::vector<std::thread> pool;
  int64_t per = (numel + threads - 1) / threads;
  for (int64_t t = 0; t < threads; ++t) {
    int64_t b = t * per, e = std::min(numel, b + per);
    if (b < e) pool.emplace_back(fill_range, std::cref(draw), dtype, stream, b, e, out);
  }
  for (auto& th : pool) th.join();
}

std::string Draw::describe() const {
  switch (dist) {
    case DrawDist::normal:
      return "normal(mean=" + num(a) + ", std=" + num(b) + ")";
    case DrawDist::uniform:
      return "uniform(low=" + num(a) + ", high=" + num(b) + ")";
    case DrawDist::randint:
      return "randint(low=" + num(a) + ", high=" + num(b) + ")";
    case DrawDist::constant:
      return "constant(value=" + num(a) + ")";
  }
  return "?";
}

std::string Draw::python(const std::string& shape_args, DType dtype) const {
  std::string dt = std::string("dtype=") + dtype_torch_name(dtype);
  std::string shape_tuple = "(" + shape_args + (shape_args.find(',') == std::string::npos && !shape_args.empty() ? ",)" : ")");
  switch (dist) {
    case DrawDist::normal: {
      std::string e = "torch.randn(" + shape_tuple + ", " + dt + ")";
      if (b != 1.0) e += " * " + num(b);
      if (a != 0.0) e += " + " + num(a);
      return e;
    }
    case DrawDist::uniform: {
      std::string e = "torch.rand(" + shape_tuple + ", " + dt + ")";
      if (b - a != 1.0) e += " * " + num(b - a);
      if (a != 0.0) e += " + " + num(a);
      return e;
    }
    case DrawDist::randint:
      return "torch.randint(" + num(a) + ", " + num(b) + ", " + shape_tuple + ", " + dt + ")";
    case DrawDist::constant:
      return "torch.full(" + shape_tuple + ", " + num(a) + ", " + dt + ")";
  }
  return "";
}

void Draw::validate(DType dtype) const {
  switch (dist) {
    case DrawDist::normal:
      KFORGE_CHECK(dtype_is_float(dtype), spec, "a normal draw cannot produce " << dtype_name(dtype) << " (use randint or constant)");
      KFORGE_CHECK(b > 0 && std::isfinite(a) && std::isfinite(b), spec, "normal draw needs a finite mean and std > 0, got " << describe());
      break;
    case DrawDist::uniform:
      KFORGE_CHECK(dtype_is_float(dtype), spec, "a uniform draw cannot produce " << dtype_name(dtype) << " (use randint or constant)");
      KFORGE_CHECK(std::isfinite(a) && std::isfinite(b) && b > a, spec, "uniform draw needs finite low < high, got " << describe());
      break;
    case DrawDist::randint:
      KFORGE_CHECK(a == std::floor(a) && b == std::floor(b) && b > a && b - a <= 4294967296.0, spec,
                   "randint draw needs integers low < high with high - low <= 2^32, got " << describe());
      break;
    case DrawDist::constant:
      KFORGE_CHECK(std::isfinite(a), spec, "constant draw needs a finite value");
      KFORGE_CHECK(dtype_is_float(dtype) || a == std::floor(a), spec,
                   "constant " << num(a) << " is not an integer for " << dtype_name(dtype));
      break;
  }
}

Draw Draw::from_yaml(const YamlNode& node) {
  std::string dist = node.req<std::string>("dist");
  Draw d;
  if (dist == "normal")
    d = normal(node.get<double>("mean", 0.0), node.get<double>("std", 1.0));
  else if (dist == "uniform")
    d = uniform(node.req<double>("low"), node.req<double>("high"));
  else if (dist == "randint")
    d = randint(node.req<int64_t>("low"), node.req<int64_t>("high"));
  else if (dist == "constant")
    d = constant(node.req<double>("value"));
  else
    node.at("dist").fail("unknown distribution '" + dist + "' (normal, uniform, randint, constant)");
  node.check_no_unknown_keys();
  return d;
}

}  // namespace kforge
