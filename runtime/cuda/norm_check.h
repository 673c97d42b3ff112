//===- norm_check.h - Argument checks of the normalization kernels -*- C++ -*-===//
//
// Host-side helpers shared by norm_kernels.cu (batch normalization) and
// layer_norm_kernels.cu (layer normalization, channel scale).
//
//===----------------------------------------------------------------------===//

#ifndef RN_RUNTIME_CUDA_NORM_CHECK_H
#define RN_RUNTIME_CUDA_NORM_CHECK_H

#include "runtime/core/dtype.h"
#include "runtime/core/status.h"
#include "runtime/cuda/device_tensor.h"

#include <cstdint>
#include <string>

namespace rn::cuda::norm_detail {

inline int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

inline bool isFloatType(DType t) { return t == DType::f32 || t == DType::f16 || t == DType::bf16; }

/// Collects the first violated requirement of one call.
class Checker {
public:
  explicit Checker(const char *fn) : fn_(fn) {}
  Checker &that(bool condition, const std::string &what) {
    if (!condition && message_.empty())
      message_ = std::string(fn_) + ": " + what;
    return *this;
  }
  /// NHWC or [N, C] float activations.
  Checker &activation(const char *name, const DeviceTensor &t) {
    return that(t.data != nullptr || t.numel() == 0, std::string(name) + " has no data")
        .that(isFloatType(t.dtype), std::string(name) + " must be f32, f16 or bf16")
        .that(t.rank() == 2 || t.rank() == 4,
              std::string(name) + " must be NHWC or [N, C], rank " + std::to_string(t.rank()));
  }
  /// Same shape and dtype as `like`.
  Checker &sameAs(const char *name, const DeviceTensor &t, const DeviceTensor &like) {
    return that(t.shape == like.shape, std::string(name) + " must have the input's shape")
        .that(t.dtype == like.dtype,
              std::string(name) + " must have the input's dtype (" +
                  std::string(dtypeName(like.dtype)) + "), got " +
                  std::string(dtypeName(t.dtype)));
  }
  /// A [C] vector of a float dtype.
  Checker &vector(const char *name, const DeviceTensor &t, int64_t channels) {
    return that(t.data != nullptr || channels == 0, std::string(name) + " has no data")
        .that(isFloatType(t.dtype), std::string(name) + " must be f32, f16 or bf16")
        .that(t.numel() == channels,
              std::string(name) + " must have " + std::to_string(channels) + " elements");
  }
  /// A [C] f32 vector (saved statistics).
  Checker &f32Vector(const char *name, const DeviceTensor &t, int64_t channels) {
    vector(name, t, channels);
    return that(t.dtype == DType::f32, std::string(name) + " must be f32");
  }
  bool failed() const { return !message_.empty(); }
  Error error() const { return Error(message_); }

private:
  const char *fn_;
  std::string message_;
};

} // namespace rn::cuda::norm_detail

#endif // RN_RUNTIME_CUDA_NORM_CHECK_H
