//===- cpu_elementwise.cpp - Activations, channel scaling, casts, dropout -===//
//
// Each element is computed in double from its float inputs and rounded once
// to the result's dtype. Dropout draws its mask from Philox4x32-10, keyed by
// (seed, stream) and counted by the element index, so a mask depends only on
// the key and the shape, never on the order of evaluation (a GPU kernel can
// reproduce it bit for bit). Stochastic depth draws one word of the same
// stream per sample.
//
//===----------------------------------------------------------------------===//

#include "runtime/cpu/cpu_kernels_detail.h"
#include "runtime/cpu/cpu_ops.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace rn::cpu {
namespace {

using detail::Check;
using detail::shapeString;
using detail::store;

/// result[i] = f(input[i]) for two views of one shape.
template <typename F>
KernelStatus unaryMap(const char *op, const char *inName,
                      const TensorView &input, const TensorView &result, F f) {
  Check check(op);
  if (check.view(inName, input).shape("result", result, input.shape).failed())
    return check.status();
  for (int64_t i = 0, e = input.numel(); i < e; ++i)
    result.data[i] = store(result.dtype, f(double(input.data[i])));
  return {};
}

/// result[i] = f(a[i], b[i]) for three views of one shape.
template <typename F>
KernelStatus binaryMap(const char *op, const char *aName, const TensorView &a,
                       const char *bName, const TensorView &b,
                       const char *resultName, const TensorView &result, F f) {
  Check check(op);
  if (check.view(aName, a)
          .shape(bName, b, a.shape)
          .shape(resultName, result, a.shape)
          .failed())
    return check.status();
  for (int64_t i = 0, e = a.numel(); i < e; ++i)
    result.data[i] = store(result.dtype, f(double(a.data[i]), double(b.data[i])));
  return {};
}

double logistic(double x) { return 1.0 / (1.0 + std::exp(-x)); }

/// 64-bit product of two 32-bit words, split into its halves.
inline void mulhilo(uint32_t a, uint32_t b, uint32_t &hi, uint32_t &lo) {
  uint64_t product = static_cast<uint64_t>(a) * b;
  hi = static_cast<uint32_t>(product >> 32);
  lo = static_cast<uint32_t>(product);
}

} // namespace

KernelStatus relu(const TensorView &input, const TensorView &result) {
  return unaryMap("relu", "input", input, result, [](double x) {
    return x > 0 || std::isnan(x) ? x : 0.0;
  });
}

KernelStatus tanh(const TensorView &input, const TensorView &result) {
  return unaryMap("tanh", "input", input, result,
                  [](double x) { return std::tanh(x); });
}

KernelStatus silu(const TensorView &input, const TensorView &result) {
  return unaryMap("silu", "input", input, result,
                  [](double x) { return x * logistic(x); });
}

KernelStatus sigmoid(const TensorView &input, const TensorView &result) {
  return unaryMap("sigmoid", "input", input, result,
                  [](double x) { return logistic(x); });
}

namespace {
constexpr double kSqrtHalf = 0.70710678118654752440;   // 1 / sqrt(2)
constexpr double kSqrtTwoOverPi = 0.79788456080286535588; // sqrt(2 / pi)
constexpr double kInvSqrtTwoPi = 0.39894228040143267794; // 1 / sqrt(2 pi)
constexpr double kGeluCubic = 0.044715;
} // namespace

KernelStatus gelu(const TensorView &input, bool tanhForm,
                  const TensorView &result) {
  if (tanhForm)
    return unaryMap("gelu", "input", input, result, [](double x) {
      return 0.5 * x *
             (1.0 + std::tanh(kSqrtTwoOverPi * (x + kGeluCubic * x * x * x)));
    });
  return unaryMap("gelu", "input", input, result, [](double x) {
    return 0.5 * x * (1.0 + std::erf(x * kSqrtHalf));
  });
}

