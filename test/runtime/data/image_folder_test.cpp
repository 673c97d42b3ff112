//===- image_folder_test.cpp - Image folder tests --------------------------===//
//
// Folders built here with PNGs and JPEGs written through the runtime's own
// writeImageFile (libpng, libjpeg-turbo): classes sorted byte-wise and
// files by name, other files ignored, `test` for a missing `val`; every
// layout problem named; PNG bytes decoded exactly and JPEGs within their
// loss; one size for all images, the first that differs named with both
// sizes; normalization and computed statistics; an image that passes its
// header check but fails to decode is an error of fillBatch naming it; a
// header promising more than kMaxImagePixels is refused; and
// rn-run --data's detection. The Fashion-MNIST PNG folder that trains as
// its .npz does bit for bit is test/tools/rn-run/image-folder.mlir.
//
//===----------------------------------------------------------------------===//

#include "runtime/data/image_folder.h"
#include "runtime/train/data_dir.h"
#include "runtime/train/image_folder_source.h"

#include "../temp_dir.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace {

using rn::ImageSize;

class ImageFolderTest : public rn::test::TempDirTest {
protected:
  void SetUp() override {
    TempDirTest::SetUp();
    if (!rn::imageCodecsAvailable())
      GTEST_SKIP() << "built without libpng/libjpeg-turbo";
  }

  /// A `size` image at `name` whose pixels are `seed` + their index.
  std::string image(const std::string &name, ImageSize size, int seed = 0) {
    std::filesystem::path path = std::filesystem::path(dir) / name;
    std::filesystem::create_directories(path.parent_path());
    std::vector<uint8_t> pixels(size_t(size.pixels()));
    for (size_t i = 0; i < pixels.size(); ++i)
      pixels[i] = uint8_t(seed + int(i) * 7);
    rn::Status st = rn::writeImageFile(path.string(), size, pixels.data());
    EXPECT_TRUE(st.ok()) << (st.ok() ? "" : st.error().message());
    return path.string();
  }

  std::string error(const std::string &root) {
    rn::Result<rn::train::ImageFolderSources> r =
        rn::train::loadImageFolderSources(root, rn::train::ImageFolderSourceOptions());
    return r ? std::string("no error") : r.error().message();
  }

  const ImageSize gray{4, 3, 1};
};

TEST_F(ImageFolderTest, ListsClassesSortedAndFilesByName) {
  for (const char *split : {"train", "val"}) {
    std::string s = split;
    image(s + "/cat/b.png", gray);
    image(s + "/cat/a.PNG", gray);
    image(s + "/Zebra/x.jpg", gray);
    image(s + "/ant/10.jpeg", gray);
    image(s + "/ant/9.png", gray);
    write(s + "/ant/notes.txt", "not an image");
    write(s + "/ant/.hidden.png", "ignored");
    write(s + "/README", "beside the classes");
  }
  rn::Result<rn::ImageFolder> folder = rn::listImageFolder(dir);
  ASSERT_TRUE(folder) << folder.error().message();
  EXPECT_EQ(folder->testSplit, "val");
  EXPECT_EQ(folder->classes, (std::vector<std::string>{"Zebra", "ant", "cat"}));
  std::vector<std::string> names;
  std::vector<int32_t> labels;
  for (const rn::ImageFile &f : folder->train) {
    names.push_back(std::filesystem::path(f.path).lexically_relative(dir).string());
    labels.push_back(f.label);
  }
  EXPECT_EQ(names, (std::vector<std::string>{"train/Zebra/x.jpg", "train/ant/10.jpeg",
                                             "train/ant/9.png", "train/cat/a.PNG",
                                             "train/cat/b.png"}));
  EXPECT_EQ(labels, (std::vector<int32_t>{0, 1, 1, 2, 2}));
  EXPECT_EQ(folder->test.size(), 5u);
}

TEST_F(ImageFolderTest, TestSplitWhenNoVal) {
  image("train/a/1.png", gray);
  image("test/a/1.png", gray);
  rn::Result<rn::ImageFolder> folder = rn::listImageFolder(dir);
  ASSERT_TRUE(folder) << folder.error().message();
  EXPECT_EQ(folder->testSplit, "test");
}

