#include "data_synth/task/safetensors.h"

#include <cstdio>
#include <fstream>

#include <gtest/gtest.h>

#include "configs/error.h"

using namespace kforge;

TEST(Safetensors, RoundTripsNamesShapesDtypesAndBytes) {
  std::string path = ::testing::TempDir() + "/kforge_st_test.safetensors";
  auto buffer = [](std::string name, Shape shape, DType dtype, std::vector<uint8_t> bytes) {
    NamedBuffer b;
    b.name = std::move(name);
    b.meta.shape = std::move(shape);
    b.meta.dtype = dtype;
    b.bytes = std::move(bytes);
    return b;
  };
  NamedBuffer a = buffer("x", {2, 3}, DType::float32, std::vector<uint8_t>(24));
  for (size_t i = 0; i < a.bytes.size(); ++i) a.bytes[i] = static_cast<uint8_t>(i * 7);
  NamedBuffer b = buffer("fc.weight", {3}, DType::bfloat16, {1, 2, 3, 4, 5, 6});
  NamedBuffer c = buffer("n", {}, DType::int64, std::vector<uint8_t>(8, 9));
  write_safetensors(path, {a, b, c}, {{"task", "t"}});
  auto back = read_safetensors(path);
  ASSERT_EQ(back.size(), 3u);
  EXPECT_EQ(back[0].name, "x");
  EXPECT_EQ(back[0].meta, a.meta);
  EXPECT_EQ(back[0].bytes, a.bytes);
  EXPECT_EQ(back[1].name, "fc.weight");
  EXPECT_EQ(back[1].meta.dtype, DType::bfloat16);
  EXPECT_EQ(back[1].bytes, b.bytes);
  EXPECT_EQ(back[2].meta.shape, Shape{});
  std::remove(path.c_str());
}

TEST(Safetensors, RejectsTruncatedAndMissingFiles) {
  std::string path = ::testing::TempDir() + "/kforge_st_bad.safetensors";
  {
    std::ofstream out(path, std::ios::binary);
    out << "\x40\x00\x00\x00\x00\x00\x00\x00{\"x\":";
  }
  EXPECT_THROW(read_safetensors(path), Error);
  std::remove(path.c_str());
  try {
    read_safetensors("/nonexistent.safetensors");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::io);
  }
}
