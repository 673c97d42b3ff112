//===- data_source.cpp - Labels, shuffling and in-memory examples ---------===//

#include "runtime/train/data_source.h"

#include "runtime/core/safetensors.h"
#include "runtime/train/loader_pool.h"

#include <algorithm>
#include <functional>
#include <cstring>
#include <numeric>
#include <random>

namespace rn::train {

int64_t DataSource::imageSize() const {
  int64_t size = 1;
  for (int64_t d : imageShape())
    size *= d;
  return size;
}

Status checkLabels(const DataSource &source, int64_t classes) {
  for (int64_t i = 0; i < source.count(); ++i) {
    int64_t label = source.label(i);
    if (label < 0 || label >= classes)
      return Error(source.name() + ": label " + std::to_string(label) + " of example " +
                   std::to_string(i) + " is out of range for " + std::to_string(classes) +
                   " classes");
  }
  return Status::success();
}

std::vector<int64_t> shuffledOrder(int64_t count, uint64_t seed, int64_t epoch) {
  std::vector<int64_t> order(static_cast<size_t>(count));
  std::iota(order.begin(), order.end(), 0);
  std::seed_seq seq{uint32_t(seed), uint32_t(seed >> 32), uint32_t(epoch),
                    uint32_t(uint64_t(epoch) >> 32), 0x52u /* 'R' */};
  std::mt19937_64 rng(seq);
  for (int64_t i = count - 1; i > 0; --i) {
    // Multiply-shift into [0, i], independent of the library's distributions.
    uint64_t j = uint64_t((unsigned __int128)rng() * uint64_t(i + 1) >> 64);
    std::swap(order[size_t(i)], order[size_t(j)]);
  }
  return order;
}

Result<MemoryDataSource> MemoryDataSource::create(std::string name,
                                                  std::vector<int64_t> imageShape,
                                                  std::vector<float> images,
                                                  std::vector<int32_t> labels) {
  int64_t size = 1;
  for (int64_t d : imageShape) {
    if (d < 1)
      return Error(name + ": image dimensions must be positive");
    size *= d;
  }
  if (images.size() != labels.size() * size_t(size))
    return Error(name + ": " + std::to_string(images.size()) + " image values for " +
                 std::to_string(labels.size()) + " labels of " + std::to_string(size) +
                 " values each");
  MemoryDataSource source;
  source.name_ = std::move(name);
  source.shape_ = std::move(imageShape);
  source.images_ = std::move(images);
  source.labels_ = std::move(labels);
  return source;
}

void normalizePixels(const uint8_t *pixels, size_t count, size_t channels, const float *mean,
                     const float *inverseStd, float *out) {
  for (size_t p = 0; p < count; p += channels)
    for (size_t c = 0; c < channels; ++c)
      out[p + c] = (float(pixels[p + c]) / 255.0f - mean[c]) * inverseStd[c];
}

namespace {

Error noPixels(const DataSource &source) {
  return Error(source.name() + ": holds float images, not uint8 pixels (augmentation and uint8 "
                               "input need pixels)");
}

} // namespace

Status DataSource::readPixels(int64_t, PixelImage &) const { return noPixels(*this); }

namespace {

/// fillBatch's body for either element type: reads every example (on the
/// pool when given), then fills skipped slots from the batch's next readable
/// example.
template <typename T>
Status fillExamples(const DataSource &source, const int64_t *indices, int64_t n, T *images,
                    int32_t *labels, const BatchOptions &options,
                    const std::function<Status(int64_t, T *)> &read) {
  const int64_t size = source.imageSize(), examples = source.count();
  for (int64_t k = 0; k < n; ++k)
    if (indices[k] < 0 || indices[k] >= examples)
      return Error(source.name() + ": example " + std::to_string(indices[k]) +
                   " out of range [0, " + std::to_string(examples) + ")");
  std::vector<Status> status(static_cast<size_t>(n));
  auto readOne = [&](int64_t k) {
    status[size_t(k)] = read(indices[k], images + k * size);
    labels[k] = int32_t(source.label(indices[k]));
  };
  if (options.pool)
    options.pool->run(n, readOne);
  else
    for (int64_t k = 0; k < n; ++k)
      readOne(k);
  std::vector<int64_t> bad;
  for (int64_t k = 0; k < n; ++k)
    if (!status[size_t(k)]) {
      if (!options.skipped)
        return status[size_t(k)];
      bad.push_back(k);
    }
  if (bad.empty())
    return Status::success();
  if (int64_t(bad.size()) == n)
    return Error(status[0].error().message() + " (and every other example of its batch: "
                 "nothing left to train on)");
  // A skipped slot takes the batch's next readable example (wrapping), so
  // the batch stays full and a given set of bad files skips the same way.
  for (int64_t k : bad) {
    int64_t from = k;
    do
      from = (from + 1) % n;
    while (!status[size_t(from)]);
    std::copy_n(images + from * size, size, images + k * size);
    labels[k] = labels[from];
    options.skipped->push_back(status[size_t(k)].error().message());
  }
  return Status::success();
}

} // namespace

Status DataSource::fillBatch(const int64_t *indices, int64_t n, float *images, int32_t *labels,
                             const BatchOptions &options) const {
  return fillExamples<float>(*this, indices, n, images, labels, options,
                             [&](int64_t index, float *out) {
                               return readExample(index, out, options.draw);
                             });
}

Status DataSource::fillPixelBatch(const int64_t *indices, int64_t n, uint8_t *pixels,
                                  int32_t *labels, const BatchOptions &options) const {
  if (!hasPixels())
    return noPixels(*this);
  return fillExamples<uint8_t>(*this, indices, n, pixels, labels, options,
                               [&](int64_t index, uint8_t *out) {
                                 return readExamplePixels(index, out, options.draw);
                               });
}

Status DataSource::fillInputBatch(DType imageType, const int64_t *indices, int64_t n,
                                  void *images, int32_t *labels,
                                  const BatchOptions &options) const {
  return imageType == DType::u8
             ? fillPixelBatch(indices, n, static_cast<uint8_t *>(images), labels, options)
             : fillBatch(indices, n, static_cast<float *>(images), labels, options);
}

Status DataSource::readExamplePixels(int64_t index, uint8_t *out, const BatchDraw &) const {
  PixelImage image;
  RN_RETURN_IF_ERROR(readPixels(index, image));
  const std::vector<int64_t> shape = imageShape();
  if (image.height != shape[0] || image.width != shape[1] || image.channels != shape[2])
    return Error(name() + ": example " + std::to_string(index) + " is " +
                 std::to_string(image.height) + "x" + std::to_string(image.width) + "x" +
                 std::to_string(image.channels) + ", not " + shapeString(shape));
  std::copy(image.pixels.begin(), image.pixels.end(), out);
  return Status::success();
}

void MemoryDataSource::writeImage(int64_t index, float *out) const {
  const size_t size = size_t(imageSize());
  std::memcpy(out, images_.data() + size_t(index) * size, size * sizeof(float));
}

Result<MemoryPixelSource> MemoryPixelSource::create(std::string name,
                                                    std::vector<int64_t> imageShape,
                                                    std::vector<uint8_t> pixels,
                                                    std::vector<int32_t> labels,
                                                    ChannelNormalization normalization) {
  if (imageShape.size() != 3)
    return Error(name + ": pixel images are [H, W, C], got " + shapeString(imageShape));
  int64_t size = 1;
  for (int64_t d : imageShape) {
    if (d < 1)
      return Error(name + ": image dimensions must be positive");
    size *= d;
  }
  if (pixels.size() != labels.size() * size_t(size))
    return Error(name + ": " + std::to_string(pixels.size()) + " pixels for " +
                 std::to_string(labels.size()) + " labels of " + std::to_string(size) +
                 " pixels each");
  const size_t channels = size_t(imageShape[2]);
  if (!normalization.mean.empty() &&
      (normalization.mean.size() != channels || normalization.std.size() != channels))
    return Error(name + ": the normalization needs one mean and std per channel");
  MemoryPixelSource source;
  source.name_ = std::move(name);
  source.shape_ = std::move(imageShape);
  source.pixels_ = std::move(pixels);
  source.labels_ = std::move(labels);
  source.normalization_ = std::move(normalization);
  for (float s : source.normalization_.std)
    source.inverseStd_.push_back(1.0f / s);
  return source;
}

void MemoryPixelSource::writeImage(int64_t index, float *out) const {
  const size_t size = size_t(imageSize()), channels = size_t(shape_[2]);
  const uint8_t *image = pixels_.data() + size_t(index) * size;
  if (normalization_.mean.empty()) {
    std::copy_n(image, size, out);
    return;
  }
  normalizePixels(image, size, channels, normalization_.mean.data(), inverseStd_.data(), out);
}

Status MemoryPixelSource::readPixels(int64_t index, PixelImage &image) const {
  const size_t size = size_t(imageSize());
  image.height = shape_[0];
  image.width = shape_[1];
  image.channels = shape_[2];
  image.pixels.assign(pixels_.begin() + std::ptrdiff_t(size_t(index) * size),
                      pixels_.begin() + std::ptrdiff_t(size_t(index + 1) * size));
  return Status::success();
}

Result<MemoryDataSource> syntheticTeacherData(uint64_t seed, int64_t examples,
                                              const std::vector<int64_t> &imageShape,
                                              int64_t classes) {
  int64_t features = 1;
  for (int64_t d : imageShape)
    features *= d;
  std::mt19937_64 rng(seed * 0x9E3779B97F4A7C15ull + 12345);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> teacher(static_cast<size_t>(classes * features));
  for (float &w : teacher)
    w = normal(rng);
  std::vector<float> images(static_cast<size_t>(examples * features));
  for (float &x : images)
    x = uniform(rng);
  std::vector<int32_t> labels(static_cast<size_t>(examples));
  for (int64_t n = 0; n < examples; ++n) {
    int32_t best = 0;
    double bestScore = -1e300;
    for (int64_t c = 0; c < classes; ++c) {
      double score = 0;
      for (int64_t f = 0; f < features; ++f)
        score += double(teacher[size_t(c * features + f)]) * images[size_t(n * features + f)];
      if (score > bestScore) {
        bestScore = score;
        best = int32_t(c);
      }
    }
    labels[size_t(n)] = best;
  }
  return MemoryDataSource::create("synthetic data", imageShape, std::move(images),
                                  std::move(labels));
}

} // namespace rn::train
