//===- cifar_fuzzer.cpp - libFuzzer target for the CIFAR reader -----------===//
//
// An input is a flags byte, then the files, cut at kFuzzSeparator. Flags:
// bit 0 CIFAR-100 (else CIFAR-10), bit 1 the coarse label (else the fine
// one), bit 2 read as a folder with loadCifarSplits (else the files in
// order with readCifarFiles), bit 3 that folder's files in its
// cifar-10-batches-bin / cifar-100-binary subfolder. A folder holds the
// parts as data_batch_1.bin ... data_batch_5.bin and test_batch.bin
// (CIFAR-10) or train.bin and test.bin (CIFAR-100); an empty part is a
// missing file. Every input must give an Error or a data set that holds
// what it claims. Build and run: docs/reliability.md.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/fuzz/fuzz_files.h"
#include "runtime/data/cifar_dataset.h"

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace {

using rn::fuzz::check;

void checkSet(const rn::CifarDataset &d) {
  check(d.count > 0);
  check(d.pixels.size() == size_t(d.count) * size_t(rn::kCifarImageBytes));
  check(d.labels.size() == size_t(d.count));
  for (uint8_t label : d.labels)
    check(label < d.classes);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0)
    return 0;
  const uint8_t flags = data[0];
  const rn::CifarFormat format = flags & 1 ? rn::CifarFormat::cifar100 : rn::CifarFormat::cifar10;
  const rn::CifarLabel label = flags & 2 ? rn::CifarLabel::coarse : rn::CifarLabel::fine;
  std::vector<std::string> parts =
      rn::fuzz::splitParts(std::string_view(reinterpret_cast<const char *>(data) + 1, size - 1));
  rn::fuzz::clearScratch();
  if (flags & 4) {
    std::vector<std::string> names;
    if (format == rn::CifarFormat::cifar10) {
      for (int k = 1; k <= 5; ++k)
        names.push_back("data_batch_" + std::to_string(k) + ".bin");
      names.push_back("test_batch.bin");
    } else {
      names = {"train.bin", "test.bin"};
    }
    const std::string folder =
        flags & 8 ? (format == rn::CifarFormat::cifar10 ? "cifar-10-batches-bin/"
                                                        : "cifar-100-binary/")
                  : "";
    for (size_t i = 0; i < names.size() && i < parts.size(); ++i)
      if (!parts[i].empty())
        rn::fuzz::writeScratch(folder + names[i], parts[i]);
    rn::Result<rn::CifarSplits> splits = rn::loadCifarSplits(rn::fuzz::scratchDir(), label);
    if (!splits)
      return rn::fuzz::report(splits.error().message()), 0;
    checkSet(splits->train);
    checkSet(splits->test);
    rn::fuzz::report("ok: " + std::to_string(splits->train.count) + " + " +
                     std::to_string(splits->test.count) + " records");
  } else {
    std::vector<std::string> paths;
    for (size_t i = 0; i < parts.size(); ++i)
      paths.push_back(rn::fuzz::writeScratch("file" + std::to_string(i) + ".bin", parts[i]));
    rn::Result<rn::CifarDataset> set = rn::readCifarFiles(paths, format, label);
    if (!set)
      return rn::fuzz::report(set.error().message()), 0;
    checkSet(*set);
    rn::fuzz::report("ok: " + std::to_string(set->count) + " records");
  }
  return 0;
}
