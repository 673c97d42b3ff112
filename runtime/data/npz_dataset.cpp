//===- npz_dataset.cpp - NumPy .npz archives of images and labels ---------===//
//
// See npz_dataset.h. The zip container is read through its central
// directory (APPNOTE.TXT sections 4.3.7, 4.3.12, 4.3.14-16, 4.5.3); deflated
// entries are inflated with zlib. A zip library would bring a dependency
// the GPU machine lacks for the few records numpy writes.
//
//===----------------------------------------------------------------------===//

#include "runtime/data/npz_dataset.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>

namespace rn {

namespace {

constexpr uint32_t kLocalHeader = 0x04034b50;
constexpr uint32_t kCentralHeader = 0x02014b50;
constexpr uint32_t kEndOfCentralDirectory = 0x06054b50;
constexpr uint32_t kZip64EndLocator = 0x07064b50;
constexpr uint32_t kZip64End = 0x06064b50;
constexpr uint16_t kZip64ExtraId = 0x0001;
constexpr uint32_t kSaturated32 = 0xffffffffu;
constexpr uint64_t kMaxDeflateRatio = 1032;

/// Little-endian reads with bounds checks: a cursor over the archive.
class Reader {
public:
  Reader(const std::string &bytes, size_t at) : bytes_(bytes), at_(at) {}
  bool has(size_t n) const { return at_ <= bytes_.size() && bytes_.size() - at_ >= n; }
  uint64_t read(size_t n) {
    uint64_t v = 0;
    for (size_t i = 0; i < n; ++i)
      v |= uint64_t(uint8_t(bytes_[at_ + i])) << (8 * i);
    at_ += n;
    return v;
  }
  uint16_t u16() { return uint16_t(read(2)); }
  uint32_t u32() { return uint32_t(read(4)); }
  uint64_t u64() { return read(8); }
  std::string str(size_t n) {
    std::string s = bytes_.substr(at_, n);
    at_ += n;
    return s;
  }
  void skip(size_t n) { at_ += n; }
  size_t at() const { return at_; }

private:
  const std::string &bytes_;
  size_t at_;
};

struct ZipEntry {
  std::string name;
  uint16_t flags = 0, method = 0;
  uint32_t crc = 0;
  uint64_t compressedSize = 0, size = 0, localOffset = 0;
};

Result<std::string> readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return Error(path + ": cannot open: " + std::strerror(errno));
  std::ostringstream s;
  s << in.rdbuf();
  if (!in && !in.eof())
    return Error(path + ": read failed");
  return s.str();
}

/// The zip64 extended information of a central record: the fields whose
/// 32-bit values are saturated, in this order.
Status applyZip64Extra(const std::string &extra, ZipEntry &e, bool sizeSaturated,
                       bool compressedSaturated, bool offsetSaturated) {
  Reader r(extra, 0);
  while (r.has(4)) {
    uint16_t id = r.u16(), length = r.u16();
    if (!r.has(length))
      return Error("a truncated extra field");
    if (id != kZip64ExtraId) {
      r.skip(length);
      continue;
    }
    Reader field(extra, r.at());
    auto take = [&](bool saturated, uint64_t &value) {
      if (saturated && field.at() + 8 <= r.at() + length) {
        value = field.u64();
        return true;
      }
      return !saturated;
    };
    if (!take(sizeSaturated, e.size) || !take(compressedSaturated, e.compressedSize) ||
        !take(offsetSaturated, e.localOffset))
      return Error("a zip64 field too short for its sizes");
    return Status::success();
  }
  if (sizeSaturated || compressedSaturated || offsetSaturated)
    return Error("sizes of 0xffffffff without a zip64 field");
  return Status::success();
}

Result<std::vector<ZipEntry>> centralDirectory(const std::string &path, const std::string &zip) {
  // The end record is in the last 22 + 65535 (its comment) bytes.
  if (zip.size() < 22)
    return Error(path + ": not a zip archive (" + std::to_string(zip.size()) + " bytes)");
  size_t end = std::string::npos;
  size_t lowest = zip.size() > 22 + 65535 ? zip.size() - 22 - 65535 : 0;
  for (size_t at = zip.size() - 22 + 1; at-- > lowest;) {
    if (Reader(zip, at).u32() == kEndOfCentralDirectory) {
      end = at;
      break;
    }
  }
  if (end == std::string::npos)
    return Error(path + ": not a zip archive (no end of central directory record); an .npz file "
                        "is numpy.savez's zip archive");
  Reader r(zip, end + 4);
  r.skip(6); // this disk, the directory's disk, entries on this disk
  uint64_t entries = r.u16();
  uint64_t directorySize = r.u32(), directoryOffset = r.u32();
  if (entries == 0xffff || directoryOffset == kSaturated32 || directorySize == kSaturated32) {
    if (end < 20 || Reader(zip, end - 20).u32() != kZip64EndLocator)
      return Error(path + ": a zip64 archive without its end-of-directory locator");
    Reader locator(zip, end - 20 + 8);
    uint64_t at = locator.u64();
    Reader z(zip, size_t(at));
    if (!z.has(56) || z.u32() != kZip64End)
      return Error(path + ": the zip64 end of central directory record is missing");
    z.skip(8 + 2 + 2 + 4 + 4 + 8); // size, versions, disks, entries on this disk
    entries = z.u64();
    directorySize = z.u64();
    directoryOffset = z.u64();
  }
  if (directoryOffset > zip.size() || directorySize > zip.size() - directoryOffset)
    return Error(path + ": the central directory lies outside the file (truncated?)");
  std::vector<ZipEntry> out;
  Reader c(zip, size_t(directoryOffset));
  for (uint64_t i = 0; i < entries; ++i) {
    if (!c.has(46) || c.u32() != kCentralHeader)
      return Error(path + ": central directory record " + std::to_string(i) + " is damaged");
    ZipEntry e;
    c.skip(4); // versions
    e.flags = c.u16();
    e.method = c.u16();
    c.skip(4); // time, date
    e.crc = c.u32();
    uint32_t compressed = c.u32(), size = c.u32();
    uint16_t nameLength = c.u16(), extraLength = c.u16(), commentLength = c.u16();
    c.skip(2 + 2 + 4); // disk, attributes
    uint32_t offset = c.u32();
    if (!c.has(size_t(nameLength) + extraLength + commentLength))
      return Error(path + ": central directory record " + std::to_string(i) + " is truncated");
    e.name = c.str(nameLength);
    std::string extra = c.str(extraLength);
    c.skip(commentLength);
    e.compressedSize = compressed;
    e.size = size;
    e.localOffset = offset;
    if (Status s = applyZip64Extra(extra, e, size == kSaturated32, compressed == kSaturated32,
                                   offset == kSaturated32);
        !s.ok())
      return Error(path + ": entry " + e.name + ": " + s.error().message());
    out.push_back(std::move(e));
  }
  return out;
}

Result<std::string> entryData(const std::string &path, const std::string &zip, const ZipEntry &e) {
  const std::string where = path + ": entry " + e.name;
  if (e.flags & 1)
    return Error(where + " is encrypted");
  Reader local(zip, size_t(e.localOffset));
  if (e.localOffset > zip.size() || !local.has(30) || local.u32() != kLocalHeader)
    return Error(where + ": its local header is missing (truncated or damaged archive)");
  local.skip(22);
  uint16_t nameLength = local.u16(), extraLength = local.u16();
  size_t begin = local.at() + nameLength + extraLength;
  if (begin > zip.size() || e.compressedSize > zip.size() - begin)
    return Error(where + " is truncated: " + std::to_string(e.compressedSize) +
                 " bytes announced, " +
                 std::to_string(zip.size() > begin ? zip.size() - begin : 0) + " in the file");
  std::string out;
  if (e.method == 0) {
    out = zip.substr(begin, size_t(e.compressedSize));
  } else if (e.method == 8) {
    if (e.size > uint64_t(std::numeric_limits<uint32_t>::max()) * 16)
      return Error(where + ": " + std::to_string(e.size) + " bytes uncompressed is too large");
    // Deflate expands at most 1032:1 (zlib.net/zlib_tech.html): a directory
    // that announces more than the compressed bytes can hold is damaged,
    // refused before a buffer of that size is allocated.
    if (e.size / kMaxDeflateRatio > e.compressedSize)
      return Error(where + ": " + std::to_string(e.size) + " bytes uncompressed from " +
                   std::to_string(e.compressedSize) + " deflated, more than deflate's " +
                   std::to_string(kMaxDeflateRatio) +
                   ":1 allows (the central directory is damaged)");
    out.resize(size_t(e.size));
    z_stream z{};
    if (inflateInit2(&z, -MAX_WBITS) != Z_OK)
      return Error(where + ": zlib inflateInit2 failed");
    z.next_in = reinterpret_cast<Bytef *>(const_cast<char *>(zip.data() + begin));
    size_t inLeft = size_t(e.compressedSize), outDone = 0;
    int rc = Z_OK;
    // zlib counts in 32-bit units: feed and drain in chunks below 4 GiB.
    while (rc == Z_OK) {
      const uInt inChunk = uInt(std::min<size_t>(inLeft, 1u << 30));
      const uInt outChunk = uInt(std::min<size_t>(out.size() - outDone, 1u << 30));
      z.avail_in = inChunk;
      z.next_out = reinterpret_cast<Bytef *>(out.data() + outDone);
      z.avail_out = outChunk;
      rc = inflate(&z, Z_NO_FLUSH);
      inLeft -= inChunk - z.avail_in;
      outDone += outChunk - z.avail_out;
      if (rc == Z_OK && inChunk == z.avail_in && outChunk == z.avail_out)
        break; // no progress: the input ended early
    }
    inflateEnd(&z);
    if (rc != Z_STREAM_END || outDone != out.size())
      return Error(where + ": the deflated data is corrupt or truncated (zlib: " +
                   (z.msg ? z.msg : std::to_string(rc)) + ")");
  } else {
    return Error(where + ": compression method " + std::to_string(e.method) +
                 " (numpy writes 0, stored, or 8, deflate)");
  }
  if (out.size() != e.size)
    return Error(where + ": " + std::to_string(out.size()) + " bytes, the directory says " +
                 std::to_string(e.size));
  uLong crc = crc32(0L, Z_NULL, 0);
  for (size_t at = 0; at < out.size(); at += 1u << 30)
    crc = crc32(crc, reinterpret_cast<const Bytef *>(out.data() + at),
                uInt(std::min<size_t>(out.size() - at, 1u << 30)));
  if (uint32_t(crc) != e.crc)
    return Error(where + ": CRC-32 mismatch (the archive is damaged)");
  return out;
}

/// The value of `key` in the .npy header's dict literal, as written.
std::string headerValue(const std::string &header, const std::string &key) {
  size_t k = header.find("'" + key + "'");
  if (k == std::string::npos)
    return {};
  size_t colon = header.find(':', k);
  if (colon == std::string::npos)
    return {};
  size_t begin = header.find_first_not_of(' ', colon + 1);
  if (begin == std::string::npos)
    return {};
  size_t end;
  if (header[begin] == '(')
    end = header.find(')', begin) + 1;
  else if (header[begin] == '\'')
    end = header.find('\'', begin + 1) + 1;
  else
    end = header.find_first_of(",}", begin);
  return end == std::string::npos || end == 0 ? std::string() : header.substr(begin, end - begin);
}

size_t dtypeSize(const std::string &dtype) {
  if (dtype.size() < 3 || (dtype[0] != '<' && dtype[0] != '|'))
    return 0;
  if (dtype[1] != 'u' && dtype[1] != 'i' && dtype[1] != 'f')
    return 0;
  int size = std::atoi(dtype.c_str() + 2);
  return size == 1 || size == 2 || size == 4 || size == 8 ? size_t(size) : 0;
}

std::string shapeText(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

} // namespace

int64_t NpyArray::count() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

Result<NpyArray> parseNpy(const std::string &bytes, const std::string &what) {
  static const char kMagic[] = "\x93NUMPY";
  if (bytes.size() < 10 || bytes.compare(0, 6, kMagic, 6) != 0)
    return Error(what + ": not an .npy array (no \\x93NUMPY magic)");
  const int major = uint8_t(bytes[6]);
  Reader r(bytes, 8);
  size_t headerLength;
  if (major == 1) {
    headerLength = r.u16();
  } else if (major == 2 || major == 3) {
    if (!r.has(4))
      return Error(what + ": truncated .npy header");
    headerLength = r.u32();
  } else {
    return Error(what + ": .npy format version " + std::to_string(major) + " (reads 1 to 3)");
  }
  if (!r.has(headerLength))
    return Error(what + ": truncated .npy header");
  const std::string header = r.str(headerLength);
  NpyArray a;
  std::string descr = headerValue(header, "descr");
  if (descr.size() < 2)
    return Error(what + ": the .npy header has no dtype ('descr')");
  a.dtype = descr.substr(1, descr.size() - 2);
  if (headerValue(header, "fortran_order") != "False")
    return Error(what + ": Fortran-order arrays are not read (save with np.ascontiguousarray)");
  if (dtypeSize(a.dtype) == 0)
    return Error(what + ": dtype '" + a.dtype +
                 "' is not read (little-endian integers and floats only)");
  std::string shape = headerValue(header, "shape");
  if (shape.size() < 2 || shape.front() != '(')
    return Error(what + ": the .npy header has no shape");
  for (size_t at = 1; at < shape.size() - 1;) {
    char *end = nullptr;
    long long d = std::strtoll(shape.c_str() + at, &end, 10);
    size_t used = size_t(end - (shape.c_str() + at));
    if (used == 0)
      break;
    if (d < 0)
      return Error(what + ": negative dimension in the shape " + shape);
    a.shape.push_back(d);
    at += used;
    at = shape.find_first_not_of(", ", at);
    if (at == std::string::npos)
      break;
  }
  // The byte count is multiplied out with overflow checks: a dimension may
  // be anything up to 2^63 (a shape of 0 elements needs 0 bytes whatever
  // its other dimensions).
  uint64_t need = dtypeSize(a.dtype);
  bool overflow = false;
  for (int64_t d : a.shape)
    overflow |= __builtin_mul_overflow(need, uint64_t(d), &need);
  if (std::find(a.shape.begin(), a.shape.end(), 0) != a.shape.end())
    need = 0, overflow = false;
  if (overflow || bytes.size() - r.at() != need)
    return Error(what + ": " + std::to_string(bytes.size() - r.at()) + " bytes of data for " +
                 a.dtype + " " + shapeText(a.shape) + ", which needs " +
                 (overflow ? std::string("more than 2^64") : std::to_string(need)));
  a.data = bytes.substr(r.at());
  return a;
}

Result<std::map<std::string, NpyArray>> readNpz(const std::string &path) {
  Result<std::string> zip = readFile(path);
  if (!zip)
    return zip.error();
  Result<std::vector<ZipEntry>> entries = centralDirectory(path, *zip);
  if (!entries)
    return entries.error();
  std::map<std::string, NpyArray> out;
  for (const ZipEntry &e : *entries) {
    if (e.name.size() < 5 || e.name.compare(e.name.size() - 4, 4, ".npy") != 0)
      continue; // not an array (numpy writes only .npy entries)
    Result<std::string> bytes = entryData(path, *zip, e);
    if (!bytes)
      return bytes.error();
    Result<NpyArray> array = parseNpy(*bytes, path + ": " + e.name);
    if (!array)
      return array.error();
    out[e.name.substr(0, e.name.size() - 4)] = std::move(*array);
  }
  return out;
}

namespace {

Result<NpzDataset> split(const std::string &path, std::map<std::string, NpyArray> &arrays,
                         const std::string &x, const std::string &y) {
  for (const std::string &key : {x, y})
    if (!arrays.count(key)) {
      std::string have;
      for (const auto &[name, _] : arrays)
        have += (have.empty() ? "" : ", ") + name;
      return Error(path + ": no array '" + key + "' (an image .npz holds x_train, y_train, "
                   "x_test, y_test as Keras' mnist.npz; this one holds " +
                   (have.empty() ? std::string("none") : have) + ")");
    }
  NpyArray &images = arrays[x], &labels = arrays[y];
  const std::string where = path + ": " + x;
  NpzDataset d;
  if (images.shape.size() == 3)
    images.shape.push_back(1); // NHW: one channel
  if (images.shape.size() != 4)
    return Error(where + " has shape " + shapeText(images.shape) +
                 "; images are [N, H, W, C] (NHWC) or [N, H, W]");
  d.count = images.shape[0], d.height = images.shape[1], d.width = images.shape[2];
  d.channels = images.shape[3];
  if (d.count == 0 || d.height == 0 || d.width == 0 || d.channels == 0)
    return Error(where + " is empty: shape " + shapeText(images.shape));
  if (d.channels > 4)
    return Error(where + " has " + std::to_string(d.channels) + " channels in its last "
                 "dimension (shape " + shapeText(images.shape) + "): images are NHWC; "
                 "transpose NCHW arrays with x.transpose(0, 2, 3, 1)");
  if (images.dtype == "|u1")
    d.pixels = NpzPixels::u8;
  else if (images.dtype == "<f4")
    d.pixels = NpzPixels::f32;
  else
    return Error(where + " has dtype '" + images.dtype + "'; images are uint8 or float32");
  d.images = std::move(images.data);
  if (d.pixels == NpzPixels::f32) {
    // Checked once here: a NaN or an infinity would otherwise surface as a
    // statistics error ("give --std") or a NaN loss many steps later.
    const int64_t perImage = d.imageSize();
    for (int64_t i = 0; i < d.count * perImage; ++i) {
      float v;
      std::memcpy(&v, d.images.data() + size_t(i) * sizeof v, sizeof v);
      if (std::isfinite(v))
        continue;
      const int64_t example = i / perImage, at = i % perImage;
      const int64_t h = at / (d.width * d.channels), w = at / d.channels % d.width,
                    c = at % d.channels;
      return Error(where + ": example " + std::to_string(example) + " holds " +
                   (std::isnan(v) ? "NaN" : v > 0 ? "+inf" : "-inf") + " (at [" +
                   std::to_string(h) + ", " + std::to_string(w) + ", " + std::to_string(c) +
                   "] of its HWC image); images must be finite");
    }
  }
  if (labels.shape.size() != 1 || labels.shape[0] != d.count)
    return Error(path + ": " + y + " has shape " + shapeText(labels.shape) + "; expected [" +
                 std::to_string(d.count) + "], one label per image of " + x);
  if (labels.dtype.size() < 3 || (labels.dtype[1] != 'u' && labels.dtype[1] != 'i'))
    return Error(path + ": " + y + " has dtype '" + labels.dtype + "'; labels are integers");
  const size_t width = dtypeSize(labels.dtype);
  const bool isSigned = labels.dtype[1] == 'i';
  d.labels.resize(size_t(d.count));
  for (int64_t i = 0; i < d.count; ++i) {
    uint64_t raw = Reader(labels.data, size_t(i) * width).read(width);
    int64_t v = isSigned && width < 8 && (raw >> (8 * width - 1)) ? int64_t(raw) - (int64_t(1) << (8 * width))
                                                                   : int64_t(raw);
    if (v < 0 || v > std::numeric_limits<int32_t>::max())
      return Error(path + ": " + y + "[" + std::to_string(i) + "] is " + std::to_string(v) +
                   "; labels are class indices 0, 1, ...");
    d.labels[size_t(i)] = int32_t(v);
    d.classes = std::max<int64_t>(d.classes, v + 1);
  }
  return d;
}

} // namespace

Result<NpzSplits> loadNpzSplits(const std::string &path) {
  Result<std::map<std::string, NpyArray>> arrays = readNpz(path);
  if (!arrays)
    return arrays.error();
  NpzSplits out;
  Result<NpzDataset> train = split(path, *arrays, "x_train", "y_train");
  if (!train)
    return train.error();
  Result<NpzDataset> test = split(path, *arrays, "x_test", "y_test");
  if (!test)
    return test.error();
  if (train->height != test->height || train->width != test->width ||
      train->channels != test->channels || train->pixels != test->pixels)
    return Error(path + ": x_train holds " + std::to_string(train->height) + "x" +
                 std::to_string(train->width) + "x" + std::to_string(train->channels) +
                 " images, x_test " + std::to_string(test->height) + "x" +
                 std::to_string(test->width) + "x" + std::to_string(test->channels) +
                 (train->pixels != test->pixels ? " of another dtype" : "") +
                 ": the splits must match");
  out.train = std::move(*train);
  out.test = std::move(*test);
  return out;
}

} // namespace rn
