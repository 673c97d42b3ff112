//===- cifar_dataset_test.cpp - CIFAR binary reader tests -----------------===//
//
// Files written here in the archives' record layouts: the records read
// back in order, the planes come out NHWC and normalized per channel,
// CIFAR-100's two labels, the folder layouts, and every malformed file
// named with what is wrong.
//
//===----------------------------------------------------------------------===//

#include "runtime/data/cifar_dataset.h"

#include "../temp_dir.h"
#include "cifar_test_files.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

using rn::test::cifarRecords;

using CifarDatasetTest = rn::test::TempDirTest;

// Tests that two CIFAR-10 files read as one split in order, with the label
// bytes as labels and the planes kept as stored.
TEST_F(CifarDatasetTest, ReadsCifar10RecordsInOrder) {
  // Labels 0..2 and 3..4 (label byte = 0 + record index).
  std::string a = write("a.bin", cifarRecords(3, {0}));
  std::string b = write("b.bin", cifarRecords(2, {0}, 3));
  rn::Result<rn::CifarDataset> data = rn::readCifarFiles({a, b}, rn::CifarFormat::cifar10);
  ASSERT_TRUE(data.ok()) << data.error().message();
  EXPECT_EQ(data->count, 5);
  EXPECT_EQ(data->classes, 10);
  EXPECT_EQ(data->labels, (std::vector<uint8_t>{0, 1, 2, 3, 4}));
  ASSERT_EQ(data->pixels.size(), 5u * 3072);
  EXPECT_EQ(data->pixels[4 * 3072 + 1024 + 5], uint8_t(4 + 7 + 5)); // record 4, green, pixel 5
}

// Tests that example i's pixel (y, x) of channel c lands at NHWC
// ((y * 32 + x) * 3 + c), scaled to [0, 1] and standardized per channel.
TEST_F(CifarDatasetTest, NormalizesPlanesToNhwc) {
  rn::Result<rn::CifarDataset> data =
      rn::readCifarFiles({write("a.bin", cifarRecords(2, {1}))}, rn::CifarFormat::cifar10);
  ASSERT_TRUE(data.ok()) << data.error().message();
  std::vector<float> out(3072);
  const std::array<float, 3> mean{0.5f, 0.25f, 0.0f}, std{0.5f, 0.25f, 1.0f};
  rn::normalizeCifarImage(*data, 1, out.data(), mean, std);
  for (int c = 0; c < 3; ++c)
    for (int i : {0, 31, 32, 1023}) {
      const float pixel = float((1 + c * 7 + i) % 256);
      EXPECT_EQ(out[size_t(i * 3 + c)],
                (pixel / 255.0f - mean[size_t(c)]) * (1.0f / std[size_t(c)]))
          << "channel " << c << " pixel " << i;
    }
}

// Tests that CIFAR-100 records keep the fine label (second byte) or the
// coarse one (first byte), with 100 or 20 classes.
TEST_F(CifarDatasetTest, Cifar100FineOrCoarse) {
  std::string path = write("train.bin", cifarRecords(3, {10, 50})); // coarse 10+r, fine 50+r
  rn::Result<rn::CifarDataset> fine =
      rn::readCifarFiles({path}, rn::CifarFormat::cifar100, rn::CifarLabel::fine);
  ASSERT_TRUE(fine.ok()) << fine.error().message();
  EXPECT_EQ(fine->classes, 100);
  EXPECT_EQ(fine->labels, (std::vector<uint8_t>{50, 51, 52}));
  rn::Result<rn::CifarDataset> coarse =
      rn::readCifarFiles({path}, rn::CifarFormat::cifar100, rn::CifarLabel::coarse);
  ASSERT_TRUE(coarse.ok()) << coarse.error().message();
  EXPECT_EQ(coarse->classes, 20);
  EXPECT_EQ(coarse->labels, (std::vector<uint8_t>{10, 11, 12}));
  EXPECT_EQ(coarse->pixels, fine->pixels);
}

