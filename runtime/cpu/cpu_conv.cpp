//===- cpu_conv.cpp - 2-D convolution: forward and backward ---------------===//
//
// Matrix products over NHWC activations and OHWI filters: each chunk of
// output pixels is unfolded into a patch matrix (im2col, one row per pixel
// in the filter's (KH, KW, Cg) order, so an OHWI filter is already its
// [O, K] matrix), multiplied in double with OpenBLAS's dgemm (products of
// floats are exact in double, sums are in double), and for dX folded back
// (col2im). Chunks run in a fixed order and dgemm never splits a sum across
// threads, so results are deterministic.
//
//===----------------------------------------------------------------------===//

#include "runtime/cpu/cpu_kernels_detail.h"
#include "runtime/cpu/cpu_ops.h"

#include <algorithm>
#include <vector>

namespace rn::cpu {
namespace {

using detail::Check;
using detail::shapeString;
using detail::store;
using detail::widen;

/// Sizes of one convolution.
struct ConvGeometry {
  int64_t n, h, w, c;    // input
  int64_t o, kh, kw, cg; // filter (cg = c / groups)
  int64_t oh, ow;        // output spatial size
  int64_t groups, og;    // og = o / groups
  int64_t sh, sw, ph, pw, dh, dw;
};

/// Checks the input and filter shapes and the attributes; fills `geo`.
Check &checkConv(Check &check, const Shape &input, const Shape &filter,
                 const Conv2dAttrs &attrs, ConvGeometry &geo) {
  if (input.size() != 4)
    return check.fail("input must be NHWC (rank 4), got shape ",
                      shapeString(input));
  if (filter.size() != 4)
    return check.fail("filter must be OHWI (rank 4), got shape ",
                      shapeString(filter));
  for (int i = 0; i < 2; ++i) {
    check.require(attrs.strides[i] > 0, "strides must be positive");
    check.require(attrs.dilation[i] > 0, "dilation must be positive");
    check.require(attrs.padding[i] >= 0, "padding must be non-negative");
  }
  check.require(attrs.groups > 0, "groups must be positive, got ",
                attrs.groups);
  if (check.failed())
    return check;
  geo = ConvGeometry{input[0], input[1], input[2], input[3],
                     filter[0], filter[1], filter[2], filter[3],
                     0, 0, attrs.groups, 0,
                     attrs.strides[0], attrs.strides[1],
                     attrs.padding[0], attrs.padding[1],
                     attrs.dilation[0], attrs.dilation[1]};
  check.require(geo.c % geo.groups == 0, "input channels ", geo.c,
                " are not divisible by groups ", geo.groups);
  check.require(geo.o % geo.groups == 0, "output channels ", geo.o,
                " are not divisible by groups ", geo.groups);
  if (check.failed())
    return check;
  check.require(geo.cg == geo.c / geo.groups, "filter ", shapeString(filter),
                " expects ", geo.cg, " input channels per group but the input ",
                shapeString(input), " has ", geo.c / geo.groups);
  geo.og = geo.o / geo.groups;
  int64_t extentH = geo.dh * (geo.kh - 1) + 1;
  int64_t extentW = geo.dw * (geo.kw - 1) + 1;
  check.require(geo.kh > 0 && geo.kw > 0, "empty filter window");
  check.require(geo.h + 2 * geo.ph >= extentH && geo.w + 2 * geo.pw >= extentW,
                "the dilated filter window does not fit in the padded input ",
                shapeString(input));
  if (check.failed())
    return check;
  geo.oh = (geo.h + 2 * geo.ph - extentH) / geo.sh + 1;
  geo.ow = (geo.w + 2 * geo.pw - extentW) / geo.sw + 1;
  return check;
}

Shape outputShape(const ConvGeometry &geo) {
  return {geo.n, geo.oh, geo.ow, geo.o};
}

/// Elements of one chunk of the patch matrix: the pixels are processed in
/// chunks so that the scratch matrices stay a few MiB whatever the batch.
constexpr int64_t kChunkElements = int64_t{1} << 20;

/// Patch-matrix columns per group: one filter row, (KH, KW, Cg) in OHWI order.
int64_t patchSize(const ConvGeometry &g) { return g.kh * g.kw * g.cg; }

/// Output pixels per chunk (at least one).
int64_t chunkPixels(const ConvGeometry &g) {
  return std::max<int64_t>(1, kChunkElements / std::max<int64_t>({patchSize(g), g.o, 1}));
}

/// The input position that filter tap (ky, kx) of output pixel (oy, ox)
/// reads, or false when it falls in the padding.
bool tapPosition(const ConvGeometry &g, int64_t oy, int64_t ox, int64_t ky,
                 int64_t kx, int64_t &iy, int64_t &ix) {
  iy = oy * g.sh - g.ph + ky * g.dh;
  ix = ox * g.sw - g.pw + kx * g.dw;
  return iy >= 0 && iy < g.h && ix >= 0 && ix < g.w;
}

/// im2col of group `grp` for output pixels [p0, p1) (p = (n * OH + oy) * OW
/// + ox): row p - p0 of `patches` is the window of pixel p in the filter's
/// (KH, KW, Cg) order, zero where the window covers padding.
void gatherPatches(const ConvGeometry &g, const float *x, int64_t grp,
                   int64_t p0, int64_t p1, double *patches) {
  const int64_t k = patchSize(g);
  for (int64_t p = p0; p < p1; ++p) {
    int64_t n = p / (g.oh * g.ow), oy = p / g.ow % g.oh, ox = p % g.ow;
    double *row = patches + (p - p0) * k;
    for (int64_t ky = 0; ky < g.kh; ++ky)
      for (int64_t kx = 0; kx < g.kw; ++kx) {
        double *dst = row + (ky * g.kw + kx) * g.cg;
        int64_t iy, ix;
        if (!tapPosition(g, oy, ox, ky, kx, iy, ix)) {
          std::fill(dst, dst + g.cg, 0.0);
          continue;
        }
        const float *src = x + ((n * g.h + iy) * g.w + ix) * g.c + grp * g.cg;
        for (int64_t c = 0; c < g.cg; ++c)
          dst[c] = src[c];
      }
  }
}

/// col2im: adds row p - p0 of `patches` (gradients of pixel p's window in
/// (KH, KW, Cg) order) into the group-`grp` channels of `dx`; padded taps
/// are dropped. Pixels and taps go in a fixed order, so sums are
/// deterministic.
void scatterPatches(const ConvGeometry &g, const double *patches, int64_t grp,
                    int64_t p0, int64_t p1, double *dx) {
  const int64_t k = patchSize(g);
  for (int64_t p = p0; p < p1; ++p) {
    int64_t n = p / (g.oh * g.ow), oy = p / g.ow % g.oh, ox = p % g.ow;
    const double *row = patches + (p - p0) * k;
    for (int64_t ky = 0; ky < g.kh; ++ky)
      for (int64_t kx = 0; kx < g.kw; ++kx) {
        int64_t iy, ix;
        if (!tapPosition(g, oy, ox, ky, kx, iy, ix))
          continue;
        const double *src = row + (ky * g.kw + kx) * g.cg;
        double *dst = dx + ((n * g.h + iy) * g.w + ix) * g.c + grp * g.cg;
        for (int64_t c = 0; c < g.cg; ++c)
          dst[c] += src[c];
      }
  }
}

/// Calls body(p0, p1) for the consecutive chunks [p0, p1) of output pixels.
template <typename Body> void forEachPixelChunk(const ConvGeometry &g, Body body) {
  const int64_t pixels = g.n * g.oh * g.ow, chunk = chunkPixels(g);
  for (int64_t p0 = 0; p0 < pixels; p0 += chunk)
    body(p0, std::min(pixels, p0 + chunk));
}

} // namespace

KernelStatus conv2dOutputShape(const Shape &input, const Shape &filter,
                               const Conv2dAttrs &attrs, Shape &result) {
  Check check("conv2d");
  ConvGeometry geo;
  if (!checkConv(check, input, filter, attrs, geo).failed())
    result = outputShape(geo);
  return check.status();
}

KernelStatus conv2d(const TensorView &input, const TensorView &filter,
                    const TensorView *bias, const Conv2dAttrs &attrs,
                    const TensorView &result) {
  Check check("conv2d");
  ConvGeometry g;
  check.view("input", input).view("filter", filter);
  if (check.failed() || checkConv(check, input.shape, filter.shape, attrs, g).failed())
    return check.status();
  if (bias)
    check.shape("bias", *bias, Shape{g.o});
  check.shape("result", result, outputShape(g));
  if (check.failed())
    return check.status();

  // Per chunk of output pixels and per group: Y[P, Og] = patches[P, K] *
  // W_g[Og, K]^T, the OHWI filter rows being the patch order already.
  const int64_t k = patchSize(g), chunk = chunkPixels(g);
  const std::vector<double> w = widen(filter.data, filter.numel());
  std::vector<double> patches(static_cast<size_t>(chunk * k));
  std::vector<double> y(static_cast<size_t>(chunk * g.o));
  forEachPixelChunk(g, [&](int64_t p0, int64_t p1) {
    const int64_t rows = p1 - p0;
    for (int64_t grp = 0; grp < g.groups; ++grp) {
      gatherPatches(g, input.data, grp, p0, p1, patches.data());
      detail::gemm(false, true, rows, g.og, k, 1.0, patches.data(), k,
                   w.data() + grp * g.og * k, k, 0.0, y.data() + grp * g.og,
                   g.o);
    }
    float *out = result.data + p0 * g.o;
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t oc = 0; oc < g.o; ++oc)
        out[r * g.o + oc] = store(result.dtype, y[r * g.o + oc] +
                                                    (bias ? bias->data[oc] : 0.0));
  });
  return {};
}

