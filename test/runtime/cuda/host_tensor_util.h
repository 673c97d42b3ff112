//===- host_tensor_util.h - Host tensors and their device copies -*- C++ -*-===//
//
// What the norm and update kernel tests share on top of cuda_test_util.h: a
// host tensor the rn::cpu reference kernels read and write, random ones
// rounded to their dtype, its copy on the device (f32/f16/bf16, encoded by
// testing::encode), a NaN-filled device tensor for results, and the
// norm-wise relative error ||gpu - cpu|| / ||cpu||.
//
//===----------------------------------------------------------------------===//

#ifndef RN_TEST_RUNTIME_CUDA_HOST_TENSOR_UTIL_H
#define RN_TEST_RUNTIME_CUDA_HOST_TENSOR_UTIL_H

#include "runtime/cpu/cpu_kernels.h"
#include "cuda_test_util.h"

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <random>
#include <vector>

namespace rn::cuda::testing {

/// Host values (already representable in `dtype`) of a tensor.
struct HostTensor {
  std::vector<float> values;
  std::vector<int64_t> shape;
  DType dtype = DType::f32;

  cpu::TensorView view() { return cpu::TensorView{values.data(), shape, dtype}; }
};

inline HostTensor randomTensor(const std::vector<int64_t> &shape, DType dtype, std::mt19937 &rng,
                               float lo, float hi) {
  HostTensor t{std::vector<float>(size_t(numel(shape))), shape, dtype};
  std::uniform_real_distribution<float> dist(lo, hi);
  for (float &v : t.values)
    v = roundTo(dtype, dist(rng));
  return t;
}

/// A tensor's copy on the device.
struct GpuTensor {
  std::unique_ptr<DeviceBuffer> buffer;
  DeviceTensor view;
};

/// `size` bytes on the device (at least 16 allocated) as a tensor, copied
/// synchronously.
inline GpuTensor uploadBytes(const void *bytes, size_t size, DType dtype,
                             const std::vector<int64_t> &shape) {
  GpuTensor g{std::make_unique<DeviceBuffer>(std::max<size_t>(size, 16)), {}};
  g.view = DeviceTensor{g.buffer->data(), dtype, shape};
  EXPECT_EQ(cudaMemcpy(g.view.data, bytes, size, cudaMemcpyHostToDevice), cudaSuccess);
  // A pageable copy may return before its DMA lands, and the kernels run on
  // non-blocking streams, which do not wait for the legacy stream.
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  return g;
}

/// A host tensor's copy on the device.
inline GpuTensor upload(const HostTensor &t) {
  std::vector<uint8_t> bytes = encode(t.values, t.dtype);
  return uploadBytes(bytes.data(), bytes.size(), t.dtype, t.shape);
}

/// An uninitialized (NaN-filled) device tensor.
inline GpuTensor deviceTensor(const std::vector<int64_t> &shape, DType dtype) {
  return upload(HostTensor{std::vector<float>(size_t(numel(shape)), NAN), shape, dtype});
}

inline double relativeError(const std::vector<float> &gpu, const std::vector<float> &cpu) {
  if (gpu.size() != cpu.size())
    return INFINITY;
  double diff = 0, ref = 0;
  for (size_t i = 0; i < gpu.size(); ++i) {
    double d = double(gpu[i]) - double(cpu[i]);
    diff += d * d;
    ref += double(cpu[i]) * cpu[i];
  }
  return ref == 0 ? std::sqrt(diff) : std::sqrt(diff / ref);
}

/// The relative error of an update (gpu - old) against (cpu - old).
inline double updateError(const std::vector<float> &gpu, const std::vector<float> &cpu,
                          const std::vector<float> &old) {
  std::vector<float> g(gpu.size()), c(cpu.size());
  for (size_t i = 0; i < gpu.size() && i < old.size(); ++i) {
    g[i] = float(double(gpu[i]) - old[i]);
    c[i] = float(double(cpu[i]) - old[i]);
  }
  return relativeError(g, c);
}

/// The norm-wise bound of the update kernels' tests, by storage precision.
inline double updateTolerance(DType dtype) {
  return dtype == DType::f16 ? 5e-3 : dtype == DType::bf16 ? 3e-2 : 1e-5;
}

} // namespace rn::cuda::testing

#endif // RN_TEST_RUNTIME_CUDA_HOST_TENSOR_UTIL_H
