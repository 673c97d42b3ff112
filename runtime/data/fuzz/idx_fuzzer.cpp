//===- idx_fuzzer.cpp - libFuzzer target for the IDX (MNIST) reader -------===//
//
// An input is a flags byte, then IDX files cut at kFuzzSeparator. Flags:
// bit 0 the parts are the gzip files as stored (else the target gzips
// them, so that the fuzzer mutates the IDX headers and pixels directly);
// bits 1-7 a limit on the examples kept (0: all). One part is read both as
// an image file and as a label file; two are an image and a label file
// (loadIdxDataset); four a folder of train images, train labels, test
// images and test labels (loadIdxSplits). Every input must give an Error or
// data that hold what they claim; never a crash, undefined behavior or an
// allocation out of proportion to the file. Build and run:
// docs/reliability.md.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/fuzz/fuzz_files.h"
#include "runtime/data/idx_dataset.h"

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace {

using rn::fuzz::check;

void checkSet(const rn::IdxDataset &d, bool labels) {
  check(d.count >= 0 && d.rows > 0 && d.cols > 0);
  check(d.pixels.size() == size_t(d.count) * size_t(d.imageSize()));
  if (labels)
    check(d.labels.size() == size_t(d.count));
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0)
    return 0;
  const bool stored = data[0] & 1;
  const int64_t limit = data[0] >> 1;
  std::vector<std::string> parts =
      rn::fuzz::splitParts(std::string_view(reinterpret_cast<const char *>(data) + 1, size - 1));
  if (!stored)
    for (std::string &part : parts)
      part = rn::fuzz::gzip(part);
  rn::fuzz::clearScratch();
  if (parts.size() == 1) {
    const std::string path = rn::fuzz::writeScratch("file-ubyte.gz", parts[0]);
    rn::Result<rn::IdxDataset> images = rn::readIdxImages(path);
    if (images)
      checkSet(*images, false);
    rn::Result<std::vector<uint8_t>> labels = rn::readIdxLabels(path);
    rn::fuzz::report(images   ? "ok: " + std::to_string(images->count) + " images"
                     : labels ? "ok: " + std::to_string(labels->size()) + " labels"
                              : images.error().message() + " / " + labels.error().message());
  } else if (parts.size() < 4) {
    const std::string images = rn::fuzz::writeScratch("images-idx3-ubyte.gz", parts[0]);
    const std::string labels = rn::fuzz::writeScratch("labels-idx1-ubyte.gz", parts[1]);
    rn::Result<rn::IdxDataset> set = rn::loadIdxDataset(images, labels, limit);
    if (!set)
      return rn::fuzz::report(set.error().message()), 0;
    checkSet(*set, true);
    check(limit == 0 || set->count <= limit);
    rn::fuzz::report("ok: " + std::to_string(set->count) + " examples");
  } else {
    const char *names[] = {"train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz",
                           "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"};
    for (size_t i = 0; i < 4; ++i)
      rn::fuzz::writeScratch(names[i], parts[i]);
    rn::Result<rn::IdxSplits> splits = rn::loadIdxSplits(rn::fuzz::scratchDir(), limit, limit / 2);
    if (!splits)
      return rn::fuzz::report(splits.error().message()), 0;
    checkSet(splits->train, true);
    checkSet(splits->test, true);
    check(splits->train.rows == splits->test.rows && splits->train.cols == splits->test.cols);
    rn::fuzz::report("ok: " + std::to_string(splits->train.count) + " + " +
                     std::to_string(splits->test.count) + " examples");
  }
  return 0;
}
