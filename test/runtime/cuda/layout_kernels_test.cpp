//===- layout_kernels_test.cpp - Concat, split and shuffle on the GPU -----===//
//
// The GPU's channelSlices (rn.concat and rn.split) and channelShuffle
// (kernels.h) against the CPU reference kernels, bit for bit: f32, f16 and
// bf16, slice widths that allow 16-, 8-, 4- and 2-byte units, a view off
// its alignment (the narrow path), more slices than one launch takes
// (DenseNet's later layers join up to 49 tensors), and [N, C] tensors.
// Skipped where no CUDA device answers.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/dtype.h"
#include "runtime/cpu/cpu_kernels.h"
#include "runtime/cuda/kernels.h"
#include "cuda_test_util.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

namespace rn::cuda {
namespace {

using Shape = std::vector<int64_t>;
using testing::allocate;
using testing::DeviceArray;
using testing::download;
using testing::numel;
using testing::roundAll;
using testing::TestStream;
using testing::upload;

std::vector<float> randomValues(int64_t n, std::mt19937 &rng, DType type) {
  std::uniform_real_distribution<float> dist(-3.0f, 3.0f);
  std::vector<float> v(static_cast<size_t>(n));
  for (float &x : v)
    x = dist(rng);
  return roundAll(std::move(v), type);
}

struct SliceCase {
  Shape leading; ///< all but the channels
  std::vector<int64_t> widths;
  DType type;
  int64_t offsetElements; ///< the whole tensor's offset off the alignment
};

std::string describe(const SliceCase &c) {
  std::string s = std::string(dtypeName(c.type)) + " widths";
  for (int64_t w : c.widths)
    s += " " + std::to_string(w);
  return s + " offset " + std::to_string(c.offsetElements);
}

std::vector<SliceCase> sliceCases() {
  std::vector<SliceCase> cases = {
      {{2, 5, 3}, {32, 64, 32}, DType::f16, 0},  // 16-byte units
      {{2, 5, 3}, {4, 8, 12}, DType::f16, 0},    // 8-byte units
      {{2, 5, 3}, {2, 6}, DType::f16, 0},        // 4-byte units
      {{2, 5, 3}, {3, 5, 1}, DType::bf16, 0},    // 2-byte units
      {{3, 4, 4}, {7, 9, 16}, DType::f32, 0},    // 4-byte units
      {{3, 4, 4}, {8, 8}, DType::f32, 1},        // off the alignment
      {{6}, {10, 3, 19}, DType::f32, 0},         // [N, C]
  };
  SliceCase dense{{2, 7, 7}, {}, DType::f16, 0}; // a DenseNet layer's inputs
  dense.widths.push_back(64);
  for (int k = 0; k < 48; ++k)
    dense.widths.push_back(32);
  cases.push_back(dense);
  return cases;
}

TEST(LayoutKernelsTest, ConcatAndSplitMatchCpu) {
  RN_SKIP_WITHOUT_CUDA();
  TestStream stream;
  std::mt19937 rng(11);
  for (const SliceCase &c : sliceCases()) {
    SCOPED_TRACE(describe(c));
    Shape whole = c.leading;
    int64_t channels = 0;
    for (int64_t w : c.widths)
      channels += w;
    whole.push_back(channels);
    std::vector<std::vector<float>> inputs;
    std::vector<DeviceArray> deviceInputs, deviceSlices;
    std::vector<DeviceTensor> inputViews, sliceViews;
    std::vector<cpu::TensorView> cpuInputs;
    for (int64_t w : c.widths) {
      Shape shape = c.leading;
      shape.push_back(w);
      inputs.push_back(randomValues(numel(shape), rng, c.type));
      deviceInputs.push_back(upload(inputs.back(), shape, c.type));
      deviceSlices.push_back(allocate(shape, c.type));
    }
    for (size_t i = 0; i < inputs.size(); ++i) {
      cpuInputs.push_back(cpu::TensorView{inputs[i].data(), deviceInputs[i].view.shape, c.type});
      inputViews.push_back(deviceInputs[i].view);
      sliceViews.push_back(deviceSlices[i].view);
    }
    std::vector<float> joined(size_t(numel(whole)));
    ASSERT_TRUE(cpu::concat(cpuInputs, cpu::TensorView{joined.data(), whole, c.type}).ok());

    DeviceArray gpuJoined = allocate(whole, c.type, c.offsetElements);
    RN_ASSERT_STATUS_OK(channelSlices("concat", gpuJoined.view, inputViews, true, stream.get()));
    RN_ASSERT_STATUS_OK(channelSlices("split", gpuJoined.view, sliceViews, false, stream.get()));
    RN_ASSERT_CUDA(stream.sync());
    ASSERT_EQ(download(gpuJoined.view), joined);
    for (size_t i = 0; i < inputs.size(); ++i)
      ASSERT_EQ(download(sliceViews[i]), inputs[i]) << "slice " << i;
  }
}

TEST(LayoutKernelsTest, ChannelShuffleMatchesCpu) {
  RN_SKIP_WITHOUT_CUDA();
  TestStream stream;
  std::mt19937 rng(13);
  for (DType type : {DType::f32, DType::f16, DType::bf16})
    for (int64_t groups : {2, 3, 4}) {
      SCOPED_TRACE(std::string(dtypeName(type)) + " groups " + std::to_string(groups));
      const Shape shape{3, 5, 4, 24 * groups};
      std::vector<float> x = randomValues(numel(shape), rng, type), y(x.size());
      ASSERT_TRUE(cpu::channelShuffle(cpu::TensorView{x.data(), shape, type}, groups,
                                      cpu::TensorView{y.data(), shape, type})
                      .ok());
      DeviceArray gx = upload(x, shape, type), gy = allocate(shape, type);
      RN_ASSERT_STATUS_OK(channelShuffle(gx.view, groups, gy.view, stream.get()));
      RN_ASSERT_CUDA(stream.sync());
      ASSERT_EQ(download(gy.view), y);
    }
}

TEST(LayoutKernelsTest, ErrorsNameTheOpAndTheOperand) {
  RN_SKIP_WITHOUT_CUDA();
  TestStream stream;
  DeviceArray a = allocate({2, 3, 3, 4}, DType::f16), b = allocate({2, 3, 3, 4}, DType::f32);
  DeviceArray whole = allocate({2, 3, 3, 9}, DType::f16);
  Status wrongWidth = channelSlices("concat", whole.view, {a.view, a.view}, true, stream.get());
  EXPECT_EQ(wrongWidth.error().message(),
            "concat: the inputs' channels add up to 8, result [2, 3, 3, 9] has 9");
  Status wrongType = channelSlices("split", whole.view, {a.view, b.view}, false, stream.get());
  EXPECT_EQ(wrongType.error().message(), "split: result #1 is f32, input is f16");
  EXPECT_FALSE(channelShuffle(whole.view, 2, whole.view, stream.get()).ok());
}

} // namespace
} // namespace rn::cuda
