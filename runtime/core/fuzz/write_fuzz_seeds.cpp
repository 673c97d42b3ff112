//===- write_fuzz_seeds.cpp - Seeds of the file-reader fuzz targets -------===//
//
//   rn-fuzz-seeds OUT
//
// Writes small valid inputs of every file-reader fuzz target to
// OUT/{npz,cifar,image,idx,checkpoint}/, in each target's input layout
// (flags bytes and kFuzzSeparator as the targets' file comments say): .npz
// archives stored and deflated and their arrays as separate .npy files,
// CIFAR-10 and CIFAR-100 files and folders, PNGs of every color type
// libpng's simplified API reads (gray, gray+alpha, RGB, RGBA, palette,
// 16-bit, interlaced) and JPEGs of several encodings (grayscale, 4:2:0 and
// 4:4:4 color, progressive, restart markers, arithmetic coding, CMYK),
// IDX images and labels, and rn-run checkpoints. The checked-in corpora
// (runtime/data/fuzz/corpus, runtime/train/fuzz/corpus) start from these;
// docs/reliability.md.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/fuzz/fuzz_files.h"
#include "runtime/core/safetensors.h"
#include "runtime/data/cifar_dataset.h"
#include "runtime/data/idx_dataset.h"
#include "runtime/data/image_folder.h"

#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <jpeglib.h>
#include <png.h>

