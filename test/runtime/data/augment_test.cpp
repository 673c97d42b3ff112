//===- augment_test.cpp - Random crops, flips and resizes -----------------===//
//
// The draws are pure functions of (seed, epoch, example) with the ranges and
// rates of torchvision's recipes; the crops and the resize move pixels
// where they belong (identity, mirror, padding, averages).
//
//===----------------------------------------------------------------------===//

#include "runtime/data/augment.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <set>

namespace {

using namespace rn;

// Tests that a key always draws the same numbers and that changing any part
// of it changes them.
TEST(ExampleRandomTest, IsAFunctionOfTheKey) {
  ExampleRandom a({7, 2, 11}), b({7, 2, 11});
  for (int i = 0; i < 4; ++i)
    EXPECT_EQ(a.next(), b.next());
  const uint64_t first = ExampleRandom({7, 2, 11}).next();
  EXPECT_NE(ExampleRandom({8, 2, 11}).next(), first);
  EXPECT_NE(ExampleRandom({7, 3, 11}).next(), first);
  EXPECT_NE(ExampleRandom({7, 2, 12}).next(), first);
}

// Tests that integer() covers its inclusive range evenly and uniform() stays
// in [0, 1).
TEST(ExampleRandomTest, RangesAreCoveredEvenly) {
  std::vector<int> counts(9);
  for (int64_t e = 0; e < 9000; ++e) {
    ExampleRandom r({1, 0, e});
    const int64_t v = r.integer(0, 8);
    ASSERT_GE(v, 0);
    ASSERT_LE(v, 8);
    ++counts[size_t(v)];
    const double u = r.uniform();
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
  }
  for (int c : counts) // 1000 expected each; 5 sigma is about 150
    EXPECT_NEAR(c, 1000, 150);
}

// Tests crop-flip's draw: corners in [0, 2 * padding], every corner drawn,
// and half of the examples flipped.
TEST(AugmentDrawTest, PaddedCropCoversItsRangeAndFlipsHalf) {
  std::set<std::pair<int, int>> corners;
  int flips = 0;
  const int n = 20000;
  for (int64_t e = 0; e < n; ++e) {
    CropBox box = drawPaddedCrop({3, 1, e}, 32, 32, 4);
    ASSERT_GE(box.top, 0);
    ASSERT_LE(box.top, 8);
    ASSERT_GE(box.left, 0);
    ASSERT_LE(box.left, 8);
    EXPECT_EQ(box.height, 32);
    EXPECT_EQ(box.width, 32);
    corners.insert({int(box.top), int(box.left)});
    flips += box.flip;
  }
  EXPECT_EQ(corners.size(), 81u);
  EXPECT_NEAR(double(flips) / n, 0.5, 5 * std::sqrt(0.25 / n));
}

// Tests rrc-flip's draw: every box inside the image with an area of 8-100%
// of it and an aspect ratio within 3/4..4/3 (up to the rounding of its
// sides), areas spread over the range, and half flipped.
TEST(AugmentDrawTest, ResizedCropKeepsAreaAndRatioBounds) {
  AugmentRecipe recipe;
  recipe.kind = AugmentKind::resizedCropFlip;
  const int64_t h = 375, w = 500;
  const int n = 5000;
  double smallest = 1, largest = 0;
  int flips = 0;
  for (int64_t e = 0; e < n; ++e) {
    CropBox box = drawResizedCrop({5, 0, e}, h, w, recipe);
    ASSERT_GE(box.top, 0);
    ASSERT_GE(box.left, 0);
    ASSERT_LE(box.top + box.height, double(h));
    ASSERT_LE(box.left + box.width, double(w));
    const double area = box.height * box.width / double(h * w);
    const double ratio = box.width / box.height;
    EXPECT_GE(area, 0.08 * 0.97);
    EXPECT_LE(area, 1.0);
    EXPECT_GE(ratio, 0.75 * 0.97);
    EXPECT_LE(ratio, 4.0 / 3.0 / 0.97);
    smallest = std::min(smallest, area);
    largest = std::max(largest, area);
    flips += box.flip;
  }
  EXPECT_LT(smallest, 0.1);
  EXPECT_GT(largest, 0.9);
  EXPECT_NEAR(double(flips) / n, 0.5, 5 * std::sqrt(0.25 / n));
}

// Tests the fallback of an image no allowed box fits ten times (a 1-pixel
// high strip): the centered box of the widest allowed ratio.
TEST(AugmentDrawTest, ResizedCropFallsBackToTheCenteredClampedBox) {
  AugmentRecipe recipe;
  CropBox box = drawResizedCrop({0, 0, 0}, 3, 400, recipe);
  EXPECT_EQ(box.height, 3);
  EXPECT_EQ(box.width, 4); // round(3 * 4/3)
  EXPECT_EQ(box.top, 0);
  EXPECT_EQ(box.left, 198);
}

// Tests evaluation's center box: Resize(256) + CenterCrop(224) of a 375 x
// 500 image is the centered 328.125-pixel square.
TEST(AugmentDrawTest, CenterBoxIsResizeThenCenterCrop) {
  CropBox box = centerBox(375, 500, 224, 224, 0.875);
  EXPECT_DOUBLE_EQ(box.height, 375 * 0.875);
  EXPECT_DOUBLE_EQ(box.width, 375 * 0.875);
  EXPECT_DOUBLE_EQ(box.top, (375 - box.height) / 2);
  EXPECT_DOUBLE_EQ(box.left, (500 - box.width) / 2);
  EXPECT_FALSE(box.flip);
}

std::vector<uint8_t> ramp(int64_t h, int64_t w, int64_t c) {
  std::vector<uint8_t> v(static_cast<size_t>(h * w * c));
  std::iota(v.begin(), v.end(), uint8_t(1));
  return v;
}

// Tests cropWithPadding: the unshifted box is the image, a flip mirrors
// each row, and a corner box reads zeros where it leaves the image.
TEST(AugmentPixelsTest, CropWithPaddingShiftsMirrorsAndPads) {
  const int64_t h = 4, w = 5, c = 2, p = 2;
  const std::vector<uint8_t> in = ramp(h, w, c);
  std::vector<uint8_t> out(in.size());
  CropBox box{double(p), double(p), double(h), double(w), false};
  cropWithPadding(in.data(), h, w, c, p, box, out.data());
  EXPECT_EQ(out, in);
  box.flip = true;
  cropWithPadding(in.data(), h, w, c, p, box, out.data());
  for (int64_t y = 0; y < h; ++y)
    for (int64_t x = 0; x < w; ++x)
      for (int64_t k = 0; k < c; ++k)
        EXPECT_EQ(out[size_t((y * w + x) * c + k)], in[size_t((y * w + (w - 1 - x)) * c + k)]);
  box = CropBox{0, 0, double(h), double(w), false};
  cropWithPadding(in.data(), h, w, c, p, box, out.data());
  for (int64_t y = 0; y < h; ++y)
    for (int64_t x = 0; x < w; ++x)
      for (int64_t k = 0; k < c; ++k) {
        const uint8_t want = (y < p || x < p) ? 0 : in[size_t(((y - p) * w + (x - p)) * c + k)];
        EXPECT_EQ(out[size_t((y * w + x) * c + k)], want) << y << "," << x;
      }
}

// Tests resizeBox: the whole image at its own size is the image; flipped,
// its mirror; a constant image stays constant at any size; halving 2x2
// blocks weighs each block with its neighbour's nearest pixels.
TEST(AugmentPixelsTest, ResizeIsExactWhereItMustBe) {
  const int64_t h = 6, w = 8, c = 3;
  const std::vector<uint8_t> in = ramp(h, w, c);
  std::vector<uint8_t> out(in.size());
  resizeBox(in.data(), h, w, c, CropBox{0, 0, double(h), double(w), false}, h, w, out.data());
  EXPECT_EQ(out, in);
  resizeBox(in.data(), h, w, c, CropBox{0, 0, double(h), double(w), true}, h, w, out.data());
  for (int64_t y = 0; y < h; ++y)
    for (int64_t x = 0; x < w; ++x)
      for (int64_t k = 0; k < c; ++k)
        EXPECT_EQ(out[size_t((y * w + x) * c + k)], in[size_t((y * w + (w - 1 - x)) * c + k)]);

  std::vector<uint8_t> flat(size_t(37 * 53 * 3), uint8_t(77)), small(size_t(11 * 7 * 3));
  resizeBox(flat.data(), 37, 53, 3, CropBox{3.5, 2.25, 30, 41, false}, 11, 7, small.data());
  for (uint8_t v : small)
    EXPECT_EQ(v, 77);

  // 2x2 blocks of one value each, halved: each output is its block.
  std::vector<uint8_t> blocks(size_t(4 * 4));
  for (int64_t y = 0; y < 4; ++y)
    for (int64_t x = 0; x < 4; ++x)
      blocks[size_t(y * 4 + x)] = uint8_t(40 * (y / 2) + 100 * (x / 2));
  std::vector<uint8_t> half(4);
  resizeBox(blocks.data(), 4, 4, 1, CropBox{0, 0, 4, 4, false}, 2, 2, half.data());
  // The triangle of radius 2 around output 0's source center (1.0) weighs
  // pixels 0, 1, 2 by 3/4, 3/4, 1/4 (normalized: 3/7, 3/7, 1/7): 1/7 of the
  // neighbour block leaks in per axis, as PIL's antialiased bilinear does.
  EXPECT_EQ(half[0], 20);  // 100 / 7 + 40 / 7
  EXPECT_EQ(half[1], 91);  // 600 / 7 + 40 / 7
  EXPECT_EQ(half[2], 49);  // 100 / 7 + 240 / 7
  EXPECT_EQ(half[3], 120); // 600 / 7 + 240 / 7
}

// Tests that parseAugmentKind knows the three recipes and names them in its
// error.
TEST(AugmentKindTest, ParsesTheRecipes) {
  EXPECT_EQ(*parseAugmentKind("none"), AugmentKind::none);
  EXPECT_EQ(*parseAugmentKind("crop-flip"), AugmentKind::cropFlip);
  EXPECT_EQ(*parseAugmentKind("rrc-flip"), AugmentKind::resizedCropFlip);
  Result<AugmentKind> bad = parseAugmentKind("random");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message().find("none, crop-flip"), std::string::npos);
}

} // namespace