TEST_F(ImageFolderTest, LayoutMistakesAreNamed) {
  image("a/train/x/1.png", gray);
  EXPECT_NE(error(dir + "/a").find("/a: no val or test folder beside train"), std::string::npos)
      << error(dir + "/a");

  std::filesystem::create_directories(dir + "/b/train");
  image("b/val/x/1.png", gray);
  EXPECT_NE(error(dir + "/b").find("/b/train: no class folders"), std::string::npos)
      << error(dir + "/b");

  image("c/train/x/1.png", gray);
  write("c/train/y/notes.txt", "no images");
  image("c/val/x/1.png", gray);
  image("c/val/y/1.png", gray);
  EXPECT_NE(error(dir + "/c").find("/c/train/y: no images in the class folder"),
            std::string::npos)
      << error(dir + "/c");

  image("d/train/x/1.png", gray);
  image("d/train/y/1.png", gray);
  image("d/val/x/1.png", gray);
  image("d/val/z/1.png", gray);
  EXPECT_NE(error(dir + "/d").find("/d: the class folders of val differ from train's: val "
                                   "lacks 'y'; val has 'z', which train has not"),
            std::string::npos)
      << error(dir + "/d");
}

TEST_F(ImageFolderTest, PngDecodesExactlyJpegWithinItsLoss) {
  for (const char *name : {"g.png", "c.png", "g.jpg", "c.jpeg"}) {
    const bool color = name[0] == 'c', jpeg = std::string(name).find(".jp") != std::string::npos;
    const ImageSize size{16, 24, color ? 3 : 1};
    std::vector<uint8_t> pixels(size_t(size.pixels()));
    for (int64_t y = 0; y < size.height; ++y)
      for (int64_t x = 0; x < size.width; ++x)
        for (int64_t c = 0; c < size.channels; ++c)
          pixels[size_t((y * size.width + x) * size.channels + c)] =
              uint8_t(jpeg ? 40 + 4 * x + 3 * y + 20 * c : (x * 37 + y * 11 + c * 101) & 255);
    const std::string path = dir + "/" + name;
    ASSERT_TRUE(rn::writeImageFile(path, size, pixels.data(), 100).ok());
    rn::Result<ImageSize> header = rn::readImageSize(path);
    ASSERT_TRUE(header) << header.error().message();
    EXPECT_EQ(header->str(), size.str()) << name;
    std::vector<uint8_t> decoded(pixels.size());
    rn::Status st = rn::decodeImage(path, size, decoded.data());
    ASSERT_TRUE(st.ok()) << st.error().message();
    int worst = 0;
    for (size_t i = 0; i < pixels.size(); ++i)
      worst = std::max(worst, std::abs(int(pixels[i]) - int(decoded[i])));
    EXPECT_LE(worst, jpeg ? 4 : 0) << name;
    rn::Status wrong = rn::decodeImage(path, ImageSize{16, 24, color ? 1 : 3}, decoded.data());
    ASSERT_FALSE(wrong.ok());
    EXPECT_NE(wrong.error().message().find(name + std::string(": 16x24x")), std::string::npos)
        << wrong.error().message();
  }
  write("text.png", "not a png at all");
  write("text.jpg", "not a jpeg at all");
  rn::Result<ImageSize> png = rn::readImageSize(dir + "/text.png");
  ASSERT_FALSE(png);
  EXPECT_NE(png.error().message().find("text.png: not a readable PNG"), std::string::npos)
      << png.error().message();
  rn::Result<ImageSize> jpg = rn::readImageSize(dir + "/text.jpg");
  ASSERT_FALSE(jpg);
  EXPECT_NE(jpg.error().message().find("text.jpg: not a readable JPEG"), std::string::npos)
      << jpg.error().message();
}

