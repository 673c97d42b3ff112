//===- ConvBackward.h - conv2d_backward and cbr_backward alike ---*- C++ -*-===//
//
// rn.conv2d_backward and rn.cbr_backward share the convolution half of a
// backward (input, filter, strides, input_grad and its addend) under the
// same accessor names: passes that rewrite that half visit either op
// through one generic callable.
//
//===----------------------------------------------------------------------===//

#ifndef RN_PASSES_CONVBACKWARD_H
#define RN_PASSES_CONVBACKWARD_H

#include "dialects/rn/RNOps.h"

namespace mlir::rn {

/// `fn(backward)` for a conv2d_backward or cbr_backward `op`, else
/// `otherwise`.
template <typename R, typename Fn> R onConvBackward(Operation *op, R otherwise, Fn fn) {
  if (auto backward = dyn_cast<Conv2dBackwardOp>(op))
    return fn(backward);
  if (auto backward = dyn_cast<CbrBackwardOp>(op))
    return fn(backward);
  return otherwise;
}

} // namespace mlir::rn

#endif // RN_PASSES_CONVBACKWARD_H
