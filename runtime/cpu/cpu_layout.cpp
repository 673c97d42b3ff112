//===- cpu_layout.cpp - Concatenation, split and channel shuffle ----------===//
//
// The ops that only move channels: each result element is one input
// element, stored in the result's dtype (the same dtype as the input, so
// nothing is rounded). Every tensor is NHWC or [N, C]; a "row" is the C
// channels of one pixel, so a channel slice is a run of each row.
//
//===----------------------------------------------------------------------===//

#include "runtime/cpu/cpu_kernels_detail.h"
#include "runtime/cpu/cpu_ops.h"

#include <string>

namespace rn::cpu {
namespace {

namespace ot = op_table;
using detail::Check;
using detail::shapeString;

/// Checks `slices` against `whole` as concat and split see them: two or
/// more, each of the whole's rank and dtype with its leading dimensions,
/// the last dimensions adding up to the whole's. Returns the row count.
int64_t checkSlices(Check &check, const char *wholeWhat, const TensorView &whole,
                    const char *sliceWhat, TensorList slices) {
  if (check.view(wholeWhat, whole)
          .require(whole.rank() == 2 || whole.rank() == 4, wholeWhat,
                   " must be NHWC or [N, C], got ", shapeString(whole.shape))
          .require(slices.size() >= 2, "expects at least 2 ", sliceWhat, "s, got ",
                   slices.size())
          .failed())
    return 0;
  int64_t channels = 0;
  for (size_t i = 0; i < slices.size(); ++i) {
    const std::string what = std::string(sliceWhat) + " #" + std::to_string(i);
    const TensorView &slice = slices[i];
    if (check.view(what.c_str(), slice)
            .require(slice.rank() == whole.rank(), what, " must have rank ", whole.rank(),
                     " as ", wholeWhat, " ", shapeString(whole.shape), ", got ",
                     shapeString(slice.shape))
            .failed())
      return 0;
    Shape expected = whole.shape;
    expected.back() = slice.shape.back();
    if (check.shape(what.c_str(), slice, expected)
            .require(slice.dtype == whole.dtype, what, " has another dtype than ", wholeWhat)
            .require(slice.shape.back() >= 1, what, " has no channels")
            .failed())
      return 0;
    channels += slice.shape.back();
  }
  if (check.require(channels == whole.shape.back(), sliceWhat, "s' channels add up to ",
                    channels, ", ", wholeWhat, " has ", whole.shape.back())
          .failed())
    return 0;
  return whole.numel() / whole.shape.back();
}

} // namespace

KernelStatus concat(TensorList inputs, const TensorView &result) {
  Check check("concat");
  const int64_t rows = checkSlices(check, "result", result, "input", inputs);
  if (check.failed())
    return check.status();
  const int64_t width = result.shape.back();
  int64_t offset = 0;
  for (const TensorView &input : inputs) {
    const int64_t c = input.shape.back();
    for (int64_t row = 0; row < rows; ++row)
      for (int64_t k = 0; k < c; ++k)
        result.data[row * width + offset + k] = input.data[row * c + k];
    offset += c;
  }
  return {};
}

KernelStatus split(const TensorView &input, TensorList results) {
  Check check("split");
  const int64_t rows = checkSlices(check, "input", input, "result", results);
  if (check.failed())
    return check.status();
  const int64_t width = input.shape.back();
  int64_t offset = 0;
  for (const TensorView &result : results) {
    const int64_t c = result.shape.back();
    for (int64_t row = 0; row < rows; ++row)
      for (int64_t k = 0; k < c; ++k)
        result.data[row * c + k] = input.data[row * width + offset + k];
    offset += c;
  }
  return {};
}

KernelStatus channelShuffle(const TensorView &input, int64_t groups, const TensorView &result) {
  Check check("channel_shuffle");
  if (check.rank("input", input, 4, "NHWC").shape("result", result, input.shape).failed())
    return check.status();
  const int64_t c = input.shape.back();
  if (check.require(groups >= 1 && c % groups == 0, "groups ", groups,
                    " must be positive and divide the ", c, " channels")
          .require(result.dtype == input.dtype, "result has another dtype than input")
          .failed())
    return check.status();
  const int64_t perGroup = c / groups, rows = input.numel() / c;
  for (int64_t row = 0; row < rows; ++row)
    for (int64_t i = 0; i < groups; ++i)
      for (int64_t j = 0; j < perGroup; ++j)
        result.data[row * c + j * groups + i] = input.data[row * c + i * perGroup + j];
  return {};
}

namespace {

KernelStatus runConcat(const OpRun &r) {
  using namespace ot::concat;
  return concat(r.inList(operand::inputs), r.out(result::result));
}
KernelStatus runSplit(const OpRun &r) {
  using namespace ot::split;
  const IdList ids = r.outIds(result::results);
  return split(r.in(operand::input), r.views(ids, 0, ids.size()));
}
KernelStatus runChannelShuffle(const OpRun &r) {
  using namespace ot::channel_shuffle;
  return channelShuffle(r.in(operand::input), attrs::groups(r.node), r.out(result::result));
}

} // namespace

const std::vector<CpuOp> &layoutOps() {
  static const std::vector<CpuOp> ops = {
      {OpKind::concat, runConcat},
      {OpKind::split, runSplit},
      {OpKind::channel_shuffle, runChannelShuffle},
  };
  return ops;
}

} // namespace rn::cpu