KernelStatus geluBackward(const TensorView &outputGrad, const TensorView &input,
                          bool tanhForm, const TensorView &inputGrad) {
  if (tanhForm)
    return binaryMap("gelu_backward", "output_grad", outputGrad, "input", input,
                     "input_grad", inputGrad, [](double dy, double x) {
                       double t = std::tanh(kSqrtTwoOverPi *
                                            (x + kGeluCubic * x * x * x));
                       double du = kSqrtTwoOverPi *
                                   (1.0 + 3.0 * kGeluCubic * x * x);
                       return dy * (0.5 * (1.0 + t) +
                                    0.5 * x * (1.0 - t * t) * du);
                     });
  return binaryMap("gelu_backward", "output_grad", outputGrad, "input", input,
                   "input_grad", inputGrad, [](double dy, double x) {
                     double cdf = 0.5 * (1.0 + std::erf(x * kSqrtHalf));
                     double pdf = kInvSqrtTwoPi * std::exp(-0.5 * x * x);
                     return dy * (cdf + x * pdf);
                   });
}

KernelStatus hardtanh(const TensorView &input, double minVal, double maxVal,
                      const TensorView &result) {
  // The bounds as f32 values (PyTorch's scalar for f32, its f32 arithmetic
  // for f16/bf16); comparisons rather than min/max, so that NaN propagates
  // and -0 stays -0 on every device.
  const double lo = float(minVal), hi = float(maxVal);
  return unaryMap("hardtanh", "input", input, result,
                  [lo, hi](double x) { return x < lo ? lo : x > hi ? hi : x; });
}

KernelStatus hardswish(const TensorView &input, const TensorView &result) {
  return unaryMap("hardswish", "input", input, result, [](double x) {
    return x < -3.0 ? 0.0 : x > 3.0 ? x : x * (x + 3.0) / 6.0;
  });
}

KernelStatus hardsigmoid(const TensorView &input, const TensorView &result) {
  return unaryMap("hardsigmoid", "input", input, result, [](double x) {
    return x < -3.0 ? 0.0 : x > 3.0 ? 1.0 : (x + 3.0) / 6.0;
  });
}

KernelStatus reluBackward(const TensorView &outputGrad,
                          const TensorView &result,
                          const TensorView &inputGrad) {
  return binaryMap("relu_backward", "output_grad", outputGrad, "result", result,
                   "input_grad", inputGrad,
                   [](double dy, double y) { return y > 0 ? dy : 0.0; });
}

KernelStatus tanhBackward(const TensorView &outputGrad,
                          const TensorView &result,
                          const TensorView &inputGrad) {
  return binaryMap("tanh_backward", "output_grad", outputGrad, "result", result,
                   "input_grad", inputGrad,
                   [](double dy, double y) { return dy * (1.0 - y * y); });
}

KernelStatus siluBackward(const TensorView &outputGrad,
                          const TensorView &input,
                          const TensorView &inputGrad) {
  return binaryMap("silu_backward", "output_grad", outputGrad, "input", input,
                   "input_grad", inputGrad, [](double dy, double x) {
                     double s = logistic(x);
                     return dy * s * (1.0 + x * (1.0 - s));
                   });
}

KernelStatus sigmoidBackward(const TensorView &outputGrad,
                             const TensorView &result,
                             const TensorView &inputGrad) {
  return binaryMap("sigmoid_backward", "output_grad", outputGrad, "result",
                   result, "input_grad", inputGrad,
                   [](double dy, double y) { return dy * y * (1.0 - y); });
}

KernelStatus hardtanhBackward(const TensorView &outputGrad,
                              const TensorView &result, double minVal,
                              double maxVal, const TensorView &inputGrad) {
  // A clipped element holds its bound as the result's dtype stores it.
  const double lo = store(result.dtype, float(minVal));
  const double hi = store(result.dtype, float(maxVal));
  return binaryMap("hardtanh_backward", "output_grad", outputGrad, "result",
                   result, "input_grad", inputGrad, [lo, hi](double dy, double y) {
                     return y > lo && y < hi ? dy : 0.0;
                   });
}

