//===- ops_conv_linear.cpp - GPU launchers of conv, linear and CBR ops ----===//
//
// conv2d, conv2d_backward, linear, linear_backward, cbr_forward,
// conv_bn_stats, cbr_backward and cbr_inference, with the operand order
// and part split of the CPU's entries (cpu_conv.cpp, cpu_linear.cpp,
// cpu_fused.cpp); the attributes through op_attrs.h's readers:
//
//   conv2d          x, w[, b] -> y
//   conv2d_backward dy, x, w, dwAcc[, dbAcc] -> [dx,] dw[, db]
//   linear          x, W[, b] -> y
//   linear_backward dy, x, W, dWAcc[, dbAcc] -> [dx,] dW[, db]
//   cbr_forward     x, w, gamma, beta[, pScale, pBias] -> y, convOut, mean, invStd
//   conv_bn_stats   x, w[, pScale, pBias] -> convOut, mean, invStd
//   cbr_backward    dy, x, w, convOut, gamma, mean, invStd, dwAcc,
//                   dgammaAcc, dbetaAcc[, reluOut | reluBeta][, xScale, xBias]
//                   [, dxAddend] -> convOutGrad, [dx,] dw, dgamma, dbeta
//   cbr_inference   x, w, gamma, beta, runningMean, runningVar -> y
//
// The prologue pairs are rn-fuse-bn-prologue's: the convolution reads
// relu(x * pScale + pBias) per input channel instead of x (the previous
// layer's BN apply + ReLU, never stored), and cbr_backward's filter
// gradient reads its x through (xScale, xBias) likewise. They run on
// cuDNN's scale-bias-ReLU graphs (conv.h), which take f16 only.
//
// dx is there when the node has an input_grad result. Forking ops run one
// part per launch (weight_grad, bias_grad, input_grad, bn_grad); a launch
// with part -1 runs all the node's parts in order (the roles the operands
// imply when the node lists none). Nothing fuses across parts or nodes.
//
// Workspace layouts (prepare returns their size): cbr_forward and
// conv_bn_stats keep the BN statistics' partials (bnStatsWorkspaceBytes),
// or with a genstats graph (a prologue, or RN_CONV_GENSTATS=1) its sums,
// at the front of the stream's workspace and give cuDNN the rest;
// cbr_inference keeps the convolution output there when it cannot be
// written into y (y's dtype differs from x's), and runs the batch norm in
// place in y otherwise.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/align.h"
#include "runtime/core/op_attrs.h"
#include "runtime/core/op_registry.h"
#include "runtime/core/op_table.h"
#include "runtime/cuda/check.h"
#include "runtime/cuda/conv.h"
#include "runtime/cuda/conv_kernels.h"
#include "runtime/cuda/gemm.h"
#include "runtime/cuda/kernels.h"
#include "runtime/cuda/norm_kernels.h"
#include "runtime/cuda/op_launch.h"

#include <algorithm>
#include <array>
#include <functional>
#include <optional>
#include <string>

