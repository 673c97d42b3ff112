//===- cpu_kernels_detail.cpp - Helpers of the CPU reference kernels ------===//

#include "runtime/cpu/cpu_kernels_detail.h"

#if RN_HAVE_OPENBLAS
#include <cblas.h>
#endif

namespace rn::cpu::detail {

std::string shapeString(const Shape &shape) {
  std::ostringstream os;
  os << '[';
  for (size_t i = 0; i < shape.size(); ++i)
    os << (i ? ", " : "") << shape[i];
  os << ']';
  return os.str();
}

Check &Check::view(const char *what, const TensorView &v) {
  if (failed())
    return *this;
  if (v.dtype != DType::f32 && v.dtype != DType::f16 && v.dtype != DType::bf16)
    return fail(what, " must be f32, f16 or bf16, got ", dtypeName(v.dtype));
  for (int64_t d : v.shape)
    if (d < 0)
      return fail(what, " has a negative size in ", shapeString(v.shape));
  return require(v.data != nullptr || v.numel() == 0, what, " has no data");
}

Check &Check::rank(const char *what, const TensorView &v, int64_t rank,
                   const char *layout) {
  view(what, v);
  return require(failed() || v.rank() == rank, what, " must be ", layout,
                 " (rank ", rank, "), got shape ", shapeString(v.shape));
}

Check &Check::shape(const char *what, const TensorView &v,
                    const Shape &expected) {
  view(what, v);
  return require(failed() || v.shape == expected, what, " must have shape ",
                 shapeString(expected), ", got ", shapeString(v.shape));
}

Check &Check::f32(const char *what, const TensorView &v,
                  const Shape &expected) {
  shape(what, v, expected);
  return require(failed() || v.dtype == DType::f32, what, " must be f32, got ",
                 dtypeName(v.dtype));
}

Check &checkBatchNormInput(Check &check, const TensorView &input,
                           int64_t &channels, int64_t &count) {
  channels = 0;
  count = 0;
  check.view("input", input);
  if (check.failed())
    return check;
  if (input.rank() != 4 && input.rank() != 2)
    return check.fail("input must be NHWC or [N, C], got shape ",
                      shapeString(input.shape));
  channels = input.shape.back();
  count = channels ? input.numel() / channels : 0;
  return check.require(count > 0, "input has no elements per channel: ",
                       shapeString(input.shape));
}

void accumulateChannelSums(const float *rows, int64_t count, int64_t channels,
                           const TensorView &acc, const TensorView &out) {
  std::vector<double> sums(static_cast<size_t>(channels), 0.0);
  for (int64_t r = 0; r < count; ++r)
    for (int64_t c = 0; c < channels; ++c)
      sums[c] += rows[r * channels + c];
  for (int64_t c = 0; c < channels; ++c)
    out.data[c] = store(out.dtype, double(acc.data[c]) + sums[c]);
}

void referenceGemm(bool transposeA, bool transposeB, int64_t m, int64_t n,
                   int64_t k, double alpha, const double *a, int64_t lda,
                   const double *b, int64_t ldb, double beta, double *c,
                   int64_t ldc) {
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0;
      for (int64_t p = 0; p < k; ++p)
        sum += (transposeA ? a[p * lda + i] : a[i * lda + p]) *
               (transposeB ? b[j * ldb + p] : b[p * ldb + j]);
      double &out = c[i * ldc + j];
      out = alpha * sum + (beta == 0 ? 0.0 : beta * out);
    }
}

bool gemmUsesOpenBlas() { return RN_HAVE_OPENBLAS; }

void gemm(bool transposeA, bool transposeB, int64_t m, int64_t n, int64_t k,
          double alpha, const double *a, int64_t lda, const double *b,
          int64_t ldb, double beta, double *c, int64_t ldc) {
#if RN_HAVE_OPENBLAS
  if (m == 0 || n == 0)
    return;
  if (k == 0) {
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j)
        c[i * ldc + j] = beta == 0 ? 0.0 : beta * c[i * ldc + j];
    return;
  }
  cblas_dgemm(CblasRowMajor, transposeA ? CblasTrans : CblasNoTrans,
              transposeB ? CblasTrans : CblasNoTrans, static_cast<int>(m),
              static_cast<int>(n), static_cast<int>(k), alpha, a,
              static_cast<int>(lda), b, static_cast<int>(ldb), beta, c,
              static_cast<int>(ldc));
#else
  referenceGemm(transposeA, transposeB, m, n, k, alpha, a, lda, b, ldb, beta,
                c, ldc);
#endif
}

} // namespace rn::cpu::detail
