//===- cuda_test_util.h - Device buffers and skips for the GPU tests -*- C++ -*-===//
//
// What the GPU kernel tests share: a skip when no CUDA device answers (the
// tests compile everywhere and run on the GPU machine), an owning device
// buffer, a non-blocking stream, and uploads/downloads of float vectors in
// any float dtype (converted with the runtime's own f16/bf16 routines, so a
// value the CPU reference holds is exactly the value the GPU reads).
//
//===----------------------------------------------------------------------===//

#ifndef RN_TEST_RUNTIME_CUDA_CUDA_TEST_UTIL_H
#define RN_TEST_RUNTIME_CUDA_CUDA_TEST_UTIL_H

#include "runtime/core/dtype.h"
#include "runtime/cuda/device_tensor.h"

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

namespace rn::cuda::testing {

/// Whether a CUDA device answers.
inline bool cudaAvailable() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
}

/// Skips the test where there is no GPU (CI, the build machine).
#define RN_SKIP_WITHOUT_CUDA()                                                          \
  do {                                                                                   \
    if (!::rn::cuda::testing::cudaAvailable()) {                                         \
      cudaGetLastError(); /* clear the sticky "no device" error */                       \
      GTEST_SKIP() << "no CUDA device";                                                  \
    }                                                                                    \
  } while (0)

/// A sweep over many configurations of one test. With RN_TEST_SWEEP=small
/// (the GPU round's compute-sanitizer run, where every launch is tens of
/// times slower) only every 7th combination runs: still every path the
/// sweep's dimensions reach in aggregate (7 is prime to their sizes), in
/// a tenth of the time. The full sweep runs in the round's plain test run.
class Sweep {
public:
  /// Whether to leave out the next combination.
  bool skipNext() {
    bool skip = small_ && index_ % 7 != 0;
    ++index_;
    return skip;
  }

private:
  bool small_ = [] {
    const char *v = std::getenv("RN_TEST_SWEEP");
    return v && std::string(v) == "small";
  }();
  int index_ = 0;
};

/// Asserts that a CUDA runtime call succeeded.
#define RN_ASSERT_CUDA(call)                                                            \
  do {                                                                                   \
    cudaError_t rn_err_ = (call);                                                        \
    ASSERT_EQ(rn_err_, cudaSuccess) << #call << ": " << cudaGetErrorString(rn_err_);     \
  } while (0)

/// Asserts that an rn::Status is ok, printing its message otherwise.
#define RN_ASSERT_STATUS_OK(expr)                                                       \
  do {                                                                                   \
    ::rn::Status rn_st_ = (expr);                                                        \
    ASSERT_TRUE(rn_st_.ok()) << rn_st_.error().message();                                \
  } while (0)

/// Owning device memory (cudaMalloc, 256-byte aligned).
class DeviceBuffer {
public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t bytes) : bytes_(bytes) {
    if (bytes && cudaMalloc(&data_, bytes) != cudaSuccess)
      data_ = nullptr;
  }
  DeviceBuffer(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(const DeviceBuffer &) = delete;
  DeviceBuffer(DeviceBuffer &&other) noexcept { *this = std::move(other); }
  DeviceBuffer &operator=(DeviceBuffer &&other) noexcept {
    std::swap(data_, other.data_);
    std::swap(bytes_, other.bytes_);
    return *this;
  }
  ~DeviceBuffer() {
    if (data_)
      cudaFree(data_);
  }
  void *data() const { return data_; }
  size_t bytes() const { return bytes_; }

private:
  void *data_ = nullptr;
  size_t bytes_ = 0;
};

/// A non-blocking stream for the duration of a test.
class TestStream {
public:
  TestStream() {
    if (cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking) != cudaSuccess)
      stream_ = nullptr;
  }
  TestStream(const TestStream &) = delete;
  TestStream &operator=(const TestStream &) = delete;
  ~TestStream() {
    if (stream_)
      cudaStreamDestroy(stream_);
  }
  cudaStream_t get() const { return stream_; }
  cudaError_t sync() const { return cudaStreamSynchronize(stream_); }

private:
  cudaStream_t stream_ = nullptr;
};

