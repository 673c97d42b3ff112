//===- elementwise_kernels_test.cpp - Elementwise, pool and loss kernels vs the CPU -===//
//
// Every kernel of kernels.h against its CPU reference (rn::cpu) on random
// inputs held in each storage dtype: odd element counts (vector body plus
// scalar tail), views shifted off alignment (scalar path), odd channel
// counts, stride-2 and overlapping pool windows, padding 0 and > 0, and a
// tensor large enough to loop the grid. Pooling also: disjoint windows
// (the single-pass max backward) with uncovered rows and columns, 3x3/2
// padding 1, channel counts 1, 3, 64, 67 (vector and scalar channel
// paths), mixed dtypes, sums the f32 partial sums would round differently,
// and batches chunked to fit a small workspace.
//
// Bounds. Exact (bit for bit, NaN matching NaN): relu, relu/dropout
// backward, add, casts, reshape, flatten, zero, dropout masks and results,
// stochastic depth masks, results and backward,
// all pooling ops, adaptive and global average pooling (double sums in the
// CPU's order), channel_mul and its backward, count_correct, hardtanh and its backward, the hardsigmoid
// backward. Norm-wise, ||gpu - cpu||_2 <= tol * ||cpu||_2 with
// tol = 2e-6 (f32), 1e-3 (f16), 8e-3 (bf16) of the output dtype: tanh, silu,
// sigmoid, hardswish, hardsigmoid and the tanh/silu/sigmoid/hardswish
// backward (f32 arithmetic and libm against the CPU's double), and the
// cross-entropy gradient (double exp on both sides, another summation
// order). The mean loss: relative 1e-6.
//
//===----------------------------------------------------------------------===//

#include "runtime/cpu/cpu_kernels.h"
#include "runtime/cuda/kernels.h"
#include "runtime/cuda/conv.h"
#include "runtime/cuda/gemm.h"
#include "node_layout.h"
#include "runtime/cuda/op_launch.h"

#include "cuda_test_util.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace rn::cuda {
namespace {

using testing::allocate;
using testing::download;
using testing::numel;
using testing::roundAll;
using testing::TestStream;
using testing::upload;
using Shape = std::vector<int64_t>;

constexpr DType kFloatTypes[] = {DType::f32, DType::f16, DType::bf16};

std::string str(const Shape &s) { return detail::shapeString(s); }

std::vector<float> randomValues(int64_t n, std::mt19937 &rng, DType type, float lo = -3.0f,
                                float hi = 3.0f) {
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(static_cast<size_t>(n));
  for (float &x : v)
    x = roundTo(type, dist(rng));
  return v;
}

/// Values from a small set, so that windows and rows hold ties.
std::vector<float> quantizedValues(int64_t n, std::mt19937 &rng) {
  std::uniform_int_distribution<int> dist(-4, 4);
  std::vector<float> v(static_cast<size_t>(n));
  for (float &x : v)
    x = 0.5f * float(dist(rng));
  return v;
}

cpu::TensorView cpuView(std::vector<float> &data, const Shape &shape, DType type) {
  return cpu::TensorView{data.data(), shape, type};
}

uint32_t bitsOf(float v) {
  uint32_t b;
  std::memcpy(&b, &v, 4);
  return b;
}

/// Bit-for-bit equality (any NaN equals any NaN).
void expectExact(const std::vector<float> &gpu, const std::vector<float> &cpu,
                 const std::string &what) {
  ASSERT_EQ(gpu.size(), cpu.size()) << what;
  size_t mismatches = 0;
  for (size_t i = 0; i < gpu.size(); ++i) {
    bool same = (std::isnan(gpu[i]) && std::isnan(cpu[i])) || bitsOf(gpu[i]) == bitsOf(cpu[i]);
    if (!same && mismatches++ < 5)
      ADD_FAILURE() << what << ": element " << i << ": gpu " << gpu[i] << " cpu " << cpu[i];
  }
  EXPECT_EQ(mismatches, 0u) << what;
}

double tolerance(DType type) {
  switch (type) {
  case DType::f16:
    return 1e-3;
  case DType::bf16:
    return 8e-3;
  default:
    return 2e-6;
  }
}

/// ||gpu - cpu||_2 <= tol * ||scale||_2 (by default ||cpu||_2), NaNs in the
/// same places.
void expectClose(const std::vector<float> &gpu, const std::vector<float> &cpu, double tol,
                 const std::string &what, const std::vector<float> *scale = nullptr) {
  ASSERT_EQ(gpu.size(), cpu.size()) << what;
  double diff = 0, norm = 0;
  for (size_t i = 0; i < gpu.size(); ++i) {
    if (std::isnan(cpu[i]) || std::isnan(gpu[i])) {
      EXPECT_TRUE(std::isnan(cpu[i]) && std::isnan(gpu[i])) << what << ": element " << i;
      continue;
    }
    double d = double(gpu[i]) - double(cpu[i]);
    diff += d * d;
    double n = scale ? (*scale)[i] : cpu[i];
    norm += n * n;
  }
  EXPECT_LE(std::sqrt(diff), tol * std::sqrt(norm) + 1e-30)
      << what << ": relative L2 error " << std::sqrt(diff) / std::sqrt(norm);
}

const Shape kElementwiseShapes[] = {{1}, {7}, {3, 5, 7}, {2, 9, 11, 13}, {8 * 4096 + 5}};

//===----------------------------------------------------------------------===//
// Activations, add, backward maps
//===----------------------------------------------------------------------===//

// The CPU's GELU in each form, with the signatures of the tables below.
cpu::KernelStatus cpuGelu(const cpu::TensorView &x, const cpu::TensorView &y) {
  return cpu::gelu(x, /*tanhForm=*/false, y);
}
cpu::KernelStatus cpuGeluTanh(const cpu::TensorView &x, const cpu::TensorView &y) {
  return cpu::gelu(x, /*tanhForm=*/true, y);
}
cpu::KernelStatus cpuGeluBackward(const cpu::TensorView &dy, const cpu::TensorView &x,
                                  const cpu::TensorView &dx) {
  return cpu::geluBackward(dy, x, /*tanhForm=*/false, dx);
}
cpu::KernelStatus cpuGeluTanhBackward(const cpu::TensorView &dy, const cpu::TensorView &x,
                                      const cpu::TensorView &dx) {
  return cpu::geluBackward(dy, x, /*tanhForm=*/true, dx);
}

struct UnaryCase {
  UnaryOp op;
  cpu::KernelStatus (*reference)(const cpu::TensorView &, const cpu::TensorView &);
  bool exact;
};

TEST(CudaElementwise, UnaryMatchesCpu) {
  RN_SKIP_WITHOUT_CUDA();
  TestStream stream;
  std::mt19937 rng(1);
  const UnaryCase cases[] = {{UnaryOp::relu, cpu::relu, true},
                             {UnaryOp::tanh, cpu::tanh, false},
                             {UnaryOp::silu, cpu::silu, false},
                             {UnaryOp::sigmoid, cpu::sigmoid, false},
                             {UnaryOp::hardswish, cpu::hardswish, false},
                             {UnaryOp::hardsigmoid, cpu::hardsigmoid, false},
                             {UnaryOp::gelu, cpuGelu, false},
                             {UnaryOp::gelu_tanh, cpuGeluTanh, false}};
  for (const UnaryCase &c : cases)
    for (DType in : kFloatTypes)
      for (DType out : kFloatTypes)
        for (const Shape &shape : kElementwiseShapes)
          for (int64_t offset : {0, 1}) {
            std::string what = std::string(unaryOpName(c.op)) + " " +
                               std::string(dtypeName(in)) + "->" + std::string(dtypeName(out)) +
                               " " + str(shape) + " offset " + std::to_string(offset);
            std::vector<float> x = randomValues(numel(shape), rng, in, -6, 6);
            x[0] = -0.0f; // relu(-0) is +0 on the CPU
            if (x.size() > 3)
              x[3] = std::numeric_limits<float>::quiet_NaN();
            if (x.size() > 5)
              x[4] = -3.0f, x[5] = 3.0f; // the kinks of hardswish and hardsigmoid
            auto dx = upload(x, shape, in, offset);
            auto dy = allocate(shape, out, offset);
            RN_ASSERT_STATUS_OK(unary(c.op, dx.view, dy.view, stream.get()));
            RN_ASSERT_CUDA(stream.sync());
            std::vector<float> ref(x.size());
            ASSERT_TRUE(c.reference(cpuView(x, shape, in), cpuView(ref, shape, out)).ok());
            if (c.exact)
              expectExact(download(dy.view), ref, what);
            else
              expectClose(download(dy.view), ref, tolerance(out), what);
          }
}

struct BinaryCase {
  BinaryOp op;
  cpu::KernelStatus (*reference)(const cpu::TensorView &, const cpu::TensorView &,
                                 const cpu::TensorView &);
  bool exact;
  /// Bound the error relative to lhs (dy) rather than the result: GELU's
  /// derivative Phi(x) + x phi(x) cancels near x = -0.75, where the f32
  /// kernel's error is a rounding of its terms, which scale with dy.
  bool boundByLhs = false;
};

TEST(CudaElementwise, BinaryMatchesCpu) {
  RN_SKIP_WITHOUT_CUDA();
  TestStream stream;
  std::mt19937 rng(2);
  const BinaryCase cases[] = {{BinaryOp::add, cpu::add, true},
                              {BinaryOp::relu_backward, cpu::reluBackward, true},
                              {BinaryOp::tanh_backward, cpu::tanhBackward, false},
                              {BinaryOp::silu_backward, cpu::siluBackward, false},
                              {BinaryOp::dropout_backward, cpu::dropoutBackward, true},
                              {BinaryOp::sigmoid_backward, cpu::sigmoidBackward, false},
                              {BinaryOp::hardswish_backward, cpu::hardswishBackward, false},
                              {BinaryOp::hardsigmoid_backward, cpu::hardsigmoidBackward, true},
                              {BinaryOp::gelu_backward, cpuGeluBackward, false, true},
                              {BinaryOp::gelu_tanh_backward, cpuGeluTanhBackward, false, true}};
  // (lhs, rhs, result) dtypes: uniform, and the mixes a program makes.
  const DType combos[][3] = {{DType::f32, DType::f32, DType::f32},
                             {DType::f16, DType::f16, DType::f16},
                             {DType::bf16, DType::bf16, DType::bf16},
                             {DType::f16, DType::f32, DType::f32},
                             {DType::f32, DType::bf16, DType::f16}};
  for (const BinaryCase &c : cases)
    for (const auto &types : combos)
      for (const Shape &shape : kElementwiseShapes)
        for (int64_t offset : {0, 1}) {
          std::string what = std::string(binaryOpName(c.op)) + " " +
                             std::string(dtypeName(types[0])) + "," +
                             std::string(dtypeName(types[1])) + "->" +
                             std::string(dtypeName(types[2])) + " " + str(shape) + " offset " +
                             std::to_string(offset);
          std::vector<float> a = randomValues(numel(shape), rng, types[0]);
          std::vector<float> b =
              c.op == BinaryOp::tanh_backward
                  ? randomValues(numel(shape), rng, types[1], -1, 1) // tanh's results
              : c.op == BinaryOp::sigmoid_backward
                  ? randomValues(numel(shape), rng, types[1], 0, 1) // sigmoid's results
              : c.op == BinaryOp::hardswish_backward || c.op == BinaryOp::hardsigmoid_backward
                  ? randomValues(numel(shape), rng, types[1], -5, 5) // every piece
                  : randomValues(numel(shape), rng, types[1]);
          if (c.op == BinaryOp::relu_backward || c.op == BinaryOp::dropout_backward)
            for (size_t i = 0; i < b.size(); i += 3)
              b[i] = 0; // zeros of relu's result, dropped mask entries
          if (b.size() > 1)
            b[0] = -3.0f, b[1] = 3.0f; // the kinks of hardswish and hardsigmoid
          auto da = upload(a, shape, types[0], offset);
          auto db = upload(b, shape, types[1], offset);
          auto dr = allocate(shape, types[2], offset);
          RN_ASSERT_STATUS_OK(binary(c.op, da.view, db.view, dr.view, stream.get()));
          RN_ASSERT_CUDA(stream.sync());
          std::vector<float> ref(a.size());
          ASSERT_TRUE(c.reference(cpuView(a, shape, types[0]), cpuView(b, shape, types[1]),
                                  cpuView(ref, shape, types[2]))
                          .ok());
          if (c.exact)
            expectExact(download(dr.view), ref, what);
          else
            expectClose(download(dr.view), ref, tolerance(types[2]), what,
                        c.boundByLhs ? &a : nullptr);
        }
}

TEST(CudaElementwise, HardtanhMatchesCpuBitForBit) {
  RN_SKIP_WITHOUT_CUDA();
  TestStream stream;
  std::mt19937 rng(4);
  // ReLU6, Hardtanh, and bounds f16 and bf16 cannot hold (rounding inwards
  // in f16: the backward must compare with the rounded bounds).
  const std::pair<double, double> bounds[] = {{0.0, 6.0}, {-1.0, 1.0}, {0.3, 1.6}};
  for (auto [lo, hi] : bounds)
    for (DType in : kFloatTypes)
      for (DType out : kFloatTypes)
        for (const Shape &shape : kElementwiseShapes)
          for (int64_t offset : {0, 1}) {
            std::string what = "hardtanh [" + std::to_string(lo) + ", " + std::to_string(hi) +
                               "] " + std::string(dtypeName(in)) + "->" +
                               std::string(dtypeName(out)) + " " + str(shape) + " offset " +
                               std::to_string(offset);
            std::vector<float> x = randomValues(numel(shape), rng, in, -8, 8);
            x[0] = -0.0f;
            if (x.size() > 4) {
              x[1] = std::numeric_limits<float>::quiet_NaN();
              x[2] = roundTo(in, float(lo)), x[3] = roundTo(in, float(hi)); // at the bounds
              x[4] = roundTo(in, 0.5f * float(lo + hi));
            }
            auto dx = upload(x, shape, in, offset);
            auto dy = allocate(shape, out, offset);
            RN_ASSERT_STATUS_OK(hardtanh(dx.view, lo, hi, dy.view, stream.get()));
            std::vector<float> y(x.size());
            ASSERT_TRUE(cpu::hardtanh(cpuView(x, shape, in), lo, hi, cpuView(y, shape, out)).ok());
            // The backward from the CPU's result, in the result's dtype.
            std::vector<float> g = randomValues(numel(shape), rng, in);
            auto dg = upload(g, shape, in, offset);
            auto dyIn = upload(y, shape, out, offset);
            auto dgx = allocate(shape, in, offset);
            RN_ASSERT_STATUS_OK(
                hardtanhBackward(dg.view, dyIn.view, lo, hi, dgx.view, stream.get()));
            RN_ASSERT_CUDA(stream.sync());
            expectExact(download(dy.view), y, what);
            std::vector<float> gx(x.size());
            ASSERT_TRUE(cpu::hardtanhBackward(cpuView(g, shape, in), cpuView(y, shape, out), lo,
                                              hi, cpuView(gx, shape, in))
                            .ok());
            expectExact(download(dgx.view), gx, what + " backward");
          }
}

TEST(CudaElementwise, ChannelMulMatchesCpuBitForBit) {
  RN_SKIP_WITHOUT_CUDA();
  TestStream stream;
  std::mt19937 rng(5);
  // C a multiple of 8 (packs) or not (scalar), one pixel, many pixels; a
  // batch large enough to loop the grid.
  const Shape shapes[] = {{1, 1, 1, 8}, {2, 3, 5, 16}, {3, 7, 7, 5}, {2, 1, 9, 1}, {64, 28, 28, 24}};
  // (x/dy, scale, results) dtypes: uniform, and mixes.
  const DType combos[][3] = {{DType::f32, DType::f32, DType::f32},
                             {DType::f16, DType::f16, DType::f16},
                             {DType::bf16, DType::bf16, DType::bf16},
                             {DType::f16, DType::f32, DType::bf16}};
  for (const Shape &shape : shapes)
    for (const auto &types : combos)
      for (int64_t offset : {0, 1}) {
        const Shape scaleShape{shape[0], 1, 1, shape[3]};
        std::string what = "channel_mul " + str(shape) + " " + std::string(dtypeName(types[0])) +
                           "," + std::string(dtypeName(types[1])) + "->" +
                           std::string(dtypeName(types[2])) + " offset " + std::to_string(offset);
        std::vector<float> x = randomValues(numel(shape), rng, types[0]);
        std::vector<float> sc = randomValues(numel(scaleShape), rng, types[1]);
        std::vector<float> g = randomValues(numel(shape), rng, types[0]);
        auto dx = upload(x, shape, types[0], offset), ds = upload(sc, scaleShape, types[1], offset);
        auto dg = upload(g, shape, types[0], offset);
        auto dy = allocate(shape, types[2], offset), dgx = allocate(shape, types[2], offset);
        auto dgs = allocate(scaleShape, types[2], offset);
        RN_ASSERT_STATUS_OK(channelMul(dx.view, ds.view, dy.view, stream.get()));
        RN_ASSERT_STATUS_OK(
            channelMulBackward(dg.view, dx.view, ds.view, dgx.view, dgs.view, stream.get()));
        RN_ASSERT_CUDA(stream.sync());
        std::vector<float> y(x.size()), gx(x.size()), gs(sc.size());
        ASSERT_TRUE(cpu::channelMul(cpuView(x, shape, types[0]), cpuView(sc, scaleShape, types[1]),
                                    cpuView(y, shape, types[2]))
                        .ok());
        ASSERT_TRUE(cpu::channelMulBackward(
                        cpuView(g, shape, types[0]), cpuView(x, shape, types[0]),
                        cpuView(sc, scaleShape, types[1]), cpuView(gx, shape, types[2]),
                        cpuView(gs, scaleShape, types[2]))
                        .ok());
        expectExact(download(dy.view), y, what);
        expectExact(download(dgx.view), gx, what + " input_grad");
        expectExact(download(dgs.view), gs, what + " scale_grad");
      }
  // A scale of another shape is refused by name.
  auto x = allocate({2, 3, 3, 4}, DType::f32), bad = allocate({2, 1, 1, 3}, DType::f32);
  Status st = channelMul(x.view, bad.view, x.view, stream.get());
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message().find("channel_mul: scale must have shape [2, 1, 1, 4]"),
            std::string::npos)
      << st.error().message();
}

