//===- cifar_source.cpp - CIFAR binary files as a data source -------------===//
//
// See cifar_source.h.
//
//===----------------------------------------------------------------------===//

#include "runtime/train/cifar_source.h"

#include <cmath>

namespace rn::train {

Status CifarDataSource::readPixels(int64_t index, PixelImage &image) const {
  constexpr int64_t plane = kCifarSide * kCifarSide;
  image.height = image.width = kCifarSide;
  image.channels = kCifarChannels;
  image.pixels.resize(size_t(plane * kCifarChannels));
  const uint8_t *record = data_.pixels.data() + index * kCifarImageBytes;
  for (int64_t c = 0; c < kCifarChannels; ++c)
    for (int64_t i = 0; i < plane; ++i)
      image.pixels[size_t(i * kCifarChannels + c)] = record[c * plane + i];
  return Status::success();
}

void cifarChannelStats(const CifarDataset &data, std::array<float, 3> &mean,
                       std::array<float, 3> &std) {
  constexpr int64_t plane = kCifarSide * kCifarSide;
  for (int64_t c = 0; c < kCifarChannels; ++c) {
    // Integer sums are exact: 50,000 images of 1,024 bytes stay far below 2^63.
    uint64_t sum = 0, squares = 0;
    for (int64_t i = 0; i < data.count; ++i) {
      const uint8_t *p = data.pixels.data() + i * kCifarImageBytes + c * plane;
      for (int64_t k = 0; k < plane; ++k) {
        sum += p[k];
        squares += uint64_t(p[k]) * p[k];
      }
    }
    const double n = double(data.count) * double(plane);
    const double m = n > 0 ? double(sum) / n : 0;
    const double var = n > 0 ? double(squares) / n - m * m : 0;
    mean[size_t(c)] = float(m / 255.0);
    std[size_t(c)] = float(std::sqrt(std::max(var, 0.0)) / 255.0);
  }
}

namespace {

void keepFirst(CifarDataset &data, int64_t limit) {
  if (limit <= 0 || limit >= data.count)
    return;
  data.count = limit;
  data.labels.resize(size_t(limit));
  data.pixels.resize(size_t(limit * kCifarImageBytes));
}

} // namespace

Result<CifarSources> loadCifarSources(const std::string &dir, const CifarSourceOptions &options) {
  Result<CifarSplits> splits = loadCifarSplits(dir, options.label);
  if (!splits)
    return splits.error();
  CifarSources out;
  out.format = splits->format;
  out.classes = splits->train.classes;
  if (options.mean && options.std) {
    out.mean = *options.mean;
    out.std = *options.std;
  } else {
    cifarChannelStats(splits->train, out.mean, out.std);
    out.statsComputed = true;
  }
  for (float s : out.std)
    if (!(s > 0))
      return Error(dir + ": a channel's standard deviation is " + std::to_string(s) +
                   ": give --std with positive values");
  keepFirst(splits->train, options.limitTrain);
  keepFirst(splits->test, options.limitTest);
  out.train = std::make_unique<CifarDataSource>(std::move(splits->train), dir, out.mean, out.std);
  out.test = std::make_unique<CifarDataSource>(std::move(splits->test), dir, out.mean, out.std);
  return out;
}

} // namespace rn::train
