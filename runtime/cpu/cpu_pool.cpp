//===- cpu_pool.cpp - Max, average, adaptive and global average pooling ---===//

#include "runtime/cpu/cpu_kernels_detail.h"
#include "runtime/cpu/cpu_ops.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace rn::cpu {
namespace {

using detail::Check;
using detail::shapeString;
using detail::store;

struct PoolGeometry {
  int64_t n, h, w, c, oh, ow;
  int64_t kh, kw, sh, sw, ph, pw;
  bool excludePad;

  /// Average pooling's divisor for window (oy, ox), PyTorch's: the window
  /// clipped to the padded input (KH * KW unless a ceil-mode window runs
  /// past it), or with excludePad clipped to the input.
  double divisor(int64_t oy, int64_t ox) const {
    int64_t y0 = oy * sh - ph, x0 = ox * sw - pw;
    int64_t y1 = std::min(y0 + kh, h + ph), x1 = std::min(x0 + kw, w + pw);
    if (excludePad) {
      y0 = std::max<int64_t>(y0, 0);
      x0 = std::max<int64_t>(x0, 0);
      y1 = std::min(y1, h);
      x1 = std::min(x1, w);
    }
    return static_cast<double>((y1 - y0) * (x1 - x0));
  }
};

/// One output size of a pooling (PyTorch's pooling_output_shape).
int64_t pooledSize(int64_t size, int64_t kernel, int64_t stride, int64_t pad, bool ceilMode) {
  int64_t span = size + 2 * pad - kernel;
  if (!ceilMode)
    return span / stride + 1;
  int64_t out = (span + stride - 1) / stride + 1;
  return (out - 1) * stride >= size + pad ? out - 1 : out;
}

Check &checkPool(Check &check, const Shape &input, const Pool2dAttrs &attrs,
                 PoolGeometry &geo) {
  if (input.size() != 4)
    return check.fail("input must be NHWC (rank 4), got shape ",
                      shapeString(input));
  for (int i = 0; i < 2; ++i) {
    check.require(attrs.kernel[i] > 0, "kernel must be positive");
    check.require(attrs.strides[i] > 0, "strides must be positive");
    check.require(attrs.padding[i] >= 0, "padding must be non-negative");
    check.require(2 * attrs.padding[i] <= attrs.kernel[i], "padding ",
                  attrs.padding[i], " exceeds half the kernel size ",
                  attrs.kernel[i]);
  }
  if (check.failed())
    return check;
  geo = PoolGeometry{input[0], input[1], input[2], input[3], 0, 0,
                     attrs.kernel[0], attrs.kernel[1], attrs.strides[0],
                     attrs.strides[1], attrs.padding[0], attrs.padding[1],
                     attrs.excludePad};
  check.require(geo.h + 2 * geo.ph >= geo.kh && geo.w + 2 * geo.pw >= geo.kw,
                "the window does not fit in the padded input ",
                shapeString(input));
  geo.oh = pooledSize(geo.h, geo.kh, geo.sh, geo.ph, attrs.ceilMode);
  geo.ow = pooledSize(geo.w, geo.kw, geo.sw, geo.pw, attrs.ceilMode);
  return check;
}

Shape outputShape(const PoolGeometry &g) { return {g.n, g.oh, g.ow, g.c}; }

/// Walks every output pixel (element offset `outBase` of its first channel):
/// begin(outBase, oy, ox), then visit(outBase, inBase) for each input pixel
/// of its window inside the input (padding and the part of a ceil-mode
/// window past the input are skipped), in row-major window order, then
/// end(outBase).
template <typename Begin, typename Visit, typename End>
void forEachWindow(const PoolGeometry &g, Begin begin, Visit visit, End end) {
  for (int64_t n = 0; n < g.n; ++n)
    for (int64_t oy = 0; oy < g.oh; ++oy)
      for (int64_t ox = 0; ox < g.ow; ++ox) {
        int64_t outBase = ((n * g.oh + oy) * g.ow + ox) * g.c;
        begin(outBase, oy, ox);
        for (int64_t ky = 0; ky < g.kh; ++ky) {
          int64_t iy = oy * g.sh - g.ph + ky;
          if (iy < 0 || iy >= g.h)
            continue;
          for (int64_t kx = 0; kx < g.kw; ++kx) {
            int64_t ix = ox * g.sw - g.pw + kx;
            if (ix < 0 || ix >= g.w)
              continue;
            visit(outBase, ((n * g.h + iy) * g.w + ix) * g.c);
          }
        }
        end(outBase);
      }
}

/// Calls visit(outputIndex, inputIndex) once per output element with the
/// element of its window that max pooling picks: the first maximum in
/// row-major window order, a NaN over any number, padding never. A window
/// of padding only (impossible when padding <= kernel / 2) picks nothing.
template <typename Visit>
void forEachArgMax(const float *x, const PoolGeometry &g, Visit visit) {
  std::vector<int64_t> arg(static_cast<size_t>(g.c));
  bool any = false;
  forEachWindow(
      g, [&](int64_t, int64_t, int64_t) { any = false; },
      [&](int64_t, int64_t base) {
        for (int64_t c = 0; c < g.c; ++c) {
          float v = x[base + c];
          float best = any ? x[arg[c]] : 0.0f;
          if (!any || v > best || (std::isnan(v) && !std::isnan(best)))
            arg[c] = base + c;
        }
        any = true;
      },
      [&](int64_t outBase) {
        if (any)
          for (int64_t c = 0; c < g.c; ++c)
            visit(outBase + c, arg[c]);
      });
}

} // namespace

