//===- dtype.h - Element types of the runtime ------------------*- C++ -*-===//
//
// The element types an artifact can hold, their sizes and names, and the
// f16/bf16 conversions the CPU executor uses to emulate low precision
// (round to nearest even, like the GPU).
//
//===----------------------------------------------------------------------===//

#ifndef RN_RUNTIME_CORE_DTYPE_H
#define RN_RUNTIME_CORE_DTYPE_H

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace rn {

/// u8: uint8 images on the wire (MLIR's ui8), which the device normalizes.
enum class DType : uint8_t { f32, f16, bf16, i32, i1, u8 };

/// Bytes of one element (i1 is stored as a byte).
size_t elementSize(DType type);

/// "f32", "f16", "bf16", "i32", "i1", "ui8" (the names of the artifact,
/// which are MLIR's).
std::string_view dtypeName(DType type);
std::optional<DType> parseDType(std::string_view name);

/// IEEE binary16 bits of `value`, rounded to nearest even; overflow gives
/// infinity and NaN stays NaN.
uint16_t floatToHalf(float value);
float halfToFloat(uint16_t bits);

/// bfloat16 bits of `value`, rounded to nearest even; NaN stays NaN.
uint16_t floatToBFloat16(float value);
float bfloat16ToFloat(uint16_t bits);

/// `value` rounded to the precision of `type` (identity for f32).
float roundTo(DType type, float value);

/// Element `i` of an array of `type` elements at `data`, as a float (i32
/// and u8 converted, i1 as 0 or 1).
float loadElement(DType type, const void *data, size_t i);
/// Stores `value` as element `i` of such an array (rounded to nearest even
/// for f16/bf16, truncated for i32, nonzero as 1 for i1, rounded to
/// nearest and clamped to [0, 255] for u8).
void storeElement(DType type, void *data, size_t i, float value);

} // namespace rn

#endif // RN_RUNTIME_CORE_DTYPE_H
