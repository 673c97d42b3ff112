//===- cpu_conv.cpp - 2-D convolution: forward and backward ---------------===//
//
// Direct loops over NHWC activations and OHWI filters, no im2col. Every
// sum is accumulated in double (products of floats are exact in double),
// in blocks of 8 contiguous channels that the compiler keeps in vector
// registers (accumulateBlock): the forward pass sums over the window for 8
// output channels at a time, dX gathers over the windows that read an input
// position for 8 input channels at a time, and dW sums per filter tap over
// tiles of output pixels. The summation order is fixed, so results are
// deterministic.
//
//===----------------------------------------------------------------------===//

#include "runtime/cpu_kernels_detail.h"

#include <algorithm>
#include <vector>

namespace rn::cpu {
namespace {

using detail::Check;
using detail::shapeString;
using detail::store;

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

/// Sums per register block.
constexpr int64_t kBlock = 8;

/// Two rows that one step of a sum multiplies: for the forward pass an
/// input pixel's channels and the filter taps of its window position (as
/// [Cg, O]); for dX an output-gradient pixel and the filter rows of the
/// window position; for dW an input pixel and an output-gradient pixel.
struct Tap {
  const float *x;
  const float *w;
};

/// sums[j] += sum over taps t and k < count of
/// t.x[xOffset + k] * t.w[k * wStride + wOffset + j], for j < width. A full
/// block (width == kBlock) keeps its sums in registers: every index into `a`
/// is a constant once the j loops are unrolled.
inline void accumulateBlock(const std::vector<Tap> &taps, int64_t xOffset,
                            int64_t count, int64_t wOffset, int64_t wStride,
                            int64_t width, double *sums) {
  if (width == kBlock) {
    double a[kBlock];
    for (int64_t j = 0; j < kBlock; ++j)
      a[j] = sums[j];
    for (const Tap &t : taps)
      for (int64_t k = 0; k < count; ++k) {
        const double xv = t.x[xOffset + k];
        const float *w = t.w + k * wStride + wOffset;
        for (int64_t j = 0; j < kBlock; ++j)
          a[j] += xv * w[j];
      }
    for (int64_t j = 0; j < kBlock; ++j)
      sums[j] = a[j];
    return;
  }
  for (const Tap &t : taps)
    for (int64_t k = 0; k < count; ++k) {
      const double xv = t.x[xOffset + k];
      const float *w = t.w + k * wStride + wOffset;
      for (int64_t j = 0; j < width; ++j)
        sums[j] += xv * w[j];
    }
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

  // The filter as [KH, KW, Cg, O]: the innermost loop then runs over
  // contiguous output channels.
  std::vector<float> wt(static_cast<size_t>(g.kh * g.kw * g.cg * g.o));
  for (int64_t oc = 0; oc < g.o; ++oc)
    for (int64_t ky = 0; ky < g.kh; ++ky)
      for (int64_t kx = 0; kx < g.kw; ++kx)
        for (int64_t c = 0; c < g.cg; ++c)
          wt[((ky * g.kw + kx) * g.cg + c) * g.o + oc] =
              filter.data[((oc * g.kh + ky) * g.kw + kx) * g.cg + c];

  // Per output pixel: the window positions inside the input, then blocks of
  // kBlock output channels whose sums stay in registers over the window.
  std::vector<Tap> taps;
  taps.reserve(static_cast<size_t>(g.kh * g.kw));
  std::vector<double> acc(static_cast<size_t>(g.o));
  for (int64_t n = 0; n < g.n; ++n)
    for (int64_t oy = 0; oy < g.oh; ++oy)
      for (int64_t ox = 0; ox < g.ow; ++ox) {
        taps.clear();
        for (int64_t ky = 0; ky < g.kh; ++ky) {
          int64_t iy = oy * g.sh - g.ph + ky * g.dh;
          if (iy < 0 || iy >= g.h)
            continue;
          for (int64_t kx = 0; kx < g.kw; ++kx) {
            int64_t ix = ox * g.sw - g.pw + kx * g.dw;
            if (ix >= 0 && ix < g.w)
              taps.push_back({input.data + ((n * g.h + iy) * g.w + ix) * g.c,
                              wt.data() + (ky * g.kw + kx) * g.cg * g.o});
          }
        }
        for (int64_t oc = 0; oc < g.o; ++oc)
          acc[oc] = bias ? bias->data[oc] : 0.0;
        for (int64_t grp = 0; grp < g.groups; ++grp)
          for (int64_t oc0 = grp * g.og; oc0 < (grp + 1) * g.og; oc0 += kBlock)
            accumulateBlock(taps, grp * g.cg, g.cg, oc0, g.o,
                            std::min(kBlock, (grp + 1) * g.og - oc0), &acc[oc0]);
        float *yp = result.data + ((n * g.oh + oy) * g.ow + ox) * g.o;
        for (int64_t oc = 0; oc < g.o; ++oc)
          yp[oc] = store(result.dtype, acc[oc]);
      }
  return {};
}

KernelStatus conv2dBackwardInput(const TensorView &outputGrad,
                                 const TensorView &filter,
                                 const Conv2dAttrs &attrs,
                                 const TensorView &inputGrad) {
  Check check("conv2d_backward (input gradient)");
  ConvGeometry g;
  check.view("output_grad", outputGrad).view("filter", filter)
      .view("input_grad", inputGrad);
  if (check.failed() ||
      checkConv(check, inputGrad.shape, filter.shape, attrs, g).failed())
    return check.status();
  if (check.shape("output_grad", outputGrad, outputShape(g)).failed())
    return check.status();

  // dx[n,iy,ix,grp*Cg+c] = sum over the (ky, kx, oc) that read it of
  // dy[n,oy,ox,oc] * w[oc,ky,kx,c], gathered per input position in blocks
  // of kBlock channels.
  const int64_t filterRow = g.kh * g.kw * g.cg; // w[oc + 1] - w[oc]
  std::vector<Tap> taps;
  taps.reserve(static_cast<size_t>(g.kh * g.kw));
  std::vector<double> acc(static_cast<size_t>(g.c));
  for (int64_t n = 0; n < g.n; ++n)
    for (int64_t iy = 0; iy < g.h; ++iy)
      for (int64_t ix = 0; ix < g.w; ++ix) {
        taps.clear();
        for (int64_t ky = 0; ky < g.kh; ++ky) {
          int64_t ty = iy + g.ph - ky * g.dh; // oy * sh
          if (ty < 0 || ty % g.sh != 0 || ty / g.sh >= g.oh)
            continue;
          int64_t oy = ty / g.sh;
          for (int64_t kx = 0; kx < g.kw; ++kx) {
            int64_t tx = ix + g.pw - kx * g.dw;
            if (tx < 0 || tx % g.sw != 0 || tx / g.sw >= g.ow)
              continue;
            int64_t ox = tx / g.sw;
            taps.push_back({outputGrad.data + ((n * g.oh + oy) * g.ow + ox) * g.o,
                            filter.data + (ky * g.kw + kx) * g.cg});
          }
        }
        std::fill(acc.begin(), acc.end(), 0.0);
        for (int64_t grp = 0; grp < g.groups; ++grp)
          for (int64_t c0 = 0; c0 < g.cg; c0 += kBlock)
            accumulateBlock(taps, grp * g.og, g.og, grp * g.og * filterRow + c0,
                            filterRow, std::min(kBlock, g.cg - c0),
                            &acc[grp * g.cg + c0]);
        float *dxp = inputGrad.data + ((n * g.h + iy) * g.w + ix) * g.c;
        for (int64_t c = 0; c < g.c; ++c)
          dxp[c] = store(inputGrad.dtype, acc[c]);
      }
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
  if (check.failed() ||
      checkConv(check, input.shape, filterGradAcc.shape, attrs, g).failed())
    return check.status();
  check.shape("output_grad", outputGrad, outputShape(g))
      .shape("filter_grad", filterGrad, filterGradAcc.shape);
  if (check.failed())
    return check.status();

  // dw[oc,ky,kx,c] = sum over n, oy, ox of dy[n,oy,ox,oc] * x[n,iy,ix,grp*Cg+c]:
  // per filter tap a [Cg, O] product of the input and output-gradient rows
  // of the output pixels, accumulated as [KH, KW, Cg, O] over tiles of
  // kTile pixels (which stay in cache) in register blocks of output channels.
  constexpr int64_t kTile = 64;
  const int64_t pixels = g.n * g.oh * g.ow;
  std::vector<double> acc(static_cast<size_t>(g.o * g.kh * g.kw * g.cg), 0.0);
  std::vector<Tap> rows; // (input row, output-gradient row) per pixel
  rows.reserve(kTile);
  for (int64_t p0 = 0; p0 < pixels; p0 += kTile)
    for (int64_t ky = 0; ky < g.kh; ++ky)
      for (int64_t kx = 0; kx < g.kw; ++kx) {
        rows.clear();
        for (int64_t p = p0; p < std::min(p0 + kTile, pixels); ++p) {
          int64_t n = p / (g.oh * g.ow), oy = p / g.ow % g.oh, ox = p % g.ow;
          int64_t iy = oy * g.sh - g.ph + ky * g.dh;
          int64_t ix = ox * g.sw - g.pw + kx * g.dw;
          if (iy >= 0 && iy < g.h && ix >= 0 && ix < g.w)
            rows.push_back({input.data + ((n * g.h + iy) * g.w + ix) * g.c,
                            outputGrad.data + p * g.o});
        }
        double *tapAcc = acc.data() + (ky * g.kw + kx) * g.cg * g.o;
        for (int64_t grp = 0; grp < g.groups; ++grp)
          for (int64_t c = 0; c < g.cg; ++c)
            for (int64_t oc0 = grp * g.og; oc0 < (grp + 1) * g.og; oc0 += kBlock)
              accumulateBlock(rows, grp * g.cg + c, 1, oc0, 0,
                              std::min(kBlock, (grp + 1) * g.og - oc0),
                              tapAcc + c * g.o + oc0);
      }
  for (int64_t oc = 0; oc < g.o; ++oc)
    for (int64_t ky = 0; ky < g.kh; ++ky)
      for (int64_t kx = 0; kx < g.kw; ++kx)
        for (int64_t c = 0; c < g.cg; ++c) {
          int64_t i = ((oc * g.kh + ky) * g.kw + kx) * g.cg + c;
          filterGrad.data[i] = store(
              filterGrad.dtype,
              double(filterGradAcc.data[i]) + acc[((ky * g.kw + kx) * g.cg + c) * g.o + oc]);
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
  std::vector<double> acc(static_cast<size_t>(o), 0.0);
  int64_t rows = o ? outputGrad.numel() / o : 0;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t oc = 0; oc < o; ++oc)
      acc[oc] += outputGrad.data[r * o + oc];
  for (int64_t oc = 0; oc < o; ++oc)
    biasGrad.data[oc] = store(biasGrad.dtype, double(biasGradAcc.data[oc]) + acc[oc]);
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
  check.shape("filter", filter, filterGradAcc.shape);
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

} // namespace rn::cpu
