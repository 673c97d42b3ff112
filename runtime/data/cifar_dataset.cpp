//===- cifar_dataset.cpp - CIFAR-10 and CIFAR-100 binary files ------------===//
//
// See cifar_dataset.h.
//
//===----------------------------------------------------------------------===//

#include "runtime/data/cifar_dataset.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

namespace rn {

namespace {

/// The whole file, or an error naming it.
Result<std::vector<uint8_t>> readFile(const std::string &path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    return Error(path + ": is a directory, not a CIFAR binary file");
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return Error(path + ": cannot open: " + std::strerror(errno));
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                             std::istreambuf_iterator<char>());
  if (in.bad())
    return Error(path + ": read failed");
  return bytes;
}

bool isFile(const std::filesystem::path &p) {
  std::error_code ec;
  return std::filesystem::is_regular_file(p, ec);
}

} // namespace

Result<CifarDataset> readCifarFiles(const std::vector<std::string> &paths, CifarFormat format,
                                    CifarLabel label) {
  const bool hundred = format == CifarFormat::cifar100;
  const int64_t labelBytes = hundred ? 2 : 1;
  const int64_t record = labelBytes + kCifarImageBytes;
  // CIFAR-100's record: coarse, then fine.
  const int64_t labelAt = hundred && label == CifarLabel::fine ? 1 : 0;
  CifarDataset data;
  data.classes = !hundred ? 10 : label == CifarLabel::fine ? 100 : 20;
  if (paths.empty())
    return Error("no CIFAR files given");
  for (const std::string &path : paths) {
    Result<std::vector<uint8_t>> bytes = readFile(path);
    if (!bytes)
      return bytes.error();
    const int64_t size = int64_t(bytes->size());
    if (size == 0)
      return Error(path + ": empty (a " + (hundred ? "CIFAR-100" : "CIFAR-10") + " file holds " +
                   std::to_string(record) + "-byte records)");
    if (size % record != 0)
      return Error(path + ": " + std::to_string(size) + " bytes is not a whole number of " +
                   std::to_string(record) + "-byte " + (hundred ? "CIFAR-100" : "CIFAR-10") +
                   " records (record " + std::to_string(size / record) + " is cut off after " +
                   std::to_string(size % record) + " bytes)");
    const int64_t records = size / record;
    data.pixels.reserve(size_t((data.count + records) * kCifarImageBytes));
    for (int64_t r = 0; r < records; ++r) {
      const uint8_t *p = bytes->data() + r * record;
      const uint8_t y = p[labelAt];
      if (int64_t(y) >= data.classes)
        return Error(path + ": record " + std::to_string(r) + " has " +
                     (hundred ? (labelAt ? "fine " : "coarse ") : "") + "label " +
                     std::to_string(y) + ", outside [0, " + std::to_string(data.classes) + ")");
      data.labels.push_back(y);
      data.pixels.insert(data.pixels.end(), p + labelBytes, p + record);
    }
    data.count += records;
  }
  return data;
}

Result<CifarSplits> loadCifarSplits(const std::string &dir, CifarLabel label) {
  namespace fs = std::filesystem;
  const fs::path root(dir);
  for (const fs::path &folder : {root, root / "cifar-10-batches-bin"}) {
    std::vector<std::string> train;
    for (int k = 1; k <= 5; ++k)
      train.push_back((folder / ("data_batch_" + std::to_string(k) + ".bin")).string());
    const fs::path test = folder / "test_batch.bin";
    std::vector<std::string> missing, present;
    for (const std::string &p : train)
      (isFile(p) ? present : missing).push_back(fs::path(p).filename().string());
    (isFile(test) ? present : missing).push_back("test_batch.bin");
    // Some of CIFAR-10's six files but not all: a copy cut short.
    if (!present.empty() && !missing.empty()) {
      std::string names;
      for (const std::string &m : missing)
        names += (names.empty() ? "" : ", ") + m;
      return Error(folder.string() + ": CIFAR-10 is incomplete: " + names + " missing (" +
                   std::to_string(present.size()) + " of its 6 files are there)");
    }
    if (!missing.empty())
      continue;
    CifarSplits splits;
    splits.format = CifarFormat::cifar10;
    Result<CifarDataset> t = readCifarFiles(train, CifarFormat::cifar10);
    if (!t)
      return t.error();
    Result<CifarDataset> e = readCifarFiles({test.string()}, CifarFormat::cifar10);
    if (!e)
      return e.error();
    splits.train = std::move(*t);
    splits.test = std::move(*e);
    return splits;
  }
  for (const fs::path &folder : {root, root / "cifar-100-binary"}) {
    const fs::path train = folder / "train.bin", test = folder / "test.bin";
    if (isFile(train) != isFile(test))
      return Error(folder.string() + ": CIFAR-100 is incomplete: " +
                   (isFile(train) ? "test.bin" : "train.bin") + " missing");
    if (!isFile(train))
      continue;
    CifarSplits splits;
    splits.format = CifarFormat::cifar100;
    Result<CifarDataset> t = readCifarFiles({train.string()}, CifarFormat::cifar100, label);
    if (!t)
      return t.error();
    Result<CifarDataset> e = readCifarFiles({test.string()}, CifarFormat::cifar100, label);
    if (!e)
      return e.error();
    splits.train = std::move(*t);
    splits.test = std::move(*e);
    return splits;
  }
  return Error(dir + ": no CIFAR data: looked for data_batch_1.bin ... data_batch_5.bin and "
                     "test_batch.bin (CIFAR-10), and train.bin and test.bin (CIFAR-100), there "
                     "and in cifar-10-batches-bin/ and cifar-100-binary/");
}

void normalizeCifarImage(const CifarDataset &data, int64_t index, float *out,
                         const std::array<float, 3> &mean, const std::array<float, 3> &std) {
  const uint8_t *image = data.pixels.data() + index * kCifarImageBytes;
  constexpr int64_t plane = kCifarSide * kCifarSide;
  for (int64_t c = 0; c < kCifarChannels; ++c) {
    // Every source's formula, and the device's for uint8 models.
    const float m = mean[size_t(c)], inverseStd = 1.0f / std[size_t(c)];
    const uint8_t *src = image + c * plane;
    for (int64_t i = 0; i < plane; ++i)
      out[i * kCifarChannels + c] = (float(src[i]) / 255.0f - m) * inverseStd;
  }
}

} // namespace rn
