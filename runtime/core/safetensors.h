//===- safetensors.h - Reading and writing safetensors files ---*- C++ -*-===//
//
// A safetensors file is an 8-byte little-endian header length N, N bytes of
// JSON mapping tensor names to {"dtype", "shape", "data_offsets": [begin,
// end]} (offsets from the first byte after the header) plus an optional
// "__metadata__" object of strings, then the tensor data. The reader is
// strict, like the reference implementation: the header starts with '{' and
// lies inside the file, keys are unique, every tensor's byte range holds
// exactly its elements, and the ranges tile the data with no gap or overlap.
// Only the element types of the runtime (F32, F16, BF16, I32, BOOL, U8) are
// accepted. Every size is checked before arithmetic, so hostile numbers
// (offsets near 2^64) are rejected rather than wrapped.
//
//===----------------------------------------------------------------------===//

#ifndef RN_RUNTIME_CORE_SAFETENSORS_H
#define RN_RUNTIME_CORE_SAFETENSORS_H

#include "runtime/core/dtype.h"
#include "runtime/core/status.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rn {

/// Longest header accepted (the reference implementation's limit): a larger
/// length is corruption, not a model.
inline constexpr uint64_t kMaxSafetensorsHeaderBytes = 100u << 20;

/// The safetensors name of a runtime type ("F32", ..., "BOOL" for i1).
std::string_view safetensorsDTypeName(DType type);
std::optional<DType> parseSafetensorsDType(std::string_view name);

struct SafetensorsEntry {
  std::string name;
  DType dtype = DType::f32;
  std::vector<int64_t> shape;
  uint64_t offset = 0; ///< from the start of the data section
  uint64_t bytes = 0;
};

struct Safetensors {
  std::map<std::string, std::string> metadata;
  std::vector<SafetensorsEntry> tensors; ///< in data order
  std::string data;                      ///< the data section

  const SafetensorsEntry *find(std::string_view name) const;
  /// The bytes of `entry` (which must come from `tensors`).
  std::string_view bytesOf(const SafetensorsEntry &entry) const {
    return std::string_view(data).substr(entry.offset, entry.bytes);
  }
};

/// Parses a whole safetensors file held in memory.
Result<Safetensors> parseSafetensors(std::string_view file);
Result<Safetensors> readSafetensors(const std::string &path);

/// One tensor to write; `data` holds `bytes` bytes in row-major order.
struct TensorData {
  std::string name;
  DType dtype = DType::f32;
  std::vector<int64_t> shape;
  const void *data = nullptr;
  size_t bytes = 0;
};

/// The bytes of a safetensors file holding `tensors` (in the given order)
/// and `metadata`; the header is padded with spaces to a multiple of 8 so
/// that the data is 8-byte aligned when mapped.
Result<std::string>
serializeSafetensors(const std::vector<TensorData> &tensors,
                     const std::map<std::string, std::string> &metadata);

/// Writes `path` atomically: to a temporary file in the same directory,
/// flushed to disk, then renamed over `path`, so a crash mid-write (of a
/// checkpoint, say) leaves the previous file intact.
Status writeSafetensors(const std::string &path,
                        const std::vector<TensorData> &tensors,
                        const std::map<std::string, std::string> &metadata);

/// Parses a JSON document strictly (shared by the safetensors header and
/// the program): a syntax error reports its byte offset, duplicate keys in
/// one object and nesting deeper than 64 levels are errors. `what` names the
/// document in messages.
Result<nlohmann::json> parseJsonDocument(std::string_view text,
                                         std::string_view what);

/// Element count of `shape`, or nullopt if a dimension is negative or the
/// product overflows.
std::optional<uint64_t> elementCount(const std::vector<int64_t> &shape);
/// Bytes of `shape` elements of `dtype`, or nullopt as elementCount, or if
/// the byte count overflows.
std::optional<uint64_t> byteCount(DType dtype, const std::vector<int64_t> &shape);

/// A JSON number as a uint64_t: non-negative and integral (nlohmann keeps
/// integers beyond 2^64 as floats, which are rejected here).
std::optional<uint64_t> jsonUnsigned(const nlohmann::json &value);

/// "[64, 3, 3, 3]".
std::string shapeString(const std::vector<int64_t> &shape);

} // namespace rn

#endif // RN_RUNTIME_CORE_SAFETENSORS_H
