//===- layout_kernels.cu - Concatenation, split and channel shuffle -------===//
//
// The ops that only move channels (declared in kernels.h): byte copies, no
// arithmetic, so the GPU matches the CPU bit for bit. A channel slice of an
// NHWC tensor is a run inside every row (pixel), so concat and split are
// one strided gather: a thread per output unit, where a unit is the widest
// power-of-two chunk (up to 16 bytes) that every row width and every
// pointer is a multiple of. DenseNet's slices are 32 or more channels, so
// its copies move 16-byte units.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/check.h"
#include "runtime/cuda/kernels.h"
#include "runtime/cuda/layout_index.h"

#include <cstdint>
#include <string>

namespace rn::cuda {
using detail::checkFloatView;
using detail::gridFor;
using detail::shapeString;

namespace {

constexpr int kThreads = 256;
using layout::SliceBatch;

template <typename Unit, bool ToWhole>
__global__ void channelSlicesKernel(Unit *whole, int64_t wholeUnits, int64_t rows,
                                    SliceBatch batch) {
  const int64_t total = rows * (batch.begin[batch.count] - batch.begin[0]);
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += stride) {
    const layout::SliceUnit at = layout::locateSliceUnit(batch, wholeUnits, i);
    Unit *slice = static_cast<Unit *>(batch.data[at.slice]) + at.inSlice;
    if constexpr (ToWhole)
      whole[at.inWhole] = *slice;
    else
      *slice = whole[at.inWhole];
  }
}

template <typename Unit>
Status launchSlices(const DeviceTensor &whole, const std::vector<DeviceTensor> &slices,
                    bool toWhole, int64_t rows, cudaStream_t stream) {
  const int64_t unitElements = int64_t(sizeof(Unit) / elementSize(whole.dtype));
  const int64_t wholeUnits = whole.shape.back() / unitElements;
  Unit *data = static_cast<Unit *>(whole.data);
  return layout::forEachSliceBatch(
      slices.size(), [&](size_t s) { return slices[s].data; },
      [&](size_t s) { return slices[s].shape.back() / unitElements; },
      [&](const SliceBatch &batch) -> Status {
        const int64_t work = rows * (batch.begin[batch.count] - batch.begin[0]);
        if (work == 0)
          return Status::success();
        if (toWhole)
          channelSlicesKernel<Unit, true>
              <<<gridFor(work, kThreads), kThreads, 0, stream>>>(data, wholeUnits, rows, batch);
        else
          channelSlicesKernel<Unit, false>
              <<<gridFor(work, kThreads), kThreads, 0, stream>>>(data, wholeUnits, rows, batch);
        RN_CUDA_TRY_LAUNCH();
        return Status::success();
      });
}

template <typename Element>
__global__ void channelShuffleKernel(const Element *in, Element *out, int64_t channels,
                                     int64_t groups, int64_t total) {
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t o = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; o < total; o += stride) {
    const int64_t row = o / channels, k = o % channels;
    out[o] = in[row * channels + layout::shuffleSource(k, channels, groups)];
  }
}

} // namespace

