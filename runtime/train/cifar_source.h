//===- cifar_source.h - CIFAR binary files as a data source ----*- C++ -*-===//
//
// CIFAR-10 or CIFAR-100 (runtime/data/cifar_dataset.h) behind DataSource:
// NHWC 32x32x3 images normalized per channel with a given mean and standard
// deviation, or with those of the training split, computed once.
//
//===----------------------------------------------------------------------===//

#ifndef RN_RUNTIME_TRAIN_CIFAR_SOURCE_H
#define RN_RUNTIME_TRAIN_CIFAR_SOURCE_H

#include "runtime/data/cifar_dataset.h"
#include "runtime/train/data_source.h"

#include <array>
#include <memory>
#include <optional>
#include <string>

namespace rn::train {

class CifarDataSource final : public DataSource {
public:
  CifarDataSource(CifarDataset data, std::string name, std::array<float, 3> mean,
                  std::array<float, 3> std)
      : data_(std::move(data)), name_(std::move(name)), mean_(mean), std_(std) {}

  int64_t count() const override { return data_.count; }
  std::vector<int64_t> imageShape() const override {
    return {kCifarSide, kCifarSide, kCifarChannels};
  }
  std::string layout() const override { return "NHWC, 32x32 RGB"; }
  std::string name() const override { return name_; }
  int64_t label(int64_t index) const override { return data_.labels[size_t(index)]; }
  void writeImage(int64_t index, float *out) const override {
    normalizeCifarImage(data_, index, out, mean_, std_);
  }
  bool hasPixels() const override { return true; }
  /// The record's CHW planes as HWC.
  Status readPixels(int64_t index, PixelImage &image) const override;
  ChannelNormalization normalization() const override {
    return {{mean_.begin(), mean_.end()}, {std_.begin(), std_.end()}};
  }

private:
  CifarDataset data_;
  std::string name_;
  std::array<float, 3> mean_, std_;
};

/// The per-channel mean and standard deviation (population) of `data`'s
/// pixels scaled to [0, 1].
void cifarChannelStats(const CifarDataset &data, std::array<float, 3> &mean,
                       std::array<float, 3> &std);

struct CifarSourceOptions {
  int64_t limitTrain = 0, limitTest = 0; ///< > 0: the first K examples only
  CifarLabel label = CifarLabel::fine;   ///< CIFAR-100's label
  /// Normalization; absent: the training split's own (before any limit).
  std::optional<std::array<float, 3>> mean, std;
};

struct CifarSources {
  std::unique_ptr<CifarDataSource> train, test;
  CifarFormat format = CifarFormat::cifar10;
  int64_t classes = 0;
  std::array<float, 3> mean{}, std{};
  bool statsComputed = false; ///< mean and std came from the training split
};

/// CIFAR-10 or CIFAR-100 in `dir` (loadCifarSplits).
Result<CifarSources> loadCifarSources(const std::string &dir, const CifarSourceOptions &options);

} // namespace rn::train

#endif // RN_RUNTIME_TRAIN_CIFAR_SOURCE_H
