//===- cutlass_dgrad.cu - Shape rules and the choice of tile --------------===//
//
// cutlass_dgrad.h's entry points: the checks that need no CUTLASS type,
// then the tile width's kernels (cutlass_dgrad_n64.cu, _n128.cu). This unit
// includes no CUTLASS header.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/cutlass/cutlass_dgrad_internal.h"

#include <string>

namespace rn::cuda {
namespace cutlass_dgrad {

std::string describe(const DgradShape &s) {
  auto text = [](int64_t v) { return std::to_string(v); };
  return "dgrad dx[" + text(s.n) + "," + text(s.h) + "," + text(s.w) + "," + text(s.c) + "] w[" +
         text(s.k) + "," + text(s.r) + "," + text(s.s) + "," + text(s.c) + "] s" + text(s.strideH) +
         "," + text(s.strideW) + " p" + text(s.padH) + "," + text(s.padW);
}

} // namespace cutlass_dgrad

namespace {

using cutlass_dgrad::describe;
using cutlass_dgrad::kAlignment;
using cutlass_dgrad::TileKernels;

int64_t tileWidth(const DgradShape &s, DgradTile tile) {
  if (tile == DgradTile::automatic)
    tile = s.c > 64 && s.c % 128 == 0 ? DgradTile::n128 : DgradTile::n64;
  return tile == DgradTile::n64 ? 64 : 128;
}

Status shapeRule(const DgradShape &s) {
  if (s.n <= 0 || s.h <= 0 || s.w <= 0 || s.c <= 0 || s.k <= 0 || s.r <= 0 || s.s <= 0 ||
      s.strideH <= 0 || s.strideW <= 0 || s.padH < 0 || s.padW < 0)
    return Error(describe(s) + ": every extent and stride must be positive");
  if (s.c % kAlignment != 0 || s.k % kAlignment != 0)
    return Error(describe(s) + ": CUTLASS's f16 dgrad needs channel counts that are multiples of " +
                 std::to_string(kAlignment));
  if (s.h + 2 * s.padH < s.r || s.w + 2 * s.padW < s.s)
    return Error(describe(s) + ": the forward's output would be empty");
  if (s.strideH != 1 || s.strideW != 1)
    return Error(describe(s) + ": only unit strides here (CUTLASS's strided sm90 dgrad splits "
                               "the output into stride phases, which the epilogue's loads do not "
                               "follow yet)");
  return Status::success();
}

/// The sums' partial rows are [rows][c] only where c fills whole tiles.
Status bnSumsRule(const DgradShape &s, DgradTile tile) {
  if (s.c % tileWidth(s, tile) != 0)
    return Error(describe(s) +
                 ": the BN sums need channel counts that are multiples of the "
                 "tile's width, " +
                 std::to_string(tileWidth(s, tile)));
  return Status::success();
}

const TileKernels &kernelsFor(const DgradShape &s, DgradTile tile) {
  return tileWidth(s, tile) == 64 ? cutlass_dgrad::tileKernels<64>()
                                  : cutlass_dgrad::tileKernels<128>();
}

} // namespace

const char *dgradTileName(DgradTile tile) {
  switch (tile) {
  case DgradTile::automatic:
    return "automatic";
  case DgradTile::n64:
    return "128x64";
  case DgradTile::n128:
    return "128x128";
  }
  return "?";
}

int64_t cutlassDgradPartialRows(const DgradShape &shape) {
  return (shape.n * shape.h * shape.w + cutlass_dgrad::kTileRows - 1) / cutlass_dgrad::kTileRows;
}

Status cutlassDgradSupports(const DgradShape &shape, bool withBnSums, DgradTile tile) {
  RN_RETURN_IF_ERROR(shapeRule(shape));
  if (withBnSums)
    RN_RETURN_IF_ERROR(bnSumsRule(shape, tile));
  return kernelsFor(shape, tile).supports(shape, withBnSums);
}

size_t cutlassDgradWorkspaceBytes(const DgradShape &shape, bool withBnSums, DgradTile tile) {
  if (!shapeRule(shape).ok() || (withBnSums && !bnSumsRule(shape, tile).ok()))
    return 0;
  return kernelsFor(shape, tile).workspaceBytes(shape, withBnSums);
}

Status cutlassDgrad(const DgradShape &shape, const void *dy, const void *filter, void *dx,
                    void *workspace, size_t workspaceBytes, cudaStream_t stream, DgradTile tile) {
  RN_RETURN_IF_ERROR(shapeRule(shape));
  return kernelsFor(shape, tile).plain(shape, dy, filter, dx, workspace, workspaceBytes, stream);
}

Status cutlassDgradBnSums(const DgradShape &shape, const void *dy, const void *filter, void *g,
                          const BnSumsEpilogue &bn, void *workspace, size_t workspaceBytes,
                          cudaStream_t stream, DgradTile tile) {
  RN_RETURN_IF_ERROR(shapeRule(shape));
  RN_RETURN_IF_ERROR(bnSumsRule(shape, tile));
  if (!bn.reluResult || !bn.x || !bn.mean || !bn.invStd || !bn.partialG || !bn.partialGXhat)
    return Error(describe(shape) + ": the BN sums epilogue needs every one of its pointers");
  return kernelsFor(shape, tile)
      .bnSums(shape, dy, filter, g, bn, workspace, workspaceBytes, stream);
}

} // namespace rn::cuda
