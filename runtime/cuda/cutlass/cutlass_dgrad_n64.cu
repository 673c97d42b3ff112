//===- cutlass_dgrad_n64.cu - The dgrad kernels of 64-channel tiles ----===//
//
// One tile width of cutlass_dgrad_kernels.cuh, instantiated here alone so
// that the widths compile side by side.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/cutlass/cutlass_dgrad_kernels.cuh"

namespace rn::cuda::cutlass_dgrad {
RN_CUTLASS_DGRAD_INSTANTIATE(64)
} // namespace rn::cuda::cutlass_dgrad