KernelStatus hardswishBackward(const TensorView &outputGrad,
                               const TensorView &input,
                               const TensorView &inputGrad) {
  // PyTorch's pieces: x < -3, -3 <= x <= 3 (closed), x > 3; NaN takes the
  // middle one and stays NaN.
  return binaryMap("hardswish_backward", "output_grad", outputGrad, "input",
                   input, "input_grad", inputGrad, [](double dy, double x) {
                     return x < -3.0 ? 0.0 : x > 3.0 ? dy : dy * (2.0 * x + 3.0) / 6.0;
                   });
}

KernelStatus hardsigmoidBackward(const TensorView &outputGrad,
                                 const TensorView &input,
                                 const TensorView &inputGrad) {
  return binaryMap("hardsigmoid_backward", "output_grad", outputGrad, "input",
                   input, "input_grad", inputGrad, [](double dy, double x) {
                     return x > -3.0 && x < 3.0 ? dy / 6.0 : 0.0;
                   });
}

KernelStatus add(const TensorView &lhs, const TensorView &rhs,
                 const TensorView &result) {
  return binaryMap("add", "lhs", lhs, "rhs", rhs, "result", result,
                   [](double a, double b) { return a + b; });
}

namespace {
/// channel_mul's operands: `input` NHWC, `scale` [N, 1, 1, C]. Sets the
/// batch, the positions per image (H * W) and the channels.
Check &checkChannelScale(Check &check, const TensorView &input, const TensorView &scale,
                         int64_t &n, int64_t &hw, int64_t &c) {
  if (check.rank("input", input, 4, "NHWC").failed())
    return check;
  n = input.dim(0), hw = input.dim(1) * input.dim(2), c = input.dim(3);
  return check.shape("scale", scale, Shape{n, 1, 1, c});
}
} // namespace

KernelStatus channelMul(const TensorView &input, const TensorView &scale,
                        const TensorView &result) {
  Check check("channel_mul");
  int64_t n = 0, hw = 0, c = 0;
  if (checkChannelScale(check, input, scale, n, hw, c)
          .shape("result", result, input.shape)
          .failed())
    return check.status();
  for (int64_t b = 0; b < n; ++b)
    for (int64_t p = 0; p < hw; ++p)
      for (int64_t k = 0; k < c; ++k) {
        const int64_t i = (b * hw + p) * c + k;
        result.data[i] = store(result.dtype, double(input.data[i]) * scale.data[b * c + k]);
      }
  return {};
}

KernelStatus channelMulBackward(const TensorView &outputGrad, const TensorView &input,
                                const TensorView &scale, const TensorView &inputGrad,
                                const TensorView &scaleGrad) {
  Check check("channel_mul_backward");
  int64_t n = 0, hw = 0, c = 0;
  if (checkChannelScale(check, input, scale, n, hw, c)
          .shape("output_grad", outputGrad, input.shape)
          .shape("input_grad", inputGrad, input.shape)
          .shape("scale_grad", scaleGrad, scale.shape)
          .failed())
    return check.status();
  std::vector<double> acc(static_cast<size_t>(c));
  for (int64_t b = 0; b < n; ++b) {
    std::fill(acc.begin(), acc.end(), 0.0);
    for (int64_t p = 0; p < hw; ++p)
      for (int64_t k = 0; k < c; ++k) {
        const int64_t i = (b * hw + p) * c + k;
        const double dy = outputGrad.data[i];
        acc[size_t(k)] += dy * input.data[i]; // exact products, summed over h, w in order
        inputGrad.data[i] = store(inputGrad.dtype, dy * scale.data[b * c + k]);
      }
    for (int64_t k = 0; k < c; ++k)
      scaleGrad.data[b * c + k] = store(scaleGrad.dtype, acc[size_t(k)]);
  }
  return {};
}

//===----------------------------------------------------------------------===//
// Input normalization: uint8 images to floats on the device
//===----------------------------------------------------------------------===//

// Unlike the kernels above, normalization computes in f32, exactly as the
// data sources normalize on the host (runtime/train): a uint8 run equals a
// float run whose host normalized the same pixels, bit for bit.

