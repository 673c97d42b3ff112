//===- idx_dataset.h - MNIST-style IDX datasets (gzip) ---------*- C++ -*-===//
//
// Reads the IDX files of MNIST and Fashion-MNIST, gzip-compressed (zlib).
// An image file is the big-endian 32-bit magic 0x00000803, the count, the
// rows and the columns, then count x rows x cols unsigned bytes; a label
// file is the magic 0x00000801 and the count, then count bytes. The reader
// checks the magic, that dimensions are positive and bounded, and that the
// decompressed file holds exactly the bytes its header promises (a truncated
// or padded file is an error naming the path and both sizes).
//
//===----------------------------------------------------------------------===//

#ifndef RN_RUNTIME_DATA_IDX_DATASET_H
#define RN_RUNTIME_DATA_IDX_DATASET_H

#include "runtime/core/status.h"

#include <cstdint>
#include <string>
#include <vector>

namespace rn {

inline constexpr uint32_t kIdxImagesMagic = 0x00000803;
inline constexpr uint32_t kIdxLabelsMagic = 0x00000801;

/// Images and labels of one split, as stored (pixels 0..255, row-major
/// [count, rows, cols]).
struct IdxDataset {
  int64_t count = 0;
  int64_t rows = 0;
  int64_t cols = 0;
  std::vector<uint8_t> pixels;
  std::vector<uint8_t> labels;

  int64_t imageSize() const { return rows * cols; }
};

/// The pixels of an image file; sets count, rows and cols.
Result<IdxDataset> readIdxImages(const std::string &path);
/// The labels of a label file.
Result<std::vector<uint8_t>> readIdxLabels(const std::string &path);

/// Reads an image file and a label file and checks that their counts agree.
/// With `limit` > 0, keeps only the first `limit` examples (the whole file is
/// still validated).
Result<IdxDataset> loadIdxDataset(const std::string &imagesPath,
                                  const std::string &labelsPath,
                                  int64_t limit = 0);

/// Fashion-MNIST (or MNIST) in `dir`: train-{images-idx3,labels-idx1}-ubyte.gz
/// and t10k-{images-idx3,labels-idx1}-ubyte.gz.
struct IdxSplits {
  IdxDataset train;
  IdxDataset test;
};
Result<IdxSplits> loadIdxSplits(const std::string &dir, int64_t limitTrain = 0,
                                int64_t limitTest = 0);

/// Fashion-MNIST's pixel mean and standard deviation (of pixels in [0, 1]).
inline constexpr float kFashionMnistMean = 0.2860f;
inline constexpr float kFashionMnistStd = 0.3530f;

/// Writes example `index` of `data` to `out` (imageSize() floats): pixels
/// scaled to [0, 1], then (x - mean) / std.
void normalizeImage(const IdxDataset &data, int64_t index, float *out,
                    float mean = kFashionMnistMean, float std = kFashionMnistStd);

} // namespace rn

#endif // RN_RUNTIME_DATA_IDX_DATASET_H
