//===- augmented_source_test.cpp - Batches through augmentation and threads ===//
//
// A source of uint8 pixels behind AugmentedSource: training batches are a
// function of (seed, epoch, example) whatever the loader's threads,
// evaluation takes the deterministic view, and fillBatch's skipping keeps a
// batch full with the batch's own examples. The LoaderPool visits every
// index once.
//
//===----------------------------------------------------------------------===//

#include "runtime/train/augmented_source.h"
#include "runtime/train/loader_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>

namespace {

using namespace rn::train;
using rn::Status;

/// `count` examples of h x w x 3 pixels, example i's pixels i + position;
/// examples in `broken` fail to read.
class PixelSource final : public DataSource {
public:
  PixelSource(int64_t count, int64_t h, int64_t w, std::vector<int64_t> broken = {})
      : count_(count), h_(h), w_(w), broken_(std::move(broken)) {}
  int64_t count() const override { return count_; }
  std::vector<int64_t> imageShape() const override { return {h_, w_, 3}; }
  std::string name() const override { return "pixels"; }
  int64_t label(int64_t index) const override { return index % 10; }
  void writeImage(int64_t, float *) const override {}
  bool hasPixels() const override { return true; }
  Status readPixels(int64_t index, PixelImage &image) const override {
    for (int64_t b : broken_)
      if (b == index)
        return rn::Error("pixels: example " + std::to_string(index) + " does not decode");
    image.height = h_;
    image.width = w_;
    image.channels = 3;
    image.pixels.resize(size_t(h_ * w_ * 3));
    for (size_t i = 0; i < image.pixels.size(); ++i)
      image.pixels[i] = uint8_t(index * 7 + int64_t(i));
    return Status::success();
  }
  ChannelNormalization normalization() const override {
    return {{0.5f, 0.5f, 0.5f}, {0.25f, 0.25f, 0.25f}};
  }

private:
  int64_t count_, h_, w_;
  std::vector<int64_t> broken_;
};

std::unique_ptr<AugmentedSource> augmented(rn::AugmentKind kind, int64_t out,
                                           std::vector<int64_t> broken = {}) {
  rn::AugmentRecipe recipe;
  recipe.kind = kind;
  auto inner = std::make_unique<PixelSource>(40, 12, 16, std::move(broken));
  rn::Result<std::unique_ptr<AugmentedSource>> source =
      AugmentedSource::create(std::move(inner), recipe, out, out);
  EXPECT_TRUE(source) << (source ? "" : source.error().message());
  return std::move(*source);
}

std::vector<float> batchOf(const DataSource &source, const BatchOptions &options,
                           std::vector<int32_t> *labels = nullptr) {
  std::vector<int64_t> indices = {3, 17, 5, 29, 11, 0, 38, 21};
  std::vector<float> images(indices.size() * size_t(source.imageSize()));
  std::vector<int32_t> l(indices.size());
  Status st = source.fillBatch(indices.data(), int64_t(indices.size()), images.data(), l.data(),
                               options);
  EXPECT_TRUE(st) << (st ? "" : st.error().message());
  if (labels)
    *labels = l;
  return images;
}

// Tests that a training batch depends on (seed, epoch) and not on how many
// threads read it, and that evaluation's view draws nothing.
TEST(AugmentedSourceTest, TrainingDrawsAreKeyedAndThreadIndependent) {
  auto source = augmented(rn::AugmentKind::resizedCropFlip, 10);
  EXPECT_EQ(source->imageShape(), (std::vector<int64_t>{10, 10, 3}));
  BatchOptions options;
  options.draw = BatchDraw{true, 9, 2};
  const std::vector<float> one = batchOf(*source, options);
  LoaderPool pool(4);
  options.pool = &pool;
  EXPECT_EQ(batchOf(*source, options), one);
  options.draw.epoch = 3;
  EXPECT_NE(batchOf(*source, options), one);
  options.draw = BatchDraw{true, 10, 2};
  EXPECT_NE(batchOf(*source, options), one);
  // Evaluation: the same whatever the seed and epoch in the options.
  BatchOptions eval;
  eval.draw = BatchDraw{false, 1, 1};
  const std::vector<float> view = batchOf(*source, eval);
  eval.draw = BatchDraw{false, 2, 5};
  EXPECT_EQ(batchOf(*source, eval), view);
}

// Tests crop-flip at the image's size: normalized values of the inner
// pixels or of the zero padding ((0 - 0.5) / 0.25 = -2), and evaluation
// equal to the plain normalized image.
TEST(AugmentedSourceTest, CropFlipPadsWithZeroPixels) {
  rn::AugmentRecipe recipe;
  recipe.kind = rn::AugmentKind::cropFlip;
  auto inner = std::make_unique<PixelSource>(40, 12, 12);
  auto created = AugmentedSource::create(std::move(inner), recipe, 12, 12);
  ASSERT_TRUE(created);
  std::unique_ptr<AugmentedSource> source = std::move(*created);
  BatchOptions options;
  bool sawPadding = false;
  for (int64_t epoch = 0; epoch < 8; ++epoch) {
    options.draw = BatchDraw{true, 1, epoch};
    for (float v : batchOf(*source, options))
      sawPadding = sawPadding || v == -2.0f;
  }
  EXPECT_TRUE(sawPadding);
  std::vector<float> image(size_t(source->imageSize()));
  ASSERT_TRUE(source->readImage(5, image.data()));
  for (size_t i = 0; i < image.size(); ++i)
    EXPECT_FLOAT_EQ(image[i], (float(uint8_t(5 * 7 + int64_t(i))) / 255.0f - 0.5f) * 4.0f);
}

// Tests that crop-flip refuses images of another size than the model's,
// naming the example, and that a source of float images cannot be
// augmented.
TEST(AugmentedSourceTest, SizeMismatchAndFloatSourcesAreErrors) {
  auto source = augmented(rn::AugmentKind::cropFlip, 10);
  std::vector<float> image(size_t(source->imageSize()));
  Status st = source->readImage(1, image.data());
  ASSERT_FALSE(st);
  EXPECT_NE(st.error().message().find("example 1 is 12x16, the model's input 10x10"),
            std::string::npos)
      << st.error().message();
  rn::AugmentRecipe recipe;
  recipe.kind = rn::AugmentKind::cropFlip;
  auto floats = MemoryDataSource::create("floats", {2, 2, 1}, std::vector<float>(4), {0});
  ASSERT_TRUE(floats);
  auto refused = AugmentedSource::create(std::make_unique<MemoryDataSource>(std::move(*floats)),
                                         recipe, 2, 2);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message().find("float images"), std::string::npos);
}

