//===- data_source.h - Where training and test examples come from -*- C++ -*-===//
//
// The trainer reads examples through this interface only: how many there
// are, one example's image shape, each example's label, and a batch of
// normalized f32 images with their labels for given indices. A source
// decides how its images are stored and normalized (IDX bytes scaled and
// standardized, a synthetic set as drawn); the trainer decides the order
// (shuffledOrder), the batches and, data-parallel, each rank's shard.
//
// Sources are read from the trainer's loader thread while the main thread
// reads the test set, so fillBatch must be safe to call concurrently.
//
//===----------------------------------------------------------------------===//

#ifndef RN_RUNTIME_TRAIN_DATA_SOURCE_H
#define RN_RUNTIME_TRAIN_DATA_SOURCE_H

#include "runtime/core/dtype.h"
#include "runtime/core/status.h"

#include <cstdint>
#include <string>
#include <vector>

namespace rn::train {

class LoaderPool;

/// An example's pixels as stored: uint8, HWC, at the size it has (the
/// images of a folder may differ).
struct PixelImage {
  int64_t height = 0, width = 0, channels = 0;
  std::vector<uint8_t> pixels;
};

/// What a source does to its pixels to make the model's input: per channel
/// (x / 255 - mean) * (1 / std).
struct ChannelNormalization {
  std::vector<float> mean, std;
};

/// The normalization every source applies to uint8 pixels (`count` values,
/// HWC, `channels` per pixel): (x / 255 - mean[c]) * inverseStd[c], the
/// formula the device's normalize_images computes too.
void normalizePixels(const uint8_t *pixels, size_t count, size_t channels, const float *mean,
                     const float *inverseStd, float *out);

/// Which draw of the augmentation a batch's examples take: training draws
/// keyed by (seed, epoch, example); evaluation draws nothing.
struct BatchDraw {
  bool training = false;
  uint64_t seed = 0;
  int64_t epoch = 0;
};

/// How fillBatch reads: the draw, the threads that decode, and whether an
/// image that does not decode stops the batch (the default) or is skipped.
struct BatchOptions {
  BatchDraw draw;
  /// Reads the examples in parallel when set; the batch is the same.
  LoaderPool *pool = nullptr;
  /// When set, an example that cannot be read is skipped: its slot gets
  /// the batch's next readable example (image and label) and the error is
  /// appended here. A batch without any readable example is still an error.
  std::vector<std::string> *skipped = nullptr;
};

class DataSource {
public:
  virtual ~DataSource() = default;

  /// Examples in the source.
  virtual int64_t count() const = 0;
  /// One example's image shape, e.g. {28, 28, 1} (NHWC without the N).
  virtual std::vector<int64_t> imageShape() const = 0;
  /// The layout in words for messages about a shape that does not fit
  /// ("NHWC, 28x28 grayscale").
  virtual std::string layout() const { return "NHWC"; }
  /// What the source is, for messages ("/usr/share/datasets/fashion-mnist").
  virtual std::string name() const = 0;
  /// The label of example `index` (0 <= index < count()).
  virtual int64_t label(int64_t index) const = 0;
  /// Writes example `index`'s image (0 <= index < count()), normalized as
  /// the model expects, to `out` (imageSize() floats).
  virtual void writeImage(int64_t index, float *out) const = 0;
  /// writeImage for a source that can fail to read an example (an image
  /// file that does not decode): an error naming it. By default writeImage,
  /// which cannot fail. fillBatch reads through this.
  virtual Status readImage(int64_t index, float *out) const {
    writeImage(index, out);
    return Status::success();
  }
  /// readImage under a batch's draw: an augmenting source crops and flips
  /// by (draw.seed, draw.epoch, index) in training. By default readImage.
  virtual Status readExample(int64_t index, float *out, const BatchDraw &draw) const {
    (void)draw;
    return readImage(index, out);
  }

  /// Whether readPixels gives the stored uint8 pixels (every file format
  /// but float .npz arrays): what augmentation works on.
  virtual bool hasPixels() const { return false; }
  /// Example `index`'s stored pixels; by default an error saying the source
  /// has none.
  virtual Status readPixels(int64_t index, PixelImage &image) const;
  /// The normalization writeImage applies to readPixels' pixels.
  virtual ChannelNormalization normalization() const { return {}; }

