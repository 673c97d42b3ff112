//===- image_folder_source.cpp - An image folder as a data source ---------===//
//
// See image_folder_source.h.
//
//===----------------------------------------------------------------------===//

#include "runtime/train/image_folder_source.h"

#include <algorithm>
#include <cmath>

namespace rn::train {

ImageFolderSource::ImageFolderSource(std::vector<ImageFile> files, ImageSize size,
                                     std::string name, std::vector<float> mean,
                                     std::vector<float> std)
    : files_(std::move(files)), size_(size), name_(std::move(name)), mean_(std::move(mean)) {
  // x * (1 / std), as the IDX and .npz sources compute, so that a folder of
  // Fashion-MNIST PNGs gives their images bit for bit.
  for (float s : std)
    inverseStd_.push_back(1.0f / s);
}

std::string ImageFolderSource::layout() const { return "NHWC, " + size_.str() + " uint8 images"; }

Status ImageFolderSource::readImage(int64_t index, float *out) const {
  const int64_t size = size_.pixels(), channels = size_.channels;
  std::vector<uint8_t> pixels(static_cast<size_t>(size));
  RN_RETURN_IF_ERROR(decodeImage(files_[size_t(index)].path, size_, pixels.data()));
  for (int64_t i = 0; i < size; ++i) {
    const size_t c = size_t(i % channels);
    out[i] = (float(pixels[size_t(i)]) / 255.0f - mean_[c]) * inverseStd_[c];
  }
  return Status::success();
}

void ImageFolderSource::writeImage(int64_t index, float *out) const {
  if (!readImage(index, out))
    std::fill(out, out + size_.pixels(), 0.0f);
}

namespace {

void keepFirst(std::vector<ImageFile> &files, int64_t limit) {
  if (limit > 0 && limit < int64_t(files.size()))
    files.resize(size_t(limit));
}

/// Every file's header: one size for all, returned.
Result<ImageSize> commonSize(const std::vector<ImageFile> &train,
                             const std::vector<ImageFile> &test) {
  ImageSize first;
  const std::string *firstPath = nullptr;
  for (const std::vector<ImageFile> *split : {&train, &test})
    for (const ImageFile &file : *split) {
      Result<ImageSize> size = readImageSize(file.path);
      if (!size)
        return size.error();
      if (!firstPath) {
        first = *size;
        firstPath = &file.path;
      } else if (!(*size == first)) {
        return Error(file.path + ": " + size->str() + " (HxWxC), but " + *firstPath + " is " +
                     first.str() + ": all images of a folder must have one size");
      }
    }
  return first;
}

/// The per-channel mean and standard deviation (population) of `files`'
/// pixels scaled to [0, 1], summed in example order as npzChannelStats.
Status channelStats(const std::vector<ImageFile> &files, const ImageSize &size,
                    std::vector<float> &mean, std::vector<float> &std) {
  const size_t channels = size_t(size.channels);
  std::vector<double> sum(channels), squares(channels);
  std::vector<uint8_t> pixels(static_cast<size_t>(size.pixels()));
  for (const ImageFile &file : files) {
    RN_RETURN_IF_ERROR(decodeImage(file.path, size, pixels.data()));
    for (size_t i = 0; i < pixels.size(); ++i) {
      const double v = double(pixels[i]) / 255.0;
      sum[i % channels] += v;
      squares[i % channels] += v * v;
    }
  }
  const double n = double(files.size()) * double(size.height * size.width);
  mean.assign(channels, 0.0f);
  std.assign(channels, 0.0f);
  for (size_t c = 0; c < channels; ++c) {
    const double m = sum[c] / n;
    mean[c] = float(m);
    std[c] = float(std::sqrt(std::max(squares[c] / n - m * m, 0.0)));
  }
  return Status::success();
}

} // namespace

Result<ImageFolderSources> loadImageFolderSources(const std::string &root,
                                                  const ImageFolderSourceOptions &options) {
  if (!imageCodecsAvailable())
    return Error(root + ": an image folder, but this rn-run was built without "
                        "libpng/libjpeg-turbo (Debian: libpng-dev, libjpeg62-turbo-dev)");
  Result<ImageFolder> folder = listImageFolder(root);
  if (!folder)
    return folder.error();
  keepFirst(folder->train, options.limitTrain);
  keepFirst(folder->test, options.limitTest);
  Result<ImageSize> size = commonSize(folder->train, folder->test);
  if (!size)
    return size.error();
  ImageFolderSources out;
  out.size = *size;
  out.classes = folder->classes;
  out.testSplit = folder->testSplit;
  const size_t channels = size_t(size->channels);
  if (options.mean && options.std) {
    if (options.mean->size() != channels || options.std->size() != channels)
      return Error(root + ": its images have " + std::to_string(channels) + " channel" +
                   (channels == 1 ? "" : "s") + "; give --mean and --std with " +
                   std::to_string(channels) + " value" + (channels == 1 ? "" : "s") + " each");
    out.mean = *options.mean;
    out.std = *options.std;
  } else {
    RN_RETURN_IF_ERROR(channelStats(folder->train, *size, out.mean, out.std));
    out.statsComputed = true;
  }
  for (float s : out.std)
    if (!(s > 0))
      return Error(root + ": a channel's standard deviation is " + std::to_string(s) +
                   ": give --std with positive values");
  const std::string base = root + (root.empty() || root.back() == '/' ? "" : "/");
  out.train = std::make_unique<ImageFolderSource>(std::move(folder->train), *size,
                                                  base + "train", out.mean, out.std);
  out.test = std::make_unique<ImageFolderSource>(std::move(folder->test), *size,
                                                 base + folder->testSplit, out.mean, out.std);
  return out;
}

} // namespace rn::train
