// tests/golden/tolerance.json: the tolerance rule's verdict and ratio on edge elements (NaN in either
// value, infinities of one sign and of both, zero tolerance, subnormals, -0.0, the largest values,
// float16 and bfloat16 values after rounding), shared with the Python copies
// (tests/tools/test_golden_tolerance.py). Here the two C++ texts of the rule must give the file's
// answers: the tensor rule (data_synth/reference/tolerance.h) and the device text
// (kf_outside_tolerance in env/judge/check_kernel.cpp) through its host compilation, compare_like_device.
#include <cmath>
#include <cstdlib>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "configs/file_reader.h"
#include "data_synth/reference/tolerance.h"
#include "env/judge/check_kernel.h"
#include "tests/env/judge/tolerance_edge_cases.h"
#include "tests/test_paths.h"

using namespace kforge;
using namespace kforge::testing;

namespace {

nlohmann::json golden_cases() {
  const std::string path = source_dir() + "/tests/golden/tolerance.json";
  return nlohmann::json::parse(read_file(path))["cases"];
}

// A number, or "inf" / "nan" as a string (JSON has neither).
double golden_double(const nlohmann::json& v) {
  return v.is_string() ? std::strtod(v.get<std::string>().c_str(), nullptr) : v.get<double>();
}

// The element of `dtype` with these bits, as a 1-element bits tensor.
at::Tensor element_bits(DType t, const nlohmann::json& hex) {
  return raw_bits(t, {static_cast<int64_t>(std::stoull(hex.get<std::string>(), nullptr, 16))});
}

}  // namespace

TEST(ToleranceGolden, TheTensorRuleGivesTheGoldenVerdictsAndRatios) {
  const nlohmann::json cases = golden_cases();
  ASSERT_GE(cases.size(), 50u);
  for (const auto& c : cases) {
    const std::string name = c["name"].get<std::string>() + " (" + c["values"].get<std::string>() + ")";
    const DType t = dtype_from_name(c["dtype"].get<std::string>());
    const Tolerance tol{c["atol"].get<double>(), c["rtol"].get<double>()};
    at::Tensor out = element_bits(t, c["out"]).view(scalar_of(t)), ref = element_bits(t, c["ref"]).view(scalar_of(t));
    EXPECT_EQ(outside_tolerance(out, ref, tol)[0].item<bool>(), c["outside"].get<bool>()) << name;
    if (c["ratio"].is_null()) continue;
    const double want = golden_double(c["ratio"]), got = tolerance_ratio(out, ref, tol)[0].item<double>();
    if (std::isnan(want))
      EXPECT_TRUE(std::isnan(got)) << name << ": ratio " << got;
    else
      EXPECT_EQ(got, want) << name;
  }
}

TEST(ToleranceGolden, TheDeviceTextGivesTheGoldenVerdicts) {
  for (const auto& c : golden_cases()) {
    const std::string name = c["name"].get<std::string>() + " (" + c["values"].get<std::string>() + ")";
    const DType t = dtype_from_name(c["dtype"].get<std::string>());
    at::Tensor out = element_bits(t, c["out"]), ref = element_bits(t, c["ref"]);
    // The trial's poison counts as a mismatch on its own: no golden element may carry it.
    const uint64_t poison = poison_bits_for_trial(t, kPoisonId);
    ASSERT_NE(static_cast<uint64_t>(out[0].item<int64_t>()) & ((uint64_t{1} << (8 * out.element_size())) - 1),
              poison & ((uint64_t{1} << (8 * out.element_size())) - 1))
        << name << " uses the poison bits";
    CompareStats s = compare_like_device(t, out.data_ptr(), ref.data_ptr(), 1, c["atol"].get<double>(), c["rtol"].get<double>(), poison);
    EXPECT_EQ(s.mismatches, c["outside"].get<bool>() ? 1u : 0u) << name;
  }
}
