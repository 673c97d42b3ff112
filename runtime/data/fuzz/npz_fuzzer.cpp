//===- npz_fuzzer.cpp - libFuzzer target for the .npz reader --------------===//
//
// An input is an .npz file, read with loadNpzSplits (readNpz, the zip
// container, every entry's .npy header and the split checks). An input
// starting with the .npy magic is instead a list of .npy files cut at
// kFuzzSeparator, stored by the target as x_train, y_train, x_test and
// y_test (then extra1, ...) in an archive with the right CRC-32s, so that
// the fuzzer mutates the arrays without having to keep the checksums and
// sizes of the zip right. Every input must give an Error or splits that
// hold what they claim; never a crash, undefined behavior or an allocation
// out of proportion to the file. Build and run: docs/reliability.md.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/fuzz/fuzz_files.h"
#include "runtime/data/npz_dataset.h"

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace {

using rn::fuzz::check;

void checkSplit(const rn::NpzDataset &d) {
  check(d.count > 0 && d.height > 0 && d.width > 0 && d.channels > 0);
  const size_t value = d.pixels == rn::NpzPixels::u8 ? 1 : 4;
  check(d.images.size() == size_t(d.count) * size_t(d.imageSize()) * value);
  check(d.labels.size() == size_t(d.count));
  for (int32_t label : d.labels)
    check(label >= 0 && label < d.classes);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string_view input(reinterpret_cast<const char *>(data), size);
  std::string file;
  if (input.substr(0, 6) == "\x93NUMPY") {
    std::vector<rn::fuzz::ZipMember> members;
    std::vector<std::string> arrays = rn::fuzz::splitParts(input);
    for (size_t i = 0; i < arrays.size(); ++i)
      members.push_back({(i < rn::fuzz::npzKeys().size() ? rn::fuzz::npzKeys()[i]
                                                         : "extra" + std::to_string(i)) +
                             ".npy",
                         std::move(arrays[i]), false});
    file = rn::fuzz::zipArchive(members);
  } else {
    file = std::string(input);
  }
  const std::string path = rn::fuzz::writeScratch("data.npz", file);
  rn::Result<rn::NpzSplits> splits = rn::loadNpzSplits(path);
  if (!splits)
    return rn::fuzz::report(splits.error().message()), 0;
  checkSplit(splits->train);
  checkSplit(splits->test);
  rn::fuzz::report("ok: " + std::to_string(splits->train.count) + " + " +
                   std::to_string(splits->test.count) + " images");
  return 0;
}
