//===- idx_dataset_test.cpp - The gzip IDX reader --------------------------===//
//
// Writes small IDX files (gzip) into a temporary directory, valid and
// corrupt, and checks what loads and the errors.
//
//===----------------------------------------------------------------------===//

#include "runtime/data/idx_dataset.h"

#include "../temp_dir.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

std::string be32(uint32_t v) {
  std::string s(4, '\0');
  s[0] = char(v >> 24);
  s[1] = char(v >> 16);
  s[2] = char(v >> 8);
  s[3] = char(v);
  return s;
}

std::string imagesFile(uint32_t count, uint32_t rows, uint32_t cols,
                       uint32_t magic = rn::kIdxImagesMagic) {
  std::string s = be32(magic) + be32(count) + be32(rows) + be32(cols);
  for (uint32_t i = 0; i < count * rows * cols; ++i)
    s.push_back(char(i % 256));
  return s;
}

std::string labelsFile(uint32_t count, uint32_t magic = rn::kIdxLabelsMagic) {
  std::string s = be32(magic) + be32(count);
  for (uint32_t i = 0; i < count; ++i)
    s.push_back(char(i % 10));
  return s;
}

class IdxDatasetTest : public rn::test::TempDirTest {
protected:
  std::string writeGz(const std::string &name, const std::string &bytes) {
    std::string path = dir + "/" + name;
    gzFile f = gzopen(path.c_str(), "wb");
    EXPECT_NE(f, nullptr);
    EXPECT_EQ(gzwrite(f, bytes.data(), unsigned(bytes.size())), int(bytes.size()));
    gzclose(f);
    return path;
  }
  void writeSplits(uint32_t train, uint32_t test) {
    writeGz("train-images-idx3-ubyte.gz", imagesFile(train, 4, 3));
    writeGz("train-labels-idx1-ubyte.gz", labelsFile(train));
    writeGz("t10k-images-idx3-ubyte.gz", imagesFile(test, 4, 3));
    writeGz("t10k-labels-idx1-ubyte.gz", labelsFile(test));
  }
};

TEST_F(IdxDatasetTest, LoadsValidFiles) {
  writeSplits(7, 5);
  auto s = rn::loadIdxSplits(dir);
  ASSERT_TRUE(s) << s.error().message();
  EXPECT_EQ(s->train.count, 7);
  EXPECT_EQ(s->train.rows, 4);
  EXPECT_EQ(s->train.cols, 3);
  EXPECT_EQ(s->train.pixels.size(), 7u * 12);
  EXPECT_EQ(s->train.labels.size(), 7u);
  EXPECT_EQ(s->train.pixels[13], 13);
  EXPECT_EQ(s->train.labels[6], 6);
  EXPECT_EQ(s->test.count, 5);

  std::vector<float> img(12);
  rn::normalizeImage(s->train, 1, img.data());
  // Example 1 starts at byte 12: pixel value 12.
  EXPECT_NEAR(img[0], (12 / 255.0f - 0.2860f) / 0.3530f, 1e-6);
}

TEST_F(IdxDatasetTest, Limit) {
  writeSplits(7, 5);
  auto s = rn::loadIdxSplits(dir, 3, 2);
  ASSERT_TRUE(s) << s.error().message();
  EXPECT_EQ(s->train.count, 3);
  EXPECT_EQ(s->train.pixels.size(), 3u * 12);
  EXPECT_EQ(s->train.labels.size(), 3u);
  EXPECT_EQ(s->test.count, 2);
  // A limit above the count keeps everything.
  auto all = rn::loadIdxSplits(dir, 100, 100);
  ASSERT_TRUE(all);
  EXPECT_EQ(all->train.count, 7);
}

TEST_F(IdxDatasetTest, MissingDirectoryAndFile) {
  auto s = rn::loadIdxSplits(dir + "/nope");
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message().find("cannot open the data directory"), std::string::npos);
  writeSplits(3, 3);
  fs::remove(dir + "/t10k-labels-idx1-ubyte.gz");
  s = rn::loadIdxSplits(dir);
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message().find("t10k-labels-idx1-ubyte.gz: cannot open"),
            std::string::npos)
      << s.error().message();
}

TEST_F(IdxDatasetTest, BadMagic) {
  auto p = writeGz("i.gz", imagesFile(2, 2, 2, 0x00000801));
  auto r = rn::readIdxImages(p);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message().find("bad IDX magic 0x00000801, expected 0x00000803"),
            std::string::npos)
      << r.error().message();
  auto l = rn::readIdxLabels(writeGz("l.gz", labelsFile(2, 0x12345678)));
  ASSERT_FALSE(l);
  EXPECT_NE(l.error().message().find("bad IDX magic"), std::string::npos);
}

TEST_F(IdxDatasetTest, TruncatedPayload) {
  std::string bytes = imagesFile(3, 4, 4);
  bytes.resize(bytes.size() - 5);
  auto r = rn::readIdxImages(writeGz("i.gz", bytes));
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message().find("truncated: the header promises 64 bytes"),
            std::string::npos)
      << r.error().message();
  auto h = rn::readIdxLabels(writeGz("l.gz", be32(rn::kIdxLabelsMagic)));
  ASSERT_FALSE(h);
  EXPECT_NE(h.error().message().find("truncated IDX header"), std::string::npos);
}

TEST_F(IdxDatasetTest, TruncatedGzipStream) {
  std::string path = writeGz("i.gz", imagesFile(50, 10, 10));
  std::string raw;
  {
    std::ifstream in(path, std::ios::binary);
    raw.assign(std::istreambuf_iterator<char>(in), {});
  }
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      .write(raw.data(), std::streamsize(raw.size() / 2));
  auto r = rn::readIdxImages(path);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message().find("i.gz: "), std::string::npos);
}

TEST_F(IdxDatasetTest, TrailingData) {
  auto r = rn::readIdxLabels(writeGz("l.gz", labelsFile(4) + "xx"));
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message().find("trailing data"), std::string::npos);
}

TEST_F(IdxDatasetTest, WrongCount) {
  writeGz("i.gz", imagesFile(4, 2, 2));
  writeGz("l.gz", labelsFile(3));
  auto r = rn::loadIdxDataset(dir + "/i.gz", dir + "/l.gz");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message().find("3 labels, but"), std::string::npos)
      << r.error().message();
  EXPECT_NE(r.error().message().find("holds 4 images"), std::string::npos);
}

TEST_F(IdxDatasetTest, ShapeMismatchBetweenSplits) {
  writeSplits(2, 2);
  writeGz("t10k-images-idx3-ubyte.gz", imagesFile(2, 5, 5));
  auto s = rn::loadIdxSplits(dir);
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message().find("the train images are 4x3, the test images 5x5"),
            std::string::npos)
      << s.error().message();
}

TEST_F(IdxDatasetTest, HugeHeaderRejected) {
  std::string s = be32(rn::kIdxImagesMagic) + be32(1u << 30) + be32(60000) + be32(60000);
  auto r = rn::readIdxImages(writeGz("i.gz", s));
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message().find("promises"), std::string::npos) << r.error().message();
}

} // namespace