TEST(CudaElementwise, ShapeAndDtypeErrorsNameTheOp) {
  RN_SKIP_WITHOUT_CUDA();
  TestStream stream;
  auto a = allocate({4, 5}, DType::f32);
  auto b = allocate({5, 4}, DType::f32);
  auto i = allocate({4, 5}, DType::i32);
  Status s = binary(BinaryOp::add, a.view, b.view, a.view, stream.get());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message().find("add: rhs must have shape [4, 5]"), std::string::npos)
      << s.error().message();
  s = unary(UnaryOp::relu, i.view, a.view, stream.get());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message().find("relu: input must be f32, f16 or bf16"), std::string::npos)
      << s.error().message();
}

//===----------------------------------------------------------------------===//
// Casts, reshapes, zero
//===----------------------------------------------------------------------===//

TEST(CudaElementwise, CastMatchesCpuBitForBit) {
  RN_SKIP_WITHOUT_CUDA();
  TestStream stream;
  std::mt19937 rng(3);
  for (DType in : kFloatTypes)
    for (DType out : kFloatTypes)
      for (const Shape &shape : kElementwiseShapes)
        for (int64_t offset : {0, 1}) {
          std::string what = std::string("cast ") + std::string(dtypeName(in)) + "->" +
                             std::string(dtypeName(out)) + " " + str(shape);
          std::vector<float> x = randomValues(numel(shape), rng, in, -100, 100);
          // Rounding edges: overflow of f16, subnormals, NaN, signed zero.
          const float specials[] = {70000.0f, -65520.0f, 1e-6f, -3e-8f, 1e-40f,
                                    std::numeric_limits<float>::quiet_NaN(), -0.0f,
                                    std::numeric_limits<float>::infinity()};
          for (size_t k = 0; k < std::size(specials) && k < x.size(); ++k)
            x[k] = roundTo(in, specials[k]);
          auto dx = upload(x, shape, in, offset);
          auto dy = allocate(shape, out, offset);
          RN_ASSERT_STATUS_OK(convert("cast", dx.view, dy.view, true, stream.get()));
          RN_ASSERT_CUDA(stream.sync());
          std::vector<float> ref(x.size());
          ASSERT_TRUE(cpu::cast(cpuView(x, shape, in), cpuView(ref, shape, out)).ok());
          expectExact(download(dy.view), ref, what);
        }
}

