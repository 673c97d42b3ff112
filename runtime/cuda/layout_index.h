//===- layout_index.h - Index math of the channel layout kernels -*- C++ -*-===//
//
// What layout_kernels.cu's threads compute to find their element, as
// functions the host can call too: the unit test runs them over every
// index of a launch on the CPU (layout_index_test.cpp, no GPU needed), so
// the mapping is checked wherever the tests build, not only where a device
// answers.
//
//===----------------------------------------------------------------------===//

#ifndef RN_RUNTIME_CUDA_LAYOUT_INDEX_H
#define RN_RUNTIME_CUDA_LAYOUT_INDEX_H

#include <cstddef>
#include <cstdint>

#if defined(__CUDACC__)
#define RN_HOST_DEVICE __host__ __device__
#else
#define RN_HOST_DEVICE
#endif

namespace rn::cuda::layout {

/// Slices per launch of the concat / split kernel: the kernel parameter
/// holds their pointers and bounds.
constexpr int kMaxSlicesPerLaunch = 32;

/// A batch of up to kMaxSlicesPerLaunch consecutive slices: slice s covers
/// units [begin[s], begin[s + 1]) of each row of the whole tensor.
struct SliceBatch {
  void *data[kMaxSlicesPerLaunch];
  int64_t begin[kMaxSlicesPerLaunch + 1];
  int count;
};

/// Where a batch's work item `i` (row-major over rows x the batch's units)
/// is: its slice, and its unit's index in the slice and in the whole.
struct SliceUnit {
  int slice;
  int64_t inSlice;
  int64_t inWhole;
};

RN_HOST_DEVICE inline SliceUnit locateSliceUnit(const SliceBatch &batch, int64_t wholeUnits,
                                                int64_t i) {
  const int64_t first = batch.begin[0];
  const int64_t units = batch.begin[batch.count] - first;
  const int64_t row = i / units, u = first + i % units;
  int s = 0;
  while (u >= batch.begin[s + 1])
    ++s;
  const int64_t width = batch.begin[s + 1] - batch.begin[s];
  return SliceUnit{s, row * width + (u - batch.begin[s]), row * wholeUnits + u};
}

/// Cuts `count` slices into the batches of one launch each and calls
/// `launch(batch)` for every batch in order: slice s's data is
/// `dataOf(s)`, its row `unitsOf(s)` units wide; the batches' bounds run on
/// across batches (unit offsets in the whole row).
template <class DataOf, class UnitsOf, class Launch>
auto forEachSliceBatch(size_t count, DataOf dataOf, UnitsOf unitsOf, Launch launch)
    -> decltype(launch(SliceBatch{})) {
  int64_t begin = 0;
  for (size_t from = 0; from < count; from += kMaxSlicesPerLaunch) {
    SliceBatch batch{};
    batch.count = int(count - from < size_t(kMaxSlicesPerLaunch) ? count - from
                                                                  : size_t(kMaxSlicesPerLaunch));
    batch.begin[0] = begin;
    for (int s = 0; s < batch.count; ++s) {
      batch.data[s] = dataOf(from + size_t(s));
      begin += unitsOf(from + size_t(s));
      batch.begin[s + 1] = begin;
    }
    auto status = launch(batch);
    if (!status.ok())
      return status;
  }
  return decltype(launch(SliceBatch{})){};
}

/// The widest power-of-two unit, at most 16 bytes, that divides `bytes`,
/// starting from `unit`: applied to every pointer and row width in turn.
inline size_t narrowUnit(size_t unit, uint64_t bytes) {
  while (bytes % unit)
    unit /= 2;
  return unit;
}

/// The input channel that channel_shuffle's output channel `k` of
/// `channels` reads with `groups` groups: output j * groups + i is input
/// i * (channels / groups) + j.
RN_HOST_DEVICE inline int64_t shuffleSource(int64_t k, int64_t channels, int64_t groups) {
  return (k % groups) * (channels / groups) + k / groups;
}

} // namespace rn::cuda::layout

#endif // RN_RUNTIME_CUDA_LAYOUT_INDEX_H
