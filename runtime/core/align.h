//===- align.h - Rounding sizes up to an alignment ----------------*- C++ -*-===//
//
// Sub-allocations of device memory (workspace carve-ups, plan buffers,
// pinned output slots) start on 256-byte boundaries, the alignment the
// compiler's arena plan uses (docs/artifact.md, "alignment": 256) and at
// least what cudaMalloc returns.
//
//===----------------------------------------------------------------------===//

#ifndef RN_RUNTIME_CORE_ALIGN_H
#define RN_RUNTIME_CORE_ALIGN_H

#include <cstddef>

namespace rn {

/// The runtime's sub-allocation boundary in bytes.
inline constexpr size_t kAllocationAlignment = 256;

/// `bytes` rounded up to a multiple of `alignment` (not 0).
constexpr size_t alignUp(size_t bytes, size_t alignment = kAllocationAlignment) {
  return (bytes + alignment - 1) / alignment * alignment;
}

} // namespace rn

#endif // RN_RUNTIME_CORE_ALIGN_H