KernelStatus pool2dOutputShape(const Shape &input, const Pool2dAttrs &attrs,
                               Shape &result) {
  Check check("pool2d");
  PoolGeometry geo;
  if (!checkPool(check, input, attrs, geo).failed())
    result = outputShape(geo);
  return check.status();
}

KernelStatus maxPool2d(const TensorView &input, const Pool2dAttrs &attrs,
                       const TensorView &result) {
  Check check("max_pool2d");
  PoolGeometry g;
  if (check.view("input", input).failed() ||
      checkPool(check, input.shape, attrs, g).failed() ||
      check.shape("result", result, outputShape(g)).failed())
    return check.status();
  // Every window holds an input element, but initialize for safety.
  for (int64_t i = 0, e = result.numel(); i < e; ++i)
    result.data[i] = -std::numeric_limits<float>::infinity();
  forEachArgMax(input.data, g, [&](int64_t out, int64_t in) {
    result.data[out] = store(result.dtype, input.data[in]);
  });
  return {};
}

KernelStatus maxPool2dBackward(const TensorView &outputGrad,
                               const TensorView &input,
                               const Pool2dAttrs &attrs,
                               const TensorView &inputGrad) {
  Check check("max_pool2d_backward");
  PoolGeometry g;
  if (check.view("input", input).failed() ||
      checkPool(check, input.shape, attrs, g).failed() ||
      check.shape("output_grad", outputGrad, outputShape(g))
          .shape("input_grad", inputGrad, input.shape)
          .failed())
    return check.status();
  std::vector<double> acc(static_cast<size_t>(input.numel()), 0.0);
  forEachArgMax(input.data, g, [&](int64_t out, int64_t in) {
    acc[in] += outputGrad.data[out];
  });
  for (size_t i = 0; i < acc.size(); ++i)
    inputGrad.data[i] = store(inputGrad.dtype, acc[i]);
  return {};
}

KernelStatus avgPool2d(const TensorView &input, const Pool2dAttrs &attrs,
                       const TensorView &result) {
  Check check("avg_pool2d");
  PoolGeometry g;
  if (check.view("input", input).failed() ||
      checkPool(check, input.shape, attrs, g).failed() ||
      check.shape("result", result, outputShape(g)).failed())
    return check.status();
  double divisor = 1;
  std::vector<double> acc(static_cast<size_t>(g.c));
  forEachWindow(
      g,
      [&](int64_t, int64_t oy, int64_t ox) {
        std::fill(acc.begin(), acc.end(), 0.0);
        divisor = g.divisor(oy, ox);
      },
      [&](int64_t, int64_t inBase) {
        const float *xp = input.data + inBase;
        for (int64_t c = 0; c < g.c; ++c)
          acc[c] += xp[c];
      },
      [&](int64_t outBase) {
        float *yp = result.data + outBase;
        for (int64_t c = 0; c < g.c; ++c)
          yp[c] = store(result.dtype, acc[c] / divisor);
      });
  return {};
}

KernelStatus avgPool2dBackward(const TensorView &outputGrad,
                               const Pool2dAttrs &attrs,
                               const TensorView &inputGrad) {
  Check check("avg_pool2d_backward");
  PoolGeometry g;
  if (check.view("input_grad", inputGrad).failed() ||
      checkPool(check, inputGrad.shape, attrs, g).failed() ||
      check.shape("output_grad", outputGrad, outputShape(g)).failed())
    return check.status();
  double divisor = 1;
  std::vector<double> acc(static_cast<size_t>(inputGrad.numel()), 0.0);
  forEachWindow(
      g, [&](int64_t, int64_t oy, int64_t ox) { divisor = g.divisor(oy, ox); },
      [&](int64_t outBase, int64_t inBase) {
        const float *dyp = outputGrad.data + outBase;
        double *a = acc.data() + inBase;
        for (int64_t c = 0; c < g.c; ++c)
          a[c] += dyp[c] / divisor;
      },
      [](int64_t) {});
  for (size_t i = 0; i < acc.size(); ++i)
    inputGrad.data[i] = store(inputGrad.dtype, acc[i]);
  return {};
}