namespace {

/// `input` uint8 NHWC (its values 0 to 255 as floats), `mean` and `std`
/// [C] f32; C on success, else -1 with the error in `check`.
int64_t checkImageNormalization(Check &check, const TensorView &input, const TensorView *mean,
                                const TensorView *std) {
  if (check.require(input.dtype == DType::u8, "input must be ui8 images, got ",
                    dtypeName(input.dtype))
          .require(input.rank() == 4, "input must be NHWC (rank 4), got shape ",
                   shapeString(input.shape))
          .require(mean && std, "normalizes with both mean and std")
          .failed())
    return -1;
  const int64_t channels = input.shape[3];
  if (check.f32("mean", *mean, {channels}).f32("std", *std, {channels}).failed())
    return -1;
  return channels;
}

/// (x / 255 - mean) * (1 / std) in f32, the sources' formula.
inline float normalizedPixel(float x, float mean, float inverseStd) {
  return (x / 255.0f - mean) * inverseStd;
}

} // namespace

KernelStatus normalizeImages(const TensorView &input, const TensorView &mean,
                             const TensorView &std, const TensorView &result) {
  Check check("normalize_images");
  const int64_t channels = checkImageNormalization(check, input, &mean, &std);
  if (channels < 0 || check.shape("result", result, input.shape).failed())
    return check.status();
  std::vector<float> inverseStd(static_cast<size_t>(channels));
  for (int64_t c = 0; c < channels; ++c)
    inverseStd[size_t(c)] = 1.0f / std.data[c];
  for (int64_t i = 0, e = input.numel(); i < e; ++i) {
    const int64_t c = i % channels;
    result.data[i] =
        store(result.dtype, normalizedPixel(input.data[i], mean.data[c], inverseStd[size_t(c)]));
  }
  return {};
}

namespace {

KernelStatus padNormalizedChannels(Check &check, const TensorView &input, const TensorView *mean,
                                   const TensorView *std, const TensorView &result) {
  const int64_t channels = checkImageNormalization(check, input, mean, std);
  if (channels < 0 || check.view("result", result).failed())
    return check.status();
  Shape widened = input.shape;
  const int64_t padded = result.rank() == 4 ? result.shape[3] : 0;
  widened[3] = padded;
  if (check.shape("result", result, widened)
          .require(padded > channels, "the result must have more channels than the input")
          .failed())
    return check.status();
  std::vector<float> inverseStd(static_cast<size_t>(channels));
  for (int64_t c = 0; c < channels; ++c)
    inverseStd[size_t(c)] = 1.0f / std->data[c];
  const int64_t rows = input.numel() / channels;
  for (int64_t row = 0; row < rows; ++row)
    for (int64_t c = 0; c < padded; ++c)
      result.data[row * padded + c] =
          c < channels ? store(result.dtype, normalizedPixel(input.data[row * channels + c],
                                                             mean->data[c], inverseStd[size_t(c)]))
                       : 0.0f;
  return {};
}

} // namespace

KernelStatus cast(const TensorView &input, const TensorView &result) {
  return unaryMap("cast", "input", input, result, [](double x) { return x; });
}

KernelStatus padChannels(const TensorView &input, const TensorView &result,
                         const TensorView *mean, const TensorView *std) {
  Check check("pad_channels");
  if (mean || std)
    return padNormalizedChannels(check, input, mean, std, result);
  if (check.view("input", input).view("result", result).failed() ||
      check.require(input.rank() >= 1 && input.rank() == result.rank(),
                    "input and result must have one rank").failed())
    return check.status();
  Shape widened = input.shape;
  int64_t channels = input.shape.back(), padded = result.shape.back();
  widened.back() = padded;
  if (check.shape("result", result, widened)
          .require(padded > channels, "the result must have more channels than the input")
          .failed())
    return check.status();
  const int64_t rows = channels ? input.numel() / channels : 0;
  for (int64_t row = 0; row < rows; ++row)
    for (int64_t c = 0; c < padded; ++c)
      result.data[row * padded + c] =
          c < channels ? store(result.dtype, input.data[row * channels + c]) : 0.0f;
  return {};
}

KernelStatus reshape(const TensorView &input, const TensorView &result) {
  Check check("reshape");
  if (check.view("input", input).view("result", result).failed() ||
      check.require(input.numel() == result.numel(), "result shape ",
                    shapeString(result.shape), " has another element count than ",
                    shapeString(input.shape)).failed())
    return check.status();
  for (int64_t i = 0, e = input.numel(); i < e; ++i)
    result.data[i] = store(result.dtype, input.data[i]);
  return {};
}

