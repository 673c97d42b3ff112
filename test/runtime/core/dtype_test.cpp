//===- dtype_test.cpp - Element types and low-precision rounding ----------===//

#include "runtime/core/dtype.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace rn {
namespace {

TEST(DType, NamesRoundTrip) {
  for (DType type : {DType::f32, DType::f16, DType::bf16, DType::i32, DType::i1, DType::u8})
    EXPECT_EQ(parseDType(dtypeName(type)), type);
  EXPECT_FALSE(parseDType("f64").has_value());
  EXPECT_EQ(elementSize(DType::bf16), 2u);
  EXPECT_EQ(elementSize(DType::i1), 1u);
}

// Tests uint8 images' element type: MLIR's name, one byte, values 0 to 255
// exactly as floats, stores rounded to nearest and clamped.
TEST(DType, Uint8) {
  EXPECT_EQ(dtypeName(DType::u8), "ui8");
  EXPECT_EQ(elementSize(DType::u8), 1u);
  const uint8_t bytes[] = {0, 1, 128, 255};
  for (size_t i = 0; i < 4; ++i)
    EXPECT_EQ(loadElement(DType::u8, bytes, i), float(bytes[i]));
  uint8_t out[5] = {};
  const float values[] = {-3.0f, 2.5f, 3.5f, 254.6f, 1000.0f};
  for (size_t i = 0; i < 5; ++i)
    storeElement(DType::u8, out, i, values[i]);
  EXPECT_EQ(out[0], 0);
  EXPECT_EQ(out[1], 2); // ties to even
  EXPECT_EQ(out[2], 4);
  EXPECT_EQ(out[3], 255);
  EXPECT_EQ(out[4], 255);
}

TEST(DType, HalfKnownValues) {
  EXPECT_EQ(floatToHalf(1.0f), 0x3c00);
  EXPECT_EQ(floatToHalf(-2.0f), 0xc000);
  EXPECT_EQ(floatToHalf(65504.0f), 0x7bff);         // largest finite
  EXPECT_EQ(floatToHalf(65520.0f), 0x7c00);         // rounds to infinity
  EXPECT_EQ(floatToHalf(5.9604645e-08f), 0x0001);   // smallest subnormal
  EXPECT_EQ(floatToHalf(1.0f + 1.0f / 2048), 0x3c00); // tie to even
  EXPECT_EQ(floatToHalf(1.0f + 3.0f / 2048), 0x3c02); // tie to even (up)
  EXPECT_TRUE(std::isnan(halfToFloat(floatToHalf(std::nanf("")))));
  EXPECT_EQ(halfToFloat(0x3555), 0.333251953125f);
}

TEST(DType, HalfRoundTripsEveryHalf) {
  for (uint32_t bits = 0; bits < 0x10000; ++bits) {
    float value = halfToFloat(static_cast<uint16_t>(bits));
    if (std::isnan(value))
      continue;
    EXPECT_EQ(floatToHalf(value), bits) << "bits " << bits;
  }
}

TEST(DType, BFloat16) {
  EXPECT_EQ(floatToBFloat16(1.0f), 0x3f80);
  EXPECT_EQ(bfloat16ToFloat(0x3f80), 1.0f);
  EXPECT_EQ(roundTo(DType::bf16, 1.00390625f), 1.0f);       // tie to even
  EXPECT_EQ(roundTo(DType::bf16, 1.01171875f), 1.015625f);  // tie to even (up)
  EXPECT_EQ(roundTo(DType::f32, 0.1f), 0.1f);
  EXPECT_TRUE(std::isnan(roundTo(DType::bf16, std::nanf(""))));
  EXPECT_TRUE(std::isinf(roundTo(DType::bf16, std::numeric_limits<float>::max())));
}

} // namespace
} // namespace rn