// rn.pad_channels at the image stem's shape (3 f32 channels to 8 f16: one
// 16-byte row per thread), and unaligned or unpacked rows (1 to 5, 3 to
// 16, an odd output offset) through the scalar path: bit for bit the CPU's.
TEST(CudaElementwise, PadChannelsMatchesCpuBitForBit) {
  RN_SKIP_WITHOUT_CUDA();
  TestStream stream;
  std::mt19937 rng(9);
  struct PadCase {
    Shape in, out;
    DType inType, outType;
    int64_t offset;
  };
  const PadCase cases[] = {
      {{4, 9, 7, 3}, {4, 9, 7, 8}, DType::f32, DType::f16, 0},
      {{4, 9, 7, 3}, {4, 9, 7, 8}, DType::f16, DType::bf16, 0},
      {{4, 9, 7, 3}, {4, 9, 7, 8}, DType::f32, DType::f16, 1},
      {{2, 5, 5, 1}, {2, 5, 5, 5}, DType::bf16, DType::f32, 0},
      {{64, 7, 7, 3}, {64, 7, 7, 16}, DType::f16, DType::f16, 0},
  };
  for (const PadCase &c : cases) {
    std::string what = "pad_channels " + str(c.in) + " " + std::string(dtypeName(c.inType)) +
                       " -> " + str(c.out) + " " + std::string(dtypeName(c.outType)) +
                       " offset " + std::to_string(c.offset);
    std::vector<float> x = randomValues(numel(c.in), rng, DType::f32, -100, 100);
    auto dx = upload(x, c.in, c.inType, c.offset);
    auto dy = allocate(c.out, c.outType, c.offset);
    RN_ASSERT_STATUS_OK(padChannels(dx.view, dy.view, stream.get()));
    RN_ASSERT_CUDA(stream.sync());
    std::vector<float> xIn(x.size()), ref(size_t(numel(c.out)));
    for (size_t i = 0; i < x.size(); ++i)
      xIn[i] = roundTo(c.inType, x[i]);
    ASSERT_TRUE(
        cpu::padChannels(cpuView(xIn, c.in, c.inType), cpuView(ref, c.out, c.outType)).ok());
    expectExact(download(dy.view), ref, what);
  }
  auto x = allocate({2, 3}, DType::f32), narrow = allocate({2, 2}, DType::f16),
       other = allocate({3, 8}, DType::f16);
  EXPECT_FALSE(padChannels(x.view, narrow.view, stream.get()).ok());
  EXPECT_FALSE(padChannels(x.view, other.view, stream.get()).ok());
}

/// `n` random uint8 pixels as floats (0 to 255), 0 and 255 among them.
std::vector<float> randomPixels(int64_t n, std::mt19937 &rng) {
  std::uniform_int_distribution<int> dist(0, 255);
  std::vector<float> v(static_cast<size_t>(n));
  for (float &x : v)
    x = float(dist(rng));
  v[0] = 0.0f;
  v.back() = 255.0f;
  return v;
}

// rn.normalize_images: uint8 images to f32, f16 and bf16, 16 bytes a load
// where aligned (byte counts that are and are not a multiple of 16, and an
// odd byte offset through the scalar path): bit for bit the CPU's (the
// data sources' f32 formula, rounded once).
TEST(CudaElementwise, NormalizeImagesMatchesCpuBitForBit) {
  RN_SKIP_WITHOUT_CUDA();
  TestStream stream;
  std::mt19937 rng(21);
  for (const Shape &shape : {Shape{4, 9, 7, 3}, Shape{2, 5, 5, 1}, Shape{3, 32, 32, 3},
                             Shape{1, 3, 3, 4}})
    for (DType out : kFloatTypes)
      for (int64_t offset : {0, 1}) {
        const std::string what = "normalize_images " + str(shape) + " -> " +
                                 std::string(dtypeName(out)) + " offset " +
                                 std::to_string(offset);
        const Shape channels{shape[3]};
        std::vector<float> pixels = randomPixels(numel(shape), rng);
        std::vector<float> mean = randomValues(shape[3], rng, DType::f32, 0.1f, 0.9f);
        std::vector<float> deviation = randomValues(shape[3], rng, DType::f32, 0.05f, 0.5f);
        auto dx = upload(pixels, shape, DType::u8, offset);
        auto dm = upload(mean, channels, DType::f32), ds = upload(deviation, channels, DType::f32);
        auto dy = allocate(shape, out, offset);
        RN_ASSERT_STATUS_OK(normalizeImages(dx.view, dm.view, ds.view, dy.view, stream.get()));
        RN_ASSERT_CUDA(stream.sync());
        std::vector<float> ref(pixels.size());
        ASSERT_TRUE(cpu::normalizeImages(cpuView(pixels, shape, DType::u8),
                                         cpuView(mean, channels, DType::f32),
                                         cpuView(deviation, channels, DType::f32),
                                         cpuView(ref, shape, out))
                        .ok());
        expectExact(download(dy.view), ref, what);
      }
  auto floats = allocate({2, 2, 2, 3}, DType::f32), bytes = allocate({2, 2, 2, 3}, DType::u8),
       three = allocate({3}, DType::f32), two = allocate({2}, DType::f32);
  EXPECT_FALSE(
      normalizeImages(floats.view, three.view, three.view, floats.view, stream.get()).ok());
  EXPECT_FALSE(normalizeImages(bytes.view, two.view, three.view, floats.view, stream.get()).ok());
}

// The stem's fused pad of a uint8 model: normalized channels then zeros,
// 16 pixels' bytes a group and one pack store per pixel at the stem's
// shape (3 channels to 8 f16), the scalar path elsewhere (an odd offset,
// 16 padded channels, f32): bit for bit the CPU's.
TEST(CudaElementwise, PadNormalizedChannelsMatchesCpuBitForBit) {
  RN_SKIP_WITHOUT_CUDA();
  TestStream stream;
  std::mt19937 rng(22);
  struct PadCase {
    Shape in, out;
    DType outType;
    int64_t offset;
  };
  const PadCase cases[] = {
      {{4, 9, 7, 3}, {4, 9, 7, 8}, DType::f16, 0},
      {{8, 32, 32, 3}, {8, 32, 32, 8}, DType::bf16, 0},
      {{4, 9, 7, 3}, {4, 9, 7, 8}, DType::f16, 1},
      {{2, 5, 5, 1}, {2, 5, 5, 8}, DType::f32, 0},
      {{3, 7, 7, 3}, {3, 7, 7, 16}, DType::f16, 0},
  };
  for (const PadCase &c : cases) {
    const std::string what = "pad_channels normalize " + str(c.in) + " -> " + str(c.out) + " " +
                             std::string(dtypeName(c.outType)) + " offset " +
                             std::to_string(c.offset);
    const Shape channels{c.in[3]};
    std::vector<float> pixels = randomPixels(numel(c.in), rng);
    std::vector<float> mean = randomValues(c.in[3], rng, DType::f32, 0.1f, 0.9f);
    std::vector<float> deviation = randomValues(c.in[3], rng, DType::f32, 0.05f, 0.5f);
    auto dx = upload(pixels, c.in, DType::u8, c.offset);
    auto dm = upload(mean, channels, DType::f32), ds = upload(deviation, channels, DType::f32);
    auto dy = allocate(c.out, c.outType, c.offset);
    RN_ASSERT_STATUS_OK(padNormalizedChannels(dx.view, dm.view, ds.view, dy.view, stream.get()));
    RN_ASSERT_CUDA(stream.sync());
    std::vector<float> ref(size_t(numel(c.out)));
    cpu::TensorView m = cpuView(mean, channels, DType::f32);
    cpu::TensorView s = cpuView(deviation, channels, DType::f32);
    ASSERT_TRUE(cpu::padChannels(cpuView(pixels, c.in, DType::u8), cpuView(ref, c.out, c.outType),
                                 &m, &s)
                    .ok());
    expectExact(download(dy.view), ref, what);
  }
  auto bytes = allocate({2, 2, 2, 3}, DType::u8), same = allocate({2, 2, 2, 3}, DType::f16),
       three = allocate({3}, DType::f32);
  EXPECT_FALSE(
      padNormalizedChannels(bytes.view, three.view, three.view, same.view, stream.get()).ok());
}

TEST(CudaElementwise, ReshapeFlattenAndZero) {
  RN_SKIP_WITHOUT_CUDA();
  TestStream stream;
  std::mt19937 rng(4);
  const Shape in{3, 5, 7, 9}, flat{3, 315};
  for (DType type : kFloatTypes) {
    std::vector<float> x = randomValues(numel(in), rng, type);
    auto dx = upload(x, in, type);
    auto dy = allocate(flat, type);
    RN_ASSERT_STATUS_OK(convert("flatten", dx.view, dy.view, false, stream.get()));
    auto dz = allocate(in, DType::f32);
    RN_ASSERT_STATUS_OK(convert("reshape", dy.view, dz.view, false, stream.get()));
    RN_ASSERT_CUDA(stream.sync());
    std::vector<float> ref(x.size()), back(x.size());
    ASSERT_TRUE(cpu::flatten(cpuView(x, in, type), cpuView(ref, flat, type)).ok());
    ASSERT_TRUE(cpu::reshape(cpuView(ref, flat, type), cpuView(back, in, DType::f32)).ok());
    expectExact(download(dy.view), ref, "flatten");
    expectExact(download(dz.view), back, "reshape to f32");

    RN_ASSERT_STATUS_OK(zero(dx.view, stream.get()));
    RN_ASSERT_CUDA(stream.sync());
    expectExact(download(dx.view), std::vector<float>(x.size(), 0.0f), "zero");
  }
  auto a = allocate({4, 5}, DType::f32), b = allocate({3, 7}, DType::f32);
  Status s = convert("reshape", a.view, b.view, false, stream.get());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message().find("reshape: result shape [3, 7]"), std::string::npos)
      << s.error().message();
}

//===----------------------------------------------------------------------===//
// Dropout
//===----------------------------------------------------------------------===//