KernelStatus flatten(const TensorView &input, const TensorView &result) {
  Check check("flatten");
  if (check.view("input", input).failed() ||
      check.require(input.rank() >= 1, "input must have a batch dimension")
          .failed())
    return check.status();
  int64_t n = input.dim(0), rest = 1;
  for (size_t i = 1; i < input.shape.size(); ++i)
    rest *= input.shape[i];
  if (check.shape("result", result, Shape{n, rest}).failed())
    return check.status();
  return reshape(input, result);
}

KernelStatus zero(const TensorView &result) {
  Check check("zero");
  if (check.view("input", result).failed())
    return check.status();
  for (int64_t i = 0, e = result.numel(); i < e; ++i)
    result.data[i] = 0.0f;
  return {};
}

//===----------------------------------------------------------------------===//
// Dropout
//===----------------------------------------------------------------------===//

std::array<uint32_t, 4> philox4x32(std::array<uint32_t, 4> ctr,
                                   std::array<uint32_t, 2> key) {
  constexpr uint32_t kMul0 = 0xD2511F53, kMul1 = 0xCD9E8D57;
  constexpr uint32_t kWeyl0 = 0x9E3779B9, kWeyl1 = 0xBB67AE85;
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      key[0] += kWeyl0;
      key[1] += kWeyl1;
    }
    uint32_t hi0, lo0, hi1, lo1;
    mulhilo(kMul0, ctr[0], hi0, lo0);
    mulhilo(kMul1, ctr[2], hi1, lo1);
    ctr = {hi1 ^ ctr[1] ^ key[0], lo1, hi0 ^ ctr[3] ^ key[1], lo0};
  }
  return ctr;
}

namespace {
/// The four random words of elements 4 * block .. 4 * block + 3.
std::array<uint32_t, 4> dropoutBlock(const RngKey &key, uint64_t block) {
  return philox4x32(
      {static_cast<uint32_t>(block), static_cast<uint32_t>(block >> 32),
       static_cast<uint32_t>(key.stream), static_cast<uint32_t>(key.stream >> 32)},
      {static_cast<uint32_t>(key.seed), static_cast<uint32_t>(key.seed >> 32)});
}

/// ceil(p * 2^24): an element drops when its top 24 random bits are below.
uint32_t dropThreshold(double p) {
  return static_cast<uint32_t>(std::ceil(std::min(std::max(p, 0.0), 1.0) * 16777216.0));
}
} // namespace

uint32_t dropoutRandomWord(const RngKey &key, uint64_t index) {
  return dropoutBlock(key, index / 4)[index % 4];
}

bool dropoutDrops(const RngKey &key, uint64_t index, double p) {
  return (dropoutRandomWord(key, index) >> 8) < dropThreshold(p);
}

KernelStatus dropoutTrain(const TensorView &input, double p, const RngKey &key,
                          const TensorView &result, const TensorView &mask) {
  Check check("dropout_train");
  if (check.view("input", input)
          .shape("result", result, input.shape)
          .shape("mask", mask, input.shape)
          .require(p >= 0 && p <= 1, "p must be in [0, 1], got ", p)
          .failed())
    return check.status();
  const uint32_t threshold = dropThreshold(p);
  const float keep = p < 1 ? store(mask.dtype, 1.0 / (1.0 - p)) : 0.0f;
  const int64_t count = input.numel();
  for (int64_t block = 0; block * 4 < count; ++block) {
    std::array<uint32_t, 4> words = dropoutBlock(key, static_cast<uint64_t>(block));
    for (int64_t j = 0; j < 4 && block * 4 + j < count; ++j) {
      int64_t i = block * 4 + j;
      float m = (words[j] >> 8) < threshold ? 0.0f : keep;
      double x = input.data[i];
      mask.data[i] = m;
      result.data[i] = store(result.dtype, x * m);
    }
  }
  return {};
}

