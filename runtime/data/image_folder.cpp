//===- image_folder.cpp - Folders of PNG and JPEG images by class ---------===//
//
// See image_folder.h.
//
//===----------------------------------------------------------------------===//

#include "runtime/data/image_folder.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <optional>
#include <set>

#if RN_HAVE_IMAGE_CODECS
#include <csetjmp>
#include <jpeglib.h>
#include <png.h>
#endif

namespace rn {

namespace fs = std::filesystem;

namespace {

std::string lower(std::string s) {
  for (char &c : s)
    if (c >= 'A' && c <= 'Z')
      c = char(c - 'A' + 'a');
  return s;
}

bool isJpegName(const std::string &path) {
  std::string ext = lower(fs::path(path).extension().string());
  return ext == ".jpg" || ext == ".jpeg";
}

bool isImageName(const std::string &path) {
  return isJpegName(path) || lower(fs::path(path).extension().string()) == ".png";
}

bool hidden(const fs::path &p) {
  std::string name = p.filename().string();
  return !name.empty() && name[0] == '.';
}

/// The class folders of `split`, sorted byte-wise.
Result<std::vector<std::string>> classFolders(const fs::path &split) {
  std::error_code ec;
  std::vector<std::string> out;
  fs::directory_iterator it(split, ec), end;
  if (ec)
    return Error(split.string() + ": cannot list the folder: " + ec.message());
  for (; it != end; it.increment(ec)) {
    if (ec)
      return Error(split.string() + ": cannot list the folder: " + ec.message());
    if (!hidden(it->path()) && it->is_directory(ec))
      out.push_back(it->path().filename().string());
  }
  std::sort(out.begin(), out.end());
  if (out.empty())
    return Error(split.string() + ": no class folders (an image folder holds " +
                 "train/<class>/*.png|jpg|jpeg and val/<class>/...)");
  return out;
}

/// The images of one split, class by class.
Result<std::vector<ImageFile>> listSplit(const fs::path &split,
                                         const std::vector<std::string> &classes) {
  std::vector<ImageFile> out;
  for (size_t c = 0; c < classes.size(); ++c) {
    const fs::path dir = split / classes[c];
    std::error_code ec;
    std::vector<std::string> names;
    fs::directory_iterator it(dir, ec), end;
    if (ec)
      return Error(dir.string() + ": cannot list the folder: " + ec.message());
    for (; it != end; it.increment(ec)) {
      if (ec)
        return Error(dir.string() + ": cannot list the folder: " + ec.message());
      if (!hidden(it->path()) && isImageName(it->path().string()) && !it->is_directory(ec))
        names.push_back(it->path().filename().string());
    }
    if (names.empty())
      return Error(dir.string() + ": no images in the class folder (.png, .jpg or .jpeg files)");
    std::sort(names.begin(), names.end());
    for (const std::string &name : names)
      out.push_back({(dir / name).string(), int32_t(c)});
  }
  return out;
}

std::string joined(const std::vector<std::string> &names) {
  std::string out;
  for (const std::string &n : names)
    out += (out.empty() ? "'" : ", '") + n + "'";
  return out;
}

} // namespace

std::string ImageSize::str() const {
  return std::to_string(height) + "x" + std::to_string(width) + "x" + std::to_string(channels);
}

bool isImageFolder(const std::string &root) {
  std::error_code ec;
  return fs::is_directory(fs::path(root) / "train", ec);
}

Result<ImageFolder> listImageFolder(const std::string &root) {
  ImageFolder out;
  out.root = root;
  std::error_code ec;
  const fs::path base(root);
  if (!fs::is_directory(base / "train", ec))
    return Error(root + ": no train folder (an image folder holds train/<class>/... and "
                        "val/<class>/...)");
  if (fs::is_directory(base / "val", ec))
    out.testSplit = "val";
  else if (fs::is_directory(base / "test", ec))
    out.testSplit = "test";
  else
    return Error(root + ": no val or test folder beside train (an image folder holds "
                        "train/<class>/... and val/<class>/...)");
  Result<std::vector<std::string>> classes = classFolders(base / "train");
  if (!classes)
    return classes.error();
  Result<std::vector<std::string>> testClasses = classFolders(base / out.testSplit);
  if (!testClasses)
    return testClasses.error();
  if (*classes != *testClasses) {
    std::vector<std::string> missing, extra;
    std::set_difference(classes->begin(), classes->end(), testClasses->begin(),
                        testClasses->end(), std::back_inserter(missing));
    std::set_difference(testClasses->begin(), testClasses->end(), classes->begin(),
                        classes->end(), std::back_inserter(extra));
    std::string what = root + ": the class folders of " + out.testSplit + " differ from train's:";
    if (!missing.empty())
      what += " " + out.testSplit + " lacks " + joined(missing);
    if (!extra.empty())
      what += std::string(missing.empty() ? "" : ";") + " " + out.testSplit + " has " +
              joined(extra) + ", which train has not";
    return Error(what);
  }
  out.classes = std::move(*classes);
  Result<std::vector<ImageFile>> train = listSplit(base / "train", out.classes);
  if (!train)
    return train.error();
  Result<std::vector<ImageFile>> test = listSplit(base / out.testSplit, out.classes);
  if (!test)
    return test.error();
  out.train = std::move(*train);
  out.test = std::move(*test);
  return out;
}

#if RN_HAVE_IMAGE_CODECS

bool imageCodecsAvailable() { return true; }

namespace {

/// libjpeg's errors longjmp back to the caller with the library's message.
struct JpegError {
  jpeg_error_mgr mgr;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

void jpegFail(j_common_ptr info) {
  JpegError *err = reinterpret_cast<JpegError *>(info->err);
  (*info->err->format_message)(info, err->message);
  std::longjmp(err->jump, 1);
}

/// libjpeg reports a file cut short ("Premature end of JPEG file") or
/// damaged entropy data ("Corrupt JPEG data: ...") as a warning and goes on
/// with gray filler: an image that would train on garbage. Every warning
/// (msg_level -1) is an error here; trace messages (>= 0) are not.
void jpegWarn(j_common_ptr info, int level) {
  if (level >= 0)
    return;
  JpegError *err = reinterpret_cast<JpegError *>(info->err);
  char message[JMSG_LENGTH_MAX];
  (*info->err->format_message)(info, message);
  std::snprintf(err->message, sizeof err->message, "the data is damaged or cut short (%s)",
                message);
  std::longjmp(err->jump, 1);
}

struct File {
  std::FILE *f = nullptr;
  explicit File(const std::string &path, const char *mode) : f(std::fopen(path.c_str(), mode)) {}
  ~File() {
    if (f)
      std::fclose(f);
  }
};

/// An error naming `path` when an image of `size` has more pixels than
/// kMaxImagePixels (checked before anything is allocated for them).
std::optional<Error> tooLarge(const std::string &path, const ImageSize &size) {
  if (size.height * size.width <= kMaxImagePixels)
    return std::nullopt;
  return Error(path + ": " + std::to_string(size.height) + "x" + std::to_string(size.width) +
               " pixels (HxW), more than the " + std::to_string(kMaxImagePixels) +
               " an image may have (a damaged header, or an image to shrink first)");
}

/// Reads the JPEG at `path`: its size, and its pixels to `out` when given
/// (checked against `want`).
Result<ImageSize> jpeg(const std::string &path, const ImageSize *want, uint8_t *out) {
  File file(path, "rb");
  if (!file.f)
    return Error(path + ": cannot open: " + std::strerror(errno));
  jpeg_decompress_struct info;
  JpegError err;
  info.err = jpeg_std_error(&err.mgr);
  err.mgr.error_exit = jpegFail;
  err.mgr.emit_message = jpegWarn;
  err.message[0] = '\0';
  // Nothing with a destructor lives between setjmp and a longjmp to it.
  if (setjmp(err.jump)) {
    jpeg_destroy_decompress(&info);
    return Error(path + ": not a readable JPEG: " + err.message);
  }
  jpeg_create_decompress(&info);
  jpeg_stdio_src(&info, file.f);
  jpeg_read_header(&info, TRUE);
  ImageSize size;
  size.height = info.image_height;
  size.width = info.image_width;
  const bool gray = info.jpeg_color_space == JCS_GRAYSCALE;
  if (!gray && info.num_components != 3) {
    jpeg_destroy_decompress(&info);
    return Error(path + ": a JPEG with " + std::to_string(info.num_components) +
                 " components (CMYK?): only grayscale and color (YCbCr/RGB) JPEGs are read");
  }
  size.channels = gray ? 1 : 3;
  if (std::optional<Error> error = tooLarge(path, size)) {
    jpeg_destroy_decompress(&info);
    return *error;
  }
  if (!out) {
    jpeg_destroy_decompress(&info);
    return size;
  }
  if (!(size == *want)) {
    jpeg_destroy_decompress(&info);
    return Error(path + ": " + size.str() + ", expected " + want->str());
  }
  info.out_color_space = gray ? JCS_GRAYSCALE : JCS_RGB;
  jpeg_start_decompress(&info);
  const size_t stride = size_t(size.width * size.channels);
  while (info.output_scanline < info.output_height) {
    JSAMPROW row = out + size_t(info.output_scanline) * stride;
    jpeg_read_scanlines(&info, &row, 1);
  }
  jpeg_finish_decompress(&info);
  jpeg_destroy_decompress(&info);
  return size;
}

/// Whether a libpng warning is about the image data itself (IDAT, its
/// compression, its length or checksum) rather than an ancillary chunk.
bool pngPixelsDamaged(const char *message) {
  const std::string text = message;
  for (const char *sign : {"IDAT", "image data", "CRC", "compressed", "zlib", "inflate",
                           "Read Error", "end of file", "truncated"})
    if (text.find(sign) != std::string::npos)
      return true;
  return false;
}

Result<ImageSize> png(const std::string &path, const ImageSize *want, uint8_t *out) {
  png_image image;
  std::memset(&image, 0, sizeof image);
  image.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_file(&image, path.c_str()))
    return Error(path + ": not a readable PNG: " + image.message);
  ImageSize size;
  size.height = image.height;
  size.width = image.width;
  size.channels = (image.format & PNG_FORMAT_FLAG_COLOR) ? 3 : 1;
  if (std::optional<Error> error = tooLarge(path, size)) {
    png_image_free(&image);
    return *error;
  }
  if (!out) {
    png_image_free(&image);
    return size;
  }
  if (!(size == *want)) {
    png_image_free(&image);
    return Error(path + ": " + size.str() + ", expected " + want->str());
  }
  image.format = size.channels == 1 ? PNG_FORMAT_GRAY : PNG_FORMAT_RGB;
  // Alpha is composited onto the buffer's contents: black.
  std::memset(out, 0, size_t(size.pixels()));
  if (!png_image_finish_read(&image, nullptr, out, 0, nullptr)) {
    std::string message = image.message;
    png_image_free(&image);
    return Error(path + ": the PNG does not decode: " + message);
  }
  // libpng's simplified API reads past some damage to the pixel data with
  // only a warning ("Not enough image data", a CRC or zlib error it
  // tolerated): such an image is as bad as one that fails. Warnings about
  // ancillary chunks (an sRGB profile, text) leave the pixels whole.
  if ((image.warning_or_error & PNG_IMAGE_WARNING) && pngPixelsDamaged(image.message))
    return Error(path + ": the PNG's image data is damaged or cut short: " +
                 std::string(image.message));
  return size;
}

/// libjpeg's output to a memory buffer would need jpeg_mem_dest; a file is
/// what is wanted anyway.
Status writeJpeg(const std::string &path, const ImageSize &size, const uint8_t *pixels,
                 int quality) {
  File file(path, "wb");
  if (!file.f)
    return Error(path + ": cannot create: " + std::strerror(errno));
  jpeg_compress_struct info;
  JpegError err;
  info.err = jpeg_std_error(&err.mgr);
  err.mgr.error_exit = jpegFail;
  err.message[0] = '\0';
  if (setjmp(err.jump)) {
    jpeg_destroy_compress(&info);
    return Error(path + ": cannot write the JPEG: " + err.message);
  }
  jpeg_create_compress(&info);
  jpeg_stdio_dest(&info, file.f);
  info.image_width = JDIMENSION(size.width);
  info.image_height = JDIMENSION(size.height);
  info.input_components = int(size.channels);
  info.in_color_space = size.channels == 1 ? JCS_GRAYSCALE : JCS_RGB;
  jpeg_set_defaults(&info);
  jpeg_set_quality(&info, quality, TRUE);
  jpeg_start_compress(&info, TRUE);
  const size_t stride = size_t(size.width * size.channels);
  while (info.next_scanline < info.image_height) {
    JSAMPROW row = const_cast<uint8_t *>(pixels) + size_t(info.next_scanline) * stride;
    jpeg_write_scanlines(&info, &row, 1);
  }
  jpeg_finish_compress(&info);
  jpeg_destroy_compress(&info);
  return Status::success();
}

} // namespace

Result<ImageSize> readImageSize(const std::string &path) {
  return isJpegName(path) ? jpeg(path, nullptr, nullptr) : png(path, nullptr, nullptr);
}

Status decodeImage(const std::string &path, const ImageSize &size, uint8_t *out) {
  Result<ImageSize> r = isJpegName(path) ? jpeg(path, &size, out) : png(path, &size, out);
  if (!r)
    return r.error();
  return Status::success();
}

Status writeImageFile(const std::string &path, const ImageSize &size, const uint8_t *pixels,
                      int quality) {
  if (size.channels != 1 && size.channels != 3)
    return Error(path + ": images have 1 or 3 channels, not " + std::to_string(size.channels));
  if (isJpegName(path))
    return writeJpeg(path, size, pixels, quality);
  png_image image;
  std::memset(&image, 0, sizeof image);
  image.version = PNG_IMAGE_VERSION;
  image.width = png_uint_32(size.width);
  image.height = png_uint_32(size.height);
  image.format = size.channels == 1 ? PNG_FORMAT_GRAY : PNG_FORMAT_RGB;
  if (!png_image_write_to_file(&image, path.c_str(), 0, pixels, 0, nullptr))
    return Error(path + ": cannot write the PNG: " + image.message);
  return Status::success();
}

#else // !RN_HAVE_IMAGE_CODECS

bool imageCodecsAvailable() { return false; }

namespace {
Error noCodecs(const std::string &path) {
  return Error(path + ": cannot read images: this build of RN was built without "
                      "libpng/libjpeg-turbo (Debian: libpng-dev, libjpeg62-turbo-dev)");
}
} // namespace

Result<ImageSize> readImageSize(const std::string &path) { return noCodecs(path); }

Status decodeImage(const std::string &path, const ImageSize &, uint8_t *) {
  return noCodecs(path);
}

Status writeImageFile(const std::string &path, const ImageSize &, const uint8_t *, int) {
  return noCodecs(path);
}

#endif

} // namespace rn