TEST(CudaElementwise, DropoutMatchesCpuMaskBitForBit) {
  RN_SKIP_WITHOUT_CUDA();
  TestStream stream;
  std::mt19937 rng(5);
  // Note [Random streams] (runtime/cpu/cpu_kernels.h): a stream above 2^32
  // (2^30 * 4 + 2) and a negative step (wrapping to a stream near 2^64)
  // check the 64-bit form the kernel computes from the device step.
  struct DropoutKey {
    uint64_t seed;
    int32_t step;
    uint64_t dropouts, index;
  };
  const DropoutKey dropoutKeys[] = {
      {0, 0, 1, 0}, {42, 3, 2, 1}, {0x0123456789abcdefull, 1 << 30, 4, 2}, {9, -1, 3, 1}};
  const Shape shapes[] = {{1}, {3}, {5}, {2, 9, 11, 3}, {4 * 4096 * 256 + 3}};
  for (const DropoutKey &dk : dropoutKeys)
    for (double p : {0.0, 0.1, 0.5, 0.9})
      for (DType type : kFloatTypes)
        for (const Shape &shape : shapes)
          for (int64_t offset : {0, 1}) {
            if (numel(shape) > 100000 && (offset || p != 0.5))
              continue; // one large case per key and dtype loops the grid
            const cpu::RngKey key{dk.seed,
                                  uint64_t(int64_t(dk.step)) * dk.dropouts + dk.index};
            std::string what = "dropout p " + std::to_string(p) + " " +
                               std::string(dtypeName(type)) + " " + str(shape) + " seed " +
                               std::to_string(key.seed) + " stream " + std::to_string(key.stream);
            std::vector<float> x = randomValues(numel(shape), rng, type);
            DType maskType = type == DType::f32 ? DType::f16 : DType::f32;
            auto dx = upload(x, shape, type, offset);
            auto dy = allocate(shape, type, offset);
            auto dm = allocate(shape, maskType, offset);
            auto dy2 = allocate(shape, type, offset);
            auto step = upload({float(dk.step)}, {}, DType::i32);
            RN_ASSERT_STATUS_OK(dropout(dx.view, p, dk.seed, step.view, dk.dropouts, dk.index,
                                        dy.view, &dm.view, stream.get()));
            RN_ASSERT_STATUS_OK(dropout(dx.view, p, dk.seed, step.view, dk.dropouts, dk.index,
                                        dy2.view, nullptr, stream.get()));
            RN_ASSERT_CUDA(stream.sync());
            std::vector<float> ref(x.size()), mask(x.size()), ref2(x.size());
            ASSERT_TRUE(cpu::dropoutTrain(cpuView(x, shape, type), p, key,
                                          cpuView(ref, shape, type),
                                          cpuView(mask, shape, maskType))
                            .ok());
            ASSERT_TRUE(
                cpu::dropout(cpuView(x, shape, type), p, key, cpuView(ref2, shape, type)).ok());
            expectExact(download(dm.view), mask, what + " mask");
            expectExact(download(dy.view), ref, what + " result");
            expectExact(download(dy2.view), ref2, what + " (no mask)");
          }
}

TEST(CudaElementwise, DropoutRejectsABadStepOrIndex) {
  RN_SKIP_WITHOUT_CUDA();
  TestStream stream;
  const Shape shape{8};
  auto dx = upload(std::vector<float>(8, 1.0f), shape, DType::f32);
  auto dy = allocate(shape, DType::f32), dm = allocate(shape, DType::f32);
  auto step = upload({1.0f}, {}, DType::i32), f32Step = upload({1.0f}, {}, DType::f32);
  Status s = dropout(dx.view, 0.5, 0, f32Step.view, 2, 0, dy.view, &dm.view, stream.get());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message().find("step must be an i32 scalar"), std::string::npos)
      << s.error().message();
  s = dropout(dx.view, 0.5, 0, step.view, 2, 2, dy.view, &dm.view, stream.get());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message().find("index 2 must be below the dropout count 2"),
            std::string::npos)
      << s.error().message();
}

//===----------------------------------------------------------------------===//
// Stochastic depth
//===----------------------------------------------------------------------===//

// The per-sample masks, the results and the backward against the CPU, bit
// for bit: samples per Philox block 1 to 4 (1, 3, 5 samples), elements per
// sample a multiple of 8 (the vector path) or not, views off alignment
// (scalar path), enough elements to loop the grid, an f16 mask besides the
// programs' f32, and the keys of the dropout test (64-bit streams, a
// negative step).
TEST(CudaElementwise, StochasticDepthMatchesCpuBitForBit) {
  RN_SKIP_WITHOUT_CUDA();
  TestStream stream;
  std::mt19937 rng(6);
  struct RandomOpKey {
    uint64_t seed;
    int32_t step;
    uint64_t count, index;
  };
  const RandomOpKey keys[] = {
      {0, 0, 1, 0}, {42, 3, 2, 1}, {0x0123456789abcdefull, 1 << 30, 4, 2}, {9, -1, 3, 1}};
  const Shape shapes[] = {{1}, {3}, {5, 7}, {6, 4, 4, 8}, {9, 3, 5, 7}, {37, 64, 64, 8}};
  for (const RandomOpKey &k : keys)
    for (double p : {0.0, 0.2, 0.5, 1.0})
      for (DType type : kFloatTypes)
        for (const Shape &shape : shapes)
          for (int64_t offset : {0, 1}) {
            if (numel(shape) > 100000 && (offset || p != 0.5))
              continue; // one large case per key and dtype loops the grid
            const cpu::RngKey key{k.seed, uint64_t(int64_t(k.step)) * k.count + k.index};
            const DType maskType = type == DType::bf16 ? DType::f16 : DType::f32;
            const Shape maskShape{shape[0]};
            std::string what = "stochastic depth p " + std::to_string(p) + " " +
                               std::string(dtypeName(type)) + " " + str(shape) + " offset " +
                               std::to_string(offset) + " seed " + std::to_string(key.seed) +
                               " stream " + std::to_string(key.stream);
            std::vector<float> x = randomValues(numel(shape), rng, type);
            std::vector<float> dy = randomValues(numel(shape), rng, type);
            auto dx = upload(x, shape, type, offset);
            auto ddy = upload(dy, shape, type, offset);
            auto dres = allocate(shape, type, offset);
            auto dmask = allocate(maskShape, maskType, offset);
            auto dgrad = allocate(shape, type, offset);
            auto step = upload({float(k.step)}, {}, DType::i32);
            RN_ASSERT_STATUS_OK(stochasticDepth(dx.view, p, k.seed, step.view, k.count, k.index,
                                                dres.view, dmask.view, stream.get()));
            RN_ASSERT_STATUS_OK(
                stochasticDepthBackward(ddy.view, dmask.view, dgrad.view, stream.get()));
            RN_ASSERT_CUDA(stream.sync());
            std::vector<float> ref(x.size()), grad(x.size());
            std::vector<float> mask(static_cast<size_t>(shape[0]));
            ASSERT_TRUE(cpu::stochasticDepthTrain(cpuView(x, shape, type), p, key,
                                                  cpuView(ref, shape, type),
                                                  cpuView(mask, maskShape, maskType))
                            .ok());
            ASSERT_TRUE(cpu::stochasticDepthBackward(cpuView(dy, shape, type),
                                                     cpuView(mask, maskShape, maskType),
                                                     cpuView(grad, shape, type))
                            .ok());
            expectExact(download(dmask.view), mask, what + " mask");
            expectExact(download(dres.view), ref, what + " result");
            expectExact(download(dgrad.view), grad, what + " backward");
          }
}

TEST(CudaElementwise, StochasticDepthRejectsABadStepIndexOrMask) {
  RN_SKIP_WITHOUT_CUDA();
  TestStream stream;
  const Shape shape{4, 2};
  auto dx = upload(std::vector<float>(8, 1.0f), shape, DType::f32);
  auto dy = allocate(shape, DType::f32), dm = allocate({4}, DType::f32);
  auto wrongMask = allocate({8}, DType::f32);
  auto step = upload({1.0f}, {}, DType::i32), f32Step = upload({1.0f}, {}, DType::f32);
  auto expectError = [](const Status &s, const std::string &message) {
    ASSERT_FALSE(s.ok()) << message;
    EXPECT_NE(s.error().message().find(message), std::string::npos) << s.error().message();
  };
  expectError(stochasticDepth(dx.view, 0.5, 0, f32Step.view, 2, 0, dy.view, dm.view, stream.get()),
              "step must be an i32 scalar");
  expectError(stochasticDepth(dx.view, 0.5, 0, step.view, 2, 2, dy.view, dm.view, stream.get()),
              "index 2 must be below the random op count 2");
  expectError(
      stochasticDepth(dx.view, 0.5, 0, step.view, 2, 0, dy.view, wrongMask.view, stream.get()),
      "stochastic_depth_train: mask");
  expectError(stochasticDepth(dx.view, 1.5, 0, step.view, 2, 0, dy.view, dm.view, stream.get()),
              "p must be in [0, 1]");
  expectError(stochasticDepthBackward(dx.view, wrongMask.view, dy.view, stream.get()),
              "stochastic_depth_backward: mask");
}

//===----------------------------------------------------------------------===//
// Pooling
//===----------------------------------------------------------------------===//

struct PoolCase {
  Shape input;
  PoolParams params;
};

const PoolCase kPoolCases[] = {
    {{2, 8, 8, 4}, {{2, 2}, {2, 2}, {0, 0}}},   // stride 2, no overlap
    {{2, 9, 7, 3}, {{3, 3}, {2, 2}, {1, 1}}},   // overlap, padding, odd sizes
    {{1, 7, 9, 5}, {{3, 3}, {1, 1}, {1, 1}}},   // stride 1, heavy overlap
    {{3, 10, 6, 1}, {{3, 2}, {2, 1}, {1, 0}}},  // non-square
    {{2, 5, 5, 16}, {{1, 1}, {1, 1}, {0, 0}}},  // identity window
    {{1, 13, 11, 7}, {{5, 5}, {3, 3}, {2, 2}}}, // large window, stride 3
    {{2, 4, 4, 33}, {{4, 4}, {4, 4}, {0, 0}}},  // one window
    // Disjoint windows (the single-pass max backward): VGG's 2x2/2 with an
    // odd row and column no window covers, C = 64 (8 f16 channels per
    // thread), 67 and 3 (one), 1; padding; stride 3 > kernel 2 (gaps).
    {{3, 9, 7, 64}, {{2, 2}, {2, 2}, {0, 0}}},
    {{2, 7, 9, 67}, {{2, 2}, {2, 2}, {0, 0}}},
    {{2, 5, 7, 3}, {{2, 2}, {2, 2}, {0, 0}}},
    {{2, 5, 5, 1}, {{2, 2}, {2, 2}, {0, 0}}},
    {{2, 7, 7, 6}, {{2, 2}, {2, 2}, {1, 1}}},
    {{2, 11, 10, 3}, {{2, 2}, {3, 3}, {0, 0}}},
    // ResNet's 3x3/2 padding 1 (the two-pass backward, compile-time 3x3
    // windows and covering bounds) over channel counts 64, 67, 3, 1.
    {{2, 11, 10, 64}, {{3, 3}, {2, 2}, {1, 1}}},
    {{2, 9, 9, 67}, {{3, 3}, {2, 2}, {1, 1}}},
    {{1, 12, 12, 3}, {{3, 3}, {2, 2}, {1, 1}}},
    {{2, 9, 8, 1}, {{3, 3}, {2, 2}, {1, 1}}},
    {{2, 10, 10, 12}, {{3, 3}, {2, 2}, {1, 1}}}, // 4 f16 / f32 channels per thread
    // Windows of more than 256 positions (two-byte arg-max offsets).
    {{1, 18, 18, 2}, {{17, 17}, {1, 1}, {0, 0}}},
    // ceil_mode: partial last windows (GoogLeNet's 3x3/2: 14 -> 7, floor
    // mode 6), disjoint ones (2x2/2 pad 1, 3x3/3 pad 1), and the divisor
    // without padding (count_include_pad=False), with and without ceil_mode.
    {{2, 14, 14, 8}, {{3, 3}, {2, 2}, {0, 0}, true}},
    {{2, 7, 9, 16}, {{2, 2}, {2, 2}, {1, 1}, true}},
    {{1, 12, 12, 3}, {{3, 3}, {3, 3}, {1, 1}, true}},
    {{2, 9, 10, 4}, {{3, 3}, {2, 2}, {1, 1}, true, true}},
    {{1, 8, 8, 6}, {{3, 3}, {1, 1}, {1, 1}, false, true}},
};