// Tests fillBatch with broken examples: an error naming the first by
// default; with skipping, each bad slot holds the batch's next readable
// example and its label, and the errors are listed.
TEST(AugmentedSourceTest, SkippingFillsBadSlotsWithTheBatchsNextExample) {
  auto source = augmented(rn::AugmentKind::resizedCropFlip, 8, {17, 29});
  BatchOptions options;
  options.draw = BatchDraw{true, 0, 0};
  std::vector<int64_t> indices = {3, 17, 5, 29, 11, 0, 38, 21};
  std::vector<float> images(indices.size() * size_t(source->imageSize()));
  std::vector<int32_t> labels(indices.size());
  Status st = source->fillBatch(indices.data(), 8, images.data(), labels.data(), options);
  ASSERT_FALSE(st);
  EXPECT_NE(st.error().message().find("example 17 does not decode"), std::string::npos);
  std::vector<std::string> skipped;
  options.skipped = &skipped;
  ASSERT_TRUE(source->fillBatch(indices.data(), 8, images.data(), labels.data(), options));
  ASSERT_EQ(skipped.size(), 2u);
  EXPECT_NE(skipped[1].find("example 29"), std::string::npos);
  const size_t size = size_t(source->imageSize());
  auto slot = [&](size_t k) { return std::vector<float>(images.begin() + k * size,
                                                        images.begin() + (k + 1) * size); };
  EXPECT_EQ(slot(1), slot(2)); // 17 -> 5
  EXPECT_EQ(labels[1], labels[2]);
  EXPECT_EQ(slot(3), slot(4)); // 29 -> 11
  EXPECT_EQ(labels[3], 11 % 10);
}

// Tests fillPixelBatch, the uint8 input's batch: the same draws as
// fillBatch, before normalization ((x / 255 - 0.5) * 4 here); a source of
// float images is refused.
TEST(AugmentedSourceTest, PixelBatchesAreTheUnnormalizedDraws) {
  auto source = augmented(rn::AugmentKind::resizedCropFlip, 8);
  BatchOptions options;
  options.draw = BatchDraw{true, 4, 1};
  std::vector<int64_t> indices = {3, 17, 5, 29};
  const size_t size = size_t(source->imageSize());
  std::vector<uint8_t> pixels(indices.size() * size);
  std::vector<float> images(indices.size() * size);
  std::vector<int32_t> labels(indices.size()), pixelLabels(indices.size());
  ASSERT_TRUE(source->fillPixelBatch(indices.data(), 4, pixels.data(), pixelLabels.data(), options));
  ASSERT_TRUE(source->fillBatch(indices.data(), 4, images.data(), labels.data(), options));
  EXPECT_EQ(pixelLabels, labels);
  for (size_t i = 0; i < pixels.size(); ++i)
    ASSERT_EQ(images[i], (float(pixels[i]) / 255.0f - 0.5f) * 4.0f) << i;
  auto floats = MemoryDataSource::create("floats", {2, 2, 1}, std::vector<float>(4), {0});
  ASSERT_TRUE(floats);
  int64_t zero = 0;
  Status st = floats->fillPixelBatch(&zero, 1, pixels.data(), labels.data());
  ASSERT_FALSE(st);
  EXPECT_NE(st.error().message().find("floats: holds float images"), std::string::npos);
}

// Tests that the pool calls every index exactly once, job after job, and
// from concurrent callers.
TEST(LoaderPoolTest, VisitsEveryIndexOnce) {
  LoaderPool pool(4);
  EXPECT_EQ(pool.threads(), 4);
  for (int job = 0; job < 50; ++job) {
    std::vector<std::atomic<int>> hits(size_t(97));
    pool.run(97, [&](int64_t i) { hits[size_t(i)].fetch_add(1); });
    for (auto &h : hits)
      ASSERT_EQ(h.load(), 1);
  }
  std::atomic<int64_t> total{0};
  std::thread other([&] {
    for (int job = 0; job < 20; ++job)
      pool.run(10, [&](int64_t) { total.fetch_add(1); });
  });
  for (int job = 0; job < 20; ++job)
    pool.run(10, [&](int64_t) { total.fetch_add(1); });
  other.join();
  EXPECT_EQ(total.load(), 400);
}

} // namespace