Status channelSlices(const char *op, const DeviceTensor &whole,
                     const std::vector<DeviceTensor> &slices, bool toWhole,
                     cudaStream_t stream) {
  const char *wholeWhat = toWhole ? "result" : "input";
  const char *sliceWhat = toWhole ? "input" : "result";
  RN_RETURN_IF_ERROR(checkFloatView(op, wholeWhat, whole));
  if (whole.rank() != 2 && whole.rank() != 4)
    return Error(std::string(op) + ": " + wholeWhat + " must be NHWC or [N, C], got " +
                 shapeString(whole.shape));
  if (slices.size() < 2)
    return Error(std::string(op) + ": expects at least 2 " + sliceWhat + "s, got " +
                 std::to_string(slices.size()));
  const size_t elementBytes = elementSize(whole.dtype);
  size_t unit = 16;
  auto narrowTo = [&unit](uint64_t bytes) { unit = layout::narrowUnit(unit, bytes); };
  narrowTo(reinterpret_cast<uintptr_t>(whole.data));
  narrowTo(uint64_t(whole.shape.back()) * elementBytes);
  int64_t channels = 0;
  for (size_t i = 0; i < slices.size(); ++i) {
    const DeviceTensor &slice = slices[i];
    const std::string what = std::string(sliceWhat) + " #" + std::to_string(i);
    if (slice.rank() != whole.rank())
      return Error(std::string(op) + ": " + what + " must have rank " +
                   std::to_string(whole.rank()) + " as " + wholeWhat + " " +
                   shapeString(whole.shape) + ", got " + shapeString(slice.shape));
    std::vector<int64_t> expected = whole.shape;
    expected.back() = slice.shape.back();
    RN_RETURN_IF_ERROR(detail::checkShape(op, what.c_str(), slice, expected));
    if (slice.dtype != whole.dtype)
      return Error(std::string(op) + ": " + what + " is " + std::string(dtypeName(slice.dtype)) +
                   ", " + wholeWhat + " is " + std::string(dtypeName(whole.dtype)));
    if (slice.shape.back() < 1)
      return Error(std::string(op) + ": " + what + " has no channels");
    channels += slice.shape.back();
    narrowTo(reinterpret_cast<uintptr_t>(slice.data));
    narrowTo(uint64_t(slice.shape.back()) * elementBytes);
  }
  if (channels != whole.shape.back())
    return Error(std::string(op) + ": the " + sliceWhat + "s' channels add up to " +
                 std::to_string(channels) + ", " + wholeWhat + " " + shapeString(whole.shape) +
                 " has " + std::to_string(whole.shape.back()));
  const int64_t rows = whole.numel() / whole.shape.back();
  if (rows == 0)
    return Status::success();
  switch (unit) {
  case 16:
    return launchSlices<uint4>(whole, slices, toWhole, rows, stream);
  case 8:
    return launchSlices<uint2>(whole, slices, toWhole, rows, stream);
  case 4:
    return launchSlices<uint32_t>(whole, slices, toWhole, rows, stream);
  default: // an element of f16 or bf16 (f32 rows are multiples of 4 bytes)
    return launchSlices<uint16_t>(whole, slices, toWhole, rows, stream);
  }
}

Status channelShuffle(const DeviceTensor &input, int64_t groups, const DeviceTensor &result,
                      cudaStream_t stream) {
  RN_RETURN_IF_ERROR(checkFloatView("channel_shuffle", "input", input));
  if (input.rank() != 4)
    return Error("channel_shuffle: input must be NHWC, got " + shapeString(input.shape));
  RN_RETURN_IF_ERROR(detail::checkShape("channel_shuffle", "result", result, input.shape));
  if (result.dtype != input.dtype)
    return Error("channel_shuffle: result is " + std::string(dtypeName(result.dtype)) +
                 ", input is " + std::string(dtypeName(input.dtype)));
  const int64_t channels = input.shape.back();
  if (groups < 1 || channels % groups != 0)
    return Error("channel_shuffle: groups " + std::to_string(groups) +
                 " must be positive and divide the " + std::to_string(channels) + " channels");
  const int64_t total = input.numel();
  if (total == 0)
    return Status::success();
  const unsigned blocks = gridFor(total, kThreads);
  if (elementSize(input.dtype) == 4)
    channelShuffleKernel<uint32_t><<<blocks, kThreads, 0, stream>>>(
        static_cast<const uint32_t *>(input.data), static_cast<uint32_t *>(result.data),
        channels, groups, total);
  else
    channelShuffleKernel<uint16_t><<<blocks, kThreads, 0, stream>>>(
        static_cast<const uint16_t *>(input.data), static_cast<uint16_t *>(result.data),
        channels, groups, total);
  RN_CUDA_TRY_LAUNCH();
  return Status::success();
}

} // namespace rn::cuda
