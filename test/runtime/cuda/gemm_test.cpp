//===- gemm_test.cpp - GemmRunner against a double loop ======================//
//
// GemmRunner's cuBLASLt matrix products, D = op(A) op(B) (+ C) (+ bias)
// with every combination of transposes, accumulation and bias, in f32 and
// f16, against a double loop. Every test skips when no CUDA device answers.
//
//===----------------------------------------------------------------------===//


#include "conv_test_util.h"

#include <gtest/gtest.h>

#include <tuple>
#include <vector>

namespace rn::cuda {
namespace {

using namespace conv_test;

class Gemm : public ::testing::TestWithParam<std::tuple<DType, bool, bool, bool, bool>> {};

// D[m,n] = op(A) op(B) (+ C) (+ bias) against a double loop.
TEST_P(Gemm, MatchesALoop) {
  RN_SKIP_WITHOUT_CUDA();
  auto [dtype, transA, transB, accumulate, bias] = GetParam();
  Gpu gpu;
  auto gemm = makeGemm();
  ASSERT_TRUE(gemm);
  std::mt19937 rng(17);
  int64_t m = 37, n = 53, k = 71;
  Host a = randomHost(transA ? Shape{k, m} : Shape{m, k}, dtype, rng);
  Host b = randomHost(transB ? Shape{n, k} : Shape{k, n}, dtype, rng);
  DType outType = accumulate ? DType::f32 : dtype;
  // cuBLASLt's bias has the output's dtype (an f16 bias with f32 output is
  // CUBLAS_STATUS_INVALID_VALUE).
  Host c = randomHost({m, n}, outType, rng), bv = randomHost({n}, outType, rng);
  GemmCall call;
  call.m = m;
  call.n = n;
  call.k = k;
  call.transA = transA;
  call.transB = transB;
  call.accumulate = accumulate;
  call.bias = bias;
  call.aType = call.bType = dtype;
  call.cType = call.dType = outType;
  call.biasType = outType;
  Result<size_t> ws = gemm->prepare(call, gpu.resources);
  ASSERT_TRUE(ws.ok()) << ws.error().message();
  DeviceTensor dA = gpu.upload(a), dB = gpu.upload(b), dC = gpu.upload(c), dBias = gpu.upload(bv);
  GemmBuffers buf;
  buf.a = dA.data;
  buf.b = dB.data;
  buf.c = dC.data;
  buf.bias = dBias.data;
  buf.d = dC.data; // D aliases C
  ASSERT_OK(gemm->run(call, buf, gpu.resources));
  std::vector<float> want(size_t(m * n));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double s = accumulate ? c.values[size_t(i * n + j)] : 0;
      if (bias)
        s += bv.values[size_t(j)];
      for (int64_t p = 0; p < k; ++p)
        s += double(a.values[size_t(transA ? p * m + i : i * k + p)]) *
             b.values[size_t(transB ? j * k + p : p * n + j)];
      want[size_t(i * n + j)] = roundTo(outType, float(s));
    }
  EXPECT_LE(relativeError(gpu.download(dC), want), tolerance(outType)) << describe(call);
}

INSTANTIATE_TEST_SUITE_P(, Gemm,
                         ::testing::Combine(::testing::Values(DType::f32, DType::f16),
                                            ::testing::Bool(), ::testing::Bool(),
                                            ::testing::Bool(), ::testing::Bool()));

} // namespace
} // namespace rn::cuda