namespace rn::cuda {
namespace {

/// The convolution geometry of a node of an op with conv2d's attributes,
/// as the CPU executor reads it (cpu::convAttrsOf): `Attrs` is the op's
/// op_table::<op>::attrs.
template <class Attrs> ConvParams convParamsOf(const Node &node) {
  ConvParams p;
  p.strides = Attrs::strides_pair(node, {1, 1});
  p.padding = Attrs::padding_pair(node, {0, 0});
  p.dilation = Attrs::dilation_pair(node, {1, 1});
  p.groups = Attrs::groups(node, 1);
  return p;
}

enum class Role : uint8_t { unknown, weight_grad, bias_grad, input_grad, bn_grad };

Role roleOf(std::string_view role) {
  if (role == "weight_grad")
    return Role::weight_grad;
  if (role == "bias_grad")
    return Role::bias_grad;
  if (role == "input_grad")
    return Role::input_grad;
  if (role == "bn_grad")
    return Role::bn_grad;
  return Role::unknown;
}

Status rank(const OpLaunch &l, const DeviceTensor &t, int64_t r, const char *what) {
  if (t.rank() != r)
    return Error(l.node.op + ": " + what + " must have rank " + std::to_string(r));
  return Status::success();
}

std::array<int64_t, 4> shape4(const DeviceTensor &t) {
  return {t.dim(0), t.dim(1), t.dim(2), t.dim(3)};
}

/// The ConvCall of x [N,H,W,C], w [O,KH,KW,C/g] and y (or dy) [N,OH,OW,O]
/// with the node's geometry `params`.
Result<ConvCall> convCall(const OpLaunch &l, const ConvParams &params, ConvKind kind,
                          const DeviceTensor &x, const DeviceTensor &w, const DeviceTensor &y,
                          DType gradType) {
  for (const DeviceTensor *t : {&x, &w, &y})
    if (t->rank() != 4)
      return Error(l.node.op + ": convolution operands must have rank 4 (NHWC, OHWI)");
  ConvCall c;
  c.kind = kind;
  c.params = params;
  c.x = shape4(x);
  c.w = shape4(w);
  c.y = shape4(y);
  c.xType = x.dtype;
  c.wType = w.dtype;
  c.yType = y.dtype;
  c.gradType = gradType;
  return c;
}

/// The stream with the first `reserved` bytes of its workspace kept back.
StreamResources after(const StreamResources &s, size_t reserved) {
  StreamResources r = s;
  r.workspace = s.workspace ? static_cast<char *>(s.workspace) + reserved : nullptr;
  r.workspaceBytes = s.workspaceBytes > reserved ? s.workspaceBytes - reserved : 0;
  return r;
}

/// A convolution's scale-bias-ReLU prologue (rn-fuse-bn-prologue): the
/// per-input-channel scale and bias it reads its input x through,
/// relu(x * scale + bias); both null without one.
struct Prologue {
  const DeviceTensor *scale = nullptr;
  const DeviceTensor *bias = nullptr;
  explicit operator bool() const { return scale != nullptr; }
};

/// An error unless `p` can run on cuDNN's scale-bias-ReLU graphs: x, scale
/// and bias f16 (the engines take fp16 scale and bias; the dialect allows
/// other float types, which only the CPU runs), scale and bias [C] of x
/// [N,H,W,C], groups 1 (of the node's geometry `params`).
Status checkPrologue(const OpLaunch &l, const ConvParams &params, const DeviceTensor &x,
                     const Prologue &p) {
  if (x.dtype != DType::f16 || p.scale->dtype != DType::f16 || p.bias->dtype != DType::f16)
    return Error(l.node.op + ": needs f16 prologue operands and input on the GPU (cuDNN's " +
                 "scale-bias-ReLU prologue takes fp16), got input " +
                 std::string(dtypeName(x.dtype)) + ", scale " +
                 std::string(dtypeName(p.scale->dtype)) + ", bias " +
                 std::string(dtypeName(p.bias->dtype)));
  const int64_t channels = x.rank() == 4 ? x.dim(3) : -1;
  if (p.scale->shape != std::vector<int64_t>{channels} || p.bias->shape != p.scale->shape)
    return Error(l.node.op + ": the prologue's scale " + detail::shapeString(p.scale->shape) +
                 " and bias " + detail::shapeString(p.bias->shape) +
                 " must have one element per channel of the input " +
                 detail::shapeString(x.shape));
  if (int64_t groups = params.groups; groups != 1)
    return Error(l.node.op + ": a prologue needs groups 1, got " + std::to_string(groups));
  return Status::success();
}

//===----------------------------------------------------------------------===//
// conv2d
//===----------------------------------------------------------------------===//

Result<ConvCall> conv2dCall(const OpLaunch &l) {
  using namespace op_table::conv2d;
  return convCall(l, convParamsOf<attrs>(l.node), ConvKind::forward, l.operand(operand::input),
                  l.operand(operand::filter), l.result(result::result), DType::f32);
}

Result<size_t> conv2dPrepare(const OpLaunch &l) {
  Result<ConvCall> call = conv2dCall(l);
  if (!call.ok())
    return call.error();
  return l.conv.prepare(*call, l.stream);
}

Status conv2dLaunch(const OpLaunch &l) {
  using namespace op_table::conv2d;
  Result<ConvCall> call = conv2dCall(l);
  if (!call.ok())
    return call.error();
  const DeviceTensor &y = l.result(result::result);
  ConvBuffers b;
  b.x = l.operand(operand::input).data;
  b.w = l.operand(operand::filter).data;
  b.y = y.data;
  if (Status s = l.conv.run(*call, b, l.stream); !s.ok())
    return s;
  if (const DeviceTensor *bias = l.operandIfAny(operand::bias))
    return addBias(y.data, y.dtype, bias->data, bias->dtype, y.numel() / y.dim(3), y.dim(3),
                   l.stream.stream);
  return Status::success();
}

//===----------------------------------------------------------------------===//
// conv2d_backward and linear_backward (the same operand layout)
//===----------------------------------------------------------------------===//

/// The roles a launch runs, in order (a fixed array: launches allocate
/// nothing).
struct Roles {
  std::array<Role, 4> role{};
  size_t count = 0;
  void add(Role r) {
    if (count < role.size())
      role[count++] = r;
  }
  const Role *begin() const { return role.data(); }
  const Role *end() const { return role.data() + count; }
};

/// The role of part `part`; for part -1 those of all the node's parts, or
/// those the registry gives a node that lists none (the op's parts by
/// what it computes: op_registry's forkParts).
Roles rolesOf(const OpLaunch &l) {
  Roles roles;
  if (l.part >= 0) {
    roles.add(size_t(l.part) < l.node.parts.size() ? roleOf(l.node.parts[size_t(l.part)].role)
                                                   : Role::unknown);
  } else if (!l.node.parts.empty()) {
    for (const Part &p : l.node.parts)
      roles.add(roleOf(p.role));
  } else if (l.node.info && l.node.info->forkParts) {
    for (std::string_view role : l.node.info->forkParts({l.node.layout, l.node.attributes}))
      roles.add(roleOf(role));
  }
  return roles;
}

/// prepare (when `launch` is false) or launch of one part of
/// conv2d_backward; returns the workspace bytes it uses.
/// The filter gradient of a backward part: dw = dwAcc + wgrad(x, dy), with
/// w giving the filter's shape; with a prologue, that of a convolution that
/// read x through it, dw = dwAcc + wgrad(relu(x * scale + bias), dy).
/// Prepares (returns the workspace bytes) or runs it.
Result<size_t> filterGradient(const OpLaunch &l, const ConvParams &params, bool launch,
                              const DeviceTensor &x, const DeviceTensor &w,
                              const DeviceTensor &dy, const DeviceTensor &dwAcc,
                              const DeviceTensor &dw, const Prologue &prologue = {}) {
  if (prologue)
    if (Status s = checkPrologue(l, params, x, prologue); !s.ok())
      return s.error();
  Result<ConvCall> call = convCall(
      l, params, prologue ? ConvKind::backward_filter_scale_bias_relu : ConvKind::backward_filter,
      x, w, dy, dw.dtype);
  if (!call.ok())
    return call.error();
  // A zero-padded filter's gradient goes to its parameter's accumulator,
  // which has the first channels only (rn-pad-conv-channels).
  const bool sameShape = dw.shape == w.shape && dwAcc.shape == w.shape;
  const bool firstChannels = dw.rank() == 4 && dwAcc.shape == dw.shape &&
                             call->params.groups == 1 && dw.dim(0) == w.dim(0) &&
                             dw.dim(1) == w.dim(1) && dw.dim(2) == w.dim(2) &&
                             dw.dim(3) < w.dim(3);
  if (!sameShape && !firstChannels)
    return Error(l.node.op + ": the filter gradient " + detail::shapeString(dw.shape) +
                 " and its accumulator " + detail::shapeString(dwAcc.shape) +
                 " must have the filter's shape " + detail::shapeString(w.shape) +
                 " or, with groups 1, fewer input channels");
  if (firstChannels)
    call->gradChannels = dw.dim(3);
  if (!launch) {
    Result<size_t> bytes = l.conv.prepare(*call, l.stream);
    if (!bytes.ok())
      return named(l, bytes.error()).error();
    return bytes;
  }
  ConvBuffers b;
  b.x = x.data;
  b.dy = dy.data;
  b.dwAcc = dwAcc.data;
  b.dw = dw.data;
  if (prologue) {
    b.scale = prologue.scale->data;
    b.bias = prologue.bias->data;
  }
  if (Status s = named(l, l.conv.run(*call, b, l.stream)); !s.ok())
    return s.error();
  return size_t(0);
}

/// The input gradient of a backward part: dx = dgrad(dy, w), plus
/// `addend` in the dgrad's epilogue when there is one (rn-fold-gradient-adds).
Result<size_t> dataGradient(const OpLaunch &l, const ConvParams &params, bool launch,
                            const DeviceTensor &dx, const DeviceTensor &w, const DeviceTensor &dy,
                            const DeviceTensor *addend) {
  if (addend && (addend->shape != dx.shape || addend->dtype != dx.dtype))
    return Error(l.node.op + ": the input gradient addend " + detail::shapeString(addend->shape) +
                 " " + std::string(dtypeName(addend->dtype)) + " must have the input gradient's " +
                 detail::shapeString(dx.shape) + " " + std::string(dtypeName(dx.dtype)));
  Result<ConvCall> call =
      convCall(l, params, addend ? ConvKind::backward_data_add : ConvKind::backward_data, dx, w,
               dy, DType::f32);
  if (!call.ok())
    return call.error();
  if (!launch)
    return l.conv.prepare(*call, l.stream);
  ConvBuffers b;
  b.w = w.data;
  b.dy = dy.data;
  b.dx = dx.data;
  b.residual = addend ? addend->data : nullptr;
  if (Status s = l.conv.run(*call, b, l.stream); !s.ok())
    return s.error();
  return size_t(0);
}

Result<size_t> conv2dBackwardPart(const OpLaunch &l, Role role, bool launch) {
  using namespace op_table::conv2d_backward;
  const DeviceTensor &dy = l.operand(operand::output_grad);
  switch (role) {
  case Role::weight_grad:
    return filterGradient(l, convParamsOf<attrs>(l.node), launch, l.operand(operand::input),
                          l.operand(operand::filter), dy, l.operand(operand::filter_grad_acc),
                          l.result(result::filter_grad));
  case Role::bias_grad: {
    const DeviceTensor *biasAcc = l.operandIfAny(operand::bias_grad_acc);
    const DeviceTensor *db = l.resultIfAny(result::bias_grad);
    if (!biasAcc || !db)
      return Error(l.node.op + ": bias_grad without a bias accumulator");
    if (Status s = rank(l, dy, 4, "dy"); !s.ok())
      return s.error();
    int64_t channels = dy.dim(3), rows = dy.numel() / std::max<int64_t>(channels, 1);
    size_t bytes = columnSumsWorkspaceBytes(rows, channels);
    if (!launch)
      return bytes;
    if (Status s = columnSums(dy.data, dy.dtype, rows, channels, biasAcc->data, db->data,
                              db->dtype, nullptr, l.stream.workspace, l.stream.workspaceBytes,
                              l.stream.stream);
        !s.ok())
      return s.error();
    return bytes;
  }
  case Role::input_grad: {
    const DeviceTensor *dx = l.resultIfAny(result::input_grad);
    if (!dx)
      return Error(l.node.op + ": input_grad part without an input_grad result");
    return dataGradient(l, convParamsOf<attrs>(l.node), launch, *dx, l.operand(operand::filter),
                        dy, l.operandIfAny(operand::input_grad_addend));
  }
  default:
    return Error(l.node.op + ": unknown part");
  }
}

/// The GemmCalls of linear_backward's parts (dy [N,out], x [N,in], W [out,in]).
Result<GemmCall> linearBackwardCall(const OpLaunch &l, Role role) {
  using namespace op_table::linear_backward;
  const DeviceTensor &dy = l.operand(operand::output_grad), &x = l.operand(operand::input),
                     &w = l.operand(operand::weight);
  if (dy.rank() != 2 || w.rank() != 2 || x.rank() < 2)
    return Error(l.node.op + ": dy and W must be matrices, x at least rank 2");
  int64_t batch = dy.dim(0), out = dy.dim(1), in = w.dim(1);
  if (w.dim(0) != out || x.dim(0) != batch || x.numel() != batch * in)
    return Error(l.node.op + ": the shapes of dy, x and W do not agree");
  GemmCall c;
  if (role == Role::weight_grad) { // dW[out,in] = dWAcc + dy^T x
    c.m = out;
    c.n = in;
    c.k = batch;
    c.transA = true;
    c.accumulate = true;
    c.aType = dy.dtype;
    c.bType = x.dtype;
    c.cType = l.operand(operand::weight_grad_acc).dtype;
    c.dType = l.result(result::weight_grad).dtype;
  } else { // dx[N,in] = dy W
    c.m = batch;
    c.n = in;
    c.k = out;
    c.aType = dy.dtype;
    c.bType = w.dtype;
    c.cType = c.dType = l.result(result::input_grad).dtype;
  }
  return c;
}

Result<size_t> linearBackwardPart(const OpLaunch &l, Role role, bool launch) {
  using namespace op_table::linear_backward;
  const DeviceTensor &dy = l.operand(operand::output_grad);
  switch (role) {
  case Role::weight_grad:
  case Role::input_grad: {
    if (role == Role::input_grad && !l.resultIfAny(result::input_grad))
      return Error(l.node.op + ": input_grad part without an input_grad result");
    Result<GemmCall> call = linearBackwardCall(l, role);
    if (!call.ok())
      return call.error();
    if (!launch)
      return l.gemm.prepare(*call, l.stream);
    GemmBuffers b;
    b.a = dy.data;
    if (role == Role::weight_grad) {
      b.b = l.operand(operand::input).data;
      b.c = l.operand(operand::weight_grad_acc).data;
      b.d = l.result(result::weight_grad).data;
    } else {
      b.b = l.operand(operand::weight).data;
      b.d = l.result(result::input_grad).data;
    }
    if (Status s = l.gemm.run(*call, b, l.stream); !s.ok())
      return s.error();
    return size_t(0);
  }
  case Role::bias_grad: {
    const DeviceTensor *biasAcc = l.operandIfAny(operand::bias_grad_acc);
    const DeviceTensor *db = l.resultIfAny(result::bias_grad);
    if (!biasAcc || !db)
      return Error(l.node.op + ": bias_grad without a bias accumulator");
    if (Status s = rank(l, dy, 2, "dy"); !s.ok())
      return s.error();
    size_t bytes = columnSumsWorkspaceBytes(dy.dim(0), dy.dim(1));
    if (!launch)
      return bytes;
    if (Status s = columnSums(dy.data, dy.dtype, dy.dim(0), dy.dim(1), biasAcc->data, db->data,
                              db->dtype, nullptr, l.stream.workspace, l.stream.workspaceBytes,
                              l.stream.stream);
        !s.ok())
      return s.error();
    return bytes;
  }
  default:
    return Error(l.node.op + ": unknown part");
  }
}

/// Runs `part` over the roles of the launch: the largest workspace of
/// the parts it prepares, or the first error.
template <typename PartFn>
Result<size_t> forParts(const OpLaunch &l, bool launch, PartFn part) {
  size_t most = 0;
  for (Role role : rolesOf(l)) {
    Result<size_t> bytes = part(l, role, launch);
    if (!bytes.ok())
      return bytes.error();
    most = std::max(most, *bytes);
  }
  return most;
}

Result<size_t> conv2dBackwardPrepare(const OpLaunch &l) {
  return forParts(l, false, conv2dBackwardPart);
}
Status conv2dBackwardLaunch(const OpLaunch &l) {
  Result<size_t> r = forParts(l, true, conv2dBackwardPart);
  return r.ok() ? Status::success() : Status(r.error());
}

Result<size_t> linearBackwardPrepare(const OpLaunch &l) {
  return forParts(l, false, linearBackwardPart);
}
Status linearBackwardLaunch(const OpLaunch &l) {
  Result<size_t> r = forParts(l, true, linearBackwardPart);
  return r.ok() ? Status::success() : Status(r.error());
}

//===----------------------------------------------------------------------===//
// linear
//===----------------------------------------------------------------------===//

/// y[N,out] = x[N,in] W[out,in]^T (+ b[out]).
Result<GemmCall> linearCall(const OpLaunch &l) {
  using namespace op_table::linear;
  const DeviceTensor &x = l.operand(operand::input), &w = l.operand(operand::weight),
                     &y = l.result(result::result);
  const DeviceTensor *bias = l.operandIfAny(operand::bias);
  if (w.rank() != 2 || y.rank() != 2 || x.rank() < 2)
    return Error(l.node.op + ": W and y must be matrices, x at least rank 2");
  int64_t batch = x.dim(0), in = w.dim(1), out = w.dim(0);
  if (x.numel() != batch * in || y.dim(0) != batch || y.dim(1) != out)
    return Error(l.node.op + ": the shapes of x, W and y do not agree");
  GemmCall c;
  c.m = batch;
  c.n = out;
  c.k = in;
  c.transB = true;
  c.bias = bias != nullptr;
  c.aType = x.dtype;
  c.bType = w.dtype;
  c.cType = c.dType = y.dtype;
  if (c.bias)
    c.biasType = bias->dtype;
  return c;
}

Result<size_t> linearPrepare(const OpLaunch &l) {
  Result<GemmCall> call = linearCall(l);
  if (!call.ok())
    return call.error();
  return l.gemm.prepare(*call, l.stream);
}

Status linearLaunch(const OpLaunch &l) {
  Result<GemmCall> call = linearCall(l);
  if (!call.ok())
    return call.error();
  GemmBuffers b;
  using namespace op_table::linear;
  const DeviceTensor *bias = l.operandIfAny(operand::bias);
  b.a = l.operand(operand::input).data;
  b.b = l.operand(operand::weight).data;
  b.bias = bias ? bias->data : nullptr;
  b.d = l.result(result::result).data;
  return l.gemm.run(*call, b, l.stream);
}

//===----------------------------------------------------------------------===//
// cbr_forward, conv_bn_stats, cbr_inference
//===----------------------------------------------------------------------===//

// The batch statistics come either from one vectorized Welford pass over
// the convolution's output (bnBatchStats) or from cuDNN's conv + genstats
// graph (ConvKind::forward_stats: per-channel sums from the convolution's
// epilogue, into the workspace; bnFinalizeStats turns them into mean and
// inv_std, from sum and sum of squares in f32, not Welford), whichever
// ConvRunner::chooseGenstats found faster for the call at load: genstats
// pays on some shapes and costs on others (docs/benchmarks.md). The
// forward_stats path's own fallback, columnSums, is never used here: a
// plain per-element reduction several times slower than the statistics
// pass.

// With a prologue (rn-fuse-bn-prologue) the convolution is always
// forward_scale_bias_relu_stats, NVIDIA's MLPerf pattern: the previous
// BN apply + ReLU as its prologue and genstats as its epilogue, the sums
// in the workspace as above. It has no fallback: without a plan, prepare
// fails (the artifact must then be compiled without fuse-bn-prologue).

/// Workspace bytes of a genstats graph's sums: sum, then sum of squares.
size_t sumBytesOf(const ConvCall &call) { return 2 * alignUp(size_t(call.y[3]) * sizeof(float)); }

/// The forward_stats twin of cbr_forward's convolution: the call, the
/// workspace bytes its sums take (sum, then sum of squares) and the stream
/// resources after them for the convolution's own workspace.
struct GenstatsConv {
  ConvCall call;
  size_t sumBytes;
  StreamResources rest;
};

/// Where genstats may be chosen (the runner tries it) and its sums fit
/// the stream's workspace; else nullopt.
std::optional<GenstatsConv> genstatsConv(const OpLaunch &l, const ConvCall &forward) {
  const size_t sumBytes = sumBytesOf(forward);
  if (!l.conv.triesGenstats() || l.stream.workspaceBytes < sumBytes)
    return std::nullopt;
  ConvCall call = forward;
  call.kind = ConvKind::forward_stats;
  return GenstatsConv{call, sumBytes, after(l.stream, sumBytes)};
}

/// The convolution of cbr_forward and conv_bn_stats, convOut = conv(x, w)
/// or conv(relu(x * scale + bias), w), with the batch statistics of
/// convOut as stored (mean and inv_std, f32 [O]).
struct StatsConv {
  const DeviceTensor &x, &w;
  Prologue prologue;
  const DeviceTensor &convOut, &mean, &invStd;
  ConvParams params; ///< the node's geometry
  double epsilon;    ///< the statistics' epsilon
};

/// The node's prologue pair (operands `scale` and `bias`), or none.
Prologue prologueOf(const OpLaunch &l, size_t scale, size_t bias) {
  return Prologue{l.operandIfAny(scale), l.operandIfAny(bias)};
}

/// The prologue's call: forward_scale_bias_relu_stats, checked.
Result<ConvCall> prologueStatsCall(const OpLaunch &l, const StatsConv &sc) {
  if (Status s = checkPrologue(l, sc.params, sc.x, sc.prologue); !s.ok())
    return s.error();
  return convCall(l, sc.params, ConvKind::forward_scale_bias_relu_stats, sc.x, sc.w, sc.convOut,
                  DType::f32);
}

/// Milliseconds per call, on `stream`, of `body` (CUDA events around
/// kTimedCalls calls after two untimed ones).
Result<double> streamMs(cudaStream_t stream, const std::function<Status()> &body) {
  constexpr int kTimedCalls = 10;
  for (int i = 0; i < 2; ++i)
    if (Status s = body(); !s.ok())
      return s.error();
  cudaEvent_t start = nullptr, stop = nullptr;
  RN_CUDA_TRY(cudaEventCreate(&start));
  Status timed = [&]() -> Status {
    RN_CUDA_TRY(cudaEventCreate(&stop));
    RN_CUDA_TRY(cudaEventRecord(start, stream));
    for (int i = 0; i < kTimedCalls; ++i)
      if (Status s = body(); !s.ok())
        return s;
    RN_CUDA_TRY(cudaEventRecord(stop, stream));
    RN_CUDA_TRY(cudaEventSynchronize(stop));
    return Status::success();
  }();
  float ms = 0;
  if (timed.ok())
    timed = RN_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
  cudaEventDestroy(start);
  if (stop)
    cudaEventDestroy(stop);
  if (!timed.ok())
    return timed.error();
  return double(ms) / kTimedCalls;
}

/// chooseGenstats' measurements at load: the statistics pass over the
/// convolution's output (into the node's mean and inv_std), and turning a
/// genstats graph's sums (`sums` bytes, sumBytesOf) into statistics, on
/// the node's stream, with their scratch allocated here and freed after
/// (load time, not a step).
Result<ConvRunner::StatsPassTimes> timeStatsPasses(const StatsConv &sc,
                                                   const StreamResources &stream, size_t sums) {
  const int64_t channels = sc.convOut.shape.empty() ? 0 : sc.convOut.shape.back();
  if (!sc.convOut.data || !sc.mean.data || !sc.invStd.data || channels <= 0)
    return Error("the statistics pass cannot be timed: its buffers are not allocated");
  const size_t partials = bnStatsWorkspaceBytes(sc.convOut.shape);
  void *scratch = nullptr;
  RN_CUDA_TRY(cudaMalloc(&scratch, partials + sums));
  char *sumBytes = static_cast<char *>(scratch) + partials;
  float *sum = reinterpret_cast<float *>(sumBytes);
  float *sumSq = reinterpret_cast<float *>(sumBytes + sums / 2);
  Result<ConvRunner::StatsPassTimes> times = [&]() -> Result<ConvRunner::StatsPassTimes> {
    RN_CUDA_TRY(cudaMemsetAsync(sum, 0, sums, stream.stream));
    Result<double> pass = streamMs(stream.stream, [&] {
      return bnBatchStats(sc.convOut, 1e-5, sc.mean, sc.invStd, stream.stream, scratch, partials);
    });
    if (!pass.ok())
      return pass.error();
    Result<double> finalize = streamMs(stream.stream, [&] {
      return bnFinalizeStats(sum, sumSq, channels, sc.convOut.numel() / channels, 1e-5, sc.mean,
                             sc.invStd, stream.stream);
    });
    if (!finalize.ok())
      return finalize.error();
    return ConvRunner::StatsPassTimes{*pass, *finalize};
  }();
  cudaFree(scratch);
  return times;
}

Result<size_t> statsConvPrepare(const OpLaunch &l, const StatsConv &sc) {
  if (sc.prologue) {
    Result<ConvCall> call = prologueStatsCall(l, sc);
    if (!call.ok())
      return call.error();
    const size_t sumBytes = sumBytesOf(*call);
    if (l.stream.workspaceBytes < sumBytes)
      return Error(l.node.op + ": the workspace of stream " + std::string(l.stream.name) +
                   " cannot hold the statistics' sums (" + std::to_string(sumBytes) + " bytes)");
    Result<size_t> conv = l.conv.prepare(*call, after(l.stream, sumBytes));
    if (!conv.ok())
      return Error(l.node.op + ": cuDNN has no plan for the convolution with the BN prologue " +
                   "and statistics (" + conv.error().message() +
                   "); compile the artifact without fuse-bn-prologue");
    return sumBytes + *conv;
  }
  Result<ConvCall> call =
      convCall(l, sc.params, ConvKind::forward, sc.x, sc.w, sc.convOut, DType::f32);
  if (!call.ok())
    return call.error();
  size_t scratch = bnStatsWorkspaceBytes(sc.convOut.shape);
  if (l.stream.workspaceBytes < scratch)
    return Error(l.node.op + ": the workspace cannot hold the BN statistics' partials");
  Result<size_t> conv = l.conv.prepare(*call, after(l.stream, scratch));
  if (!conv.ok())
    return conv.error();
  // The genstats twin: prepared as an alternative (its plan time is not
  // the convolution's floor), kept where chooseGenstats finds it faster.
  if (std::optional<GenstatsConv> g = genstatsConv(l, *call)) {
    Result<size_t> fused = l.conv.prepare(g->call, g->rest, /*countPlanTime=*/false);
    if (fused.ok() && l.conv.statsFused(g->call, g->rest)) {
      auto time = [&] { return timeStatsPasses(sc, l.stream, g->sumBytes); };
      Result<bool> chosen = l.conv.chooseGenstats(g->call, *call, g->rest, time);
      if (!chosen.ok())
        return chosen.error();
      if (*chosen)
        return g->sumBytes + *fused;
    }
  }
  return scratch + *conv;
}

/// Runs `call`, a genstats graph, with its sums at the front of the
/// workspace, then turns them into the statistics.
Status statsFromSums(const OpLaunch &l, const StatsConv &sc, const ConvCall &call, ConvBuffers b,
                     size_t sumBytes, double epsilon) {
  if (l.stream.workspaceBytes < sumBytes || !l.stream.workspace)
    return Error(l.node.op + ": the workspace cannot hold the statistics' sums");
  char *sums = static_cast<char *>(l.stream.workspace);
  b.sum = reinterpret_cast<float *>(sums);
  b.sumSq = reinterpret_cast<float *>(sums + sumBytes / 2);
  if (Status s = named(l, l.conv.run(call, b, after(l.stream, sumBytes))); !s.ok())
    return s;
  const int64_t channels = call.y[3];
  return named(l, bnFinalizeStats(b.sum, b.sumSq, channels,
                                  channels > 0 ? sc.convOut.numel() / channels : 0, epsilon,
                                  sc.mean, sc.invStd, l.stream.stream));
}

Status statsConvLaunch(const OpLaunch &l, const StatsConv &sc) {
  const double epsilon = sc.epsilon;
  ConvBuffers b;
  b.x = sc.x.data;
  b.w = sc.w.data;
  b.y = sc.convOut.data;
  if (sc.prologue) {
    Result<ConvCall> call = prologueStatsCall(l, sc);
    if (!call.ok())
      return call.error();
    b.scale = sc.prologue.scale->data;
    b.bias = sc.prologue.bias->data;
    return statsFromSums(l, sc, *call, b, sumBytesOf(*call), epsilon);
  }
  Result<ConvCall> call =
      convCall(l, sc.params, ConvKind::forward, sc.x, sc.w, sc.convOut, DType::f32);
  if (!call.ok())
    return call.error();
  std::optional<GenstatsConv> g = genstatsConv(l, *call);
  if (g && l.stream.workspace && l.conv.genstatsChosen(g->call, g->rest))
    return statsFromSums(l, sc, g->call, b, g->sumBytes, epsilon);
  size_t scratch = bnStatsWorkspaceBytes(sc.convOut.shape);
  if (l.stream.workspaceBytes < scratch || (scratch && !l.stream.workspace))
    return Error(l.node.op + ": the workspace cannot hold the BN statistics' partials");
  // The convolution's workspace follows the statistics' partials, which
  // are written only after it has finished (same stream).
  if (Status s = named(l, l.conv.run(*call, b, after(l.stream, scratch))); !s.ok())
    return s;
  return named(l, bnBatchStats(sc.convOut, epsilon, sc.mean, sc.invStd, l.stream.stream,
                               l.stream.workspace, scratch));
}

/// The ODS indices of the operands and results of cbr_forward and
/// conv_bn_stats that their statistics' convolution reads and writes.
struct StatsConvNames {
  size_t input, filter, prologueScale, prologueBias, convOutput, mean, invStd;
};

/// `Attrs`: the op's op_table::<op>::attrs (its geometry and epsilon).
template <class Attrs> StatsConv statsConvOf(const OpLaunch &l, const StatsConvNames &n) {
  return StatsConv{l.operand(n.input),
                   l.operand(n.filter),
                   prologueOf(l, n.prologueScale, n.prologueBias),
                   l.result(n.convOutput),
                   l.result(n.mean),
                   l.result(n.invStd),
                   convParamsOf<Attrs>(l.node),
                   Attrs::epsilon(l.node)};
}

// cbr_forward: the statistics' convolution of x, w [and the prologue],
// then the apply (with the ReLU when `relu`) of gamma and beta.
StatsConv cbrForwardStats(const OpLaunch &l) {
  using namespace op_table::cbr_forward;
  return statsConvOf<attrs>(l, {operand::input, operand::filter, operand::prologue_scale,
                         operand::prologue_bias, result::conv_output, result::batch_mean,
                         result::batch_inv_std});
}

Result<size_t> cbrForwardPrepare(const OpLaunch &l) {
  return statsConvPrepare(l, cbrForwardStats(l));
}

Status cbrForwardLaunch(const OpLaunch &l) {
  using namespace op_table::cbr_forward;
  if (Status s = statsConvLaunch(l, cbrForwardStats(l)); !s.ok())
    return s;
  return named(l, bnApply(l.result(result::conv_output), l.operand(operand::gamma),
                          l.operand(operand::beta), l.result(result::batch_mean),
                          l.result(result::batch_inv_std), attrs::relu(l.node),
                          l.result(result::result), l.stream.stream));
}

// conv_bn_stats (rn-fuse-bn-prologue): cbr_forward without the apply.
StatsConv convBnStats(const OpLaunch &l) {
  using namespace op_table::conv_bn_stats;
  return statsConvOf<attrs>(l, {operand::input, operand::filter, operand::prologue_scale,
                         operand::prologue_bias, result::conv_output, result::batch_mean,
                         result::batch_inv_std});
}

Result<size_t> convBnStatsPrepare(const OpLaunch &l) { return statsConvPrepare(l, convBnStats(l)); }

Status convBnStatsLaunch(const OpLaunch &l) { return statsConvLaunch(l, convBnStats(l)); }

/// Bytes of cbr_inference's convolution-output scratch: none when y can
/// hold it (same dtype as x).
size_t inferenceScratchBytes(const OpLaunch &l) {
  using namespace op_table::cbr_inference;
  const DeviceTensor &x = l.operand(operand::input), &y = l.result(result::result);
  return y.dtype == x.dtype ? 0 : alignUp(size_t(y.numel()) * elementSize(x.dtype));
}

Result<size_t> cbrInferencePrepare(const OpLaunch &l) {
  using namespace op_table::cbr_inference;
  const DeviceTensor &x = l.operand(operand::input), &y = l.result(result::result);
  Result<ConvCall> call = convCall(l, convParamsOf<attrs>(l.node), ConvKind::forward, x,
                                   l.operand(operand::filter), y, DType::f32);
  if (!call.ok())
    return call.error();
  call->yType = x.dtype;
  size_t scratch = inferenceScratchBytes(l);
  if (l.stream.workspaceBytes < scratch)
    return Error(l.node.op + ": the convolution output (" + std::to_string(scratch) +
                 " bytes) does not fit the workspace of stream " + std::string(l.stream.name));
  Result<size_t> conv = l.conv.prepare(*call, after(l.stream, scratch));
  if (!conv.ok())
    return conv.error();
  return scratch + *conv;
}

Status cbrInferenceLaunch(const OpLaunch &l) {
  using namespace op_table::cbr_inference;
  const DeviceTensor &x = l.operand(operand::input), &w = l.operand(operand::filter);
  const DeviceTensor &y = l.result(result::result);
  Result<ConvCall> call =
      convCall(l, convParamsOf<attrs>(l.node), ConvKind::forward, x, w, y, DType::f32);
  if (!call.ok())
    return call.error();
  call->yType = x.dtype;
  size_t scratch = inferenceScratchBytes(l);
  if (l.stream.workspaceBytes < scratch || (scratch && !l.stream.workspace))
    return Error(l.node.op + ": the convolution output does not fit the workspace");
  // The view of the convolution output; reused across launches so that
  // its shape vector keeps its capacity (no allocation after the first).
  thread_local DeviceTensor convOutput;
  convOutput.data = scratch ? l.stream.workspace : y.data;
  convOutput.dtype = x.dtype;
  convOutput.shape.assign(y.shape.begin(), y.shape.end());
  ConvBuffers b;
  b.x = x.data;
  b.w = w.data;
  b.y = convOutput.data;
  if (Status s = l.conv.run(*call, b, after(l.stream, scratch)); !s.ok())
    return s;
  return bnInference(convOutput, l.operand(operand::gamma), l.operand(operand::beta),
                     l.operand(operand::running_mean), l.operand(operand::running_var),
                     attrs::epsilon(l.node), attrs::relu(l.node), y, l.stream.stream);
}

//===----------------------------------------------------------------------===//
// cbr_backward
//===----------------------------------------------------------------------===//

Result<size_t> cbrBackwardPart(const OpLaunch &l, Role role, bool launch) {
  using namespace op_table::cbr_backward;
  const DeviceTensor &dy = l.operand(operand::output_grad), &convOutGrad =
                                                               l.result(result::conv_output_grad);
  switch (role) {
  case Role::bn_grad: {
    // prologue_mask: the forward's result was the next convolution's
    // prologue, whose rounding the recomputed mask takes.
    const bool prologueMask = attrs::prologue_mask(l.node);
    const DeviceTensor &convOutput = l.operand(operand::conv_output);
    size_t bytes = bnBackwardWorkspaceBytes(convOutput.shape);
    if (!launch)
      return bytes;
    if (Status s = named(
            l, bnBackward(dy, l.operandIfAny(operand::relu_output),
                          l.operandIfAny(operand::relu_beta), convOutput,
                          l.operand(operand::gamma), l.operand(operand::batch_mean),
                          l.operand(operand::batch_inv_std), l.operand(operand::gamma_grad_acc),
                          l.operand(operand::beta_grad_acc), convOutGrad,
                          l.result(result::gamma_grad), l.result(result::beta_grad),
                          l.stream.stream, l.stream.workspace, l.stream.workspaceBytes,
                          prologueMask));
        !s.ok())
      return s.error();
    return bytes;
  }
  case Role::weight_grad:
    // With input_prologue, x is the producer's convolution output, which
    // this convolution read through the producer's BN apply + ReLU.
    return filterGradient(l, convParamsOf<attrs>(l.node), launch, l.operand(operand::input),
                          l.operand(operand::filter), convOutGrad,
                          l.operand(operand::filter_grad_acc), l.result(result::filter_grad),
                          prologueOf(l, operand::input_scale, operand::input_bias));
  case Role::input_grad: {
    const DeviceTensor *dx = l.resultIfAny(result::input_grad);
    if (!dx)
      return Error(l.node.op + ": input_grad part without an input_grad result");
    return dataGradient(l, convParamsOf<attrs>(l.node), launch, *dx, l.operand(operand::filter),
                        convOutGrad, l.operandIfAny(operand::input_grad_addend));
  }
  default:
    return Error(l.node.op + ": unknown part");
  }
}

// The parts of cbr_backward (op_registry: bn_grad, weight_grad, input_grad).
Result<size_t> cbrBackwardPrepare(const OpLaunch &l) {
  return forParts(l, false, cbrBackwardPart);
}
Status cbrBackwardLaunch(const OpLaunch &l) {
  Result<size_t> r = forParts(l, true, cbrBackwardPart);
  return r.ok() ? Status::success() : Status(r.error());
}

} // namespace

const std::vector<OpLauncher> &convLinearLaunchers() {
  static const std::vector<OpLauncher> launchers = {
      {OpKind::conv2d, conv2dPrepare, conv2dLaunch},
      {OpKind::conv2d_backward, conv2dBackwardPrepare, conv2dBackwardLaunch},
      {OpKind::linear, linearPrepare, linearLaunch},
      {OpKind::linear_backward, linearBackwardPrepare, linearBackwardLaunch},
      {OpKind::cbr_forward, cbrForwardPrepare, cbrForwardLaunch},
      {OpKind::cbr_backward, cbrBackwardPrepare, cbrBackwardLaunch},
      {OpKind::cbr_inference, cbrInferencePrepare, cbrInferenceLaunch},
      {OpKind::conv_bn_stats, convBnStatsPrepare, convBnStatsLaunch},
  };
  return launchers;
}

} // namespace rn::cuda
