//===- idx_source.h - Fashion-MNIST (IDX files) as a data source -*- C++ -*-===//
//
// The IDX splits of runtime/data/idx_dataset.h behind the DataSource
// interface: images [rows, cols, 1], pixels scaled to [0, 1] and
// standardized with Fashion-MNIST's mean and deviation (normalizeImage).
//
//===----------------------------------------------------------------------===//

#ifndef RN_RUNTIME_TRAIN_IDX_SOURCE_H
#define RN_RUNTIME_TRAIN_IDX_SOURCE_H

#include "runtime/data/idx_dataset.h"
#include "runtime/train/data_source.h"

#include <memory>
#include <string>

namespace rn::train {

class IdxDataSource final : public DataSource {
public:
  /// `name` names the source in messages (the data directory).
  IdxDataSource(IdxDataset data, std::string name, float mean = kFashionMnistMean,
                float std = kFashionMnistStd)
      : data_(std::move(data)), name_(std::move(name)), mean_(mean), std_(std) {}

  int64_t count() const override { return data_.count; }
  std::vector<int64_t> imageShape() const override { return {data_.rows, data_.cols, 1}; }
  std::string layout() const override;
  std::string name() const override { return name_; }
  int64_t label(int64_t index) const override { return data_.labels[size_t(index)]; }
  void writeImage(int64_t index, float *out) const override {
    normalizeImage(data_, index, out, mean_, std_);
  }
  bool hasPixels() const override { return true; }
  Status readPixels(int64_t index, PixelImage &image) const override;
  ChannelNormalization normalization() const override { return {{mean_}, {std_}}; }

private:
  IdxDataset data_;
  std::string name_;
  float mean_, std_;
};

struct IdxSources {
  std::unique_ptr<IdxDataSource> train;
  std::unique_ptr<IdxDataSource> test;
};

/// The train and test splits in `dir` (loadIdxSplits), each limited to its
/// first `limitTrain` / `limitTest` examples when > 0, normalized with
/// `mean` and `std` (Fashion-MNIST's published values by default).
Result<IdxSources> loadIdxSources(const std::string &dir, int64_t limitTrain = 0,
                                  int64_t limitTest = 0, float mean = kFashionMnistMean,
                                  float std = kFashionMnistStd);

} // namespace rn::train

#endif // RN_RUNTIME_TRAIN_IDX_SOURCE_H
