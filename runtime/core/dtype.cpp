//===- dtype.cpp - Element types of the runtime ---------------------------===//

#include "runtime/core/dtype.h"

#include <cmath>
#include <cstring>

namespace rn {

size_t elementSize(DType type) {
  switch (type) {
  case DType::f32:
  case DType::i32:
    return 4;
  case DType::f16:
  case DType::bf16:
    return 2;
  case DType::i1:
  case DType::u8:
    return 1;
  }
  return 0;
}

std::string_view dtypeName(DType type) {
  switch (type) {
  case DType::f32:
    return "f32";
  case DType::f16:
    return "f16";
  case DType::bf16:
    return "bf16";
  case DType::i32:
    return "i32";
  case DType::i1:
    return "i1";
  case DType::u8:
    return "ui8";
  }
  return "?";
}

std::optional<DType> parseDType(std::string_view name) {
  for (DType type : {DType::f32, DType::f16, DType::bf16, DType::i32, DType::i1, DType::u8})
    if (dtypeName(type) == name)
      return type;
  return std::nullopt;
}

static uint32_t bitsOf(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

static float floatOf(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

uint16_t floatToHalf(float value) {
  uint32_t bits = bitsOf(value);
  uint32_t sign = (bits >> 16) & 0x8000u;
  uint32_t exponent = (bits >> 23) & 0xffu;
  uint32_t mantissa = bits & 0x7fffffu;
  if (exponent == 0xffu) // infinity or NaN (keep NaN quiet and non-zero)
    return static_cast<uint16_t>(sign | 0x7c00u |
                                 (mantissa ? 0x200u | (mantissa >> 13) : 0));
  int32_t halfExponent = static_cast<int32_t>(exponent) - 127 + 15;
  if (halfExponent >= 0x1f) // overflow
    return static_cast<uint16_t>(sign | 0x7c00u);
  if (halfExponent <= 0) { // subnormal or zero
    if (halfExponent < -10)
      return static_cast<uint16_t>(sign);
    mantissa |= 0x800000u;
    uint32_t shift = static_cast<uint32_t>(14 - halfExponent);
    uint32_t half = mantissa >> shift;
    uint32_t remainder = mantissa & ((1u << shift) - 1);
    uint32_t halfway = 1u << (shift - 1);
    if (remainder > halfway || (remainder == halfway && (half & 1u)))
      ++half;
    return static_cast<uint16_t>(sign | half);
  }
  uint32_t half = (static_cast<uint32_t>(halfExponent) << 10) | (mantissa >> 13);
  uint32_t remainder = mantissa & 0x1fffu;
  if (remainder > 0x1000u || (remainder == 0x1000u && (half & 1u)))
    ++half; // may carry into the exponent, up to infinity: correct rounding
  return static_cast<uint16_t>(sign | half);
}

float halfToFloat(uint16_t bits) {
  uint32_t sign = (bits & 0x8000u) << 16;
  uint32_t exponent = (bits >> 10) & 0x1fu;
  uint32_t mantissa = bits & 0x3ffu;
  if (exponent == 0) {
    if (mantissa == 0)
      return floatOf(sign);
    float value = std::ldexp(static_cast<float>(mantissa), -24);
    return sign ? -value : value;
  }
  if (exponent == 0x1f)
    return floatOf(sign | 0x7f800000u | (mantissa << 13));
  return floatOf(sign | ((exponent - 15 + 127) << 23) | (mantissa << 13));
}

uint16_t floatToBFloat16(float value) {
  uint32_t bits = bitsOf(value);
  if (std::isnan(value))
    return static_cast<uint16_t>((bits >> 16) | 0x40u);
  uint32_t rounding = 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>((bits + rounding) >> 16);
}

float bfloat16ToFloat(uint16_t bits) {
  return floatOf(static_cast<uint32_t>(bits) << 16);
}

float roundTo(DType type, float value) {
  switch (type) {
  case DType::f16:
    return halfToFloat(floatToHalf(value));
  case DType::bf16:
    return bfloat16ToFloat(floatToBFloat16(value));
  default:
    return value;
  }
}

float loadElement(DType type, const void *data, size_t i) {
  const auto *b = static_cast<const unsigned char *>(data);
  switch (type) {
  case DType::f32: {
    float v;
    std::memcpy(&v, b + 4 * i, 4);
    return v;
  }
  case DType::f16: {
    uint16_t v;
    std::memcpy(&v, b + 2 * i, 2);
    return halfToFloat(v);
  }
  case DType::bf16: {
    uint16_t v;
    std::memcpy(&v, b + 2 * i, 2);
    return bfloat16ToFloat(v);
  }
  case DType::i32: {
    int32_t v;
    std::memcpy(&v, b + 4 * i, 4);
    return static_cast<float>(v);
  }
  case DType::i1:
    return b[i] ? 1.0f : 0.0f;
  case DType::u8:
    return static_cast<float>(b[i]);
  }
  return 0.0f;
}

void storeElement(DType type, void *data, size_t i, float value) {
  auto *b = static_cast<unsigned char *>(data);
  switch (type) {
  case DType::f32:
    std::memcpy(b + 4 * i, &value, 4);
    break;
  case DType::f16: {
    uint16_t h = floatToHalf(value);
    std::memcpy(b + 2 * i, &h, 2);
    break;
  }
  case DType::bf16: {
    uint16_t h = floatToBFloat16(value);
    std::memcpy(b + 2 * i, &h, 2);
    break;
  }
  case DType::i32: {
    int32_t v = static_cast<int32_t>(value);
    std::memcpy(b + 4 * i, &v, 4);
    break;
  }
  case DType::i1:
    b[i] = value != 0 ? 1 : 0;
    break;
  case DType::u8:
    b[i] = static_cast<unsigned char>(
        std::isnan(value) ? 0.0f : std::fmin(std::fmax(std::nearbyint(value), 0.0f), 255.0f));
    break;
  }
}

} // namespace rn