namespace {
/// Checks an adaptive pooling's [N, H, W, C] input (`inName`) and
/// [N, OH, OW, C] output (`outName`): same batch and channels, positive
/// spatial sizes.
Check &checkAdaptivePool(Check &check, const char *inName, const TensorView &in,
                         const char *outName, const TensorView &out) {
  if (check.rank(inName, in, 4, "NHWC").rank(outName, out, 4, "NHWC").failed())
    return check;
  return check
      .require(out.dim(0) == in.dim(0) && out.dim(3) == in.dim(3), outName, " ",
               shapeString(out.shape), " must keep the batch and the channels of ", inName,
               " ", shapeString(in.shape))
      .require(in.dim(1) > 0 && in.dim(2) > 0 && out.dim(1) > 0 && out.dim(2) > 0,
               "spatial sizes must be positive, got ", shapeString(in.shape), " and ",
               shapeString(out.shape));
}
} // namespace

std::pair<int64_t, int64_t> adaptiveWindow(int64_t i, int64_t inSize, int64_t outSize) {
  return {i * inSize / outSize, ((i + 1) * inSize + outSize - 1) / outSize};
}

KernelStatus adaptiveAvgPool2d(const TensorView &input, const TensorView &result) {
  Check check("adaptive_avg_pool2d");
  if (checkAdaptivePool(check, "input", input, "result", result).failed())
    return check.status();
  const int64_t n = input.dim(0), h = input.dim(1), w = input.dim(2), c = input.dim(3);
  const int64_t oh = result.dim(1), ow = result.dim(2);
  std::vector<double> acc(static_cast<size_t>(c));
  for (int64_t b = 0; b < n; ++b)
    for (int64_t i = 0; i < oh; ++i) {
      const auto [h0, h1] = adaptiveWindow(i, h, oh);
      for (int64_t j = 0; j < ow; ++j) {
        const auto [w0, w1] = adaptiveWindow(j, w, ow);
        std::fill(acc.begin(), acc.end(), 0.0);
        for (int64_t y = h0; y < h1; ++y) // row-major window order
          for (int64_t x = w0; x < w1; ++x)
            for (int64_t k = 0; k < c; ++k)
              acc[size_t(k)] += input.data[((b * h + y) * w + x) * c + k];
        const double count = double((h1 - h0) * (w1 - w0));
        for (int64_t k = 0; k < c; ++k)
          result.data[((b * oh + i) * ow + j) * c + k] =
              store(result.dtype, acc[size_t(k)] / count);
      }
    }
  return {};
}

KernelStatus adaptiveAvgPool2dBackward(const TensorView &outputGrad,
                                       const TensorView &inputGrad) {
  Check check("adaptive_avg_pool2d_backward");
  if (checkAdaptivePool(check, "input_grad", inputGrad, "output_grad", outputGrad).failed())
    return check.status();
  const int64_t n = inputGrad.dim(0), h = inputGrad.dim(1), w = inputGrad.dim(2),
                c = inputGrad.dim(3);
  const int64_t oh = outputGrad.dim(1), ow = outputGrad.dim(2);
  // Windows in output order, so that each input element sums its terms in
  // that order (the GPU gathers them in the same order).
  std::vector<double> acc(static_cast<size_t>(inputGrad.numel()), 0.0);
  for (int64_t b = 0; b < n; ++b)
    for (int64_t i = 0; i < oh; ++i) {
      const auto [h0, h1] = adaptiveWindow(i, h, oh);
      for (int64_t j = 0; j < ow; ++j) {
        const auto [w0, w1] = adaptiveWindow(j, w, ow);
        const double count = double((h1 - h0) * (w1 - w0));
        const float *dy = outputGrad.data + ((b * oh + i) * ow + j) * c;
        for (int64_t y = h0; y < h1; ++y)
          for (int64_t x = w0; x < w1; ++x)
            for (int64_t k = 0; k < c; ++k)
              acc[size_t(((b * h + y) * w + x) * c + k)] += dy[k] / count;
      }
    }
  for (size_t i = 0; i < acc.size(); ++i)
    inputGrad.data[i] = store(inputGrad.dtype, acc[i]);
  return {};
}

KernelStatus globalAvgPool(const TensorView &input, const TensorView &result) {
  Check check("global_avg_pool");
  if (check.rank("input", input, 4, "NHWC").failed())
    return check.status();
  int64_t n = input.dim(0), hw = input.dim(1) * input.dim(2), c = input.dim(3);
  check.shape("result", result, Shape{n, 1, 1, c})
      .require(hw > 0, "input has no spatial positions");
  if (check.failed())
    return check.status();
  std::vector<double> acc(static_cast<size_t>(c));
  for (int64_t b = 0; b < n; ++b) {
    std::fill(acc.begin(), acc.end(), 0.0);
    for (int64_t p = 0; p < hw; ++p)
      for (int64_t k = 0; k < c; ++k)
        acc[k] += input.data[(b * hw + p) * c + k];
    for (int64_t k = 0; k < c; ++k)
      result.data[b * c + k] = store(result.dtype, acc[k] / static_cast<double>(hw));
  }
  return {};
}

