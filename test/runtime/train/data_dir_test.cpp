//===- data_dir_test.cpp - rn-run --data's folder detection ---------------===//
//
// A CIFAR-10 folder written here: found and described in one line, its
// batches normalized with the given or the computed per-channel statistics,
// limits applied, and the options' mistakes named.
//
//===----------------------------------------------------------------------===//

#include "runtime/train/data_dir.h"

#include "../data/cifar_test_files.h"
#include "../temp_dir.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace {

namespace fs = std::filesystem;
using namespace rn::train;

class DataDirTest : public rn::test::TempDirTest {
protected:
  void SetUp() override {
    TempDirTest::SetUp();
    for (int k = 1; k <= 5; ++k)
      write("data_batch_" + std::to_string(k) + ".bin",
            rn::test::cifarRecords(2, {0}, 2 * (k - 1)));
    write("test_batch.bin", rn::test::cifarRecords(3, {0}));
  }
};

// Tests that a CIFAR-10 folder is found, described with the statistics it
// computed from its training split, and that a batch comes out NHWC with
// them, labels from the label bytes.
TEST_F(DataDirTest, FindsCifar10AndNormalizesWithItsStatistics) {
  rn::Result<DataDir> data = loadDataDir(dir, {});
  ASSERT_TRUE(data.ok()) << data.error().message();
  EXPECT_EQ(data->train->count(), 10);
  EXPECT_EQ(data->test->count(), 3);
  EXPECT_EQ(data->train->imageShape(), (std::vector<int64_t>{32, 32, 3}));
  const std::string &d = data->description;
  EXPECT_EQ(d.rfind("CIFAR-10 in " + dir + ": 10 training and 3 test examples, 32x32x3, 10 classes, mean ", 0), 0u) << d;
  EXPECT_NE(d.find("(computed from the training split)"), std::string::npos) << d;

  // The computed statistics standardize the training split: over all of it,
  // each channel's normalized values have mean 0 and variance 1.
  std::vector<int64_t> all(10);
  for (int64_t i = 0; i < 10; ++i)
    all[size_t(i)] = i;
  std::vector<float> images(size_t(10 * 3072));
  std::vector<int32_t> labels(10);
  ASSERT_TRUE(data->train->fillBatch(all.data(), 10, images.data(), labels.data()).ok());
  EXPECT_EQ(labels, (std::vector<int32_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
  for (int c = 0; c < 3; ++c) {
    double sum = 0, squares = 0;
    for (size_t k = size_t(c); k < images.size(); k += 3) {
      sum += images[k];
      squares += double(images[k]) * images[k];
    }
    const double n = double(images.size() / 3);
    EXPECT_NEAR(sum / n, 0.0, 1e-4) << "channel " << c;
    EXPECT_NEAR(squares / n - (sum / n) * (sum / n), 1.0, 1e-3) << "channel " << c;
  }
}

// Tests that given statistics are used as given, and limits keep the first
// examples.
TEST_F(DataDirTest, GivenStatisticsAndLimits) {
  rn::Result<DataDir> data = loadDataDir(dir, {4, 2, "fine", "0.5,0.5,0.5", "0.25,0.5,1"});
  ASSERT_TRUE(data.ok()) << data.error().message();
  EXPECT_EQ(data->train->count(), 4);
  EXPECT_EQ(data->test->count(), 2);
  EXPECT_NE(data->description.find("mean 0.5000,0.5000,0.5000 std 0.2500,0.5000,1.0000 (given)"),
            std::string::npos)
      << data->description;
  const int64_t index = 1;
  std::vector<float> image(3072);
  int32_t label = -1;
  ASSERT_TRUE(data->test->fillBatch(&index, 1, image.data(), &label).ok());
  EXPECT_EQ(label, 1);
  // Example 1, green (channel 1), pixel 0: byte 1 + 7 = 8.
  EXPECT_FLOAT_EQ(image[1], (8.0f / 255.0f - 0.5f) / 0.5f);
}

// Tests the options' and the folder's mistakes, each named.
TEST_F(DataDirTest, MistakesAreNamed) {
  struct Case {
    std::string dir;
    DataDirOptions options;
    const char *message;
  };
  const Case cases[] = {
      {dir, {0, 0, "fine", "0.5,0.5", "1,1,1"}, "--mean needs three values for CIFAR's red, green and blue"},
      {dir, {0, 0, "fine", "0.5,0.5,0.5", ""}, "give --mean and --std together"},
      {dir, {0, 0, "fine", "0,0,0", "1,0,1"}, "standard deviation is 0.000000"},
      {dir, {0, 0, "coarse", "", ""}, "--label is CIFAR-100's"},
      {dir, {0, 0, "medium", "", ""}, "--label must be fine or coarse"},
      {dir + "/nothing", {}, "/nothing: no such file or folder (--data takes a folder of"},
  };
  for (const Case &c : cases) {
    rn::Result<DataDir> data = loadDataDir(c.dir, c.options);
    ASSERT_FALSE(data.ok()) << c.message;
    EXPECT_NE(data.error().message().find(c.message), std::string::npos)
        << data.error().message();
  }
  fs::create_directories(dir + "/empty");
  rn::Result<DataDir> none = loadDataDir(dir + "/empty", {});
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().message().find("holds no data rn-run reads: no CIFAR-10"),
            std::string::npos)
      << none.error().message();
  EXPECT_NE(none.error().message().find("train-images-idx3-ubyte.gz"), std::string::npos)
      << none.error().message();
}

// A CIFAR folder with files missing names them, and nothing of the other
// formats.
TEST_F(DataDirTest, IncompleteCifarNamesTheMissingFiles) {
  for (const char *name : {"data_batch_1.bin", "data_batch_2.bin", "test_batch.bin"})
    write(std::string("c10/") + name, std::string(3073, '\0'));
  rn::Result<DataDir> data = loadDataDir(dir + "/c10", {});
  ASSERT_FALSE(data.ok());
  const std::string &message = data.error().message();
  EXPECT_NE(message.find("CIFAR-10 is incomplete: data_batch_3.bin, data_batch_4.bin, "
                         "data_batch_5.bin missing (3 of its 6 files are there)"),
            std::string::npos)
      << message;
  EXPECT_EQ(message.find("idx3"), std::string::npos) << message;
}

} // namespace