KernelStatus conv2dBackwardInput(const TensorView &outputGrad,
                                 const TensorView &filter,
                                 const Conv2dAttrs &attrs,
                                 const TensorView &inputGrad,
                                 const TensorView *addend) {
  Check check("conv2d_backward (input gradient)");
  ConvGeometry g;
  check.view("output_grad", outputGrad).view("filter", filter)
      .view("input_grad", inputGrad);
  if (addend)
    check.view("input_grad_addend", *addend);
  if (check.failed() ||
      checkConv(check, inputGrad.shape, filter.shape, attrs, g).failed())
    return check.status();
  if (check.shape("output_grad", outputGrad, outputShape(g)).failed() ||
      (addend && check.shape("input_grad_addend", *addend, inputGrad.shape).failed()))
    return check.status();

  // Per chunk of output pixels and per group: dPatches[P, K] = dY[P, Og] *
  // W_g[Og, K], scattered back onto the input positions (col2im).
  const int64_t k = patchSize(g), chunk = chunkPixels(g);
  const std::vector<double> w = widen(filter.data, filter.numel());
  std::vector<double> dx(static_cast<size_t>(inputGrad.numel()), 0.0);
  std::vector<double> patches(static_cast<size_t>(chunk * k));
  forEachPixelChunk(g, [&](int64_t p0, int64_t p1) {
    const std::vector<double> dy = widen(outputGrad.data + p0 * g.o, (p1 - p0) * g.o);
    for (int64_t grp = 0; grp < g.groups; ++grp) {
      detail::gemm(false, false, p1 - p0, k, g.og, 1.0, dy.data() + grp * g.og,
                   g.o, w.data() + grp * g.og * k, k, 0.0, patches.data(), k);
      scatterPatches(g, patches.data(), grp, p0, p1, dx.data());
    }
  });
  // With an addend the sum is rounded once, as cuDNN's epilogue does.
  for (size_t i = 0; i < dx.size(); ++i)
    inputGrad.data[i] =
        store(inputGrad.dtype, addend ? dx[i] + double(addend->data[i]) : dx[i]);
  return {};
}

