//===- augmented_source.cpp - A data source seen through augmentation -----===//
//
// See augmented_source.h.
//
//===----------------------------------------------------------------------===//

#include "runtime/train/augmented_source.h"

#include <algorithm>

namespace rn::train {

Result<std::unique_ptr<AugmentedSource>> AugmentedSource::create(std::unique_ptr<DataSource> inner,
                                                                 const AugmentRecipe &recipe,
                                                                 int64_t height, int64_t width) {
  if (!inner->hasPixels())
    return Error(inner->name() + ": --augment " + augmentKindName(recipe.kind) +
                 " works on uint8 pixels, and this source holds float images");
  if (height < 1 || width < 1)
    return Error("an augmented image must have a positive size, got " + std::to_string(height) +
                 "x" + std::to_string(width));
  std::unique_ptr<AugmentedSource> source(new AugmentedSource());
  source->recipe_ = recipe;
  source->height_ = height;
  source->width_ = width;
  source->channels_ = inner->imageShape().back();
  source->normalization_ = inner->normalization();
  if (int64_t(source->normalization_.mean.size()) != source->channels_ ||
      int64_t(source->normalization_.std.size()) != source->channels_)
    return Error(inner->name() + ": its normalization does not give one mean and std per channel");
  for (float s : source->normalization_.std)
    source->inverseStd_.push_back(1.0f / s);
  source->inner_ = std::move(inner);
  return source;
}

std::string AugmentedSource::layout() const {
  return "NHWC, " + std::to_string(height_) + "x" + std::to_string(width_) + "x" +
         std::to_string(channels_) + " after " + augmentKindName(recipe_.kind) + " of " +
         inner_->layout();
}

Status AugmentedSource::augmentedPixels(int64_t index, const BatchDraw &draw,
                                        PixelImage &out) const {
  PixelImage image;
  RN_RETURN_IF_ERROR(inner_->readPixels(index, image));
  if (image.channels != channels_)
    return Error(inner_->name() + ": example " + std::to_string(index) + " has " +
                 std::to_string(image.channels) + " channels, the others " +
                 std::to_string(channels_));
  out.height = height_;
  out.width = width_;
  out.channels = channels_;
  out.pixels.resize(size_t(height_ * width_ * channels_));
  const ExampleKey key{draw.seed, draw.epoch, index};
  if (recipe_.kind == AugmentKind::resizedCropFlip) {
    const CropBox box =
        draw.training
            ? drawResizedCrop(key, image.height, image.width, recipe_)
            : centerBox(image.height, image.width, height_, width_, recipe_.evalCropFraction);
    resizeBox(image.pixels.data(), image.height, image.width, channels_, box, height_, width_,
              out.pixels.data());
    return Status::success();
  }
  // none and crop-flip keep the image's size.
  if (image.height != height_ || image.width != width_)
    return Error(inner_->name() + ": example " + std::to_string(index) + " is " +
                 std::to_string(image.height) + "x" + std::to_string(image.width) +
                 ", the model's input " + std::to_string(height_) + "x" + std::to_string(width_) +
                 " (--augment " + augmentKindName(recipe_.kind) +
                 " does not resize; rrc-flip does)");
  if (recipe_.kind == AugmentKind::cropFlip && draw.training) {
    cropWithPadding(image.pixels.data(), image.height, image.width, channels_, recipe_.padding,
                    drawPaddedCrop(key, image.height, image.width, recipe_.padding),
                    out.pixels.data());
    return Status::success();
  }
  out.pixels = std::move(image.pixels);
  return Status::success();
}

Status AugmentedSource::readExample(int64_t index, float *out, const BatchDraw &draw) const {
  PixelImage image;
  RN_RETURN_IF_ERROR(augmentedPixels(index, draw, image));
  normalizePixels(image.pixels.data(), image.pixels.size(), size_t(channels_),
                  normalization_.mean.data(), inverseStd_.data(), out);
  return Status::success();
}

Status AugmentedSource::readExamplePixels(int64_t index, uint8_t *out,
                                          const BatchDraw &draw) const {
  PixelImage image;
  RN_RETURN_IF_ERROR(augmentedPixels(index, draw, image));
  std::copy(image.pixels.begin(), image.pixels.end(), out);
  return Status::success();
}

Status AugmentedSource::readImage(int64_t index, float *out) const {
  return readExample(index, out, BatchDraw{});
}

void AugmentedSource::writeImage(int64_t index, float *out) const {
  if (!readImage(index, out))
    std::fill(out, out + imageSize(), 0.0f);
}

Status AugmentedSource::readPixels(int64_t index, PixelImage &image) const {
  return augmentedPixels(index, BatchDraw{}, image);
}

} // namespace rn::train