  /// Writes examples `indices[0, n)`: their images (readExample under
  /// options.draw) to `images` (n x imageSize() floats) and their labels to
  /// `labels` (n values); an index outside the source, or an image that
  /// cannot be read (unless skipped, see BatchOptions), is an error naming
  /// it.
  Status fillBatch(const int64_t *indices, int64_t n, float *images, int32_t *labels,
                   const BatchOptions &options = {}) const;

  /// fillBatch for a model whose images input is uint8 (normalized on the
  /// device): the examples' pixels (readExamplePixels) to `pixels` (n x
  /// imageSize() bytes), no normalization; the same errors and skipping.
  Status fillPixelBatch(const int64_t *indices, int64_t n, uint8_t *pixels, int32_t *labels,
                        const BatchOptions &options = {}) const;
  /// The batch as a model's images input of `imageType` takes it: pixels
  /// (fillPixelBatch) for u8, normalized floats (fillBatch) otherwise.
  Status fillInputBatch(DType imageType, const int64_t *indices, int64_t n, void *images,
                        int32_t *labels, const BatchOptions &options = {}) const;
  /// Example `index`'s pixels as the model takes them (imageSize() bytes,
  /// HWC): readPixels, which must give imageShape(); an augmenting source
  /// draws under `draw` first.
  virtual Status readExamplePixels(int64_t index, uint8_t *out, const BatchDraw &draw) const;

  /// Values (floats or bytes) of one example's image.
  int64_t imageSize() const;
};

/// Every label of `source` is below `classes`; else an error naming the
/// source, the example and the label.
Status checkLabels(const DataSource &source, int64_t classes);

/// The order of `count` training examples in 0-based `epoch`: a function of
/// (seed, epoch) only, so a resumed run shuffles as an uninterrupted one.
std::vector<int64_t> shuffledOrder(int64_t count, uint64_t seed, int64_t epoch);

/// Examples held in memory, already normalized: images [count, shape...]
/// f32 and labels [count]. For synthetic data, tests and callers that
/// bring their own arrays.
class MemoryDataSource final : public DataSource {
public:
  /// `images` holds labels.size() x product(shape) floats.
  static Result<MemoryDataSource> create(std::string name, std::vector<int64_t> imageShape,
                                         std::vector<float> images,
                                         std::vector<int32_t> labels);

  int64_t count() const override { return int64_t(labels_.size()); }
  std::vector<int64_t> imageShape() const override { return shape_; }
  std::string name() const override { return name_; }
  int64_t label(int64_t index) const override { return labels_[size_t(index)]; }
  void writeImage(int64_t index, float *out) const override;

private:
  MemoryDataSource() = default;
  std::string name_;
  std::vector<int64_t> shape_;
  std::vector<float> images_;
  std::vector<int32_t> labels_;
};

/// Examples held in memory as uint8 pixels: images [count, H, W, C] and
/// labels [count], for a model that normalizes on the device (the Python
/// trainer's arrays). Its float images (writeImage) are the pixels
/// normalized with `normalization`, the values as they are without one.
class MemoryPixelSource final : public DataSource {
public:
  /// `pixels` holds labels.size() x product(shape) bytes; `shape` is
  /// {H, W, C}.
  static Result<MemoryPixelSource> create(std::string name, std::vector<int64_t> imageShape,
                                          std::vector<uint8_t> pixels,
                                          std::vector<int32_t> labels,
                                          ChannelNormalization normalization = {});

  int64_t count() const override { return int64_t(labels_.size()); }
  std::vector<int64_t> imageShape() const override { return shape_; }
  std::string name() const override { return name_; }
  int64_t label(int64_t index) const override { return labels_[size_t(index)]; }
  void writeImage(int64_t index, float *out) const override;
  bool hasPixels() const override { return true; }
  Status readPixels(int64_t index, PixelImage &image) const override;
  ChannelNormalization normalization() const override { return normalization_; }

private:
  MemoryPixelSource() = default;
  std::string name_;
  std::vector<int64_t> shape_;
  std::vector<uint8_t> pixels_;
  std::vector<int32_t> labels_;
  ChannelNormalization normalization_;
  std::vector<float> inverseStd_;
};

/// rn-run --synthetic's data: `examples` uniform random images in [-1, 1)
/// of `imageShape`, labelled by the argmax of a random linear teacher over
/// `classes` classes, all drawn from one generator seeded from `seed`
/// (teacher first, then the images in example order).
Result<MemoryDataSource> syntheticTeacherData(uint64_t seed, int64_t examples,
                                              const std::vector<int64_t> &imageShape,
                                              int64_t classes);

} // namespace rn::train

#endif // RN_RUNTIME_TRAIN_DATA_SOURCE_H
