//===- idx_source.cpp - Fashion-MNIST (IDX files) as a data source --------===//

#include "runtime/train/idx_source.h"

namespace rn::train {

std::string IdxDataSource::layout() const {
  return "NHWC, " + std::to_string(data_.rows) + "x" + std::to_string(data_.cols) +
         " grayscale";
}

Status IdxDataSource::readPixels(int64_t index, PixelImage &image) const {
  image.height = data_.rows;
  image.width = data_.cols;
  image.channels = 1;
  const uint8_t *p = data_.pixels.data() + index * data_.imageSize();
  image.pixels.assign(p, p + data_.imageSize());
  return Status::success();
}

Result<IdxSources> loadIdxSources(const std::string &dir, int64_t limitTrain,
                                  int64_t limitTest, float mean, float std) {
  Result<IdxSplits> splits = loadIdxSplits(dir, limitTrain, limitTest);
  if (!splits)
    return splits.error();
  IdxSources sources;
  sources.train = std::make_unique<IdxDataSource>(std::move(splits->train), dir, mean, std);
  sources.test = std::make_unique<IdxDataSource>(std::move(splits->test), dir, mean, std);
  return sources;
}

} // namespace rn::train
