//===- fuzz_files.h - Files for the file-reader fuzz targets ---*- C++ -*-===//
//
// The readers a user's file reaches (.npz, CIFAR, PNG/JPEG, IDX,
// checkpoints) take paths, not bytes: each fuzz target writes its input to
// a file in a folder of its own (under $RN_FUZZ_TMPDIR, else /dev/shm, else
// /tmp; removed at exit) and reads it back. Several targets cut their input
// into parts at kFuzzSeparator (the files of a CIFAR folder, the arrays of
// an archive, images and labels); the dictionaries list it. Shared by the
// seed writer (write_fuzz_seeds.cpp), which builds inputs the same way.
// Build and run: docs/reliability.md.
//
//===----------------------------------------------------------------------===//

#ifndef RN_RUNTIME_CORE_FUZZ_FUZZ_FILES_H
#define RN_RUNTIME_CORE_FUZZ_FUZZ_FILES_H

#include <zlib.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>
#include <sys/stat.h>
#include <vector>

namespace rn::fuzz {

/// Cuts an input into parts (a dictionary entry of every target that uses it).
inline constexpr std::string_view kFuzzSeparator = "@@RN-CUT@@";

/// `input` cut at every kFuzzSeparator (one part when there is none).
inline std::vector<std::string> splitParts(std::string_view input) {
  std::vector<std::string> parts;
  for (;;) {
    size_t at = input.find(kFuzzSeparator);
    parts.emplace_back(input.substr(0, at));
    if (at == std::string_view::npos)
      return parts;
    input.remove_prefix(at + kFuzzSeparator.size());
  }
}

/// `parts` joined with kFuzzSeparator (the seed writer's inverse).
inline std::string joinParts(const std::vector<std::string> &parts) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i)
    out += (i ? std::string(kFuzzSeparator) : std::string()) + parts[i];
  return out;
}

/// This process's scratch folder, made on first use and removed at exit
/// (kept after a crash, which leaves the process through _Exit).
inline const std::string &scratchDir() {
  // Never destroyed: the exit handler below still needs it.
  static const std::string *dir = [] {
    std::string base = "/tmp";
    struct stat st;
    if (const char *env = std::getenv("RN_FUZZ_TMPDIR"))
      base = env;
    else if (::stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode))
      base = "/dev/shm";
    std::string pattern = base + "/rn-fuzz-XXXXXX";
    if (!::mkdtemp(pattern.data())) {
      std::perror("rn fuzz: mkdtemp");
      std::abort();
    }
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(scratchDir(), ec);
    });
    return new std::string(pattern);
  }();
  return *dir;
}

/// Empties the scratch folder (a target that writes several files starts
/// each input from nothing).
inline void clearScratch() {
  std::error_code ec;
  for (const auto &entry : std::filesystem::directory_iterator(scratchDir(), ec))
    std::filesystem::remove_all(entry.path(), ec);
}

/// Writes `bytes` to `name` (which may hold folders) in the scratch
/// folder; returns the path.
inline std::string writeScratch(const std::string &name, std::string_view bytes) {
  const std::filesystem::path path = std::filesystem::path(scratchDir()) / name;
  std::error_code ec;
  std::filesystem::create_directories(path.parent_path(), ec);
  std::FILE *f = std::fopen(path.c_str(), "wb");
  if (!f || std::fwrite(bytes.data(), 1, bytes.size(), f) != bytes.size() || std::fclose(f)) {
    std::perror(("rn fuzz: cannot write " + path.string()).c_str());
    std::abort();
  }
  return path.string();
}

