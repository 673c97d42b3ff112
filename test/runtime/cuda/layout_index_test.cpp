//===- layout_index_test.cpp - The layout kernels' index math, on the host -===//
//
// layout_kernels.cu's threads find their element with layout_index.h;
// these tests run the same functions over every index of each launch on
// the CPU, moving bytes as the kernels do, and compare with a plain
// row-by-row reference: the unit choice, the batching of more than 32
// slices and the unit lookup of concat and split, and the channel shuffle's
// source channel against cpu::channelShuffle. They need no GPU and run
// wherever the tests build.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/status.h"
#include "runtime/cpu/cpu_kernels.h"
#include "runtime/cuda/layout_index.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

namespace rn::cuda {
namespace {

using layout::SliceBatch;

struct Case {
  int64_t rows;
  std::vector<int64_t> widths; ///< channels per slice
  size_t elementBytes;
  size_t wholeOffsetBytes; ///< the whole tensor's distance from an aligned address
  size_t unit;             ///< the unit the launcher must pick
};

std::string describe(const Case &c) {
  std::string s = std::to_string(c.elementBytes) + "-byte elements, widths";
  for (int64_t w : c.widths)
    s += " " + std::to_string(w);
  return s + ", offset " + std::to_string(c.wholeOffsetBytes);
}

std::vector<Case> cases() {
  std::vector<Case> all = {
      {30, {32, 64, 32}, 2, 0, 16}, {30, {4, 8, 12}, 2, 0, 8}, {30, {2, 6}, 2, 0, 4},
      {30, {3, 5, 1}, 2, 0, 2},     {48, {7, 9, 16}, 4, 0, 4}, {48, {8, 8}, 4, 4, 4},
      {6, {10, 3, 19}, 4, 0, 4},    {4, {8, 8}, 2, 2, 2},
  };
  Case dense{98, {64}, 2, 0, 16}; // a DenseNet layer's 49 inputs: two launches
  for (int k = 0; k < 48; ++k)
    dense.widths.push_back(32);
  all.push_back(dense);
  return all;
}

/// A 16-byte aligned buffer of `bytes` plus `offset`, with a pointer
/// `offset` bytes in.
struct Bytes {
  std::vector<uint64_t> storage;
  uint8_t *data;
  Bytes(size_t bytes, size_t offset)
      : storage((bytes + offset) / 8 + 3),
        data(reinterpret_cast<uint8_t *>(
                 (reinterpret_cast<uintptr_t>(storage.data()) + 15) & ~uintptr_t(15)) +
             offset) {}
};

/// What the kernels' launches do, on the host: the unit the launcher picks,
/// then for every batch and every work item one unit moved.
void runSlices(const Case &c, uint8_t *whole, const std::vector<uint8_t *> &slices, bool toWhole,
               size_t *unitOut) {
  int64_t channels = std::accumulate(c.widths.begin(), c.widths.end(), int64_t(0));
  size_t unit = 16;
  unit = layout::narrowUnit(unit, reinterpret_cast<uintptr_t>(whole));
  unit = layout::narrowUnit(unit, uint64_t(channels) * c.elementBytes);
  for (size_t s = 0; s < slices.size(); ++s) {
    unit = layout::narrowUnit(unit, reinterpret_cast<uintptr_t>(slices[s]));
    unit = layout::narrowUnit(unit, uint64_t(c.widths[s]) * c.elementBytes);
  }
  *unitOut = unit;
  const int64_t unitElements = int64_t(unit / c.elementBytes);
  const int64_t wholeUnits = channels / unitElements;
  int launches = 0;
  Status status = layout::forEachSliceBatch(
      slices.size(), [&](size_t s) { return static_cast<void *>(slices[s]); },
      [&](size_t s) { return c.widths[s] / unitElements; },
      [&](const SliceBatch &batch) -> Status {
        ++launches;
        const int64_t total = c.rows * (batch.begin[batch.count] - batch.begin[0]);
        for (int64_t i = 0; i < total; ++i) {
          const layout::SliceUnit at = layout::locateSliceUnit(batch, wholeUnits, i);
          uint8_t *slice = static_cast<uint8_t *>(batch.data[at.slice]) + at.inSlice * unit;
          uint8_t *joined = whole + at.inWhole * unit;
          if (toWhole)
            std::memcpy(joined, slice, unit);
          else
            std::memcpy(slice, joined, unit);
        }
        return Status::success();
      });
  ASSERT_TRUE(status.ok());
  EXPECT_EQ(launches, int((slices.size() + layout::kMaxSlicesPerLaunch - 1) /
                          layout::kMaxSlicesPerLaunch));
}

TEST(LayoutIndexTest, ConcatAndSplitMoveEveryByteOnce) {
  std::mt19937 rng(17);
  std::uniform_int_distribution<int> byte(0, 255);
  for (const Case &c : cases()) {
    SCOPED_TRACE(describe(c));
    const int64_t channels = std::accumulate(c.widths.begin(), c.widths.end(), int64_t(0));
    const size_t rowBytes = size_t(channels) * c.elementBytes;
    std::vector<Bytes> inputs;
    std::vector<uint8_t *> inputData, outputData;
    std::vector<Bytes> outputs;
    for (int64_t w : c.widths) {
      const size_t bytes = size_t(c.rows * w) * c.elementBytes;
      inputs.emplace_back(bytes, 0);
      outputs.emplace_back(bytes, 0);
      for (size_t b = 0; b < bytes; ++b)
        inputs.back().data[b] = uint8_t(byte(rng));
      std::memset(outputs.back().data, 0xEE, bytes);
      inputData.push_back(inputs.back().data);
      outputData.push_back(outputs.back().data);
    }
    // The reference: each row the slices' rows one after another.
    std::vector<uint8_t> expected;
    for (int64_t row = 0; row < c.rows; ++row)
      for (size_t s = 0; s < c.widths.size(); ++s) {
        const size_t sliceRow = size_t(c.widths[s]) * c.elementBytes;
        const uint8_t *from = inputData[s] + size_t(row) * sliceRow;
        expected.insert(expected.end(), from, from + sliceRow);
      }

    Bytes whole(size_t(c.rows) * rowBytes, c.wholeOffsetBytes);
    std::memset(whole.data, 0xEE, size_t(c.rows) * rowBytes);
    size_t unit = 0;
    runSlices(c, whole.data, inputData, /*toWhole=*/true, &unit);
    EXPECT_EQ(unit, c.unit);
    EXPECT_EQ(std::vector<uint8_t>(whole.data, whole.data + expected.size()), expected)
        << "concat with " << unit << "-byte units";
    runSlices(c, whole.data, outputData, /*toWhole=*/false, &unit);
    for (size_t s = 0; s < c.widths.size(); ++s) {
      const size_t bytes = size_t(c.rows * c.widths[s]) * c.elementBytes;
      EXPECT_EQ(std::memcmp(outputData[s], inputData[s], bytes), 0)
          << "split slice " << s << " with " << unit << "-byte units";
    }
  }
}

TEST(LayoutIndexTest, UnitsAreTheWidestEveryRowAndPointerAllow) {
  EXPECT_EQ(layout::narrowUnit(16, 64), 16u);   // 32 f16 channels
  EXPECT_EQ(layout::narrowUnit(16, 24), 8u);    // 12 f16 channels
  EXPECT_EQ(layout::narrowUnit(16, 12), 4u);    // 3 f32 channels
  EXPECT_EQ(layout::narrowUnit(16, 6), 2u);     // 3 f16 channels
  EXPECT_EQ(layout::narrowUnit(8, 4096), 8u);   // never widens
  EXPECT_EQ(layout::narrowUnit(16, 0x1002), 2u); // a pointer 2 bytes off
}

TEST(LayoutIndexTest, ShuffleSourceIsCpuChannelShuffle) {
  for (int64_t channels : {2, 6, 12, 116, 232})
    for (int64_t groups : {1, 2, 3, 4, 29, 58})
      if (channels % groups == 0) {
        SCOPED_TRACE(std::to_string(channels) + " channels, " + std::to_string(groups) +
                     " groups");
        std::vector<float> in(static_cast<size_t>(channels)), out(in.size());
        std::iota(in.begin(), in.end(), 0.0f);
        ASSERT_TRUE(cpu::channelShuffle(cpu::TensorView{in.data(), {1, 1, 1, channels}},
                                        groups, cpu::TensorView{out.data(), {1, 1, 1, channels}})
                        .ok());
        for (int64_t k = 0; k < channels; ++k)
          ASSERT_EQ(float(layout::shuffleSource(k, channels, groups)), out[size_t(k)]) << k;
      }
}

} // namespace
} // namespace rn::cuda
