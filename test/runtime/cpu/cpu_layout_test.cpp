//===- cpu_layout_test.cpp - Concatenation, split and channel shuffle -----===//
//
// The CPU reference of the channel layout ops (cpu_layout.cpp): hand
// examples in PyTorch's terms, each op against its gradient rule's op as
// adjoints (<g, concat(a, b)> = <split(g), (a, b)>; the shuffle's adjoint
// is the shuffle with C / groups groups), and the shape errors.
//
//===----------------------------------------------------------------------===//

#include "runtime/cpu/cpu_kernels.h"
#include "cpu_test_util.h"

#include <gtest/gtest.h>

#include <numeric>
#include <random>
#include <vector>

namespace rn::cpu {
namespace {

using testing::Views;
using testing::Buffer;
using testing::dot;
using testing::randomBuffer;

/// 0, 1, 2, ... in a buffer of `shape`.
Buffer iota(Shape shape, float first = 0.0f) {
  Buffer b(std::move(shape));
  std::iota(b.data.begin(), b.data.end(), first);
  return b;
}

TEST(Concat, JoinsRowsInOperandOrder) {
  // torch.cat([a, b], dim=1) of NCHW [1, 2, 1, 2] and [1, 1, 1, 2] is, in
  // NHWC, each pixel's two channels of a then b's one.
  Buffer a = iota({1, 1, 2, 2}), b = iota({1, 1, 2, 1}, 10.0f), y({1, 1, 2, 3});
  RN_ASSERT_OK(concat(Views{a.view(), b.view()}, y.view()));
  EXPECT_EQ(y.data, (std::vector<float>{0, 1, 10, 2, 3, 11}));
}

TEST(Split, IsConcatsInverse) {
  std::mt19937 rng(3);
  Buffer x = randomBuffer({2, 3, 2, 7}, rng);
  Buffer a({2, 3, 2, 2}), b({2, 3, 2, 4}), c({2, 3, 2, 1}), joined({2, 3, 2, 7});
  RN_ASSERT_OK(split(x.view(), Views{a.view(), b.view(), c.view()}));
  EXPECT_EQ(a[0], x[0]);
  EXPECT_EQ(b[0], x[2]);
  EXPECT_EQ(c[1], x[7 + 6]);
  RN_ASSERT_OK(concat(Views{a.view(), b.view(), c.view()}, joined.view()));
  EXPECT_EQ(joined.data, x.data);
}

TEST(Split, IsConcatsAdjointOnRowsOfTwoDimensions) {
  std::mt19937 rng(5);
  Buffer a = randomBuffer({4, 3}, rng), b = randomBuffer({4, 5}, rng);
  Buffer g = randomBuffer({4, 8}, rng), y({4, 8}), ga({4, 3}), gb({4, 5});
  RN_ASSERT_OK(concat(Views{a.view(), b.view()}, y.view()));
  RN_ASSERT_OK(split(g.view(), Views{ga.view(), gb.view()}));
  EXPECT_NEAR(dot(g, y), dot(ga, a) + dot(gb, b), 1e-9);
}

TEST(ChannelShuffle, MatchesPyTorchsViewTransposeView) {
  // channel_shuffle(x, 2) of channels 0..5: view(2, 3) transposed is
  // [[0, 3], [1, 4], [2, 5]], read row by row.
  Buffer x = iota({1, 1, 2, 6}), y({1, 1, 2, 6});
  RN_ASSERT_OK(channelShuffle(x.view(), 2, y.view()));
  EXPECT_EQ(y.data, (std::vector<float>{0, 3, 1, 4, 2, 5, 6, 9, 7, 10, 8, 11}));
  RN_ASSERT_OK(channelShuffle(x.view(), 3, y.view()));
  EXPECT_EQ(y.data, (std::vector<float>{0, 2, 4, 1, 3, 5, 6, 8, 10, 7, 9, 11}));
}

TEST(ChannelShuffle, TheInverseHasChannelsOverGroupsGroups) {
  std::mt19937 rng(7);
  for (int64_t groups : {1, 2, 3, 4, 12}) {
    SCOPED_TRACE(groups);
    Buffer x = randomBuffer({2, 3, 2, 12}, rng), y({2, 3, 2, 12}), back({2, 3, 2, 12});
    RN_ASSERT_OK(channelShuffle(x.view(), groups, y.view()));
    RN_ASSERT_OK(channelShuffle(y.view(), 12 / groups, back.view()));
    EXPECT_EQ(back.data, x.data);
    // A permutation's adjoint is its inverse.
    Buffer g = randomBuffer({2, 3, 2, 12}, rng), gx({2, 3, 2, 12});
    RN_ASSERT_OK(channelShuffle(g.view(), 12 / groups, gx.view()));
    EXPECT_NEAR(dot(g, y), dot(gx, x), 1e-9);
  }
}

TEST(ChannelLayout, ShapeErrors) {
  Buffer a({2, 2, 2, 3}), b({2, 2, 2, 5}), wide({2, 2, 2, 9}), small({2, 1, 2, 5});
  Buffer y({2, 2, 2, 8}), flat({2, 8}), f16({2, 2, 2, 5}, 0.0f, DType::f16);
  EXPECT_EQ(concat(Views{a.view()}, a.view()).error, "concat: expects at least 2 inputs, got 1");
  EXPECT_EQ(concat(Views{a.view(), b.view()}, wide.view()).error,
            "concat: inputs' channels add up to 8, result has 9");
  EXPECT_EQ(concat(Views{a.view(), small.view()}, y.view()).error,
            "concat: input #1 must have shape [2, 2, 2, 5], got [2, 1, 2, 5]");
  EXPECT_EQ(concat(Views{a.view(), f16.view()}, y.view()).error,
            "concat: input #1 has another dtype than result");
  EXPECT_EQ(split(flat.view(), Views{a.view(), b.view()}).error,
            "split: result #0 must have rank 2 as input [2, 8], got [2, 2, 2, 3]");
  EXPECT_EQ(channelShuffle(y.view(), 3, y.view()).error,
            "channel_shuffle: groups 3 must be positive and divide the 8 channels");
  EXPECT_FALSE(channelShuffle(flat.view(), 2, flat.view()).ok());
}

} // namespace
} // namespace rn::cpu