std::string str(const PoolCase &c) {
  return str(c.input) + " kernel " + str({c.params.kernel[0], c.params.kernel[1]}) +
         " strides " + str({c.params.strides[0], c.params.strides[1]}) + " padding " +
         str({c.params.padding[0], c.params.padding[1]}) +
         (c.params.ceilMode ? " ceil_mode" : "") + (c.params.excludePad ? " exclude_pad" : "");
}

cpu::Pool2dAttrs cpuAttrs(const PoolParams &p) {
  return {p.kernel, p.strides, p.padding, p.ceilMode, p.excludePad};
}

/// The stream workspace of the max pool backward in these tests (the
/// executor's is 64 MiB; these shapes need a few KiB).
constexpr size_t kPoolWorkspaceBytes = 1 << 20;

/// Runs the four pool ops on the GPU and the CPU over one case and compares
/// bit for bit. Tensors are `offset` elements off their allocation's
/// alignment (1: the scalar paths); `gradType` is the dtype of the pooled
/// results, dy and the max pool's dx (the input's: the templated paths;
/// another: the run-time dtype path).
void expectPoolMatchesCpu(const PoolCase &pc, DType type, DType gradType, bool ties,
                          int64_t offset, std::mt19937 &rng, const TestStream &stream,
                          const testing::DeviceBuffer &workspace) {
  std::string what = str(pc) + " " + std::string(dtypeName(type)) +
                     (gradType != type ? "->" + std::string(dtypeName(gradType)) : "") +
                     (ties ? " with ties" : "") + (offset ? " unaligned" : "");
  cpu::Shape outShape;
  ASSERT_TRUE(cpu::pool2dOutputShape(pc.input, cpuAttrs(pc.params), outShape).ok());
  std::vector<float> x = ties ? quantizedValues(numel(pc.input), rng)
                              : randomValues(numel(pc.input), rng, type);
  if (!ties && x.size() > 10)
    x[10] = std::numeric_limits<float>::quiet_NaN(); // NaN wins the max
  std::vector<float> dy = randomValues(numel(outShape), rng, gradType);
  auto dx = upload(x, pc.input, type, offset);
  auto ddy = upload(dy, outShape, gradType, offset);
  auto maxOut = allocate(outShape, gradType, offset), avgOut = allocate(outShape, gradType, offset);
  // avg_pool2d_backward has no input operand: its gradient takes the
  // input's dtype, so that a mixed case mixes dy and dx.
  auto maxGrad = allocate(pc.input, gradType, offset), avgGrad = allocate(pc.input, type, offset);
  RN_ASSERT_STATUS_OK(maxPool2d(dx.view, pc.params, maxOut.view, stream.get()));
  RN_ASSERT_STATUS_OK(avgPool2d(dx.view, pc.params, avgOut.view, stream.get()));
  RN_ASSERT_STATUS_OK(maxPool2dBackward(ddy.view, dx.view, pc.params, maxGrad.view,
                                        workspace.data(), workspace.bytes(), stream.get()));
  RN_ASSERT_STATUS_OK(avgPool2dBackward(ddy.view, pc.params, avgGrad.view, stream.get()));
  RN_ASSERT_CUDA(stream.sync());

  std::vector<float> rMax(static_cast<size_t>(numel(outShape))), rAvg(rMax.size());
  std::vector<float> rMaxGrad(x.size()), rAvgGrad(x.size());
  auto attrs = cpuAttrs(pc.params);
  ASSERT_TRUE(cpu::maxPool2d(cpuView(x, pc.input, type), attrs,
                             cpuView(rMax, outShape, gradType))
                  .ok());
  ASSERT_TRUE(cpu::avgPool2d(cpuView(x, pc.input, type), attrs,
                             cpuView(rAvg, outShape, gradType))
                  .ok());
  ASSERT_TRUE(cpu::maxPool2dBackward(cpuView(dy, outShape, gradType),
                                     cpuView(x, pc.input, type), attrs,
                                     cpuView(rMaxGrad, pc.input, gradType))
                  .ok());
  ASSERT_TRUE(cpu::avgPool2dBackward(cpuView(dy, outShape, gradType), attrs,
                                     cpuView(rAvgGrad, pc.input, type))
                  .ok());
  expectExact(download(maxOut.view), rMax, "max_pool2d " + what);
  expectExact(download(avgOut.view), rAvg, "avg_pool2d " + what);
  expectExact(download(maxGrad.view), rMaxGrad, "max_pool2d_backward " + what);
  expectExact(download(avgGrad.view), rAvgGrad, "avg_pool2d_backward " + what);
}

TEST(CudaPool, MatchesCpuBitForBit) {
  RN_SKIP_WITHOUT_CUDA();
  TestStream stream;
  testing::DeviceBuffer workspace(kPoolWorkspaceBytes);
  std::mt19937 rng(6);
  for (const PoolCase &pc : kPoolCases)
    for (DType type : kFloatTypes)
      for (bool ties : {false, true}) {
        expectPoolMatchesCpu(pc, type, type, ties, 0, rng, stream, workspace);
        if (::testing::Test::HasFatalFailure())
          return;
      }
}

TEST(CudaPool, UnalignedAndMixedDtypesMatchCpu) {
  RN_SKIP_WITHOUT_CUDA();
  TestStream stream;
  testing::DeviceBuffer workspace(kPoolWorkspaceBytes);
  std::mt19937 rng(16);
  const PoolCase cases[] = {kPoolCases[7], kPoolCases[13], kPoolCases[18]};
  for (const PoolCase &pc : cases)
    for (DType type : kFloatTypes) {
      // Views off the vector alignment take one channel per thread.
      expectPoolMatchesCpu(pc, type, type, false, 1, rng, stream, workspace);
      // A result and gradients of another dtype take the run-time dtype path.
      expectPoolMatchesCpu(pc, type, type == DType::f32 ? DType::bf16 : DType::f32, false, 0,
                           rng, stream, workspace);
      if (::testing::Test::HasFatalFailure())
        return;
    }
}

/// Every covering window of the single input maximum routes its dy to it,
/// so dx[0] sums four gradients in output order: 1 + 2^-24 + 2^-24 is
/// 1 + 2^-23 in the CPU's double sum but 1 in f32 partial sums (f32); for
/// f16 and bf16, a half ulp plus two tiny terms rounds up on the CPU but to
/// even in f32 partial sums. Disjoint windows turn a -0 gradient into +0.
TEST(CudaPool, MaxPoolBackwardSumsRoundLikeTheCpu) {
  RN_SKIP_WITHOUT_CUDA();
  TestStream stream;
  testing::DeviceBuffer workspace(kPoolWorkspaceBytes);
  // 2x2 input, 3x3 windows, stride 1, padding 1: four windows over all of it.
  const Shape in{1, 2, 2, 1}, out{1, 2, 2, 1};
  const PoolParams params{{3, 3}, {1, 1}, {1, 1}};
  std::vector<float> x{5.0f, 1.0f, 2.0f, 3.0f};
  const float tiny = std::ldexp(1.0f, -24);
  for (DType type : kFloatTypes) {
    float halfUlp = type == DType::f16 ? std::ldexp(1.0f, -11)
                    : type == DType::bf16 ? std::ldexp(1.0f, -8)
                                          : 0.0f;
    std::vector<float> dy{1.0f, halfUlp, tiny, tiny};
    auto dx = upload(x, in, type), ddy = upload(dy, out, type);
    auto grad = allocate(in, type);
    RN_ASSERT_STATUS_OK(maxPool2dBackward(ddy.view, dx.view, params, grad.view, workspace.data(),
                                          workspace.bytes(), stream.get()));
    RN_ASSERT_CUDA(stream.sync());
    std::vector<float> ref(x.size());
    ASSERT_TRUE(cpu::maxPool2dBackward(cpuView(dy, out, type), cpuView(x, in, type),
                                       cpuAttrs(params), cpuView(ref, in, type))
                    .ok());
    ASSERT_GT(ref[0], 1.0f) << dtypeName(type); // the case rounds up on the CPU
    expectExact(download(grad.view), ref, "four-term sum " + std::string(dtypeName(type)));
  }
  const Shape vggIn{1, 4, 4, 2}, vggOut{1, 2, 2, 2};
  std::vector<float> vx(16 * 2), vdy(8, -0.0f);
  for (size_t i = 0; i < vx.size(); ++i)
    vx[i] = float(i % 7);
  for (DType type : kFloatTypes) {
    auto dx = upload(vx, vggIn, type), ddy = upload(vdy, vggOut, type);
    auto grad = allocate(vggIn, type);
    RN_ASSERT_STATUS_OK(maxPool2dBackward(ddy.view, dx.view, PoolParams{{2, 2}, {2, 2}, {0, 0}},
                                          grad.view, nullptr, 0, stream.get()));
    RN_ASSERT_CUDA(stream.sync());
    expectExact(download(grad.view), std::vector<float>(vx.size(), 0.0f),
                "-0 gradients " + std::string(dtypeName(type)));
  }
}

