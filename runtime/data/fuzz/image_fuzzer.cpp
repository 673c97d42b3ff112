//===- image_fuzzer.cpp - libFuzzer target for PNG and JPEG decoding ------===//
//
// An input is an image file: a JPEG when it starts with 0xFF (written as
// image.jpg), else a PNG (image.png); the reader picks the codec by the
// extension, as for the files of an image folder. The target does what the
// image folder source does with a file: readImageSize from the header,
// a buffer of that size, decodeImage into it; then decodeImage with a
// larger size than the header's, which must be refused before a pixel is
// written. Every input must give an Error or a sane size; never a crash,
// undefined behavior, a read or write outside the buffer, or a buffer
// out of proportion to what a data set holds. Build and run:
// docs/reliability.md.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/fuzz/fuzz_files.h"
#include "runtime/data/image_folder.h"

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

using rn::fuzz::check;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const bool jpeg = size > 0 && data[0] == 0xFF;
  const std::string path = rn::fuzz::writeScratch(
      jpeg ? "image.jpg" : "image.png",
      std::string_view(reinterpret_cast<const char *>(data), size));
  rn::Result<rn::ImageSize> header = rn::readImageSize(path);
  if (!header)
    return rn::fuzz::report(header.error().message()), 0;
  check(header->height > 0 && header->width > 0);
  check(header->channels == 1 || header->channels == 3);
  check(header->height * header->width <= rn::kMaxImagePixels);
  std::vector<uint8_t> pixels(size_t(header->pixels()));
  rn::Status decoded = rn::decodeImage(path, *header, pixels.data());
  rn::fuzz::report(decoded ? "ok: " + header->str() : decoded.error().message());
  rn::ImageSize larger = *header;
  larger.width += 1;
  check(!rn::decodeImage(path, larger, pixels.data()).ok());
  return 0;
}