namespace {

namespace fs = std::filesystem;
using rn::fuzz::joinParts;
using rn::fuzz::putLe;

std::string outDir;

void save(const std::string &name, const std::string &bytes) {
  const fs::path path = fs::path(outDir) / name;
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << bytes;
}

/// A small deterministic pattern: byte i of `n`, with `seed`.
std::string pattern(size_t n, unsigned seed, unsigned modulo = 256) {
  std::string s(n, '\0');
  unsigned x = seed * 2654435761u + 12345u;
  for (size_t i = 0; i < n; ++i) {
    x = x * 1103515245u + 12345u;
    s[i] = char((x >> 16) % modulo);
  }
  return s;
}

// --- .npz ---------------------------------------------------------------

using rn::fuzz::npyFile;

std::string labels(const std::vector<int64_t> &values, int width) {
  std::string s;
  for (int64_t v : values)
    putLe(s, uint64_t(v), width);
  return s;
}

std::string floats(size_t n, unsigned seed) {
  std::string s;
  for (size_t i = 0; i < n; ++i) {
    float v = float((seed * 31 + i * 7) % 255) / 255.0f;
    char b[4];
    std::memcpy(b, &v, 4);
    s.append(b, 4);
  }
  return s;
}

void npzSeeds() {
  // 3 training and 2 test 4x4 gray uint8 images (NHW), int64 labels.
  std::vector<std::string> mnist = {
      npyFile("|u1", {3, 4, 4}, pattern(48, 1)), npyFile("<i8", {3}, labels({1, 0, 2}, 8)),
      npyFile("|u1", {2, 4, 4}, pattern(32, 2)), npyFile("<i8", {2}, labels({2, 1}, 8))};
  // 2 + 1 RGB 3x2 float32 images (NHWC), uint8 and int32 labels, .npy v2.
  std::vector<std::string> color = {
      npyFile("<f4", {2, 3, 2, 3}, floats(36, 3), 2), npyFile("|u1", {2}, labels({0, 1}, 1), 2),
      npyFile("<f4", {1, 3, 2, 3}, floats(18, 4), 2), npyFile("<i4", {1}, labels({1}, 4), 2)};
  for (bool deflate : {false, true}) {
    for (const auto &[name, arrays] : {std::pair{"mnist", mnist}, std::pair{"color", color}}) {
      std::vector<rn::fuzz::ZipMember> members;
      for (size_t i = 0; i < arrays.size(); ++i)
        members.push_back({rn::fuzz::npzKeys()[i] + ".npy", arrays[i], deflate});
      save(std::string("npz/") + name + (deflate ? "-deflated" : "-stored") + ".npz",
           rn::fuzz::zipArchive(members));
    }
  }
  // Array mode: the .npy files themselves.
  save("npz/mnist-arrays.bin", joinParts(mnist));
  save("npz/color-arrays.bin", joinParts(color));
}

// --- CIFAR --------------------------------------------------------------

std::string cifarRecords(int count, bool hundred, unsigned seed) {
  std::string s;
  for (int r = 0; r < count; ++r) {
    if (hundred)
      s += char((seed + r) % 20);
    s += char((seed * 7 + r) % (hundred ? 100 : 10));
    s += pattern(rn::kCifarImageBytes, seed * 16 + r);
  }
  return s;
}

void cifarSeeds() {
  auto seed = [](const std::string &name, uint8_t flags, const std::vector<std::string> &files) {
    save("cifar/" + name, std::string(1, char(flags)) + joinParts(files));
  };
  seed("cifar10-file", 0, {cifarRecords(2, false, 1)});
  seed("cifar10-files", 0, {cifarRecords(1, false, 2), cifarRecords(2, false, 3)});
  seed("cifar100-fine", 1, {cifarRecords(2, true, 4)});
  seed("cifar100-coarse", 3, {cifarRecords(1, true, 5)});
  std::vector<std::string> ten;
  for (unsigned k = 0; k < 6; ++k)
    ten.push_back(cifarRecords(1, false, 10 + k));
  seed("cifar10-folder", 4, ten);
  seed("cifar10-subfolder", 4 | 8, ten);
  seed("cifar100-folder", 5, {cifarRecords(1, true, 20), cifarRecords(1, true, 21)});
}

// --- PNG and JPEG -------------------------------------------------------

std::string tmpFile(const std::string &name) { return (fs::path(outDir) / name).string(); }

/// A PNG through libpng's simplified API in `format` (with a colormap for
/// the colormapped formats).
void pngSimple(const std::string &name, uint32_t width, uint32_t height, uint32_t format) {
  png_image image;
  std::memset(&image, 0, sizeof image);
  image.version = PNG_IMAGE_VERSION;
  image.width = width;
  image.height = height;
  image.format = format;
  std::string pixels = pattern(PNG_IMAGE_SIZE(image), width * 31 + format,
                               (format & PNG_FORMAT_FLAG_COLORMAP) ? 4 : 256);
  std::string colormap;
  if (format & PNG_FORMAT_FLAG_COLORMAP) {
    image.colormap_entries = 4;
    colormap = pattern(PNG_IMAGE_COLORMAP_SIZE(image), 99);
  }
  const std::string path = tmpFile("image/" + name);
  if (!png_image_write_to_file(&image, path.c_str(), 0, pixels.data(), 0,
                               colormap.empty() ? nullptr : colormap.data())) {
    std::cerr << name << ": " << image.message << "\n";
    std::exit(1);
  }
}

/// An interlaced (Adam7) 8-bit RGB PNG through libpng's full API.
void pngInterlaced(const std::string &name, uint32_t width, uint32_t height) {
  const std::string path = tmpFile("image/" + name);
  std::FILE *f = std::fopen(path.c_str(), "wb");
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
  png_infop info = png_create_info_struct(png);
  if (setjmp(png_jmpbuf(png))) {
    std::cerr << name << ": libpng failed\n";
    std::exit(1);
  }
  png_init_io(png, f);
  png_set_IHDR(png, info, width, height, 8, PNG_COLOR_TYPE_RGB, PNG_INTERLACE_ADAM7,
               PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  png_write_info(png, info);
  std::string pixels = pattern(size_t(width) * height * 3, 5);
  std::vector<png_bytep> rows;
  for (uint32_t y = 0; y < height; ++y)
    rows.push_back(reinterpret_cast<png_bytep>(pixels.data()) + y * width * 3);
  png_write_image(png, rows.data());
  png_write_end(png, nullptr);
  png_destroy_write_struct(&png, &info);
  std::fclose(f);
}

struct JpegOptions {
  int components = 3; ///< 1, 3 or 4 (CMYK)
  bool progressive = false, arithmetic = false, optimize = false, subsample = true;
  unsigned restartRows = 0;
  int quality = 90;
};

void jpegFail(j_common_ptr info) {
  char message[JMSG_LENGTH_MAX];
  (*info->err->format_message)(info, message);
  std::cerr << "libjpeg: " << message << "\n";
  std::exit(1);
}

void jpegFile(const std::string &name, unsigned width, unsigned height, const JpegOptions &o) {
  const std::string path = tmpFile("image/" + name);
  std::FILE *f = std::fopen(path.c_str(), "wb");
  jpeg_compress_struct info;
  jpeg_error_mgr err;
  info.err = jpeg_std_error(&err);
  err.error_exit = jpegFail;
  jpeg_create_compress(&info);
  jpeg_stdio_dest(&info, f);
  info.image_width = width;
  info.image_height = height;
  info.input_components = o.components;
  info.in_color_space = o.components == 1 ? JCS_GRAYSCALE : o.components == 3 ? JCS_RGB : JCS_CMYK;
  jpeg_set_defaults(&info);
  jpeg_set_quality(&info, o.quality, TRUE);
  if (o.progressive)
    jpeg_simple_progression(&info);
  info.arith_code = o.arithmetic ? TRUE : FALSE;
  info.optimize_coding = o.optimize ? TRUE : FALSE;
  info.restart_in_rows = int(o.restartRows);
  if (o.components == 3 && !o.subsample)
    for (int c = 0; c < 3; ++c)
      info.comp_info[c].h_samp_factor = info.comp_info[c].v_samp_factor = 1;
  jpeg_start_compress(&info, TRUE);
  std::string pixels = pattern(size_t(width) * height * size_t(o.components), width + height);
  while (info.next_scanline < info.image_height) {
    JSAMPROW row = reinterpret_cast<JSAMPROW>(pixels.data()) +
                   size_t(info.next_scanline) * width * size_t(o.components);
    jpeg_write_scanlines(&info, &row, 1);
  }
  jpeg_finish_compress(&info);
  jpeg_destroy_compress(&info);
  std::fclose(f);
}

void imageSeeds() {
  // Through the runtime's own writer, as the tests write them.
  for (const auto &[name, size] : {std::pair{"gray.png", rn::ImageSize{5, 4, 1}},
                                   std::pair{"rgb.png", rn::ImageSize{6, 7, 3}},
                                   std::pair{"gray.jpg", rn::ImageSize{9, 8, 1}},
                                   std::pair{"rgb.jpg", rn::ImageSize{17, 9, 3}}}) {
    std::string pixels = pattern(size_t(size.pixels()), unsigned(size.pixels()));
    if (rn::Status st = rn::writeImageFile(tmpFile(std::string("image/") + name), size,
                                           reinterpret_cast<const uint8_t *>(pixels.data()));
        !st) {
      std::cerr << st.error().message() << "\n";
      std::exit(1);
    }
  }
  pngSimple("gray-alpha.png", 4, 3, PNG_FORMAT_GA);
  pngSimple("rgba.png", 5, 3, PNG_FORMAT_RGBA);
  pngSimple("gray16.png", 3, 4, PNG_FORMAT_LINEAR_Y);
  pngSimple("palette.png", 6, 5, PNG_FORMAT_RGB_COLORMAP);
  pngInterlaced("interlaced.png", 9, 10);
  JpegOptions o;
  o.subsample = false;
  jpegFile("rgb444.jpg", 10, 7, o);
  o = {};
  o.progressive = true;
  jpegFile("progressive.jpg", 16, 12, o);
  o = {};
  o.restartRows = 1;
  o.optimize = true;
  jpegFile("restart.jpg", 20, 18, o);
  o = {};
  o.arithmetic = true;
  jpegFile("arithmetic.jpg", 8, 8, o);
  o = {};
  o.components = 1;
  o.progressive = true;
  jpegFile("gray-progressive.jpg", 11, 5, o);
  o = {};
  o.components = 4;
  jpegFile("cmyk.jpg", 8, 8, o);
}

// --- IDX ----------------------------------------------------------------

std::string bigEndian(uint32_t v) {
  std::string s;
  for (int i = 3; i >= 0; --i)
    s += char((v >> (8 * i)) & 0xff);
  return s;
}

std::string idxImages(uint32_t count, uint32_t rows, uint32_t cols, unsigned seed) {
  return bigEndian(rn::kIdxImagesMagic) + bigEndian(count) + bigEndian(rows) + bigEndian(cols) +
         pattern(size_t(count) * rows * cols, seed);
}

std::string idxLabels(uint32_t count, unsigned seed) {
  return bigEndian(rn::kIdxLabelsMagic) + bigEndian(count) + pattern(count, seed, 10);
}

void idxSeeds() {
  auto seed = [](const std::string &name, uint8_t flags, const std::vector<std::string> &files) {
    save("idx/" + name, std::string(1, char(flags)) + joinParts(files));
  };
  seed("images", 0, {idxImages(2, 3, 4, 1)});
  seed("labels", 0, {idxLabels(3, 2)});
  seed("dataset", 0, {idxImages(3, 4, 4, 3), idxLabels(3, 4)});
  seed("dataset-limit", 2 << 1, {idxImages(3, 2, 5, 5), idxLabels(3, 6)});
  seed("splits", 0,
       {idxImages(3, 4, 3, 7), idxLabels(3, 8), idxImages(2, 4, 3, 9), idxLabels(2, 10)});
  seed("dataset-gzip", 1,
       {rn::fuzz::gzip(idxImages(2, 3, 3, 11)), rn::fuzz::gzip(idxLabels(2, 12))});
}

// --- checkpoints --------------------------------------------------------

void checkpointSeeds() {
  std::string weight = floats(6, 1), bias = floats(3, 2), moment = floats(6, 3);
  std::vector<rn::TensorData> tensors = {
      {"fc.weight", rn::DType::f32, {2, 3}, weight.data(), weight.size()},
      {"fc.bias", rn::DType::f32, {3}, bias.data(), bias.size()},
      {"momentum.fc.weight", rn::DType::f32, {2, 3}, moment.data(), moment.size()}};
  std::map<std::string, std::string> meta = {
      {"rn.checkpoint", "1"}, {"model", "mlp"},         {"epoch", "2"},
      {"step", "6"},          {"steps_per_epoch", "3"}, {"batch", "4"},
      {"seed", "7"},          {"lr", "0.100000"},       {"epochs", "5"},
      {"rn.state" /* kCheckpointStateKey */, "[{\"name\": \"fc.weight\", \"role\": \"parameter\"}, "
                              "{\"name\": \"fc.bias\", \"role\": \"parameter\"}, "
                              "{\"name\": \"momentum.fc.weight\", \"role\": \"momentum\", "
                              "\"of\": \"fc.weight\"}]"}};
  auto write = [](const std::string &name, const std::vector<rn::TensorData> &t,
                  const std::map<std::string, std::string> &m) {
    rn::Result<std::string> file = rn::serializeSafetensors(t, m);
    if (!file) {
      std::cerr << file.error().message() << "\n";
      std::exit(1);
    }
    save("checkpoint/" + name, *file);
    return *file;
  };
  const std::string whole = write("epoch-end.safetensors", tensors, meta);
  std::map<std::string, std::string> mid = meta;
  mid["step"] = "7";
  write("mid-epoch.safetensors", tensors, mid);
  std::map<std::string, std::string> python = meta;
  python.erase("epoch");
  python.erase("steps_per_epoch");
  write("no-epoch.safetensors", {tensors[1]}, python);
  // Other element types (not restorable, but read).
  std::string half = pattern(8, 4), i32 = pattern(8, 5), u8 = pattern(3, 6);
  write("dtypes.safetensors",
        {{"h", rn::DType::f16, {4}, half.data(), half.size()},
         {"i", rn::DType::i32, {2}, i32.data(), i32.size()},
         {"b", rn::DType::i1, {3}, u8.data(), u8.size()}},
        meta);
  // Header mode: the JSON header, a NUL, the data.
  uint64_t length = 0;
  for (int i = 0; i < 8; ++i)
    length |= uint64_t(uint8_t(whole[size_t(i)])) << (8 * i);
  std::string header = whole.substr(8, size_t(length));
  while (!header.empty() && header.back() == ' ')
    header.pop_back();
  save("checkpoint/header-mode.bin", header + std::string(1, '\0') + whole.substr(8 + length));
}

} // namespace

int main(int argc, char **argv) {
  if (argc != 2) {
    std::cerr << "usage: rn-fuzz-seeds OUT\n";
    return 2;
  }
  outDir = argv[1];
  fs::create_directories(fs::path(outDir) / "image");
  npzSeeds();
  cifarSeeds();
  imageSeeds();
  idxSeeds();
  checkpointSeeds();
  std::cout << "seeds written to " << outDir << "\n";
  return 0;
}