/// A workspace smaller than the batch's arg-max runs the backward in
/// chunks of whole images, with the same result; less than one image is an
/// error, and disjoint windows need none.
TEST(CudaPool, MaxPoolBackwardChunksTheBatchToFitTheWorkspace) {
  RN_SKIP_WITHOUT_CUDA();
  TestStream stream;
  std::mt19937 rng(17);
  const Shape in{5, 11, 10, 64};
  const PoolParams params{{3, 3}, {2, 2}, {1, 1}};
  const int64_t perImage = 6 * 5 * 64; // one byte per output element
  Result<size_t> full = maxPool2dBackwardWorkspaceBytes(in, params, 1 << 20);
  ASSERT_TRUE(full.ok()) << full.error().message();
  EXPECT_EQ(*full, size_t(5 * perImage));
  Result<size_t> part = maxPool2dBackwardWorkspaceBytes(in, params, size_t(2.5 * perImage));
  ASSERT_TRUE(part.ok());
  EXPECT_EQ(*part, size_t(2 * perImage));
  Result<size_t> tooSmall = maxPool2dBackwardWorkspaceBytes(in, params, 100);
  ASSERT_TRUE(tooSmall.ok());
  EXPECT_EQ(*tooSmall, size_t(perImage)); // more than there is: the executor's error
  Result<size_t> disjoint = maxPool2dBackwardWorkspaceBytes(in, {{2, 2}, {2, 2}, {0, 0}}, 0);
  ASSERT_TRUE(disjoint.ok());
  EXPECT_EQ(*disjoint, 0u);
  Result<size_t> large = maxPool2dBackwardWorkspaceBytes({1, 18, 18, 2}, {{17, 17}, {1, 1}, {0, 0}},
                                                         1 << 20);
  ASSERT_TRUE(large.ok());
  EXPECT_EQ(*large, size_t(2 * 2 * 2 * 2)); // two-byte offsets

  for (DType type : kFloatTypes)
    for (bool ties : {false, true}) {
      std::string what = std::string(dtypeName(type)) + (ties ? " with ties" : "");
      std::vector<float> x = ties ? quantizedValues(numel(in), rng)
                                  : randomValues(numel(in), rng, type);
      const Shape out{5, 6, 5, 64};
      std::vector<float> dy = randomValues(numel(out), rng, type);
      auto dx = upload(x, in, type), ddy = upload(dy, out, type);
      std::vector<float> ref(x.size());
      ASSERT_TRUE(cpu::maxPool2dBackward(cpuView(dy, out, type), cpuView(x, in, type),
                                         cpuAttrs(params), cpuView(ref, in, type))
                      .ok());
      for (size_t bytes : {size_t(perImage), size_t(2.5 * perImage), size_t(5 * perImage)}) {
        testing::DeviceBuffer workspace(bytes);
        auto grad = allocate(in, type);
        RN_ASSERT_STATUS_OK(maxPool2dBackward(ddy.view, dx.view, params, grad.view,
                                              workspace.data(), bytes, stream.get()));
        RN_ASSERT_CUDA(stream.sync());
        expectExact(download(grad.view), ref,
                    "chunked max_pool2d_backward " + what + " workspace " +
                        std::to_string(bytes));
      }
    }

  auto dx = allocate(in, DType::f16), grad = allocate(in, DType::f16);
  auto ddy = allocate({5, 6, 5, 64}, DType::f16);
  testing::DeviceBuffer small(100);
  Status s = maxPool2dBackward(ddy.view, dx.view, params, grad.view, small.data(), 100,
                               stream.get());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message().find("max_pool2d_backward: needs 1920 bytes of stream workspace"),
            std::string::npos)
      << s.error().message();
}

/// Random finite f16 bit patterns (|x| < 2, both signs), cheap enough for
/// ResNet-sized tensors.
std::vector<uint16_t> randomHalfBits(size_t n, uint32_t seed) {
  std::vector<uint16_t> bits(n);
  uint32_t state = seed;
  for (uint16_t &b : bits) {
    state = state * 1664525u + 1013904223u;
    b = uint16_t((state >> 16) & 0xBFFFu);
  }
  return bits;
}

/// ResNet-50's max pool (3x3 stride 2 padding 1 over 256x112x112x64) and
/// VGG's 2x2/2 (over 256x32x32x64), f16: time per op and effective
/// bandwidth over the bytes each op must move (x and y; x, dy and dx),
/// printed (set RN_CUDA_BENCH=1 to run; no timing asserted).
TEST(CudaPool, ResNetAndVggBandwidth) {
  RN_SKIP_WITHOUT_CUDA();
  if (!std::getenv("RN_CUDA_BENCH"))
    GTEST_SKIP() << "set RN_CUDA_BENCH=1 to measure";
  TestStream stream;
  testing::DeviceBuffer workspace(size_t(64) << 20); // the executor's per-stream workspace
  struct Bench {
    const char *name;
    Shape input;
    PoolParams params;
  };
  const Bench benches[] = {
      {"resnet50 3x3/2 pad 1", {256, 112, 112, 64}, {{3, 3}, {2, 2}, {1, 1}}},
      {"vgg 2x2/2", {256, 32, 32, 64}, {{2, 2}, {2, 2}, {0, 0}}},
  };
  cudaEvent_t start, stop;
  RN_ASSERT_CUDA(cudaEventCreate(&start));
  RN_ASSERT_CUDA(cudaEventCreate(&stop));
  for (const Bench &b : benches) {
    cpu::Shape out;
    ASSERT_TRUE(cpu::pool2dOutputShape(b.input, cpuAttrs(b.params), out).ok());
    const size_t inBytes = size_t(numel(b.input)) * 2, outBytes = size_t(numel(out)) * 2;
    testing::DeviceBuffer x(inBytes), dx(inBytes), y(outBytes), dy(outBytes);
    ASSERT_TRUE(x.data() && dx.data() && y.data() && dy.data());
    std::vector<uint16_t> xBits = randomHalfBits(inBytes / 2, 1);
    std::vector<uint16_t> dyBits = randomHalfBits(outBytes / 2, 2);
    RN_ASSERT_CUDA(cudaMemcpy(x.data(), xBits.data(), inBytes, cudaMemcpyHostToDevice));
    RN_ASSERT_CUDA(cudaMemcpy(dy.data(), dyBits.data(), outBytes, cudaMemcpyHostToDevice));
    const DeviceTensor xv{x.data(), DType::f16, b.input}, dxv{dx.data(), DType::f16, b.input};
    const DeviceTensor yv{y.data(), DType::f16, out}, dyv{dy.data(), DType::f16, out};
    auto time = [&](const char *what, double traffic, auto &&body) {
      for (int i = 0; i < 2; ++i)
        ASSERT_TRUE(body().ok());
      const int reps = 10;
      RN_ASSERT_CUDA(cudaEventRecord(start, stream.get()));
      for (int i = 0; i < reps; ++i)
        ASSERT_TRUE(body().ok());
      RN_ASSERT_CUDA(cudaEventRecord(stop, stream.get()));
      RN_ASSERT_CUDA(cudaEventSynchronize(stop));
      float ms = 0;
      RN_ASSERT_CUDA(cudaEventElapsedTime(&ms, start, stop));
      double seconds = ms / 1e3 / reps;
      std::printf("%s f16 %s: %.1f us, %.0f GB/s\n", b.name, what, seconds * 1e6,
                  traffic / seconds / 1e9);
    };
    time("max_pool2d", double(inBytes + outBytes),
         [&] { return maxPool2d(xv, b.params, yv, stream.get()); });
    time("max_pool2d_backward", double(2 * inBytes + outBytes), [&] {
      return maxPool2dBackward(dyv, xv, b.params, dxv, workspace.data(), workspace.bytes(),
                               stream.get());
    });
    time("avg_pool2d", double(inBytes + outBytes),
         [&] { return avgPool2d(xv, b.params, yv, stream.get()); });
    time("avg_pool2d_backward", double(inBytes + outBytes),
         [&] { return avgPool2dBackward(dyv, b.params, dxv, stream.get()); });
  }
  RN_ASSERT_CUDA(stream.sync());
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
}

TEST(CudaPool, GlobalAvgPoolMatchesCpuBitForBit) {
  RN_SKIP_WITHOUT_CUDA();
  TestStream stream;
  std::mt19937 rng(7);
  const Shape shapes[] = {{2, 7, 7, 5}, {3, 1, 1, 8}, {1, 13, 3, 33}, {4, 6, 6, 1}};
  for (const Shape &in : shapes)
    for (DType type : kFloatTypes)
      for (DType out : {type, DType::f32}) {
        std::string what = str(in) + " " + std::string(dtypeName(type)) + "->" +
                           std::string(dtypeName(out));
        Shape outShape{in[0], 1, 1, in[3]};
        std::vector<float> x = randomValues(numel(in), rng, type);
        std::vector<float> dy = randomValues(numel(outShape), rng, out);
        auto dx = upload(x, in, type), ddy = upload(dy, outShape, out);
        auto dr = allocate(outShape, out), dg = allocate(in, type);
        RN_ASSERT_STATUS_OK(globalAvgPool(dx.view, dr.view, stream.get()));
        RN_ASSERT_STATUS_OK(globalAvgPoolBackward(ddy.view, dg.view, stream.get()));
        RN_ASSERT_CUDA(stream.sync());
        std::vector<float> ref(static_cast<size_t>(numel(outShape))), grad(x.size());
        ASSERT_TRUE(cpu::globalAvgPool(cpuView(x, in, type), cpuView(ref, outShape, out)).ok());
        ASSERT_TRUE(
            cpu::globalAvgPoolBackward(cpuView(dy, outShape, out), cpuView(grad, in, type)).ok());
        expectExact(download(dr.view), ref, "global_avg_pool " + what);
        expectExact(download(dg.view), grad, "global_avg_pool_backward " + what);
      }
}

TEST(CudaPool, AdaptiveAvgPoolMatchesCpuBitForBit) {
  RN_SKIP_WITHOUT_CUDA();
  TestStream stream;
  std::mt19937 rng(8);
  // (input, output): windows that overlap and vary (10 -> 7, 7 -> 3), an
  // output larger than the input (2 -> 3), divisible sizes, 1x1, the
  // EfficientNet/MobileNet heads' 7x7 -> 7x7 and a large batch.
  const std::pair<Shape, Shape> cases[] = {{{2, 10, 7, 5}, {2, 7, 3, 5}},
                                           {{1, 2, 4, 8}, {1, 3, 3, 8}},
                                           {{3, 6, 6, 3}, {3, 3, 2, 3}},
                                           {{2, 5, 9, 16}, {2, 1, 1, 16}},
                                           {{2, 7, 7, 4}, {2, 7, 7, 4}},
                                           {{64, 13, 13, 40}, {64, 6, 6, 40}}};
  for (const auto &[in, outShape] : cases)
    for (DType type : kFloatTypes)
      for (DType out : {type, DType::f32}) {
        std::string what = str(in) + " -> " + str(outShape) + " " +
                           std::string(dtypeName(type)) + "->" + std::string(dtypeName(out));
        std::vector<float> x = randomValues(numel(in), rng, type);
        std::vector<float> dy = randomValues(numel(outShape), rng, out);
        auto dx = upload(x, in, type, 1), ddy = upload(dy, outShape, out);
        auto dr = allocate(outShape, out), dg = allocate(in, type);
        RN_ASSERT_STATUS_OK(adaptiveAvgPool2d(dx.view, dr.view, stream.get()));
        RN_ASSERT_STATUS_OK(adaptiveAvgPool2dBackward(ddy.view, dg.view, stream.get()));
        RN_ASSERT_CUDA(stream.sync());
        std::vector<float> ref(static_cast<size_t>(numel(outShape))), grad(x.size());
        ASSERT_TRUE(
            cpu::adaptiveAvgPool2d(cpuView(x, in, type), cpuView(ref, outShape, out)).ok());
        ASSERT_TRUE(cpu::adaptiveAvgPool2dBackward(cpuView(dy, outShape, out),
                                                   cpuView(grad, in, type))
                        .ok());
        expectExact(download(dr.view), ref, "adaptive_avg_pool2d " + what);
        expectExact(download(dg.view), grad, "adaptive_avg_pool2d_backward " + what);
      }
  auto x = allocate({2, 6, 6, 3}, DType::f32), bad = allocate({2, 3, 3, 4}, DType::f32);
  Status st = adaptiveAvgPool2d(x.view, bad.view, stream.get());
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message().find("adaptive_avg_pool2d: result [2, 3, 3, 4] must keep the "
                                      "batch and the channels of input [2, 6, 6, 3]"),
            std::string::npos)
      << st.error().message();
}