KernelStatus dropout(const TensorView &input, double p, const RngKey &key,
                     const TensorView &result) {
  std::vector<float> mask(static_cast<size_t>(std::max<int64_t>(input.numel(), 0)));
  return dropoutTrain(input, p, key, result,
                      TensorView{mask.data(), input.shape, result.dtype});
}

KernelStatus dropoutBackward(const TensorView &outputGrad,
                             const TensorView &mask,
                             const TensorView &inputGrad) {
  return binaryMap("dropout_backward", "output_grad", outputGrad, "mask", mask,
                   "input_grad", inputGrad,
                   [](double dy, double m) { return dy * m; });
}

//===----------------------------------------------------------------------===//
// Stochastic depth
//===----------------------------------------------------------------------===//

namespace {
/// Checks `input` (rank >= 1, N samples) and `result` of its shape, and
/// `mask` as [N].
Check &checkSampleMask(Check &check, const char *inName, const TensorView &input,
                       const char *resultName, const TensorView &result,
                       const TensorView &mask) {
  if (check.view(inName, input).failed())
    return check;
  check.require(input.rank() >= 1, inName, " must have a batch dimension, got shape ",
                shapeString(input.shape));
  if (check.failed())
    return check;
  return check.shape(resultName, result, input.shape).shape("mask", mask, Shape{input.shape[0]});
}

/// out[n, ...] = x[n, ...] * mask[n], each product rounded once to out's dtype.
void scaleSamples(const TensorView &x, const TensorView &mask, const TensorView &out) {
  const int64_t samples = x.shape[0];
  const int64_t perSample = samples ? x.numel() / samples : 0;
  for (int64_t n = 0; n < samples; ++n) {
    const double m = mask.data[n];
    for (int64_t i = n * perSample, e = i + perSample; i < e; ++i)
      out.data[i] = store(out.dtype, double(x.data[i]) * m);
  }
}
} // namespace

KernelStatus stochasticDepthTrain(const TensorView &input, double p, const RngKey &key,
                                  const TensorView &result, const TensorView &mask) {
  Check check("stochastic_depth_train");
  if (checkSampleMask(check, "input", input, "result", result, mask)
          .require(p >= 0 && p <= 1, "p must be in [0, 1], got ", p)
          .failed())
    return check.status();
  // Sample n takes the draw of dropout's element n: the same stream, one
  // word per sample.
  const uint32_t threshold = dropThreshold(p);
  const float keep = p < 1 ? store(mask.dtype, 1.0 / (1.0 - p)) : 0.0f;
  const int64_t samples = input.shape[0];
  for (int64_t block = 0; block * 4 < samples; ++block) {
    std::array<uint32_t, 4> words = dropoutBlock(key, static_cast<uint64_t>(block));
    for (int64_t j = 0; j < 4 && block * 4 + j < samples; ++j)
      mask.data[block * 4 + j] = (words[j] >> 8) < threshold ? 0.0f : keep;
  }
  scaleSamples(input, mask, result);
  return {};
}

KernelStatus stochasticDepth(const TensorView &input, double p, const RngKey &key,
                             const TensorView &result) {
  const int64_t samples = input.rank() >= 1 ? std::max<int64_t>(input.shape[0], 0) : 0;
  std::vector<float> mask(static_cast<size_t>(samples));
  return stochasticDepthTrain(input, p, key, result,
                              TensorView{mask.data(), Shape{samples}, DType::f32});
}

KernelStatus stochasticDepthBackward(const TensorView &outputGrad, const TensorView &mask,
                                     const TensorView &inputGrad) {
  Check check("stochastic_depth_backward");
  if (checkSampleMask(check, "output_grad", outputGrad, "input_grad", inputGrad, mask).failed())
    return check.status();
  scaleSamples(outputGrad, mask, inputGrad);
  return {};
}

//===----------------------------------------------------------------------===//
// The ops of this family (cpu_ops.h)
//===----------------------------------------------------------------------===//

