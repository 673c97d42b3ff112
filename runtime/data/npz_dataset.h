//===- npz_dataset.h - NumPy .npz archives of images and labels -*- C++ -*-===//
//
// Reads a data set saved with numpy.savez or numpy.savez_compressed under
// Keras' mnist.npz keys: x_train, y_train, x_test, y_test. Images are uint8
// (pixels 0..255) or float32, NHWC ([N, H, W, C]) or NHW for one channel;
// labels are a 1-D array of integers (any width, signed or not).
//
// An .npz file is a zip archive with one .npy file per array: entries
// stored or deflated (zlib), with or without the zip64 extensions numpy
// writes, each checked against its CRC-32. An .npy file is a magic string,
// a header (a Python dict literal: dtype, Fortran order, shape) and the
// data. The reader checks everything up front and names the file, the
// array and what is wrong: a missing key, a dtype it does not read
// (big-endian, objects, Fortran order), a shape that is not images,
// splits whose image shapes differ, label counts that differ from the
// image count, negative labels, truncated data or a corrupt entry.
//
//===----------------------------------------------------------------------===//

#ifndef RN_RUNTIME_DATA_NPZ_DATASET_H
#define RN_RUNTIME_DATA_NPZ_DATASET_H

#include "runtime/core/status.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace rn {

/// One .npy array as stored: numpy's dtype string ("|u1", "<f4", "<i8",
/// ...), its C-order shape and its bytes.
struct NpyArray {
  std::string dtype;
  std::vector<int64_t> shape;
  std::string data;

  int64_t count() const;
};

/// Parses an .npy file's bytes; `what` names it in errors.
Result<NpyArray> parseNpy(const std::string &bytes, const std::string &what);

/// Every array of the .npz archive at `path`, by key (the entry's name
/// without ".npy").
Result<std::map<std::string, NpyArray>> readNpz(const std::string &path);

enum class NpzPixels { u8, f32 };

/// One split: images [count, height, width, channels] (NHWC) as stored,
/// labels [count].
struct NpzDataset {
  int64_t count = 0, height = 0, width = 0, channels = 0;
  NpzPixels pixels = NpzPixels::u8;
  std::string images; ///< count x height x width x channels values of `pixels`
  std::vector<int32_t> labels;
  int64_t classes = 0; ///< the largest label + 1

  int64_t imageSize() const { return height * width * channels; }
};

struct NpzSplits {
  NpzDataset train, test;
};

/// x_train/y_train and x_test/y_test of the archive at `path`, checked.
Result<NpzSplits> loadNpzSplits(const std::string &path);

} // namespace rn

#endif // RN_RUNTIME_DATA_NPZ_DATASET_H