KernelStatus conv2dBackwardFilter(const TensorView &outputGrad,
                                  const TensorView &input,
                                  const TensorView &filterGradAcc,
                                  const Conv2dAttrs &attrs,
                                  const TensorView &filterGrad) {
  Check check("conv2d_backward (filter gradient)");
  ConvGeometry g;
  check.view("output_grad", outputGrad).view("input", input)
      .view("filter_grad_acc", filterGradAcc);
  if (check.failed() || check.rank("input", input, 4, "NHWC").failed() ||
      check.rank("filter_grad_acc", filterGradAcc, 4, "OHWI").failed())
    return check.status();
  // The accumulator of a zero-padded filter (rn-pad-conv-channels) covers
  // its first input channels: the gradient is of the whole filter, the
  // padding's part dropped.
  Shape filter = filterGradAcc.shape;
  const int64_t accChannels = filter[3];
  if (attrs.groups == 1 && accChannels < input.shape[3])
    filter[3] = input.shape[3];
  if (checkConv(check, input.shape, filter, attrs, g).failed())
    return check.status();
  check.shape("output_grad", outputGrad, outputShape(g))
      .shape("filter_grad", filterGrad, filterGradAcc.shape);
  if (check.failed())
    return check.status();

  // dW_g[Og, K] = sum over chunks of dY[P, Og]^T * patches[P, K],
  // accumulated chunk after chunk in the OHWI order of the filter.
  const int64_t k = patchSize(g), chunk = chunkPixels(g);
  std::vector<double> dw(static_cast<size_t>(g.o * k), 0.0);
  std::vector<double> patches(static_cast<size_t>(chunk * k));
  forEachPixelChunk(g, [&](int64_t p0, int64_t p1) {
    const std::vector<double> dy = widen(outputGrad.data + p0 * g.o, (p1 - p0) * g.o);
    for (int64_t grp = 0; grp < g.groups; ++grp) {
      gatherPatches(g, input.data, grp, p0, p1, patches.data());
      detail::gemm(true, false, g.og, k, p1 - p0, 1.0, dy.data() + grp * g.og,
                   g.o, patches.data(), k, 1.0, dw.data() + grp * g.og * k, k);
    }
  });
  const int64_t taps = g.o * g.kh * g.kw;
  for (int64_t tap = 0; tap < taps; ++tap)
    for (int64_t c = 0; c < accChannels; ++c) {
      const int64_t i = tap * accChannels + c;
      filterGrad.data[i] =
          store(filterGrad.dtype, double(filterGradAcc.data[i]) + dw[size_t(tap * g.cg + c)]);
    }
  return {};
}

