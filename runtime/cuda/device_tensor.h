//===- device_tensor.h - A typed view of device memory ----------*- C++ -*-===//
//
// What GPU kernels and library wrappers take: a pointer into the arena, the
// element type the program gives the tensor and its shape (row major;
// activations NHWC, conv filters OHWI, linear weights [out, in], labels
// int32 [N], per-channel vectors [C]). Views never own memory.
//
//===----------------------------------------------------------------------===//

#ifndef RN_RUNTIME_CUDA_DEVICE_TENSOR_H
#define RN_RUNTIME_CUDA_DEVICE_TENSOR_H

#include "runtime/core/dtype.h"

#include <cstdint>
#include <vector>

namespace rn::cuda {

struct DeviceTensor {
  void *data = nullptr;
  DType dtype = DType::f32;
  std::vector<int64_t> shape;

  int64_t numel() const {
    int64_t n = 1;
    for (int64_t d : shape)
      n *= d;
    return n;
  }
  int64_t rank() const { return int64_t(shape.size()); }
  int64_t dim(int64_t i) const { return shape[size_t(i)]; }
};

} // namespace rn::cuda

#endif // RN_RUNTIME_CUDA_DEVICE_TENSOR_H
