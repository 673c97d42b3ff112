//===- cifar_dataset.h - CIFAR-10 and CIFAR-100 binary files ----*- C++ -*-===//
//
// Reads the binary versions of CIFAR-10 and CIFAR-100. A CIFAR-10 file
// (data_batch_1.bin ... data_batch_5.bin, test_batch.bin) is a sequence of
// 3,073-byte records: the label byte (0-9), then the 32x32 image as three
// 1,024-byte planes (red, green, blue), rows top to bottom. A CIFAR-100 file
// (train.bin, test.bin) has 3,074-byte records: the coarse label (0-19), the
// fine label (0-99), then the image. Files have no header, so the reader
// checks what it can: a size that is a whole number of records (else an
// error naming the file, its size and where the partial record starts), at
// least one record, and every label below its class count (else the file
// and the record).
//
//===----------------------------------------------------------------------===//

#ifndef RN_RUNTIME_DATA_CIFAR_DATASET_H
#define RN_RUNTIME_DATA_CIFAR_DATASET_H

#include "runtime/core/status.h"

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace rn {

inline constexpr int64_t kCifarSide = 32;
inline constexpr int64_t kCifarChannels = 3;
inline constexpr int64_t kCifarImageBytes = kCifarSide * kCifarSide * kCifarChannels;

enum class CifarFormat { cifar10, cifar100 };
/// Which of CIFAR-100's two labels a dataset keeps (CIFAR-10 has one).
enum class CifarLabel { fine, coarse };

/// One split as stored: images [count, 3, 32, 32] (planes), labels [count].
struct CifarDataset {
  int64_t count = 0;
  int64_t classes = 0;
  std::vector<uint8_t> pixels;
  std::vector<uint8_t> labels;
};

/// The records of `paths`, in order, as one split.
Result<CifarDataset> readCifarFiles(const std::vector<std::string> &paths, CifarFormat format,
                                    CifarLabel label = CifarLabel::fine);

struct CifarSplits {
  CifarFormat format = CifarFormat::cifar10;
  CifarDataset train;
  CifarDataset test;
};

/// CIFAR-10 (data_batch_1..5.bin and test_batch.bin) or CIFAR-100
/// (train.bin and test.bin) in `dir` or in its cifar-10-batches-bin /
/// cifar-100-binary folder (as the archives unpack); an error that lists
/// what was looked for when neither is there.
Result<CifarSplits> loadCifarSplits(const std::string &dir, CifarLabel label = CifarLabel::fine);

/// CIFAR-10's published per-channel mean and standard deviation of the
/// training pixels in [0, 1] (red, green, blue).
inline constexpr std::array<float, 3> kCifar10Mean = {0.4914f, 0.4822f, 0.4465f};
inline constexpr std::array<float, 3> kCifar10Std = {0.2470f, 0.2435f, 0.2616f};

/// Writes example `index` of `data` to `out` as NHWC (32 x 32 x 3 floats):
/// each pixel scaled to [0, 1], then (x - mean[c]) * (1 / std[c]) in f32 (the
/// formula of every source, and of the device for uint8 models).
void normalizeCifarImage(const CifarDataset &data, int64_t index, float *out,
                         const std::array<float, 3> &mean, const std::array<float, 3> &std);

} // namespace rn

#endif // RN_RUNTIME_DATA_CIFAR_DATASET_H