KernelStatus conv2dBackwardBias(const TensorView &outputGrad,
                                const TensorView &biasGradAcc,
                                const TensorView &biasGrad) {
  Check check("conv2d_backward (bias gradient)");
  if (check.rank("output_grad", outputGrad, 4, "NHWC").failed())
    return check.status();
  int64_t o = outputGrad.shape[3];
  check.shape("bias_grad_acc", biasGradAcc, Shape{o})
      .shape("bias_grad", biasGrad, Shape{o});
  if (check.failed())
    return check.status();
  detail::accumulateChannelSums(outputGrad.data, o ? outputGrad.numel() / o : 0,
                                o, biasGradAcc, biasGrad);
  return {};
}

KernelStatus conv2dBackward(const TensorView &outputGrad,
                            const TensorView &input, const TensorView &filter,
                            const TensorView &filterGradAcc,
                            const TensorView *biasGradAcc,
                            const Conv2dAttrs &attrs,
                            const TensorView *inputGrad,
                            const TensorView &filterGrad,
                            const TensorView *biasGrad) {
  Check check("conv2d_backward");
  check.require((biasGradAcc == nullptr) == (biasGrad == nullptr),
                "bias_grad_acc and the bias gradient go together");
  Shape paddedAcc = filterGradAcc.shape;
  if (!paddedAcc.empty() && !filter.shape.empty() && attrs.groups == 1)
    paddedAcc.back() = filter.shape.back(); // an accumulator of the first channels
  check.shape("filter", filter, paddedAcc);
  if (inputGrad)
    check.shape("input_grad", *inputGrad, input.shape);
  if (check.failed())
    return check.status();
  if (inputGrad) {
    KernelStatus s = conv2dBackwardInput(outputGrad, filter, attrs, *inputGrad);
    if (!s.ok())
      return s;
  }
  KernelStatus s =
      conv2dBackwardFilter(outputGrad, input, filterGradAcc, attrs, filterGrad);
  if (!s.ok() || !biasGrad)
    return s;
  return conv2dBackwardBias(outputGrad, *biasGradAcc, *biasGrad);
}

//===----------------------------------------------------------------------===//
// The ops of this family (cpu_ops.h)
//===----------------------------------------------------------------------===//

namespace {

namespace ot = op_table;

KernelStatus runConv2d(const OpRun &r) {
  using namespace ot::conv2d;
  return conv2d(r.in(operand::input), r.in(operand::filter), r.inIfAny(operand::bias),
                convAttrsOf<attrs>(r.node), r.out(result::result));
}

KernelStatus runConv2dBackward(const OpRun &r) {
  using namespace ot::conv2d_backward;
  if (r.role == "weight_grad")
    return conv2dBackwardFilter(r.in(operand::output_grad), r.in(operand::input),
                                r.in(operand::filter_grad_acc), convAttrsOf<attrs>(r.node),
                                r.out(result::filter_grad));
  if (r.role == "bias_grad")
    return conv2dBackwardBias(r.in(operand::output_grad), r.in(operand::bias_grad_acc),
                              r.out(result::bias_grad));
  if (r.role == "input_grad")
    return conv2dBackwardInput(r.in(operand::output_grad), r.in(operand::filter),
                               convAttrsOf<attrs>(r.node), r.out(result::input_grad),
                               r.inIfAny(operand::input_grad_addend));
  return unknownPart(r);
}

Access conv2dBackwardAccess(const Node &node, std::string_view role) {
  using namespace ot::conv2d_backward;
  if (role == "weight_grad")
    return partAccess(node, {}, {operand::output_grad, operand::input, operand::filter_grad_acc},
                      {result::filter_grad});
  if (role == "bias_grad")
    return partAccess(node, {}, {operand::output_grad, operand::bias_grad_acc},
                      {result::bias_grad});
  if (role == "input_grad")
    return partAccess(node, {}, {operand::output_grad, operand::filter, operand::input_grad_addend},
                      {result::input_grad});
  return {};
}

} // namespace

const std::vector<CpuOp> &convOps() {
  static const std::vector<CpuOp> ops = {
      {OpKind::conv2d, runConv2d},
      {OpKind::conv2d_backward, runConv2dBackward, conv2dBackwardAccess},
  };
  return ops;
}

} // namespace rn::cpu