inline int64_t numel(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

/// The storage bytes of `values` in `type` (float dtypes; i32 and u8 take
/// the values as integers).
inline std::vector<uint8_t> encode(const std::vector<float> &values, DType type) {
  std::vector<uint8_t> bytes(values.size() * elementSize(type));
  for (size_t i = 0; i < values.size(); ++i) {
    uint8_t *p = bytes.data() + i * elementSize(type);
    switch (type) {
    case DType::f32:
      std::memcpy(p, &values[i], 4);
      break;
    case DType::f16: {
      uint16_t h = floatToHalf(values[i]);
      std::memcpy(p, &h, 2);
      break;
    }
    case DType::bf16: {
      uint16_t b = floatToBFloat16(values[i]);
      std::memcpy(p, &b, 2);
      break;
    }
    case DType::i32: {
      int32_t v = static_cast<int32_t>(values[i]);
      std::memcpy(p, &v, 4);
      break;
    }
    case DType::i1:
      *p = values[i] != 0;
      break;
    case DType::u8:
      *p = static_cast<uint8_t>(values[i]);
      break;
    }
  }
  return bytes;
}

inline std::vector<float> decode(const std::vector<uint8_t> &bytes, DType type) {
  size_t n = bytes.size() / elementSize(type);
  std::vector<float> values(n);
  for (size_t i = 0; i < n; ++i) {
    const uint8_t *p = bytes.data() + i * elementSize(type);
    switch (type) {
    case DType::f32:
      std::memcpy(&values[i], p, 4);
      break;
    case DType::f16: {
      uint16_t h;
      std::memcpy(&h, p, 2);
      values[i] = halfToFloat(h);
      break;
    }
    case DType::bf16: {
      uint16_t b;
      std::memcpy(&b, p, 2);
      values[i] = bfloat16ToFloat(b);
      break;
    }
    case DType::i32: {
      int32_t v;
      std::memcpy(&v, p, 4);
      values[i] = static_cast<float>(v);
      break;
    }
    case DType::i1:
      values[i] = *p ? 1.0f : 0.0f;
      break;
    case DType::u8:
      values[i] = static_cast<float>(*p);
      break;
    }
  }
  return values;
}

/// A device tensor with its memory. `offsetElements` shifts the view off
/// the allocation's 256-byte alignment (to reach the kernels' scalar paths).
struct DeviceArray {
  DeviceBuffer buffer;
  DeviceTensor view;
};

inline DeviceArray allocate(const std::vector<int64_t> &shape, DType type,
                            int64_t offsetElements = 0) {
  DeviceArray a;
  size_t size = elementSize(type);
  a.buffer = DeviceBuffer(size_t(numel(shape) + offsetElements) * size + 16);
  a.view.data = static_cast<uint8_t *>(a.buffer.data()) + size_t(offsetElements) * size;
  a.view.dtype = type;
  a.view.shape = shape;
  return a;
}

/// Uploads `values` (assumed representable in `type`) synchronously.
inline DeviceArray upload(const std::vector<float> &values, const std::vector<int64_t> &shape,
                          DType type, int64_t offsetElements = 0) {
  DeviceArray a = allocate(shape, type, offsetElements);
  std::vector<uint8_t> bytes = encode(values, type);
  if (!bytes.empty() && a.buffer.data())
    cudaMemcpy(a.view.data, bytes.data(), bytes.size(), cudaMemcpyHostToDevice);
    // A pageable copy may return before its DMA lands, and the kernels run on
    // non-blocking streams, which do not wait for the legacy stream.
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  return a;
}

/// The tensor's values as floats (exact: every dtype widens exactly).
inline std::vector<float> download(const DeviceTensor &t) {
  std::vector<uint8_t> bytes(size_t(t.numel()) * elementSize(t.dtype));
  if (!bytes.empty())
    cudaMemcpy(bytes.data(), t.data, bytes.size(), cudaMemcpyDeviceToHost);
  return decode(bytes, t.dtype);
}

/// Each value rounded to `type` (what a tensor of that dtype can hold).
inline std::vector<float> roundAll(std::vector<float> values, DType type) {
  for (float &v : values)
    v = roundTo(type, v);
  return values;
}

} // namespace rn::cuda::testing

#endif // RN_TEST_RUNTIME_CUDA_CUDA_TEST_UTIL_H