// Tests that a cut-off record, an empty file, a label outside the classes,
// a missing file and a directory are errors naming the file and what is
// wrong.
TEST_F(CifarDatasetTest, MalformedFilesAreNamed) {
  struct Case {
    std::string path;
    rn::CifarFormat format;
    const char *message;
  };
  std::string cut = cifarRecords(2, {0});
  cut.resize(cut.size() - 100);
  std::string badLabel = cifarRecords(3, {0}) + cifarRecords(1, {10});
  const Case cases[] = {
      {write("cut.bin", cut), rn::CifarFormat::cifar10,
       "6046 bytes is not a whole number of 3073-byte CIFAR-10 records (record 1 is cut off "
       "after 2973 bytes)"},
      {write("empty.bin", ""), rn::CifarFormat::cifar10, "empty"},
      {write("label.bin", badLabel), rn::CifarFormat::cifar10,
       "record 3 has label 10, outside [0, 10)"},
      {write("fine.bin", cifarRecords(1, {0, 100})), rn::CifarFormat::cifar100,
       "record 0 has fine label 100, outside [0, 100)"},
      {dir + "/missing.bin", rn::CifarFormat::cifar10, "cannot open"},
      {dir, rn::CifarFormat::cifar10, "is a directory"},
  };
  for (const Case &c : cases) {
    rn::Result<rn::CifarDataset> data = rn::readCifarFiles({c.path}, c.format);
    ASSERT_FALSE(data.ok()) << c.path;
    EXPECT_NE(data.error().message().find(c.path), std::string::npos) << data.error().message();
    EXPECT_NE(data.error().message().find(c.message), std::string::npos)
        << data.error().message();
  }
}

// Tests that loadCifarSplits finds CIFAR-10 as its archive unpacks (in
// cifar-10-batches-bin/), CIFAR-100 in the folder itself, and says what it
// looked for when there is neither.
TEST_F(CifarDatasetTest, FindsSplitsInTheArchiveLayouts) {
  for (int k = 1; k <= 5; ++k)
    write("c10/cifar-10-batches-bin/data_batch_" + std::to_string(k) + ".bin",
          cifarRecords(2, {0}, 2 * (k - 1)));
  write("c10/cifar-10-batches-bin/test_batch.bin", cifarRecords(3, {0}));
  rn::Result<rn::CifarSplits> c10 = rn::loadCifarSplits(dir + "/c10");
  ASSERT_TRUE(c10.ok()) << c10.error().message();
  EXPECT_EQ(c10->format, rn::CifarFormat::cifar10);
  EXPECT_EQ(c10->train.count, 10);
  EXPECT_EQ(c10->test.count, 3);
  EXPECT_EQ(c10->train.labels.back(), 9);

  write("c100/train.bin", cifarRecords(4, {1, 2}));
  write("c100/test.bin", cifarRecords(2, {1, 2}));
  rn::Result<rn::CifarSplits> c100 = rn::loadCifarSplits(dir + "/c100", rn::CifarLabel::coarse);
  ASSERT_TRUE(c100.ok()) << c100.error().message();
  EXPECT_EQ(c100->format, rn::CifarFormat::cifar100);
  EXPECT_EQ(c100->train.classes, 20);
  EXPECT_EQ(c100->train.labels, (std::vector<uint8_t>{1, 2, 3, 4}));

  write("c100-half/train.bin", cifarRecords(4, {1, 2}));
  rn::Result<rn::CifarSplits> half = rn::loadCifarSplits(dir + "/c100-half");
  ASSERT_FALSE(half.ok());
  EXPECT_NE(half.error().message().find("CIFAR-100 is incomplete: test.bin missing"),
            std::string::npos)
      << half.error().message();

  rn::Result<rn::CifarSplits> none = rn::loadCifarSplits(dir + "/c100/nothing");
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().message().find("no CIFAR data: looked for data_batch_1.bin"),
            std::string::npos)
      << none.error().message();
}

} // namespace
