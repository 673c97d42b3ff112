//===- cutlass_dgrad.h - Hopper dgrad with the BN backward's sums -*- C++
//-*-===//
//
// Issue 46's second step, a prototype not yet used by any op: the data
// gradient of a convolution whose input was relu(bn(x)), computed by
// CUTLASS's Hopper implicit GEMM (TMA, warp-specialized, sm_90a), with the
// first half of that batch norm's backward in the epilogue. The epilogue
// masks the gradient by the stored ReLU result, writes it (g, the BN's
// output gradient), and reduces per channel the two sums the BN backward
// needs, sum(g) and sum(g * (x - mean) * invStd), so that the pass that
// reads g and x again only to sum them is not needed. A plain dgrad of
// the same kernel family is beside it, to compare CUTLASS's mainloop with
// cuDNN's alone.
//
// f16 NHWC data, f32 accumulation and sums; filters KRSC (RN's OHWI).
// Callers check cutlassDgradSupports first. No CUTLASS type leaks out of
// this header: the kernels are instantiated once per tile width
// (cutlass_dgrad_kernels.cuh, cutlass_dgrad_n64.cu and _n128.cu), and
// cutlass_dgrad.cu holds the shape rules and the choice of width.
//
//===----------------------------------------------------------------------===//

#ifndef RN_RUNTIME_CUDA_CUTLASS_CUTLASS_DGRAD_H
#define RN_RUNTIME_CUDA_CUTLASS_CUTLASS_DGRAD_H

#include "runtime/core/status.h"

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace rn::cuda {

/// dy [n, p, q, k] -> dx [n, h, w, c] through the filter [k, r, s, c].
struct DgradShape {
  int64_t n = 0, h = 0, w = 0, c = 0; ///< dx (the forward's input)
  int64_t k = 0, r = 0, s = 0;        ///< output channels and filter size
  int64_t padH = 0, padW = 0, strideH = 1, strideW = 1;

  int64_t p() const { return (h + 2 * padH - r) / strideH + 1; }
  int64_t q() const { return (w + 2 * padW - s) / strideW + 1; }
};

/// The epilogue's extra operands: reluResult and x have dx's shape (f16),
/// mean and invStd are the BN's statistics (f32 [c]). partialG and
/// partialGXhat (f32 [cutlassDgradPartialRows(shape, tile)][c] each)
/// receive the sums per CTA row of 128 pixels: their column sums are
/// sum(g) and sum(g * xhat), which bnBackwardFromSums adds up.
struct BnSumsEpilogue {
  const void *reluResult = nullptr;
  const void *x = nullptr;
  const float *mean = nullptr;
  const float *invStd = nullptr;
  float *partialG = nullptr;
  float *partialGXhat = nullptr;
};

/// The CTA tile's width in dx's channels (its height is 128 pixels, its
/// depth 64 of the reduction). automatic: 128 for channel counts that are
/// multiples of 128 and more than 64, else 64 (a 128-wide tile would leave
/// half its columns idle at 64).
enum class DgradTile { automatic, n64, n128 };
const char *dgradTileName(DgradTile tile);

/// Rows of BnSumsEpilogue's partial sums: ceil(n * h * w / 128).
int64_t cutlassDgradPartialRows(const DgradShape &shape);

/// Whether the kernels take `shape` (unit strides: CUTLASS's strided sm90
/// dgrad is not checked here; channels multiples of 8, and with the BN sums
/// of the tile's width; a non-empty output; CUTLASS's can_implement), or
/// why not.
Status cutlassDgradSupports(const DgradShape &shape, bool withBnSums,
                            DgradTile tile = DgradTile::automatic);

/// Workspace bytes a call needs (the sums' per-tile partials and counters);
/// 0 for a shape the kernels do not take.
size_t cutlassDgradWorkspaceBytes(const DgradShape &shape, bool withBnSums,
                                  DgradTile tile = DgradTile::automatic);

/// dx = dgrad(dy, filter).
Status cutlassDgrad(const DgradShape &shape, const void *dy, const void *filter, void *dx,
                    void *workspace, size_t workspaceBytes, cudaStream_t stream,
                    DgradTile tile = DgradTile::automatic);

/// g = dgrad(dy, filter) * (reluResult > 0), and the BN backward's sums of
/// g (see BnSumsEpilogue).
Status cutlassDgradBnSums(const DgradShape &shape, const void *dy, const void *filter, void *g,
                          const BnSumsEpilogue &bn, void *workspace, size_t workspaceBytes,
                          cudaStream_t stream, DgradTile tile = DgradTile::automatic);

} // namespace rn::cuda

#endif // RN_RUNTIME_CUDA_CUTLASS_CUTLASS_DGRAD_H