KernelStatus globalAvgPoolBackward(const TensorView &outputGrad,
                                   const TensorView &inputGrad) {
  Check check("global_avg_pool_backward");
  if (check.rank("input_grad", inputGrad, 4, "NHWC").failed())
    return check.status();
  int64_t n = inputGrad.dim(0), hw = inputGrad.dim(1) * inputGrad.dim(2),
          c = inputGrad.dim(3);
  check.shape("output_grad", outputGrad, Shape{n, 1, 1, c})
      .require(hw > 0, "input_grad has no spatial positions");
  if (check.failed())
    return check.status();
  for (int64_t b = 0; b < n; ++b)
    for (int64_t p = 0; p < hw; ++p)
      for (int64_t k = 0; k < c; ++k)
        inputGrad.data[(b * hw + p) * c + k] = store(
            inputGrad.dtype, double(outputGrad.data[b * c + k]) / static_cast<double>(hw));
  return {};
}

//===----------------------------------------------------------------------===//
// The ops of this family (cpu_ops.h)
//===----------------------------------------------------------------------===//

namespace {

namespace ot = op_table;

/// The window of a pooling op: `Attrs` is its op_table::<op>::attrs.
template <class Attrs> Pool2dAttrs poolAttrsOf(const Node &node) {
  Pool2dAttrs p;
  p.kernel = Attrs::kernel_pair(node, {1, 1});
  p.strides = Attrs::strides_pair(node, {1, 1});
  p.padding = Attrs::padding_pair(node, {0, 0});
  p.ceilMode = Attrs::ceil_mode(node);
  return p;
}

KernelStatus runMaxPool2d(const OpRun &r) {
  using namespace ot::max_pool2d;
  return maxPool2d(r.in(operand::input), poolAttrsOf<attrs>(r.node), r.out(result::result));
}
KernelStatus runAvgPool2d(const OpRun &r) {
  using namespace ot::avg_pool2d;
  Pool2dAttrs a = poolAttrsOf<attrs>(r.node);
  a.excludePad = attrs::exclude_pad(r.node);
  return avgPool2d(r.in(operand::input), a, r.out(result::result));
}
KernelStatus runMaxPool2dBackward(const OpRun &r) {
  using namespace ot::max_pool2d_backward;
  return maxPool2dBackward(r.in(operand::output_grad), r.in(operand::input),
                           poolAttrsOf<attrs>(r.node), r.out(result::input_grad));
}
KernelStatus runAvgPool2dBackward(const OpRun &r) {
  using namespace ot::avg_pool2d_backward;
  Pool2dAttrs a = poolAttrsOf<attrs>(r.node);
  a.excludePad = attrs::exclude_pad(r.node);
  return avgPool2dBackward(r.in(operand::output_grad), a, r.out(result::input_grad));
}
KernelStatus runAdaptiveAvgPool2d(const OpRun &r) {
  using namespace ot::adaptive_avg_pool2d;
  return adaptiveAvgPool2d(r.in(operand::input), r.out(result::result));
}
KernelStatus runAdaptiveAvgPool2dBackward(const OpRun &r) {
  using namespace ot::adaptive_avg_pool2d_backward;
  return adaptiveAvgPool2dBackward(r.in(operand::output_grad), r.out(result::input_grad));
}
KernelStatus runGlobalAvgPool(const OpRun &r) {
  using namespace ot::global_avg_pool;
  return globalAvgPool(r.in(operand::input), r.out(result::result));
}
KernelStatus runGlobalAvgPoolBackward(const OpRun &r) {
  using namespace ot::global_avg_pool_backward;
  return globalAvgPoolBackward(r.in(operand::output_grad), r.out(result::input_grad));
}

} // namespace

const std::vector<CpuOp> &poolOps() {
  static const std::vector<CpuOp> ops = {
      {OpKind::max_pool2d, runMaxPool2d},
      {OpKind::avg_pool2d, runAvgPool2d},
      {OpKind::max_pool2d_backward, runMaxPool2dBackward},
      {OpKind::avg_pool2d_backward, runAvgPool2dBackward},
      {OpKind::adaptive_avg_pool2d, runAdaptiveAvgPool2d},
      {OpKind::adaptive_avg_pool2d_backward, runAdaptiveAvgPool2dBackward},
      {OpKind::global_avg_pool, runGlobalAvgPool},
      {OpKind::global_avg_pool_backward, runGlobalAvgPoolBackward},
  };
  return ops;
}

} // namespace rn::cpu