// Tests that a header promising more than kMaxImagePixels pixels is an
// error naming the file and the size before anything is allocated for it
// (rn-image-fuzzer found a 223-byte JPEG claiming 65475x23304x3, which the
// image folder source would have allocated 4.6 GB for; docs/reliability.md).
TEST_F(ImageFolderTest, HugeHeadersAreRefused) {
  auto bigEndian = [](std::string &bytes, size_t at, uint32_t v, int width) {
    for (int i = 0; i < width; ++i)
      bytes[at + size_t(i)] = char((v >> (8 * (width - 1 - i))) & 0xff);
  };
  auto rewrite = [](const std::string &path, auto patch) {
    std::string bytes;
    {
      std::ifstream in(path, std::ios::binary);
      bytes.assign(std::istreambuf_iterator<char>(in), {});
    }
    patch(bytes);
    std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
  };
  // PNG: IHDR's width and height follow the signature and the chunk's
  // length and type; its CRC-32 (over type and data) is written again.
  const std::string png = image("huge.png", ImageSize{8, 8, 3});
  rewrite(png, [&](std::string &bytes) {
    bigEndian(bytes, 16, 30000, 4);
    bigEndian(bytes, 20, 30000, 4);
    bigEndian(bytes, 29, uint32_t(crc32(0, reinterpret_cast<const Bytef *>(bytes.data() + 12), 17)),
              4);
  });
  // JPEG: the baseline frame header (SOF0): length, precision, height, width.
  const std::string jpg = image("huge.jpg", ImageSize{8, 8, 3});
  rewrite(jpg, [&](std::string &bytes) {
    const size_t sof = bytes.find("\xff\xc0");
    ASSERT_NE(sof, std::string::npos);
    bigEndian(bytes, sof + 5, 65475, 2);
    bigEndian(bytes, sof + 7, 23304, 2);
  });
  for (const auto &[path, size] : {std::pair{png, std::string("30000x30000")},
                                   std::pair{jpg, std::string("65475x23304")}}) {
    rn::Result<ImageSize> header = rn::readImageSize(path);
    ASSERT_FALSE(header) << path;
    EXPECT_NE(header.error().message().find(path + ": " + size + " pixels (HxW), more than the " +
                                            std::to_string(rn::kMaxImagePixels)),
              std::string::npos)
        << header.error().message();
    std::vector<uint8_t> pixels(3);
    EXPECT_FALSE(rn::decodeImage(path, ImageSize{1, 1, 3}, pixels.data()).ok()) << path;
  }
}

TEST_F(ImageFolderTest, OneSizeForAllImages) {
  image("train/a/1.png", gray);
  image("train/a/2.png", ImageSize{4, 3, 3});
  image("val/a/1.png", gray);
  EXPECT_NE(error(dir).find("train/a/2.png: 4x3x3 (HxWxC), but " + dir +
                            "/train/a/1.png is 4x3x1: all images of a folder must have one size"),
            std::string::npos)
      << error(dir);
}

TEST_F(ImageFolderTest, NormalizesPerChannelAndComputesStatistics) {
  const ImageSize rgb{2, 2, 3};
  image("train/a/1.png", rgb, 10);
  image("train/b/1.png", rgb, 50);
  image("val/a/1.png", rgb, 90);
  image("val/b/1.png", rgb, 130);
  rn::train::ImageFolderSourceOptions options;
  options.mean = std::vector<float>{0.1f, 0.2f, 0.3f};
  options.std = std::vector<float>{0.5f, 0.25f, 2.0f};
  rn::Result<rn::train::ImageFolderSources> given =
      rn::train::loadImageFolderSources(dir, options);
  ASSERT_TRUE(given) << given.error().message();
  EXPECT_FALSE(given->statsComputed);
  EXPECT_EQ(given->test->imageShape(), (std::vector<int64_t>{2, 2, 3}));
  EXPECT_EQ(given->test->layout(), "NHWC, 2x2x3 uint8 images");
  const int64_t indices[2] = {1, 0};
  float images[24];
  int32_t labels[2];
  ASSERT_TRUE(given->test->fillBatch(indices, 2, images, labels).ok());
  EXPECT_EQ(labels[0], 1);
  EXPECT_EQ(labels[1], 0);
  for (int i = 0; i < 12; ++i) {
    const float m[3] = {0.1f, 0.2f, 0.3f}, s[3] = {0.5f, 0.25f, 2.0f};
    EXPECT_EQ(images[i], (float(uint8_t(130 + i * 7)) / 255.0f - m[i % 3]) * (1.0f / s[i % 3]));
    EXPECT_EQ(images[12 + i],
              (float(uint8_t(90 + i * 7)) / 255.0f - m[i % 3]) * (1.0f / s[i % 3]));
  }

  rn::Result<rn::train::ImageFolderSources> computed =
      rn::train::loadImageFolderSources(dir, rn::train::ImageFolderSourceOptions());
  ASSERT_TRUE(computed) << computed.error().message();
  EXPECT_TRUE(computed->statsComputed);
  for (int c = 0; c < 3; ++c) {
    double sum = 0, squares = 0;
    for (int seed : {10, 50})
      for (int p = 0; p < 4; ++p) {
        const double v = double(uint8_t(seed + (p * 3 + c) * 7)) / 255.0;
        sum += v;
        squares += v * v;
      }
    const double mean = sum / 8;
    EXPECT_FLOAT_EQ(computed->mean[size_t(c)], float(mean));
    EXPECT_FLOAT_EQ(computed->std[size_t(c)], float(std::sqrt(squares / 8 - mean * mean)));
  }

  options.mean = std::vector<float>{0.5f};
  options.std = std::vector<float>{0.5f};
  rn::Result<rn::train::ImageFolderSources> one = rn::train::loadImageFolderSources(dir, options);
  ASSERT_FALSE(one);
  EXPECT_NE(one.error().message().find("its images have 3 channels; give --mean and --std with 3 "
                                       "values each"),
            std::string::npos)
      << one.error().message();
}