TEST(CudaPool, BadGeometryIsAnError) {
  RN_SKIP_WITHOUT_CUDA();
  TestStream stream;
  auto x = allocate({1, 4, 4, 2}, DType::f32), y = allocate({1, 2, 2, 2}, DType::f32);
  Status s = maxPool2d(x.view, PoolParams{{2, 2}, {2, 2}, {2, 2}}, y.view, stream.get());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message().find("max_pool2d: padding 2 exceeds half"), std::string::npos)
      << s.error().message();
  s = avgPool2d(x.view, PoolParams{{2, 2}, {1, 1}, {0, 0}}, y.view, stream.get());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message().find("avg_pool2d: result must have shape [1, 3, 3, 2]"),
            std::string::npos)
      << s.error().message();
}

//===----------------------------------------------------------------------===//
// Loss
//===----------------------------------------------------------------------===//

std::vector<float> randomLabels(int64_t n, int64_t classes, std::mt19937 &rng) {
  std::uniform_int_distribution<int32_t> dist(0, int32_t(classes - 1));
  std::vector<float> labels(static_cast<size_t>(n));
  for (float &l : labels)
    l = float(dist(rng));
  return labels;
}

std::vector<int32_t> asInts(const std::vector<float> &labels) {
  return std::vector<int32_t>(labels.begin(), labels.end());
}

const Shape kLogitShapes[] = {{1, 1}, {4, 3}, {7, 10}, {33, 1000}, {257, 37}};

TEST(CudaLoss, SoftmaxCrossEntropyMatchesCpu) {
  RN_SKIP_WITHOUT_CUDA();
  TestStream stream;
  std::mt19937 rng(8);
  for (const Shape &shape : kLogitShapes)
    for (DType type : kFloatTypes)
      for (double smoothing : {0.0, 0.1}) {
        std::string what = str(shape) + " " + std::string(dtypeName(type)) + " smoothing " +
                           std::to_string(smoothing);
        int64_t n = shape[0], c = shape[1];
        std::vector<float> x = randomValues(n * c, rng, type, -5, 5);
        std::vector<float> labels = randomLabels(n, c, rng);
        std::vector<int32_t> ints = asInts(labels);
        auto dx = upload(x, shape, type), dl = upload(labels, {n}, DType::i32);
        auto loss = allocate({}, DType::f32), loss2 = allocate({}, DType::f32);
        auto scale = upload({1024.0f}, {}, DType::f32);
        auto grad = allocate(shape, type), scaledGrad = allocate(shape, type);
        testing::DeviceBuffer workspace(softmaxCrossEntropyWorkspaceBytes(n));
        RN_ASSERT_STATUS_OK(softmaxCrossEntropy(dx.view, dl.view, smoothing, loss.view,
                                                workspace.data(), workspace.bytes(),
                                                stream.get()));
        RN_ASSERT_STATUS_OK(softmaxCrossEntropy(dx.view, dl.view, smoothing, loss2.view,
                                                workspace.data(), workspace.bytes(),
                                                stream.get()));
        RN_ASSERT_STATUS_OK(softmaxCrossEntropyBackward(dx.view, dl.view, nullptr, smoothing,
                                                        grad.view, stream.get()));
        RN_ASSERT_STATUS_OK(softmaxCrossEntropyBackward(dx.view, dl.view, &scale.view,
                                                        smoothing, scaledGrad.view,
                                                        stream.get()));
        RN_ASSERT_CUDA(stream.sync());

        cpu::LabelView lv{ints.data(), {n}};
        float refLoss = 0;
        ASSERT_TRUE(cpu::softmaxCrossEntropy(cpuView(x, shape, type), lv, smoothing, refLoss).ok());
        std::vector<float> refGrad(x.size()), refScaled(x.size());
        ASSERT_TRUE(cpu::softmaxCrossEntropyBackward(cpuView(x, shape, type), lv, 1.0f,
                                                     smoothing, cpuView(refGrad, shape, type))
                        .ok());
        ASSERT_TRUE(cpu::softmaxCrossEntropyBackward(cpuView(x, shape, type), lv, 1024.0f,
                                                     smoothing, cpuView(refScaled, shape, type))
                        .ok());
        float gpuLoss = download(loss.view)[0];
        EXPECT_LE(std::fabs(gpuLoss - refLoss), 1e-6 * std::fabs(refLoss) + 1e-12)
            << what << ": gpu " << gpuLoss << " cpu " << refLoss;
        EXPECT_EQ(bitsOf(gpuLoss), bitsOf(download(loss2.view)[0])) << what << ": not deterministic";
        expectClose(download(grad.view), refGrad, tolerance(type), "gradient " + what);
        expectClose(download(scaledGrad.view), refScaled, tolerance(type),
                    "scaled gradient " + what);
      }
}

TEST(CudaLoss, CountCorrectMatchesCpuOnTiesAndNaN) {
  RN_SKIP_WITHOUT_CUDA();
  TestStream stream;
  std::mt19937 rng(9);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (const Shape &shape : kLogitShapes)
    for (DType type : kFloatTypes) {
      int64_t n = shape[0], c = shape[1];
      std::vector<float> x = quantizedValues(n * c, rng); // many ties
      std::vector<float> labels = randomLabels(n, c, rng);
      for (int64_t r = 0; r < n; r += 3)
        x[size_t(r * c + (r / 3) % c)] = nan; // NaN in column 0 of some rows, later in others
      for (int64_t r = 1; r < n; r += 2) {
        // The label at the first maximum.
        int64_t best = 0;
        for (int64_t k = 1; k < c; ++k)
          if (x[size_t(r * c + k)] > x[size_t(r * c + best)])
            best = k;
        labels[size_t(r)] = float(best);
      }
      std::vector<int32_t> ints = asInts(labels);
      auto dx = upload(x, shape, type), dl = upload(labels, {n}, DType::i32);
      auto count = allocate({}, DType::i32);
      RN_ASSERT_STATUS_OK(countCorrect(dx.view, dl.view, count.view, stream.get()));
      RN_ASSERT_CUDA(stream.sync());
      int32_t ref = 0;
      ASSERT_TRUE(cpu::countCorrect(cpuView(x, shape, type), cpu::LabelView{ints.data(), {n}}, ref)
                      .ok());
      EXPECT_EQ(int32_t(download(count.view)[0]), ref) << str(shape) << " " << dtypeName(type);
    }
}

TEST(CudaLoss, OutOfRangeLabelShows) {
  RN_SKIP_WITHOUT_CUDA();
  TestStream stream;
  std::mt19937 rng(10);
  const Shape shape{4, 3};
  std::vector<float> x = randomValues(12, rng, DType::f32);
  auto dx = upload(x, shape, DType::f32), dl = upload({0, 1, 3, 2}, {4}, DType::i32);
  auto loss = allocate({}, DType::f32), count = allocate({}, DType::i32);
  auto grad = allocate(shape, DType::f32);
  testing::DeviceBuffer workspace(softmaxCrossEntropyWorkspaceBytes(4));
  RN_ASSERT_STATUS_OK(softmaxCrossEntropy(dx.view, dl.view, 0, loss.view, workspace.data(),
                                          workspace.bytes(), stream.get()));
  RN_ASSERT_STATUS_OK(softmaxCrossEntropyBackward(dx.view, dl.view, nullptr, 0, grad.view,
                                                  stream.get()));
  RN_ASSERT_STATUS_OK(countCorrect(dx.view, dl.view, count.view, stream.get()));
  RN_ASSERT_CUDA(stream.sync());
  EXPECT_TRUE(std::isnan(download(loss.view)[0]));
  std::vector<float> g = download(grad.view);
  EXPECT_TRUE(std::isnan(g[6]) && std::isnan(g[8]));
  EXPECT_FALSE(std::isnan(g[0]));
  EXPECT_LT(download(count.view)[0], 0.0f);

  Status s = softmaxCrossEntropy(dx.view, dl.view, 0, loss.view, workspace.data(), 8,
                                 stream.get());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message().find("softmax_cross_entropy: needs 32 bytes"), std::string::npos)
      << s.error().message();
}

//===----------------------------------------------------------------------===//
// The launchers: attributes, host_to_device, all_reduce_mean
//===----------------------------------------------------------------------===//

/// The launcher of `op` from the table every executor uses (all_reduce_mean
/// is in the collectives' family, the rest in the elementwise one).
const OpLauncher &launcherOf(std::string_view op) {
  if (const OpLauncher *l = findOpLauncher(op))
    return *l;
  ADD_FAILURE() << "no launcher for " << op;
  static const OpLauncher none{};
  return none;
}

class CudaElementwiseLaunchers : public ::testing::Test {
protected:
  void SetUp() override {
    RN_SKIP_WITHOUT_CUDA();
    auto c = ConvRunner::create(ConvRunner::Options{});
    auto g = GemmRunner::create(GemmRunner::Options{});
    ASSERT_TRUE(c.ok()) << c.error().message();
    ASSERT_TRUE(g.ok()) << g.error().message();
    conv = std::move(*c);
    gemm = std::move(*g);
    resources.name = "comp1";
    resources.stream = stream.get();
    resources.workspace = workspace.data();
    resources.workspaceBytes = workspace.bytes();
  }

  Status run(const std::string &op, nlohmann::json attributes,
             const std::vector<DeviceTensor> &operands, const std::vector<DeviceTensor> &results,
             uint64_t seed = 0) {
    Node node;
    node.op = op;
    node.attributes = std::move(attributes);
    if (!test::layOut(node, operands.size(), results.size()))
      return Error(op + ": the operand and result counts do not fit its op table entry");
    OpLaunch launch{node, -1, operands, results, resources, *conv, *gemm, seed};
    const OpLauncher &l = launcherOf(op);
    if (!l.launch)
      return Error("no launcher");
    if (l.prepare) {
      Result<size_t> bytes = l.prepare(launch);
      if (!bytes.ok())
        return bytes.error();
      if (*bytes > resources.workspaceBytes)
        return Error("workspace too small for the test");
    }
    return l.launch(launch);
  }

