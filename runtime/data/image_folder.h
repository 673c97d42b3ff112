//===- image_folder.h - Folders of PNG and JPEG images by class -*- C++ -*-===//
//
// An image folder data set: ROOT/train/<class>/*.{png,jpg,jpeg} and
// ROOT/val/<class>/... (or ROOT/test/... where there is no val). The class
// index of a folder is its position among the training split's class
// folders in byte-wise sorted order; the second split must hold the same
// class folders. Examples are ordered class by class, file names sorted
// byte-wise within a class. Files of other extensions, plain files beside
// the class folders and names starting with '.' are ignored; a class folder
// without images, a split without class folders or class folders that
// differ between the splits are errors naming the folder.
//
// Images decode to uint8 HWC pixels: one channel for grayscale files (with
// or without alpha), three (RGB) for the others (palette, RGB, RGBA: alpha
// dropped), 16-bit PNG samples reduced to 8 bits. PNG with libpng, JPEG
// with libjpeg-turbo; a build without them (RN_HAVE_IMAGE_CODECS=0) lists
// folders but answers every header read or decode with an error saying so.
//
//===----------------------------------------------------------------------===//

#ifndef RN_RUNTIME_DATA_IMAGE_FOLDER_H
#define RN_RUNTIME_DATA_IMAGE_FOLDER_H

#include "runtime/core/status.h"

#include <cstdint>
#include <string>
#include <vector>

namespace rn {

struct ImageFile {
  std::string path;
  int32_t label = 0;
};

struct ImageFolder {
  std::string root;
  std::vector<std::string> classes; ///< sorted byte-wise; index = label
  /// "val" or "test": the second split's folder name.
  std::string testSplit;
  std::vector<ImageFile> train, test; ///< class by class, names sorted
};

/// Whether `root` looks like an image folder: it has a `train` subfolder.
bool isImageFolder(const std::string &root);

/// The files of the image folder at `root` (see the file comment); an error
/// naming the folder for each problem with its layout.
Result<ImageFolder> listImageFolder(const std::string &root);

/// An image's size as it decodes: height, width and channels (1 or 3).
struct ImageSize {
  int64_t height = 0, width = 0, channels = 0;
  int64_t pixels() const { return height * width * channels; }
  bool operator==(const ImageSize &o) const {
    return height == o.height && width == o.width && channels == o.channels;
  }
  /// "28x28x1".
  std::string str() const;
};

/// The most pixels (height x width) an image may have: Pillow's
/// decompression-bomb limit (Image.MAX_IMAGE_PIXELS, 89,478,485). A header
/// that promises more is an error before anything is allocated for it: a
/// file of a few hundred bytes can claim 65,535 x 65,535 pixels (JPEG) or
/// 2^31 - 1 on a side (PNG).
inline constexpr int64_t kMaxImagePixels = int64_t(1024) * 1024 * 1024 / 4 / 3;

/// Whether this build decodes images (libpng and libjpeg-turbo linked).
bool imageCodecsAvailable();

/// The size of the image at `path` from its header only (PNG IHDR, JPEG
/// SOF); an error naming the file when it is neither, is damaged or has
/// more than kMaxImagePixels pixels.
Result<ImageSize> readImageSize(const std::string &path);

/// Decodes the image at `path` to `out` (size.pixels() bytes, HWC); an
/// error naming the file when it does not decode or its size is not `size`.
Status decodeImage(const std::string &path, const ImageSize &size, uint8_t *out);

/// Writes `pixels` (HWC, size.pixels() bytes) as a PNG or, for a .jpg or
/// .jpeg path, a JPEG of `quality` (1..100), for tests and tools.
Status writeImageFile(const std::string &path, const ImageSize &size, const uint8_t *pixels,
                      int quality = 95);

} // namespace rn

#endif // RN_RUNTIME_DATA_IMAGE_FOLDER_H
