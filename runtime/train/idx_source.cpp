//===- idx_source.cpp - Fashion-MNIST (IDX files) as a data source --------===//

#include "runtime/train/idx_source.h"

namespace rn::train {

std::string IdxDataSource::layout() const {
  return "NHWC, " + std::to_string(data_.rows) + "x" + std::to_string(data_.cols) +
         " grayscale";
}

Status IdxDataSource::fillBatch(const int64_t *indices, int64_t n, float *images,
                                int32_t *labels) const {
  const int64_t size = data_.imageSize();
  for (int64_t k = 0; k < n; ++k) {
    int64_t index = indices[k];
    if (index < 0 || index >= data_.count)
      return Error(name_ + ": example " + std::to_string(index) + " out of range [0, " +
                   std::to_string(data_.count) + ")");
    normalizeImage(data_, index, images + k * size);
    labels[k] = int32_t(data_.labels[size_t(index)]);
  }
  return Status::success();
}

Result<IdxSources> loadIdxSources(const std::string &dir, int64_t limitTrain,
                                  int64_t limitTest) {
  Result<IdxSplits> splits = loadIdxSplits(dir, limitTrain, limitTest);
  if (!splits)
    return splits.error();
  IdxSources sources;
  sources.train = std::make_unique<IdxDataSource>(std::move(splits->train), dir);
  sources.test = std::make_unique<IdxDataSource>(std::move(splits->test), dir);
  return sources;
}

} // namespace rn::train
