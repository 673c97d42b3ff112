//===- device_element.cuh - Element conversions of the CUDA kernels -*- CUDA -*-===//
//
// What every kernel family needs to read and write f32/f16/bf16 storage
// with f32 arithmetic: conversions rounding to nearest even (as the CPU
// reference's roundTo), and the raw vector types that let a thread load or
// store several consecutive elements in one instruction. Device code only.
//
//===----------------------------------------------------------------------===//

#ifndef RN_RUNTIME_CUDA_DEVICE_ELEMENT_CUH
#define RN_RUNTIME_CUDA_DEVICE_ELEMENT_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

namespace rn::cuda {

template <typename T> __device__ __forceinline__ float toFloat(T v);
template <> __device__ __forceinline__ float toFloat<float>(float v) { return v; }
template <> __device__ __forceinline__ float toFloat<__half>(__half v) { return __half2float(v); }
template <> __device__ __forceinline__ float toFloat<__nv_bfloat16>(__nv_bfloat16 v) {
  return __bfloat162float(v);
}

template <typename T> __device__ __forceinline__ T fromFloat(float v);
template <> __device__ __forceinline__ float fromFloat<float>(float v) { return v; }
template <> __device__ __forceinline__ __half fromFloat<__half>(float v) {
  return __float2half_rn(v);
}
template <> __device__ __forceinline__ __nv_bfloat16 fromFloat<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}

/// `v` rounded to T's precision (what storing it as T would keep).
template <typename T> __device__ __forceinline__ float roundAs(float v) {
  return toFloat<T>(fromFloat<T>(v));
}

/// The unsigned type of `Bytes` bytes, for one vector load or store.
template <int Bytes> struct RawVec;
template <> struct RawVec<1> { using type = uint8_t; };
template <> struct RawVec<2> { using type = unsigned short; };
template <> struct RawVec<4> { using type = unsigned int; };
template <> struct RawVec<8> { using type = uint2; };
template <> struct RawVec<16> { using type = uint4; };

} // namespace rn::cuda

#endif // RN_RUNTIME_CUDA_DEVICE_ELEMENT_CUH
