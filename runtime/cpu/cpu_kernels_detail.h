//===- cpu_kernels_detail.h - Helpers of the CPU reference kernels -*- C++ -*-===//
//
// Shape checking with precise messages and the rounding of outputs to their
// dtype, shared by the cpu_*.cpp kernel files. Not part of the kernel API.
//
//===----------------------------------------------------------------------===//

#ifndef RN_RUNTIME_CPU_CPU_KERNELS_DETAIL_H
#define RN_RUNTIME_CPU_CPU_KERNELS_DETAIL_H

#include "runtime/cpu/cpu_kernels.h"

#include <sstream>
#include <string>
#include <vector>

namespace rn::cpu::detail {

/// "[2, 3, 4]".
std::string shapeString(const Shape &shape);

/// A value rounded to the precision of `type`, the one rounding an output
/// element gets.
inline float store(DType type, double value) {
  float f = static_cast<float>(value);
  return type == DType::f32 ? f : roundTo(type, f);
}

/// `count` floats as doubles (operands of detail::gemm).
inline std::vector<double> widen(const float *data, int64_t count) {
  return std::vector<double>(data, data + count);
}

/// out[c] = acc[c] + sum over the rows of rows[r * channels + c], for the
/// `count` rows of a row-major tensor whose last dimension is `channels`
/// (bias gradients of conv and linear). Shapes are checked by the caller.
void accumulateChannelSums(const float *rows, int64_t count, int64_t channels,
                           const TensorView &acc, const TensorView &out);

/// Collects the first shape error of one kernel call. Each check is skipped
/// once one failed, so a kernel checks ranks, returns on failure, then
/// checks sizes.
class Check {
public:
  explicit Check(const char *op) : op(op) {}

  bool failed() const { return !error.empty(); }
  KernelStatus status() const { return KernelStatus{error}; }

  template <typename... Args> Check &fail(const Args &...args) {
    if (failed())
      return *this;
    std::ostringstream os;
    os << op << ": ";
    (os << ... << args);
    error = os.str();
    return *this;
  }

  template <typename... Args> Check &require(bool condition, const Args &...args) {
    if (!condition)
      fail(args...);
    return *this;
  }

  /// A float tensor (f32, f16 or bf16) with data and non-negative sizes.
  Check &view(const char *what, const TensorView &v);
  /// view() with rank `rank`; `layout` names the dimensions.
  Check &rank(const char *what, const TensorView &v, int64_t rank,
              const char *layout);
  /// view() with exactly `expected` as its shape.
  Check &shape(const char *what, const TensorView &v, const Shape &expected);
  /// shape() and an f32 dtype (saved batch statistics).
  Check &f32(const char *what, const TensorView &v, const Shape &expected);
  /// [C] batch-norm vector of an input with `channels` channels.
  Check &vector(const char *what, const TensorView &v, int64_t channels) {
    return shape(what, v, Shape{channels});
  }

private:
  const char *op;
  std::string error;
};

/// C = alpha * op(A) * op(B) + beta * C over row-major double matrices
/// (op(A) is M x K, op(B) is K x N), through OpenBLAS's dgemm. Products of
/// floats are exact in double and every sum is in double; OpenBLAS splits
/// the work over rows and columns of C, never over K, so the result does not
/// depend on the number of threads. Empty sizes are allowed (K == 0 scales C
/// by beta). A build without OpenBLAS (RN_HAVE_OPENBLAS unset) uses
/// referenceGemm instead.
void gemm(bool transposeA, bool transposeB, int64_t m, int64_t n, int64_t k,
          double alpha, const double *a, int64_t lda, const double *b,
          int64_t ldb, double beta, double *c, int64_t ldc);

/// gemm with plain loops (each element of C summed over K in order): the
/// fallback without OpenBLAS and the oracle of gemm's tests.
void referenceGemm(bool transposeA, bool transposeB, int64_t m, int64_t n,
                   int64_t k, double alpha, const double *a, int64_t lda,
                   const double *b, int64_t ldb, double beta, double *c,
                   int64_t ldc);

/// Whether gemm runs on OpenBLAS (false: referenceGemm).
bool gemmUsesOpenBlas();

/// Checks the layout of a batch normalization input: NHWC or [N, C].
/// Sets `channels` and `count` (elements per channel).
Check &checkBatchNormInput(Check &check, const TensorView &input,
                           int64_t &channels, int64_t &count);

} // namespace rn::cpu::detail

#endif // RN_RUNTIME_CPU_CPU_KERNELS_DETAIL_H
