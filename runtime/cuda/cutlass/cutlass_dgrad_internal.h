//===- cutlass_dgrad_internal.h - Between the dispatch and the kernels -*- C++
//-*-===//
//
// What cutlass_dgrad.cu (the public functions: shape rules, the choice of
// tile) and the per-width kernel units (cutlass_dgrad_n64.cu,
// cutlass_dgrad_n128.cu) share, without CUTLASS's headers: each unit
// defines tileKernels<width>() as a table of its entry points.
//
//===----------------------------------------------------------------------===//

#ifndef RN_RUNTIME_CUDA_CUTLASS_CUTLASS_DGRAD_INTERNAL_H
#define RN_RUNTIME_CUDA_CUTLASS_CUTLASS_DGRAD_INTERNAL_H

#include "runtime/cuda/cutlass/cutlass_dgrad.h"

#include <string>

namespace rn::cuda::cutlass_dgrad {

/// f16 elements in 16 bytes: CUTLASS's TMA loads need channel counts that
/// are multiples of it.
constexpr int kAlignment = 8;

/// Pixels (GEMM rows) per CTA tile, at both widths: also the pixels each
/// row of the BN sums' partials covers.
constexpr int kTileRows = 128;

/// "dgrad dx[256,56,56,64] w[64,3,3,64] s1,1 p1,1", for messages.
std::string describe(const DgradShape &shape);

/// One tile width's kernels (DgradKernels<width> in cutlass_dgrad_kernels.cuh).
struct TileKernels {
  Status (*supports)(const DgradShape &, bool withBnSums);
  size_t (*workspaceBytes)(const DgradShape &, bool withBnSums);
  Status (*plain)(const DgradShape &, const void *dy, const void *filter, void *dx, void *workspace,
                  size_t workspaceBytes, cudaStream_t stream);
  Status (*bnSums)(const DgradShape &, const void *dy, const void *filter, void *g,
                   const BnSumsEpilogue &bn, void *workspace, size_t workspaceBytes,
                   cudaStream_t stream);
};

/// Defined for 64 and 128, each in its own unit.
template <int TileN> const TileKernels &tileKernels();
template <> const TileKernels &tileKernels<64>();
template <> const TileKernels &tileKernels<128>();

} // namespace rn::cuda::cutlass_dgrad

#endif // RN_RUNTIME_CUDA_CUTLASS_CUTLASS_DGRAD_INTERNAL_H
