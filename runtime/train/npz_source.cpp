//===- npz_source.cpp - NumPy .npz arrays as a data source ----------------===//
//
// See npz_source.h.
//
//===----------------------------------------------------------------------===//

#include "runtime/train/npz_source.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace rn::train {

NpzDataSource::NpzDataSource(NpzDataset data, std::string name, std::vector<float> mean,
                             std::vector<float> std)
    : data_(std::move(data)), name_(std::move(name)), mean_(std::move(mean)), std_(std) {
  // x * (1 / std), as the IDX source computes, so that a one-channel uint8
  // .npz of Fashion-MNIST gives the IDX run's images bit for bit.
  for (float s : std)
    inverseStd_.push_back(1.0f / s);
}

std::string NpzDataSource::layout() const {
  return "NHWC, " + std::to_string(data_.height) + "x" + std::to_string(data_.width) + "x" +
         std::to_string(data_.channels) + (data_.pixels == NpzPixels::u8 ? " uint8" : " float32");
}

void NpzDataSource::writeImage(int64_t index, float *out) const {
  const int64_t size = data_.imageSize(), channels = data_.channels;
  if (data_.pixels == NpzPixels::u8) {
    const auto *p = reinterpret_cast<const uint8_t *>(data_.images.data()) + index * size;
    normalizePixels(p, size_t(size), size_t(channels), mean_.data(), inverseStd_.data(), out);
  } else {
    const char *p = data_.images.data() + index * size * int64_t(sizeof(float));
    for (int64_t i = 0; i < size; ++i) {
      float v;
      std::memcpy(&v, p + i * int64_t(sizeof(float)), sizeof v); // the array may be unaligned
      const size_t c = size_t(i % channels);
      out[i] = (v - mean_[c]) * inverseStd_[c];
    }
  }
}

Status NpzDataSource::readPixels(int64_t index, PixelImage &image) const {
  if (!hasPixels())
    return DataSource::readPixels(index, image);
  image.height = data_.height;
  image.width = data_.width;
  image.channels = data_.channels;
  const auto *p = reinterpret_cast<const uint8_t *>(data_.images.data()) + index * data_.imageSize();
  image.pixels.assign(p, p + data_.imageSize());
  return Status::success();
}

void npzChannelStats(const NpzDataset &data, std::vector<float> &mean, std::vector<float> &std) {
  const int64_t channels = data.channels, values = data.count * data.imageSize();
  std::vector<double> sum(static_cast<size_t>(channels)), squares(static_cast<size_t>(channels));
  for (int64_t i = 0; i < values; ++i) {
    double v;
    if (data.pixels == NpzPixels::u8) {
      v = double(uint8_t(data.images[size_t(i)])) / 255.0;
    } else {
      float f;
      std::memcpy(&f, data.images.data() + i * int64_t(sizeof(float)), sizeof f);
      v = f;
    }
    sum[size_t(i % channels)] += v;
    squares[size_t(i % channels)] += v * v;
  }
  const double n = double(values / channels);
  mean.assign(size_t(channels), 0.0f);
  std.assign(size_t(channels), 0.0f);
  for (size_t c = 0; c < size_t(channels); ++c) {
    const double m = sum[c] / n;
    mean[c] = float(m);
    std[c] = float(std::sqrt(std::max(squares[c] / n - m * m, 0.0)));
  }
}

namespace {

void keepFirst(NpzDataset &data, int64_t limit) {
  if (limit <= 0 || limit >= data.count)
    return;
  const size_t element = data.pixels == NpzPixels::u8 ? 1 : sizeof(float);
  data.count = limit;
  data.labels.resize(size_t(limit));
  data.images.resize(size_t(limit * data.imageSize()) * element);
}

} // namespace

Result<NpzSources> loadNpzSources(const std::string &path, const NpzSourceOptions &options) {
  Result<NpzSplits> splits = loadNpzSplits(path);
  if (!splits)
    return splits.error();
  NpzSources out;
  out.pixels = splits->train.pixels;
  out.classes = std::max(splits->train.classes, splits->test.classes);
  const size_t channels = size_t(splits->train.channels);
  if (options.mean && options.std) {
    if (options.mean->size() != channels || options.std->size() != channels)
      return Error(path + ": its images have " + std::to_string(channels) + " channel" +
                   (channels == 1 ? "" : "s") + "; give --mean and --std with " +
                   std::to_string(channels) + " value" + (channels == 1 ? "" : "s") + " each");
    out.mean = *options.mean;
    out.std = *options.std;
  } else {
    npzChannelStats(splits->train, out.mean, out.std);
    out.statsComputed = true;
  }
  for (float s : out.std)
    if (!(s > 0))
      return Error(path + ": a channel's standard deviation is " + std::to_string(s) +
                   ": give --std with positive values");
  keepFirst(splits->train, options.limitTrain);
  keepFirst(splits->test, options.limitTest);
  out.train = std::make_unique<NpzDataSource>(std::move(splits->train), path, out.mean, out.std);
  out.test = std::make_unique<NpzDataSource>(std::move(splits->test), path, out.mean, out.std);
  return out;
}

} // namespace rn::train