/// `bytes` gzip-compressed (the IDX files' container).
inline std::string gzip(std::string_view bytes) {
  z_stream z{};
  if (deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    std::abort();
  std::string out(deflateBound(&z, uLong(bytes.size())) + 32, '\0');
  z.next_in = reinterpret_cast<Bytef *>(const_cast<char *>(bytes.data()));
  z.avail_in = uInt(bytes.size());
  z.next_out = reinterpret_cast<Bytef *>(out.data());
  z.avail_out = uInt(out.size());
  if (deflate(&z, Z_FINISH) != Z_STREAM_END)
    std::abort();
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

/// `v` as `bytes` little-endian bytes (zeros past the eighth).
inline void putLe(std::string &out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i)
    out += char(i < 8 ? (v >> (8 * i)) & 0xff : 0);
}

/// An .npy file: `dtype` ("|u1", "<f4", ...), `shape`, raw `data`, in
/// format `version` 1 or 2 (a 2- or 4-byte header length).
inline std::string npyFile(const std::string &dtype, const std::vector<int64_t> &shape,
                           const std::string &data, int version = 1, bool fortran = false) {
  std::string dims;
  for (int64_t d : shape)
    dims += std::to_string(d) + ", ";
  if (shape.size() > 1)
    dims.resize(dims.size() - 2);
  std::string header = "{'descr': '" + dtype + "', 'fortran_order': " +
                       (fortran ? "True" : "False") + ", 'shape': (" + dims + "), }";
  const size_t prefix = version == 1 ? 10 : 12;
  header.append(63 - (prefix + header.size()) % 64, ' ');
  header += '\n';
  std::string out = "\x93NUMPY";
  out += char(version);
  out += char(0);
  putLe(out, header.size(), version == 1 ? 2 : 4);
  return out + header + data;
}

/// One entry of zipArchive.
struct ZipMember {
  std::string name, data;
  bool deflate = false; ///< else stored
  /// The sizes saturated in the headers and carried in a zip64 extra
  /// field, as numpy's force_zip64 writes them.
  bool zip64 = false;
};

/// A zip archive as numpy.savez (stored) or numpy.savez_compressed
/// (deflated) writes one: local headers and data, the central directory,
/// its end record; CRC-32s right.
inline std::string zipArchive(const std::vector<ZipMember> &members) {
  std::string out, directory;
  for (const ZipMember &m : members) {
    std::string body = m.data;
    if (m.deflate) {
      z_stream z{};
      deflateInit2(&z, 6, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY);
      body.assign(deflateBound(&z, uLong(m.data.size())) + 16, '\0');
      z.next_in = reinterpret_cast<Bytef *>(const_cast<char *>(m.data.data()));
      z.avail_in = uInt(m.data.size());
      z.next_out = reinterpret_cast<Bytef *>(body.data());
      z.avail_out = uInt(body.size());
      deflate(&z, Z_FINISH);
      body.resize(z.total_out);
      deflateEnd(&z);
    }
    const uint32_t crc =
        uint32_t(crc32(0, reinterpret_cast<const Bytef *>(m.data.data()), uInt(m.data.size())));
    std::string extra;
    if (m.zip64) {
      putLe(extra, 0x0001, 2);
      putLe(extra, 16, 2);
      putLe(extra, m.data.size(), 8);
      putLe(extra, body.size(), 8);
    }
    const uint64_t offset = out.size();
    auto common = [&](std::string &h) {
      putLe(h, m.zip64 ? 45 : 20, 2);  // version needed
      putLe(h, 0, 2);                  // flags
      putLe(h, m.deflate ? 8 : 0, 2);  // method
      putLe(h, 0, 4);                  // time, date
      putLe(h, crc, 4);
      putLe(h, m.zip64 ? 0xffffffffu : body.size(), 4);
      putLe(h, m.zip64 ? 0xffffffffu : m.data.size(), 4);
      putLe(h, m.name.size(), 2);
      putLe(h, extra.size(), 2);
    };
    putLe(out, 0x04034b50, 4);
    common(out);
    out += m.name + extra + body;
    putLe(directory, 0x02014b50, 4);
    putLe(directory, m.zip64 ? 45 : 20, 2); // version made by
    common(directory);
    putLe(directory, 0, 2 + 2 + 2 + 4); // comment, disk, attributes
    putLe(directory, offset, 4);
    directory += m.name + extra;
  }
  const uint64_t directoryOffset = out.size();
  out += directory;
  putLe(out, 0x06054b50, 4);
  putLe(out, 0, 4);
  putLe(out, members.size(), 2);
  putLe(out, members.size(), 2);
  putLe(out, directory.size(), 4);
  putLe(out, directoryOffset, 4);
  putLe(out, 0, 2);
  return out;
}

/// A property every answer of a reader must have; a violation stops the
/// fuzzer as a crash (libFuzzer then keeps the input).
inline void check(bool ok) {
  if (!ok)
    __builtin_trap();
}

/// With RN_FUZZ_VERBOSE set, prints what the reader answered for an input
/// (`-runs=0` over a corpus then shows what each seed reaches).
inline void report(const std::string &what) {
  static const bool verbose = std::getenv("RN_FUZZ_VERBOSE") != nullptr;
  if (verbose)
    std::fprintf(stderr, "rn fuzz: %s\n", what.c_str());
}

/// The .npz keys in the order an array-mode npz input lists its arrays.
inline const std::vector<std::string> &npzKeys() {
  static const std::vector<std::string> keys = {"x_train", "y_train", "x_test", "y_test"};
  return keys;
}

} // namespace rn::fuzz

#endif // RN_RUNTIME_CORE_FUZZ_FUZZ_FILES_H
