//===- idx_dataset.cpp - MNIST-style IDX datasets (gzip) ------------------===//

#include "runtime/data/idx_dataset.h"

#include <zlib.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <sys/stat.h>

namespace rn {
namespace {

/// Largest decompressed file accepted (Fashion-MNIST's train images are
/// 47 MB): a header promising more is corruption.
constexpr uint64_t kMaxIdxBytes = uint64_t(1) << 32;
constexpr int64_t kMaxIdxDim = 1 << 16;

/// The whole decompressed contents of `path`.
Result<std::string> readGzip(const std::string &path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0)
    return Error(path + ": cannot open: " + std::strerror(errno));
  if (S_ISDIR(st.st_mode))
    return Error(path + ": is a directory, not an IDX file");
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f)
    return Error(path + ": cannot open: " + std::strerror(errno));
  gzbuffer(f, 1 << 16);
  std::string out;
  char buf[1 << 16];
  for (;;) {
    int n = gzread(f, buf, sizeof buf);
    if (n < 0) {
      int code = 0;
      std::string message = gzerror(f, &code);
      gzclose(f);
      return Error(path + ": corrupt gzip data: " + message);
    }
    if (n == 0)
      break;
    out.append(buf, size_t(n));
    if (out.size() > kMaxIdxBytes) {
      gzclose(f);
      return Error(path + ": larger than " + std::to_string(kMaxIdxBytes) +
                   " bytes decompressed");
    }
  }
  // gzread returns 0 both at the end and on a truncated stream; gzerror
  // tells them apart (Z_BUF_ERROR: the stream ended early).
  int code = Z_OK;
  std::string message = gzerror(f, &code);
  gzclose(f);
  if (code != Z_OK && code != Z_STREAM_END)
    return Error(path + ": corrupt or truncated gzip data: " + message);
  return out;
}

uint32_t bigEndian32(const std::string &s, size_t at) {
  const auto *p = reinterpret_cast<const unsigned char *>(s.data()) + at;
  return (uint32_t(p[0]) << 24) | (uint32_t(p[1]) << 16) | (uint32_t(p[2]) << 8) |
         uint32_t(p[3]);
}

std::string hex(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", v);
  return buf;
}

/// Checks the magic and the header, returns the dimensions (count first).
Result<std::vector<int64_t>> parseHeader(const std::string &path, const std::string &bytes,
                                         uint32_t magic, size_t dims) {
  size_t headerBytes = 4 + 4 * dims;
  if (bytes.size() < headerBytes)
    return Error(path + ": truncated IDX header (" + std::to_string(bytes.size()) +
                 " bytes, need " + std::to_string(headerBytes) + ")");
  uint32_t got = bigEndian32(bytes, 0);
  if (got != magic)
    return Error(path + ": bad IDX magic " + hex(got) + ", expected " + hex(magic) +
                 (magic == kIdxImagesMagic ? " (images)" : " (labels)"));
  std::vector<int64_t> shape;
  uint64_t payload = 1;
  for (size_t d = 0; d < dims; ++d) {
    int64_t v = int64_t(bigEndian32(bytes, 4 + 4 * d));
    int64_t bound = d == 0 ? int64_t(1) << 30 : kMaxIdxDim;
    if (v < (d == 0 ? 0 : 1) || v > bound)
      return Error(path + ": bad IDX dimension " + std::to_string(d) + ": " +
                   std::to_string(v));
    shape.push_back(v);
    payload *= uint64_t(v); // bounded: < 2^30 * 2^16 * 2^16 < 2^64
  }
  if (payload > kMaxIdxBytes)
    return Error(path + ": IDX header promises " + std::to_string(payload) + " bytes");
  uint64_t want = headerBytes + payload;
  if (bytes.size() != want)
    return Error(path + ": " + (bytes.size() < want ? "truncated" : "trailing data") +
                 ": the header promises " + std::to_string(want) +
                 " bytes decompressed, the file holds " + std::to_string(bytes.size()));
  return shape;
}

} // namespace

Result<IdxDataset> readIdxImages(const std::string &path) {
  Result<std::string> bytes = readGzip(path);
  if (!bytes)
    return bytes.error();
  Result<std::vector<int64_t>> shape = parseHeader(path, *bytes, kIdxImagesMagic, 3);
  if (!shape)
    return shape.error();
  IdxDataset d;
  d.count = (*shape)[0];
  d.rows = (*shape)[1];
  d.cols = (*shape)[2];
  d.pixels.assign(bytes->begin() + 16, bytes->end());
  return d;
}

Result<std::vector<uint8_t>> readIdxLabels(const std::string &path) {
  Result<std::string> bytes = readGzip(path);
  if (!bytes)
    return bytes.error();
  Result<std::vector<int64_t>> shape = parseHeader(path, *bytes, kIdxLabelsMagic, 1);
  if (!shape)
    return shape.error();
  return std::vector<uint8_t>(bytes->begin() + 8, bytes->end());
}

Result<IdxDataset> loadIdxDataset(const std::string &imagesPath,
                                  const std::string &labelsPath, int64_t limit) {
  Result<IdxDataset> images = readIdxImages(imagesPath);
  if (!images)
    return images.error();
  Result<std::vector<uint8_t>> labels = readIdxLabels(labelsPath);
  if (!labels)
    return labels.error();
  IdxDataset d = std::move(*images);
  if (int64_t(labels->size()) != d.count)
    return Error(labelsPath + ": " + std::to_string(labels->size()) + " labels, but " +
                 imagesPath + " holds " + std::to_string(d.count) + " images");
  d.labels = std::move(*labels);
  if (limit > 0 && limit < d.count) {
    d.count = limit;
    d.pixels.resize(size_t(limit * d.imageSize()));
    d.labels.resize(size_t(limit));
  }
  return d;
}

Result<IdxSplits> loadIdxSplits(const std::string &dir, int64_t limitTrain,
                                int64_t limitTest) {
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0)
    return Error(dir + ": cannot open the data directory: " + std::strerror(errno));
  if (!S_ISDIR(st.st_mode))
    return Error(dir + ": not a directory");
  IdxSplits s;
  Result<IdxDataset> train = loadIdxDataset(dir + "/train-images-idx3-ubyte.gz",
                                            dir + "/train-labels-idx1-ubyte.gz", limitTrain);
  if (!train)
    return train.error();
  Result<IdxDataset> test = loadIdxDataset(dir + "/t10k-images-idx3-ubyte.gz",
                                           dir + "/t10k-labels-idx1-ubyte.gz", limitTest);
  if (!test)
    return test.error();
  if (train->rows != test->rows || train->cols != test->cols)
    return Error(dir + ": the train images are " + std::to_string(train->rows) + "x" +
                 std::to_string(train->cols) + ", the test images " +
                 std::to_string(test->rows) + "x" + std::to_string(test->cols));
  s.train = std::move(*train);
  s.test = std::move(*test);
  return s;
}

void normalizeImage(const IdxDataset &data, int64_t index, float *out, float mean,
                    float std) {
  int64_t size = data.imageSize();
  const uint8_t *p = data.pixels.data() + index * size;
  float inv = 1.0f / std;
  for (int64_t i = 0; i < size; ++i)
    out[i] = (float(p[i]) / 255.0f - mean) * inv;
}

} // namespace rn