namespace {

namespace ot = op_table;
using Unary = KernelStatus (*)(const TensorView &, const TensorView &);
using Binary = KernelStatus (*)(const TensorView &, const TensorView &, const TensorView &);

/// An op whose kernel maps operand `In` to result `Out`.
template <Unary Kernel, size_t In, size_t Out> KernelStatus runUnary(const OpRun &r) {
  return Kernel(r.in(In), r.out(Out));
}
/// An op whose kernel maps operands `First` and `Second` to result `Out`.
template <Binary Kernel, size_t First, size_t Second, size_t Out>
KernelStatus runBinary(const OpRun &r) {
  return Kernel(r.in(First), r.in(Second), r.out(Out));
}

KernelStatus runGelu(const OpRun &r) {
  using namespace ot::gelu;
  return gelu(r.in(operand::input),
              attrs::approximate(r.node) == op_table::GeluApproximation::tanh,
              r.out(result::result));
}
KernelStatus runGeluBackward(const OpRun &r) {
  using namespace ot::gelu_backward;
  return geluBackward(r.in(operand::output_grad), r.in(operand::saved),
                      attrs::approximate(r.node) == op_table::GeluApproximation::tanh,
                      r.out(result::input_grad));
}
KernelStatus runHardtanh(const OpRun &r) {
  using namespace ot::hardtanh;
  return hardtanh(r.in(operand::input), attrs::min_val(r.node), attrs::max_val(r.node),
                  r.out(result::result));
}
KernelStatus runHardtanhBackward(const OpRun &r) {
  using namespace ot::hardtanh_backward;
  return hardtanhBackward(r.in(operand::output_grad), r.in(operand::saved),
                          attrs::min_val(r.node), attrs::max_val(r.node),
                          r.out(result::input_grad));
}
KernelStatus runChannelMulBackward(const OpRun &r) {
  using namespace ot::channel_mul_backward;
  return channelMulBackward(r.in(operand::output_grad), r.in(operand::input),
                            r.in(operand::scale), r.out(result::input_grad),
                            r.out(result::scale_grad));
}
KernelStatus runPadChannels(const OpRun &r) {
  using namespace ot::pad_channels;
  return padChannels(r.in(operand::input), r.out(result::result), r.inIfAny(operand::mean),
                     r.inIfAny(operand::std));
}
KernelStatus runNormalizeImages(const OpRun &r) {
  using namespace ot::normalize_images;
  return normalizeImages(r.in(operand::input), r.in(operand::mean), r.in(operand::std),
                         r.out(result::result));
}
KernelStatus runMultiCast(const OpRun &r) { // rn.cast of each tensor
  using namespace ot::multi_cast;
  const IdList from = r.inIds(operand::inputs), to = r.outIds(result::results);
  for (size_t q = 0; q < to.size(); ++q)
    if (KernelStatus s = cast(r.view(from[q]), r.view(to[q])); !s.ok())
      return s;
  return {};
}
KernelStatus runZero(const OpRun &r) { return zero(r.out(ot::zero::result::result)); }
KernelStatus runMultiZero(const OpRun &r) { // rn.zero of each tensor
  for (uint32_t t : r.outIds(ot::multi_zero::result::results))
    if (KernelStatus s = zero(r.view(t)); !s.ok())
      return s;
  return {};
}

/// The key of a random op's draws from its step operand and its count and
/// index attributes: see Note [Random streams] in cpu_kernels.h. The step
/// comes from the program's device copy, as on the GPU.
template <class Attrs> RngKey randomKey(const OpRun &r, size_t step) {
  return RngKey{r.seed, uint64_t(int64_t(r.integer(step))) * uint64_t(Attrs::count(r.node)) +
                            uint64_t(Attrs::index(r.node))};
}
KernelStatus runDropoutTrain(const OpRun &r) {
  using namespace ot::dropout_train;
  return dropoutTrain(r.in(operand::input), attrs::p(r.node), randomKey<attrs>(r, operand::step),
                      r.out(result::result), r.out(result::mask));
}
KernelStatus runStochasticDepthTrain(const OpRun &r) {
  using namespace ot::stochastic_depth_train;
  return stochasticDepthTrain(r.in(operand::input), attrs::p(r.node),
                              randomKey<attrs>(r, operand::step), r.out(result::result),
                              r.out(result::mask));
}

} // namespace

