//===- image_folder_source.cpp - An image folder as a data source ---------===//
//
// See image_folder_source.h.
//
//===----------------------------------------------------------------------===//

#include "runtime/train/image_folder_source.h"

#include <algorithm>
#include <array>
#include <cmath>

namespace rn::train {

ImageFolderSource::ImageFolderSource(std::vector<ImageFile> files, std::vector<ImageSize> sizes,
                                     ImageSize size, bool mixedSizes, std::string name,
                                     std::vector<float> mean, std::vector<float> std)
    : files_(std::move(files)), sizes_(std::move(sizes)), size_(size), mixedSizes_(mixedSizes),
      name_(std::move(name)), mean_(std::move(mean)), std_(std::move(std)) {
  // x * (1 / std), as the IDX and .npz sources compute, so that a folder of
  // Fashion-MNIST PNGs gives their images bit for bit.
  for (float s : std_)
    inverseStd_.push_back(1.0f / s);
}

std::string ImageFolderSource::layout() const {
  if (mixedSizes_)
    return "NHWC, " + std::to_string(size_.channels) + "-channel uint8 images of varying sizes";
  return "NHWC, " + size_.str() + " uint8 images";
}

namespace {

/// Decodes `file` (of `fileSize`, its header's) into `image` with
/// `channels` channels: a grayscale image of a color folder is expanded.
Status decodeAs(const std::string &path, const ImageSize &fileSize, int64_t channels,
                PixelImage &image) {
  image.height = fileSize.height;
  image.width = fileSize.width;
  image.channels = channels;
  image.pixels.resize(size_t(fileSize.height * fileSize.width * channels));
  if (fileSize.channels == channels)
    return decodeImage(path, fileSize, image.pixels.data());
  std::vector<uint8_t> gray(static_cast<size_t>(fileSize.pixels()));
  RN_RETURN_IF_ERROR(decodeImage(path, fileSize, gray.data()));
  for (size_t i = 0; i < gray.size(); ++i)
    for (int64_t c = 0; c < channels; ++c)
      image.pixels[i * size_t(channels) + size_t(c)] = gray[i];
  return Status::success();
}

} // namespace

Status ImageFolderSource::readPixels(int64_t index, PixelImage &image) const {
  return decodeAs(files_[size_t(index)].path, sizes_[size_t(index)], size_.channels, image);
}

Status ImageFolderSource::readImage(int64_t index, float *out) const {
  if (mixedSizes_)
    return Error(name_ + ": its images differ in size; they reach the model through a resize "
                         "(--augment rrc-flip)");
  const int64_t size = size_.pixels(), channels = size_.channels;
  PixelImage image;
  RN_RETURN_IF_ERROR(readPixels(index, image));
  normalizePixels(image.pixels.data(), size_t(size), size_t(channels), mean_.data(),
                  inverseStd_.data(), out);
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

/// Every file's header (sizes[split][i]); without `mixed`, all must be one
/// size. With `skipped`, a file whose header does not read is removed from
/// its split and named there instead of failing.
Result<std::array<std::vector<ImageSize>, 2>> readSizes(std::vector<ImageFile> &train,
                                                        std::vector<ImageFile> &test, bool mixed,
                                                        std::vector<std::string> *skipped) {
  std::array<std::vector<ImageSize>, 2> sizes;
  std::string first, firstPath;
  ImageSize firstSize;
  int split = 0;
  for (std::vector<ImageFile> *files : {&train, &test}) {
    std::vector<ImageSize> &out = sizes[size_t(split++)];
    out.reserve(files->size());
    std::vector<ImageFile> readable;
    readable.reserve(files->size());
    for (ImageFile &file : *files) {
      Result<ImageSize> size = readImageSize(file.path);
      if (!size) {
        if (!skipped)
          return size.error();
        skipped->push_back(size.error().message());
        continue;
      }
      out.push_back(*size);
      readable.push_back(std::move(file));
      const ImageFile &kept = readable.back();
      if (firstPath.empty()) {
        firstSize = *size;
        firstPath = kept.path;
      } else if (!mixed && !(*size == firstSize)) {
        return Error(kept.path + ": " + size->str() + " (HxWxC), but " + firstPath + " is " +
                     firstSize.str() +
                     ": all images of a folder must have one size (or be resized: --augment "
                     "rrc-flip)");
      }
    }
    *files = std::move(readable);
  }
  return sizes;
}

/// The per-channel mean and standard deviation (population) of `files`'
/// pixels scaled to [0, 1], read with `channels` channels, summed in
/// example order as npzChannelStats; data-parallel, this rank's share of
/// the files, the ranks' sums added (ImageFolderSourceOptions).
Status channelStats(const std::vector<ImageFile> &files, const std::vector<ImageSize> &sizes,
                    int64_t channels, const ImageFolderSourceOptions &options,
                    std::vector<float> &mean, std::vector<float> &std,
                    std::vector<std::string> *skipped) {
  // sums[c], then the squares' sums[channels + c], then the pixel count.
  const size_t c0 = size_t(channels);
  std::vector<double> sums(2 * c0 + 1);
  PixelImage image;
  for (size_t f = size_t(options.rank); f < files.size(); f += size_t(options.ranks)) {
    // An image that does not decode adds nothing when skipping (its
    // training steps skip it too, counted per epoch).
    if (Status st = decodeAs(files[f].path, sizes[f], channels, image); !st) {
      if (!skipped)
        return st;
      skipped->push_back(st.error().message() +
                         " (left out of the statistics; skipped whenever an epoch reads it)");
      continue;
    }
    for (size_t i = 0; i < image.pixels.size(); ++i) {
      const double v = double(image.pixels[i]) / 255.0;
      sums[i % c0] += v;
      sums[c0 + i % c0] += v * v;
    }
    sums[2 * c0] += double(image.height * image.width);
  }
  if (options.ranks > 1)
    RN_RETURN_IF_ERROR(options.sumOverRanks(sums));
  const double pixels = sums[2 * c0];
  const double *sum = sums.data(), *squares = sums.data() + c0;
  mean.assign(c0, 0.0f);
  std.assign(c0, 0.0f);
  for (size_t c = 0; c < c0; ++c) {
    const double m = sum[c] / pixels;
    mean[c] = float(m);
    std[c] = float(std::sqrt(std::max(squares[c] / pixels - m * m, 0.0)));
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
  ImageFolderSources out;
  std::vector<std::string> *skipped = options.skipBadImages ? &out.skipped : nullptr;
  Result<std::array<std::vector<ImageSize>, 2>> sizes =
      readSizes(folder->train, folder->test, options.mixedSizes, skipped);
  if (!sizes)
    return sizes.error();
  if ((*sizes)[0].empty() && (*sizes)[1].empty())
    return Error(root + ": none of its images reads" +
                 (out.skipped.empty() ? std::string() : ", the first: " + out.skipped.front()));
  out.size = (*sizes)[0].empty() ? (*sizes)[1].front() : (*sizes)[0].front();
  for (const std::vector<ImageSize> &split : *sizes)
    for (const ImageSize &s : split) {
      out.sizesDiffer = out.sizesDiffer || !(s == out.size);
      out.size.channels = std::max(out.size.channels, s.channels);
    }
  out.classes = folder->classes;
  out.testSplit = folder->testSplit;
  const size_t channels = size_t(out.size.channels);
  if (options.mean && options.std) {
    if (options.mean->size() != channels || options.std->size() != channels)
      return Error(root + ": its images have " + std::to_string(channels) + " channel" +
                   (channels == 1 ? "" : "s") + "; give --mean and --std with " +
                   std::to_string(channels) + " value" + (channels == 1 ? "" : "s") + " each");
    out.mean = *options.mean;
    out.std = *options.std;
  } else {
    if (options.ranks > 1 && !options.sumOverRanks)
      return Error(root + ": computing the statistics over " + std::to_string(options.ranks) +
                   " ranks needs their sum");
    RN_RETURN_IF_ERROR(channelStats(folder->train, (*sizes)[0], out.size.channels, options,
                                    out.mean, out.std, skipped));
    out.statsComputed = true;
  }
  for (float s : out.std)
    if (!(s > 0))
      return Error(root + ": a channel's standard deviation is " + std::to_string(s) +
                   ": give --std with positive values");
  const std::string base = root + (root.empty() || root.back() == '/' ? "" : "/");
  out.train = std::make_unique<ImageFolderSource>(std::move(folder->train),
                                                  std::move((*sizes)[0]), out.size,
                                                  out.sizesDiffer, base + "train", out.mean,
                                                  out.std);
  out.test = std::make_unique<ImageFolderSource>(std::move(folder->test), std::move((*sizes)[1]),
                                                 out.size, out.sizesDiffer,
                                                 base + folder->testSplit, out.mean, out.std);
  return out;
}

} // namespace rn::train