TEST_F(ImageFolderTest, AnImageThatFailsToDecodeStopsTheBatch) {
  image("train/a/1.png", ImageSize{8, 8, 1});
  const std::string bad = image("train/a/2.png", ImageSize{8, 8, 1});
  image("val/a/1.png", ImageSize{8, 8, 1});
  // Damage the IDAT data after the signature, IHDR and IDAT's own header:
  // the header still reads, the pixels do not.
  std::string bytes;
  {
    std::ifstream in(bad, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  const size_t idat = bytes.find("IDAT");
  ASSERT_NE(idat, std::string::npos);
  ASSERT_GT(bytes.size(), idat + 12);
  for (size_t i = idat + 6; i < idat + 12; ++i) // past the zlib header
    bytes[i] = char(~bytes[i]);
  std::ofstream(bad, std::ios::binary | std::ios::trunc) << bytes;

  rn::Result<rn::train::ImageFolderSources> sources =
      rn::train::loadImageFolderSources(dir, rn::train::ImageFolderSourceOptions{
                                                 0, 0, std::vector<float>{0.5f},
                                                 std::vector<float>{0.5f}});
  ASSERT_TRUE(sources) << sources.error().message();
  const int64_t indices[2] = {0, 1};
  std::vector<float> images(128);
  int32_t labels[2];
  rn::Status st = sources->train->fillBatch(indices, 2, images.data(), labels);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message().find(bad + ": the PNG does not decode"), std::string::npos)
      << st.error().message();
  // Computing the statistics decodes every training image: the same error.
  EXPECT_NE(error(dir).find(bad + ": the PNG does not decode"), std::string::npos) << error(dir);
}

TEST_F(ImageFolderTest, DataDirFindsAnImageFolder) {
  for (int i = 0; i < 3; ++i) {
    image("train/0/" + std::to_string(i) + ".png", gray, i);
    image("train/1/" + std::to_string(i) + ".png", gray, 100 + i);
  }
  image("test/0/a.png", gray);
  image("test/1/a.png", gray);
  rn::train::DataDirOptions options;
  options.limitTrain = 4;
  rn::Result<rn::train::DataDir> data = rn::train::loadDataDir(dir, options);
  ASSERT_TRUE(data) << data.error().message();
  EXPECT_EQ(data->train->count(), 4);
  EXPECT_EQ(data->train->label(3), 1);
  EXPECT_EQ(data->test->count(), 2);
  EXPECT_NE(data->description.find("image folder " + dir +
                                   ": 4 training and 2 test examples, NHWC, 4x3x1 uint8 images, "
                                   "2 classes, mean "),
            std::string::npos)
      << data->description;
  EXPECT_NE(data->description.find("(computed from the training split, its 4 images decoded "
                                   "once)"),
            std::string::npos)
      << data->description;
  options.label = "coarse";
  rn::Result<rn::train::DataDir> label = rn::train::loadDataDir(dir, options);
  ASSERT_FALSE(label);
  EXPECT_EQ(label.error().message(), "--label is CIFAR-100's; " + dir + " is an image folder");
}

} // namespace