const std::vector<CpuOp> &elementwiseOps() {
  static const std::vector<CpuOp> ops = {
      {OpKind::relu, runUnary<relu, ot::relu::operand::input, ot::relu::result::result>},
      {OpKind::tanh, runUnary<cpu::tanh, ot::tanh::operand::input, ot::tanh::result::result>},
      {OpKind::silu, runUnary<silu, ot::silu::operand::input, ot::silu::result::result>},
      {OpKind::sigmoid,
       runUnary<sigmoid, ot::sigmoid::operand::input, ot::sigmoid::result::result>},
      {OpKind::gelu, runGelu},
      {OpKind::gelu_backward, runGeluBackward},
      {OpKind::hardtanh, runHardtanh},
      {OpKind::hardswish,
       runUnary<hardswish, ot::hardswish::operand::input, ot::hardswish::result::result>},
      {OpKind::hardsigmoid,
       runUnary<hardsigmoid, ot::hardsigmoid::operand::input, ot::hardsigmoid::result::result>},
      {OpKind::relu_backward,
       runBinary<reluBackward, ot::relu_backward::operand::output_grad,
                 ot::relu_backward::operand::saved, ot::relu_backward::result::input_grad>},
      {OpKind::tanh_backward,
       runBinary<tanhBackward, ot::tanh_backward::operand::output_grad,
                 ot::tanh_backward::operand::saved, ot::tanh_backward::result::input_grad>},
      {OpKind::silu_backward,
       runBinary<siluBackward, ot::silu_backward::operand::output_grad,
                 ot::silu_backward::operand::saved, ot::silu_backward::result::input_grad>},
      {OpKind::sigmoid_backward,
       runBinary<sigmoidBackward, ot::sigmoid_backward::operand::output_grad,
                 ot::sigmoid_backward::operand::saved, ot::sigmoid_backward::result::input_grad>},
      {OpKind::hardtanh_backward, runHardtanhBackward},
      {OpKind::hardswish_backward,
       runBinary<hardswishBackward, ot::hardswish_backward::operand::output_grad,
                 ot::hardswish_backward::operand::saved,
                 ot::hardswish_backward::result::input_grad>},
      {OpKind::hardsigmoid_backward,
       runBinary<hardsigmoidBackward, ot::hardsigmoid_backward::operand::output_grad,
                 ot::hardsigmoid_backward::operand::saved,
                 ot::hardsigmoid_backward::result::input_grad>},
      {OpKind::dropout_train, runDropoutTrain},
      {OpKind::dropout_backward,
       runBinary<dropoutBackward, ot::dropout_backward::operand::output_grad,
                 ot::dropout_backward::operand::saved, ot::dropout_backward::result::input_grad>},
      {OpKind::stochastic_depth_train, runStochasticDepthTrain},
      {OpKind::stochastic_depth_backward,
       runBinary<stochasticDepthBackward, ot::stochastic_depth_backward::operand::output_grad,
                 ot::stochastic_depth_backward::operand::mask,
                 ot::stochastic_depth_backward::result::input_grad>},
      {OpKind::add,
       runBinary<add, ot::add::operand::lhs, ot::add::operand::rhs, ot::add::result::result>},
      {OpKind::channel_mul,
       runBinary<channelMul, ot::channel_mul::operand::input, ot::channel_mul::operand::scale,
                 ot::channel_mul::result::result>},
      {OpKind::channel_mul_backward, runChannelMulBackward},
      {OpKind::cast, runUnary<cast, ot::cast::operand::input, ot::cast::result::result>},
      {OpKind::multi_cast, runMultiCast},
      {OpKind::pad_channels, runPadChannels},
      {OpKind::normalize_images, runNormalizeImages},
      {OpKind::reshape,
       runUnary<reshape, ot::reshape::operand::input, ot::reshape::result::result>},
      {OpKind::flatten,
       runUnary<flatten, ot::flatten::operand::input, ot::flatten::result::result>},
      {OpKind::zero, runZero},
      {OpKind::multi_zero, runMultiZero},
  };
  return ops;
}

} // namespace rn::cpu