  TestStream stream;
  testing::DeviceBuffer workspace{1 << 20};
  StreamResources resources;
  std::unique_ptr<ConvRunner> conv;
  std::unique_ptr<GemmRunner> gemm;
};

TEST_F(CudaElementwiseLaunchers, EveryOpHasALauncher) {
  for (const char *op :
       {"relu", "tanh", "silu", "sigmoid", "hardtanh", "hardswish", "hardsigmoid", "relu_backward",
        "tanh_backward", "silu_backward", "sigmoid_backward", "hardtanh_backward",
        "hardswish_backward", "hardsigmoid_backward", "add", "channel_mul",
        "channel_mul_backward", "cast",
        "reshape", "flatten", "zero", "dropout_train", "dropout_backward",
        "stochastic_depth_train", "stochastic_depth_backward",
        "max_pool2d", "avg_pool2d", "max_pool2d_backward", "avg_pool2d_backward",
        "global_avg_pool", "global_avg_pool_backward", "adaptive_avg_pool2d",
        "adaptive_avg_pool2d_backward", "softmax_cross_entropy",
        "softmax_cross_entropy_backward", "count_correct", "host_to_device", "all_reduce_mean"})
    EXPECT_NE(launcherOf(op).launch, nullptr) << op;
}

TEST_F(CudaElementwiseLaunchers, AttributesReachTheKernels) {
  std::mt19937 rng(11);
  // max_pool2d with the node's kernel, strides and padding.
  const Shape in{2, 9, 7, 3}, out{2, 5, 4, 3};
  std::vector<float> x = randomValues(numel(in), rng, DType::f16);
  auto dx = upload(x, in, DType::f16);
  auto dy = allocate(out, DType::f16);
  RN_ASSERT_STATUS_OK(run("max_pool2d",
                          {{"kernel", {3, 3}}, {"strides", {2, 2}}, {"padding", {1, 1}}},
                          {dx.view}, {dy.view}));
  // dropout_train with p, the seed, the device step (operand 1), index and
  // count: stream 2 * 3 + 1.
  auto dr = allocate(in, DType::f16), dm = allocate(in, DType::f16);
  auto dstep = upload({2.0f}, {}, DType::i32);
  RN_ASSERT_STATUS_OK(run("dropout_train", {{"p", 0.3}, {"index", 1}, {"count", 3}},
                          {dx.view, dstep.view}, {dr.view, dm.view}, 99));
  // stochastic_depth_train likewise (stream 2 * 5 + 4), and its backward.
  auto dsr = allocate(in, DType::f16), dsm = allocate({in[0]}, DType::f32);
  auto dsg = allocate(in, DType::f16);
  RN_ASSERT_STATUS_OK(run("stochastic_depth_train", {{"p", 0.4}, {"index", 4}, {"count", 5}},
                          {dx.view, dstep.view}, {dsr.view, dsm.view}, 99));
  RN_ASSERT_STATUS_OK(run("stochastic_depth_backward", nlohmann::json::object(),
                          {dx.view, dsm.view}, {dsg.view}));
  // hardtanh and its backward with the node's bounds.
  auto dh = allocate(in, DType::f16), dhg = allocate(in, DType::f16);
  RN_ASSERT_STATUS_OK(run("hardtanh", {{"min_val", -0.5}, {"max_val", 0.75}}, {dx.view}, {dh.view}));
  RN_ASSERT_STATUS_OK(run("hardtanh_backward", {{"min_val", -0.5}, {"max_val", 0.75}},
                          {dx.view, dh.view}, {dhg.view}));
  // softmax_cross_entropy with label smoothing, through the workspace.
  std::vector<float> logits = randomValues(5 * 7, rng, DType::f32);
  std::vector<float> labels = randomLabels(5, 7, rng);
  std::vector<int32_t> ints = asInts(labels);
  auto dlog = upload(logits, {5, 7}, DType::f32), dlab = upload(labels, {5}, DType::i32);
  auto loss = allocate({}, DType::f32);
  RN_ASSERT_STATUS_OK(run("softmax_cross_entropy", {{"label_smoothing", 0.2}},
                          {dlog.view, dlab.view}, {loss.view}));
  RN_ASSERT_CUDA(stream.sync());

  std::vector<float> ref(static_cast<size_t>(numel(out))), r(x.size()), m(x.size());
  ASSERT_TRUE(cpu::maxPool2d(cpuView(x, in, DType::f16), cpu::Pool2dAttrs{{3, 3}, {2, 2}, {1, 1}},
                             cpuView(ref, out, DType::f16))
                  .ok());
  expectExact(download(dy.view), ref, "max_pool2d launcher");
  ASSERT_TRUE(cpu::dropoutTrain(cpuView(x, in, DType::f16), 0.3, cpu::RngKey{99, 7},
                                cpuView(r, in, DType::f16), cpuView(m, in, DType::f16))
                  .ok());
  expectExact(download(dm.view), m, "dropout_train launcher mask");
  expectExact(download(dr.view), r, "dropout_train launcher result");
  std::vector<float> sr(x.size()), sm(static_cast<size_t>(in[0])), sg(x.size());
  ASSERT_TRUE(cpu::stochasticDepthTrain(cpuView(x, in, DType::f16), 0.4, cpu::RngKey{99, 14},
                                        cpuView(sr, in, DType::f16),
                                        cpuView(sm, {in[0]}, DType::f32))
                  .ok());
  ASSERT_TRUE(cpu::stochasticDepthBackward(cpuView(x, in, DType::f16),
                                           cpuView(sm, {in[0]}, DType::f32),
                                           cpuView(sg, in, DType::f16))
                  .ok());
  expectExact(download(dsm.view), sm, "stochastic_depth_train launcher mask");
  expectExact(download(dsr.view), sr, "stochastic_depth_train launcher result");
  expectExact(download(dsg.view), sg, "stochastic_depth_backward launcher");
  std::vector<float> h(x.size()), hg(x.size());
  ASSERT_TRUE(
      cpu::hardtanh(cpuView(x, in, DType::f16), -0.5, 0.75, cpuView(h, in, DType::f16)).ok());
  ASSERT_TRUE(cpu::hardtanhBackward(cpuView(x, in, DType::f16), cpuView(h, in, DType::f16), -0.5,
                                    0.75, cpuView(hg, in, DType::f16))
                  .ok());
  expectExact(download(dh.view), h, "hardtanh launcher");
  expectExact(download(dhg.view), hg, "hardtanh_backward launcher");
  float refLoss = 0;
  ASSERT_TRUE(cpu::softmaxCrossEntropy(cpuView(logits, {5, 7}, DType::f32),
                                       cpu::LabelView{ints.data(), {5}}, 0.2, refLoss)
                  .ok());
  EXPECT_NEAR(download(loss.view)[0], refLoss, 1e-6 * std::fabs(refLoss));
}

TEST_F(CudaElementwiseLaunchers, MaxPoolBackwardPreparesItsWorkspace) {
  std::mt19937 rng(13);
  const Shape in{3, 9, 7, 64}, out{3, 5, 4, 64};
  const nlohmann::json attrs = {{"kernel", {3, 3}}, {"strides", {2, 2}}, {"padding", {1, 1}}};
  std::vector<float> x = randomValues(numel(in), rng, DType::bf16);
  std::vector<float> dy = randomValues(numel(out), rng, DType::bf16);
  auto dx = upload(x, in, DType::bf16), ddy = upload(dy, out, DType::bf16);
  auto grad = allocate(in, DType::bf16);
  // prepare reports the arg-max bytes of the whole batch (one per output element).
  Node node;
  node.op = "max_pool2d_backward";
  node.attributes = attrs;
  std::vector<DeviceTensor> operands{ddy.view, dx.view}, results{grad.view};
  ASSERT_TRUE(test::layOut(node, operands.size(), results.size()));
  OpLaunch launch{node, -1, operands, results, resources, *conv, *gemm};
  Result<size_t> bytes = launcherOf("max_pool2d_backward").prepare(launch);
  ASSERT_TRUE(bytes.ok()) << bytes.error().message();
  EXPECT_EQ(*bytes, size_t(numel(out)));
  RN_ASSERT_STATUS_OK(run("max_pool2d_backward", attrs, operands, results));
  RN_ASSERT_CUDA(stream.sync());
  std::vector<float> ref(x.size());
  ASSERT_TRUE(cpu::maxPool2dBackward(cpuView(dy, out, DType::bf16), cpuView(x, in, DType::bf16),
                                     cpu::Pool2dAttrs{{3, 3}, {2, 2}, {1, 1}},
                                     cpuView(ref, in, DType::bf16))
                  .ok());
  expectExact(download(grad.view), ref, "max_pool2d_backward launcher");
}

TEST_F(CudaElementwiseLaunchers, HostToDeviceAndAllReduceMeanCopy) {
  std::mt19937 rng(12);
  const Shape shape{3, 5, 7};
  std::vector<float> x = randomValues(numel(shape), rng, DType::f32);
  float *pinned = nullptr;
  RN_ASSERT_CUDA(cudaMallocHost(reinterpret_cast<void **>(&pinned), x.size() * sizeof(float)));
  std::memcpy(pinned, x.data(), x.size() * sizeof(float));
  DeviceTensor host{pinned, DType::f32, shape};
  auto dev = allocate(shape, DType::f32);
  Status s = run("host_to_device", {}, {host}, {dev.view});
  EXPECT_TRUE(s.ok()) << s.error().message();

  // all_reduce_mean without a communicator (one process): a copy per
  // operand, a conversion between float dtypes, nothing when operand and
  // result are one tensor.
  auto copy = allocate(shape, DType::f32), half = allocate(shape, DType::f16);
  auto same = upload(x, shape, DType::f32);
  s = run("all_reduce_mean", {}, {dev.view, dev.view, same.view},
          {copy.view, half.view, same.view});
  EXPECT_TRUE(s.ok()) << s.error().message();
  RN_ASSERT_CUDA(stream.sync());
  expectExact(download(dev.view), x, "host_to_device");
  expectExact(download(copy.view), x, "all_reduce_mean f32 -> f32");
  expectExact(download(half.view), roundAll(x, DType::f16), "all_reduce_mean f32 -> f16");
  expectExact(download(same.view), x, "all_reduce_mean in place");

  // A staging tensor of another dtype is refused, not copied as bytes.
  DeviceTensor hostHalf{pinned, DType::f16, shape};
  s = run("host_to_device", {}, {hostHalf}, {dev.view});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message().find("host_to_device: the staging tensor is f16"),
            std::string::npos)
      << s.error().message();
  RN_ASSERT_CUDA(cudaFreeHost(pinned));
}

} // namespace
} // namespace rn::cuda
