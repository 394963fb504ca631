//===- SafeTensorsTest.cpp - the safetensors writer's dtypes --------------===//
//
// The writer encodes float32 tensors as f32, bf16 or f16; any other dtype
// (an integer, f64, float8) is a fatal error naming it, never silently
// written as f16 bytes.
//
//===----------------------------------------------------------------------===//

#include "SafeTensors.h"

#include "gtest/gtest.h"

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

using namespace titanrt;

namespace {

TEST(SafeTensorsTest, EncodesTheFloatDtypes) {
  const float in[] = {1.0f, -2.0f};
  char out[8];
  encodeElements(in, 2, Dtype::f32, out);
  EXPECT_EQ(std::memcmp(out, in, 8), 0);
  uint16_t half[2];
  encodeElements(in, 2, Dtype::bf16, reinterpret_cast<char *>(half));
  EXPECT_EQ(half[0], 0x3f80);
  EXPECT_EQ(half[1], 0xc000);
  encodeElements(in, 2, Dtype::f16, reinterpret_cast<char *>(half));
  EXPECT_EQ(half[0], 0x3c00);
  EXPECT_EQ(half[1], 0xc000);
}

TEST(SafeTensorsDeathTest, OtherDtypesAreFatal) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  float in[] = {1.0f};
  char out[8];
  for (Dtype dtype : titan::kDtypes) {
    if (dtype == Dtype::f32 || dtype == Dtype::bf16 || dtype == Dtype::f16)
      continue;
    std::string name = titan::dtypeName(dtype);
    EXPECT_EXIT(encodeElements(in, 1, dtype, out), testing::ExitedWithCode(1),
                "cannot write safetensors of dtype '" + name + "'")
        << name;
    std::string path = testing::TempDir() + "/titan-safetensors-" + name;
    EXPECT_EXIT(writeSafetensors(path, {{"w", {1}, in}}, dtype),
                testing::ExitedWithCode(1),
                "cannot write safetensors of dtype '" + name + "'")
        << name;
  }
}

} // namespace
