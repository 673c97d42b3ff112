//===- npz_source.h - NumPy .npz arrays as a data source --------*- C++ -*-===//
//
// The splits of an .npz archive (runtime/data/npz_dataset.h) behind
// DataSource: NHWC images normalized per channel, (x / 255 - mean) / std for
// uint8 pixels and (x - mean) / std for float32 ones, with a given mean and
// standard deviation or those of the training split, computed once.
//
//===----------------------------------------------------------------------===//

#ifndef RN_RUNTIME_TRAIN_NPZ_SOURCE_H
#define RN_RUNTIME_TRAIN_NPZ_SOURCE_H

#include "runtime/data/npz_dataset.h"
#include "runtime/train/data_source.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace rn::train {

class NpzDataSource final : public DataSource {
public:
  /// `mean` and `std` hold one value per channel.
  NpzDataSource(NpzDataset data, std::string name, std::vector<float> mean, std::vector<float> std);

  int64_t count() const override { return data_.count; }
  std::vector<int64_t> imageShape() const override {
    return {data_.height, data_.width, data_.channels};
  }
  std::string layout() const override;
  std::string name() const override { return name_; }
  int64_t label(int64_t index) const override { return data_.labels[size_t(index)]; }
  void writeImage(int64_t index, float *out) const override;
  bool hasPixels() const override { return data_.pixels == NpzPixels::u8; }
  Status readPixels(int64_t index, PixelImage &image) const override;
  ChannelNormalization normalization() const override { return {mean_, std_}; }

private:
  NpzDataset data_;
  std::string name_;
  std::vector<float> mean_, std_, inverseStd_;
};

/// The per-channel mean and standard deviation (population) of `data`'s
/// pixels, uint8 ones scaled to [0, 1].
void npzChannelStats(const NpzDataset &data, std::vector<float> &mean, std::vector<float> &std);

struct NpzSourceOptions {
  int64_t limitTrain = 0, limitTest = 0; ///< > 0: the first K examples only
  /// Normalization, one value per channel; absent: the training split's
  /// own (before any limit).
  std::optional<std::vector<float>> mean, std;
};

struct NpzSources {
  std::unique_ptr<NpzDataSource> train, test;
  int64_t classes = 0; ///< the largest label of either split + 1
  std::vector<float> mean, std;
  bool statsComputed = false;
  NpzPixels pixels = NpzPixels::u8;
};

/// The archive at `path` (loadNpzSplits), normalized.
Result<NpzSources> loadNpzSources(const std::string &path, const NpzSourceOptions &options);

} // namespace rn::train

#endif // RN_RUNTIME_TRAIN_NPZ_SOURCE_H
