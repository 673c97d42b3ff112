//===- image_folder_source.h - An image folder as a data source -*- C++ -*-===//
//
// The splits of an image folder (runtime/data/image_folder.h) behind
// DataSource. Every image's header is read up front: all must have one size
// (H, W, C), else an error naming the first file that differs and both
// sizes, unless the sizes may vary (ImageFolderSourceOptions::mixedSizes:
// an augmentation that resizes reads them, through readPixels; grayscale
// images of a color folder are then expanded to RGB). Images are decoded
// when asked (readImage, on the trainer's loader threads), then normalized
// per channel as the .npz source does: x / 255, then (x - mean) * (1 /
// std), with a given mean and standard deviation or those of the training
// split (every training image decoded once, up front). An image that fails
// to decode while training is an error naming the file.
//
//===----------------------------------------------------------------------===//

#ifndef RN_RUNTIME_TRAIN_IMAGE_FOLDER_SOURCE_H
#define RN_RUNTIME_TRAIN_IMAGE_FOLDER_SOURCE_H

#include "runtime/data/image_folder.h"
#include "runtime/train/data_source.h"

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace rn::train {

class ImageFolderSource final : public DataSource {
public:
  /// `sizes` holds each file's size (from its header); `size` is the
  /// images' common one (with mixed sizes: the first's, and the channels
  /// every image is read with). `mean` and `std` hold one value per channel.
  ImageFolderSource(std::vector<ImageFile> files, std::vector<ImageSize> sizes, ImageSize size,
                    bool mixedSizes, std::string name, std::vector<float> mean,
                    std::vector<float> std);

  int64_t count() const override { return int64_t(files_.size()); }
  std::vector<int64_t> imageShape() const override {
    return {size_.height, size_.width, size_.channels};
  }
  /// "NHWC, 28x28x1 uint8 images".
  std::string layout() const override;
  std::string name() const override { return name_; }
  int64_t label(int64_t index) const override { return files_[size_t(index)].label; }
  /// readImage; an image that does not decode is written as zeros.
  void writeImage(int64_t index, float *out) const override;
  /// With mixed sizes, an error: the images must be resized first.
  Status readImage(int64_t index, float *out) const override;
  bool hasPixels() const override { return true; }
  Status readPixels(int64_t index, PixelImage &image) const override;
  ChannelNormalization normalization() const override { return {mean_, std_}; }

  const std::vector<ImageFile> &files() const { return files_; }

private:
  std::vector<ImageFile> files_;
  std::vector<ImageSize> sizes_;
  ImageSize size_;
  bool mixedSizes_ = false;
  std::string name_;
  std::vector<float> mean_, std_, inverseStd_;
};

struct ImageFolderSourceOptions {
  int64_t limitTrain = 0, limitTest = 0; ///< > 0: the first K examples only
  /// Normalization, one value per channel; absent: the training split's
  /// own (after any limit: only the images that train are decoded).
  std::optional<std::vector<float>> mean, std;
  /// Images may differ in size (and in channels: grayscale ones of a color
  /// folder are read as RGB); they reach the model through a resize.
  bool mixedSizes = false;
  /// Data-parallel, computing the statistics: this rank decodes every
  /// ranks-th training image from `rank` on, and sumOverRanks adds the
  /// ranks' sums (a collective every rank calls once).
  int rank = 0, ranks = 1;
  std::function<Status(std::vector<double> &)> sumOverRanks;
  /// An image whose header does not read, or (computing the statistics)
  /// whose pixels do not decode, is left out of its split instead of
  /// failing the load (rn-run --skip-bad-images): a real copy of ImageNet
  /// has a few files cut short.
  bool skipBadImages = false;
};

struct ImageFolderSources {
  std::unique_ptr<ImageFolderSource> train, test;
  std::vector<std::string> classes; ///< the class folders; index = label
  std::string testSplit;            ///< "val" or "test"
  ImageSize size;            ///< the common size, or with mixed sizes the first's
  bool sizesDiffer = false;  ///< (mixed sizes allowed) not all images have `size`
  std::vector<float> mean, std;
  bool statsComputed = false;
  /// skipBadImages: the images left out at load, each "PATH: why".
  std::vector<std::string> skipped;
};

/// The image folder at `root` (listImageFolder), every header checked.
Result<ImageFolderSources> loadImageFolderSources(const std::string &root,
                                                  const ImageFolderSourceOptions &options);

} // namespace rn::train

#endif // RN_RUNTIME_TRAIN_IMAGE_FOLDER_SOURCE_H
