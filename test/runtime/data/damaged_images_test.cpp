//===- damaged_images_test.cpp - Damaged images are bad images ------------===//
//
// A JPEG cut to half its bytes, one cut before its scan, a PNG cut inside
// its image data and one whose IDAT checksum is wrong: each is an error
// naming the file, never an image decoded with filler (libjpeg reports a
// premature end as a warning and pads with gray; image_folder.cpp takes its
// warnings as errors).
//
//===----------------------------------------------------------------------===//

#include "runtime/data/image_folder.h"

#include "../temp_dir.h"

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace {

using rn::ImageSize;

class DamagedImagesTest : public rn::test::TempDirTest {
protected:
  void SetUp() override {
    TempDirTest::SetUp();
    if (!rn::imageCodecsAvailable())
      GTEST_SKIP() << "built without libpng/libjpeg-turbo";
  }

  /// A noisy `size` image at `name` (noise: JPEG keeps many bytes of scan).
  std::string image(const std::string &name) {
    std::vector<uint8_t> pixels(size_t(size.pixels()));
    uint32_t state = 12345;
    for (uint8_t &p : pixels)
      p = uint8_t((state = state * 1664525u + 1013904223u) >> 24);
    const std::string path = dir + "/" + name;
    rn::Status st = rn::writeImageFile(path, size, pixels.data());
    EXPECT_TRUE(st.ok()) << (st.ok() ? "" : st.error().message());
    return path;
  }

  static std::string bytesOf(const std::string &path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  static void rewrite(const std::string &path, const std::string &bytes) {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
  }

  /// The error reading `path` whole (header, then pixels), or "read".
  std::string readError(const std::string &path) {
    rn::Result<ImageSize> header = rn::readImageSize(path);
    if (!header)
      return header.error().message();
    std::vector<uint8_t> out(size_t(header->pixels()));
    rn::Status st = rn::decodeImage(path, *header, out.data());
    return st.ok() ? "read" : st.error().message();
  }

  const ImageSize size{32, 32, 3};
};

TEST_F(DamagedImagesTest, TruncatedJpegs) {
  const std::string half = image("half.jpg");
  ASSERT_EQ(readError(half), "read");
  std::string bytes = bytesOf(half);
  rewrite(half, bytes.substr(0, bytes.size() / 2));
  EXPECT_EQ(readError(half), half + ": not a readable JPEG: the data is damaged or cut short "
                                    "(Premature end of JPEG file)");

  const std::string header = image("header.jpg");
  bytes = bytesOf(header);
  const size_t scan = bytes.find("\xff\xda");
  ASSERT_NE(scan, std::string::npos);
  rewrite(header, bytes.substr(0, scan));
  rn::Result<ImageSize> size = rn::readImageSize(header);
  ASSERT_FALSE(size.ok());
  EXPECT_NE(size.error().message().find(header + ": not a readable JPEG"), std::string::npos)
      << size.error().message();
}

TEST_F(DamagedImagesTest, TruncatedAndCorruptPngs) {
  const std::string cut = image("cut.png");
  std::string bytes = bytesOf(cut);
  const size_t idat = bytes.find("IDAT");
  ASSERT_NE(idat, std::string::npos);
  rewrite(cut, bytes.substr(0, idat + 4 + (bytes.size() - idat) / 2));
  EXPECT_NE(readError(cut).find(cut + ": "), std::string::npos);
  EXPECT_NE(readError(cut), "read");

  const std::string crc = image("crc.png");
  bytes = bytesOf(crc);
  const size_t chunk = bytes.find("IDAT");
  const uint32_t length = uint32_t(uint8_t(bytes[chunk - 4])) << 24 |
                          uint32_t(uint8_t(bytes[chunk - 3])) << 16 |
                          uint32_t(uint8_t(bytes[chunk - 2])) << 8 | uint8_t(bytes[chunk - 1]);
  bytes[chunk + 4 + length] = char(~bytes[chunk + 4 + length]); // the chunk's CRC-32
  rewrite(crc, bytes);
  EXPECT_EQ(readError(crc), crc + ": the PNG does not decode: IDAT: CRC error");
}

} // namespace
