// Task specs that used to be read wrong (issue 26): sizes that wrap around 64 bits gave
// `flops: 0, min_bytes: 0` and, in `kforge task run`, an internal error with a libtorch backtrace;
// a key written twice kept its first value silently. Each is now a spec error at load.
#include <string>

#include <gtest/gtest.h>

#include "configs/error.h"
#include "data_synth/task/task_spec.h"

using namespace kforge;

namespace {

std::string task_text(const std::string& dims, const std::string& shape, const std::string& extra = "") {
  return "kforge_task: 1\nid: wrap\nsource: synth\nsplit: train\nseed: 5\ndtype: float32\ndims: " + dims +
         "\ngraph:\n  inputs:\n    - {name: x, shape: " + shape + "}\n  nodes:\n    - {id: y, op: relu, in: [x]}\n  outputs: [y]\n" +
         extra + "provenance: {generator: test, seed: 1}\n";
}

std::string error_of(const std::string& text) {
  try {
    parse_task(text, "wrap.yaml");
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::spec) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "accepted";
  return "";
}

}  // namespace

TEST(TaskSpecHostile, ElementCountThatWrapsAroundIsRefused) {
  // 2^32 * 2^32 = 2^64 wrapped to 0 elements.
  std::string e = error_of(task_text("{N: 4294967296, M: 4294967296}", "[N, M]"));
  EXPECT_NE(e.find("input 'x': shape [4294967296, 4294967296] has more elements than a 64-bit count holds"), std::string::npos) << e;
}

TEST(TaskSpecHostile, ByteCountThatWrapsAroundIsRefused) {
  // 2^62 float32 elements fit a count, not a byte count.
  std::string e = error_of(task_text("{N: 4611686018427387904}", "[N]"));
  EXPECT_NE(e.find("shape [4611686018427387904] of float32 has more bytes than a 64-bit count holds"), std::string::npos) << e;
}

TEST(TaskSpecHostile, WrappingProductOfDimsInAnExpressionIsRefused) {
  std::string e = error_of(task_text("{N: 4294967296}", "[N*N]"));
  EXPECT_NE(e.find("overflows 64 bits (*)"), std::string::npos) << e;
}

TEST(TaskSpecHostile, LargeButRepresentableSizeKeepsItsCost) {
  TaskSpec t = parse_task(task_text("{N: 1073741824}", "[N]"), "big.yaml");  // 2^30 floats
  EXPECT_DOUBLE_EQ(t.cost.min_bytes, 2.0 * 4 * 1073741824);
}

TEST(TaskSpecHostile, DuplicateKeyIsRefusedWithItsLine) {
  std::string e = error_of(task_text("{N: 8}", "[N]") + "seed: 6\n");
  EXPECT_NE(e.find("wrap.yaml:15:1: duplicate key 'seed' (first at line 5)"), std::string::npos) << e;
  std::string dims = error_of(task_text("{N: 8, N: 4096}", "[N]"));
  EXPECT_NE(dims.find("wrap.yaml:7:14: duplicate key 'N' (first at line 7)"), std::string::npos) << dims;
}
