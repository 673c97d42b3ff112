//===- augmented_source.h - A data source seen through augmentation -*- C++ -*-===//
//
// Wraps a source of uint8 pixels (DataSource::hasPixels) and gives the
// model's input: each example's pixels cropped, flipped or resized by an
// AugmentRecipe (runtime/data/augment.h) to the model's image size, then
// normalized with the inner source's mean and std. Training batches
// (BatchDraw::training) draw by (seed, epoch, example); evaluation takes
// the recipe's deterministic view: the image itself (none, crop-flip) or
// the resized center crop (rrc-flip).
//
//===----------------------------------------------------------------------===//

#ifndef RN_RUNTIME_TRAIN_AUGMENTED_SOURCE_H
#define RN_RUNTIME_TRAIN_AUGMENTED_SOURCE_H

#include "runtime/data/augment.h"
#include "runtime/train/data_source.h"

#include <memory>

namespace rn::train {

class AugmentedSource final : public DataSource {
public:
  /// `inner` must have pixels; the output is `height` x `width` with the
  /// inner source's channels. crop-flip and none keep the image's size, so
  /// the inner images must have it (checked when read: an error naming the
  /// example).
  static Result<std::unique_ptr<AugmentedSource>> create(std::unique_ptr<DataSource> inner,
                                                         const AugmentRecipe &recipe,
                                                         int64_t height, int64_t width);

  int64_t count() const override { return inner_->count(); }
  std::vector<int64_t> imageShape() const override { return {height_, width_, channels_}; }
  std::string layout() const override;
  std::string name() const override { return inner_->name(); }
  int64_t label(int64_t index) const override { return inner_->label(index); }
  /// The evaluation view; an image that cannot be read is written as zeros.
  void writeImage(int64_t index, float *out) const override;
  Status readImage(int64_t index, float *out) const override;
  Status readExample(int64_t index, float *out, const BatchDraw &draw) const override;
  Status readExamplePixels(int64_t index, uint8_t *out, const BatchDraw &draw) const override;
  bool hasPixels() const override { return true; }
  /// The evaluation view's pixels.
  Status readPixels(int64_t index, PixelImage &image) const override;
  ChannelNormalization normalization() const override { return normalization_; }

  /// Example `index` as `draw` augments it, before normalization.
  Status augmentedPixels(int64_t index, const BatchDraw &draw, PixelImage &image) const;
  const AugmentRecipe &recipe() const { return recipe_; }
  const DataSource &inner() const { return *inner_; }

private:
  AugmentedSource() = default;

  std::unique_ptr<DataSource> inner_;
  AugmentRecipe recipe_;
  int64_t height_ = 0, width_ = 0, channels_ = 0;
  ChannelNormalization normalization_;
  std::vector<float> inverseStd_;
};

} // namespace rn::train

#endif // RN_RUNTIME_TRAIN_AUGMENTED_SOURCE_H
