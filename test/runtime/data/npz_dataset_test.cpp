//===- npz_dataset_test.cpp - .npz reader tests ---------------------------===//
//
// Archives built here the way numpy.savez and numpy.savez_compressed build
// them (stored and deflated entries, zip64 extra fields with saturated
// sizes, .npy versions 1 and 2): arrays read back with their dtypes and
// shapes, images NHW or NHWC in uint8 or float32, labels of any integer
// width, and every damaged archive or unsuitable array named with what is
// wrong. The numpy-written archives are tested from rn-run
// (test/tools/rn-run/npz.mlir).
//
//===----------------------------------------------------------------------===//

#include "runtime/data/npz_dataset.h"
#include "runtime/train/npz_source.h"

#include "../temp_dir.h"
#include "runtime/core/fuzz/fuzz_files.h"

#include <gtest/gtest.h>

#include <limits>
#include <zlib.h>

#include <cstring>
#include <string>
#include <vector>

namespace {

using NpzDatasetTest = rn::test::TempDirTest;

// The .npy and zip writers of the fuzz seeds.
using rn::fuzz::npyFile;
using rn::fuzz::putLe;
using rn::fuzz::zipArchive;
using Entry = rn::fuzz::ZipMember;

std::string bytes(const std::vector<uint8_t> &v) { return std::string(v.begin(), v.end()); }

std::string floats(const std::vector<float> &v) {
  std::string s(v.size() * sizeof(float), '\0');
  std::memcpy(s.data(), v.data(), s.size());
  return s;
}

/// A valid image archive: 3 training and 2 test 2x2 one-channel uint8
/// images (NHW), int64 labels; `deflate`/`zip64` as numpy's two writers.
std::vector<Entry> mnistLike(bool deflate, bool zip64) {
  std::string labels;
  for (int64_t v : {1, 0, 2})
    putLe(labels, uint64_t(v), 8);
  std::string testLabels;
  for (int64_t v : {2, 2})
    putLe(testLabels, uint64_t(v), 8);
  std::vector<uint8_t> train(12), test(8);
  for (size_t i = 0; i < train.size(); ++i)
    train[i] = uint8_t(i * 20);
  for (size_t i = 0; i < test.size(); ++i)
    test[i] = uint8_t(255 - i);
  return {{"x_train.npy", npyFile("|u1", {3, 2, 2}, bytes(train)), deflate, zip64},
          {"y_train.npy", npyFile("<i8", {3}, labels), deflate, zip64},
          {"x_test.npy", npyFile("|u1", {2, 2, 2}, bytes(test)), deflate, zip64},
          {"y_test.npy", npyFile("<i8", {2}, testLabels), deflate, zip64}};
}

// Tests that stored and deflated archives, with and without zip64 fields,
// read to the same splits: NHW images as one channel, labels and classes.
TEST_F(NpzDatasetTest, ReadsStoredAndDeflatedArchives) {
  for (bool deflate : {false, true})
    for (bool zip64 : {false, true}) {
      std::string path = write("m.npz", zipArchive(mnistLike(deflate, zip64)));
      rn::Result<rn::NpzSplits> splits = rn::loadNpzSplits(path);
      ASSERT_TRUE(splits.ok()) << splits.error().message();
      EXPECT_EQ(splits->train.count, 3);
      EXPECT_EQ(splits->train.height, 2);
      EXPECT_EQ(splits->train.width, 2);
      EXPECT_EQ(splits->train.channels, 1);
      EXPECT_EQ(splits->train.pixels, rn::NpzPixels::u8);
      EXPECT_EQ(splits->train.labels, (std::vector<int32_t>{1, 0, 2}));
      EXPECT_EQ(splits->train.classes, 3);
      EXPECT_EQ(uint8_t(splits->train.images[5]), 100);
      EXPECT_EQ(splits->test.labels, (std::vector<int32_t>{2, 2}));
      EXPECT_EQ(uint8_t(splits->test.images[7]), 248);
    }
}

// Tests float32 NHWC images with uint8 labels and .npy version 2 headers,
// and the data source's per-channel normalization of both pixel types.
TEST_F(NpzDatasetTest, Float32ImagesAndNormalization) {
  std::vector<float> train = {0.5f, 1.0f, 2.0f, 4.0f}; // 2 images of 1x1x2
  std::vector<float> test = {1.0f, 3.0f};
  std::string path =
      write("f.npz", zipArchive({{"x_train.npy", npyFile("<f4", {2, 1, 1, 2}, floats(train), 2)},
                          {"y_train.npy", npyFile("|u1", {2}, bytes({4, 1}), 2)},
                          {"x_test.npy", npyFile("<f4", {1, 1, 1, 2}, floats(test), 2)},
                          {"y_test.npy", npyFile("|u1", {1}, bytes({0}), 2)}}));
  rn::train::NpzSourceOptions options;
  options.mean = std::vector<float>{1.0f, 2.0f};
  options.std = std::vector<float>{0.5f, 4.0f};
  rn::Result<rn::train::NpzSources> sources = rn::train::loadNpzSources(path, options);
  ASSERT_TRUE(sources.ok()) << sources.error().message();
  EXPECT_EQ(sources->classes, 5);
  EXPECT_EQ(sources->train->imageShape(), (std::vector<int64_t>{1, 1, 2}));
  float out[2];
  sources->train->writeImage(1, out);
  EXPECT_FLOAT_EQ(out[0], (2.0f - 1.0f) / 0.5f);
  EXPECT_FLOAT_EQ(out[1], (4.0f - 2.0f) / 4.0f);
  // The statistics of the training split, per channel (population).
  std::vector<float> mean, std;
  rn::train::npzChannelStats(rn::loadNpzSplits(path)->train, mean, std);
  EXPECT_FLOAT_EQ(mean[0], 1.25f);
  EXPECT_FLOAT_EQ(std[0], 0.75f);
  EXPECT_FLOAT_EQ(mean[1], 2.5f);
  EXPECT_FLOAT_EQ(std[1], 1.5f);
  // uint8 pixels are scaled to [0, 1] first, as the IDX source does.
  rn::Result<rn::train::NpzSources> u8 =
      rn::train::loadNpzSources(write("u.npz", zipArchive(mnistLike(false, false))), {});
  ASSERT_TRUE(u8.ok()) << u8.error().message();
  EXPECT_TRUE(u8->statsComputed);
  float pixels[4];
  u8->train->writeImage(1, pixels); // pixels 80, 100, 120, 140
  EXPECT_FLOAT_EQ(pixels[1], (100.0f / 255.0f - u8->mean[0]) * (1.0f / u8->std[0]));
}

void expectError(const rn::Result<rn::NpzSplits> &r, const std::string &part) {
  ASSERT_FALSE(r.ok()) << "expected an error containing: " << part;
  EXPECT_NE(r.error().message().find(part), std::string::npos) << r.error().message();
}

// Tests that a NaN or an infinity in float images is refused at load,
// naming the array, the example and the element (not a statistics error,
// nor a NaN loss many steps later).
TEST_F(NpzDatasetTest, NonFiniteFloatImagesAreNamed) {
  auto archive = [&](const std::string &name, std::vector<float> train, std::vector<float> test) {
    return write(name, zipArchive({{"x_train.npy", npyFile("<f4", {2, 1, 2, 2}, floats(train), 1)},
                            {"y_train.npy", npyFile("|u1", {2}, bytes({0, 1}), 1)},
                            {"x_test.npy", npyFile("<f4", {1, 1, 2, 2}, floats(test), 1)},
                            {"y_test.npy", npyFile("|u1", {1}, bytes({0}), 1)}}));
  };
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  expectError(rn::loadNpzSplits(archive("nan.npz", {0, 1, 2, 3, 4, 5, nan, 7}, {0, 1, 2, 3})),
              "nan.npz: x_train: example 1 holds NaN (at [0, 1, 0] of its HWC image); images "
              "must be finite");
  expectError(rn::loadNpzSplits(archive("inf.npz", {0, 1, 2, 3, 4, 5, 6, 7}, {0, -inf, 2, 3})),
              "inf.npz: x_test: example 0 holds -inf (at [0, 0, 1] of its HWC image)");
}

// Tests that damaged archives are errors naming the file and the entry.
TEST_F(NpzDatasetTest, DamagedArchivesAreNamed) {
  std::string good = zipArchive(mnistLike(false, true));
  expectError(rn::loadNpzSplits(write("short.npz", good.substr(0, 10))), "short.npz: not a zip");
  expectError(rn::loadNpzSplits(write("none.npz", std::string(100, 'x'))),
              "no end of central directory record");
  std::string flipped = good;
  flipped[flipped.find("NUMPY") + 80] ^= 1; // a pixel of x_train
  expectError(rn::loadNpzSplits(write("crc.npz", flipped)),
              "crc.npz: entry x_train.npy: CRC-32 mismatch");
  std::string deflated = zipArchive(mnistLike(true, false));
  std::string broken = deflated;
  broken[30 + 11 + 4] ^= 0x55; // inside the first deflate stream (after header and name)
  rn::Result<rn::NpzSplits> r = rn::loadNpzSplits(write("inflate.npz", broken));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("inflate.npz: entry x_train.npy"), std::string::npos)
      << r.error().message();
  EXPECT_NE(rn::readNpz(write("empty.npz", "")).error().message().find("empty.npz: not a zip"),
            std::string::npos);
}

// Tests that sizes no file could hold are errors before anything is
// multiplied out or allocated (found by rn-npz-fuzzer, docs/reliability.md):
// a shape whose element count overflows, and a deflated entry whose
// directory announces more bytes than deflate's 1032:1 can expand it to.
TEST_F(NpzDatasetTest, HostileSizesAreRefused) {
  std::vector<Entry> entries = mnistLike(false, false);
  entries[0] = {"x_train.npy", npyFile("|u1", {3, 2, 9223372036854775807}, std::string(12, '\0'))};
  expectError(rn::loadNpzSplits(write("shape.npz", zipArchive(entries))),
              "shape.npz: x_train.npy: 12 bytes of data for |u1 [3, 2, 9223372036854775807], "
              "which needs more than 2^64");
  std::string bomb = zipArchive(mnistLike(true, false));
  // The first entry's uncompressed size, 24 bytes into its directory record.
  const size_t record = bomb.find(std::string("PK\x01\x02", 4));
  ASSERT_NE(record, std::string::npos);
  for (int i = 0; i < 4; ++i)
    bomb[record + 24 + size_t(i)] = char((0x60000000u >> (8 * i)) & 0xff);
  expectError(rn::loadNpzSplits(write("bomb.npz", bomb)),
              "bomb.npz: entry x_train.npy: 1610612736 bytes uncompressed from ");
  expectError(rn::loadNpzSplits(write("bomb.npz", bomb)),
              "more than deflate's 1032:1 allows");
}

// Tests that arrays which are not image splits are errors saying why.
TEST_F(NpzDatasetTest, UnsuitableArraysAreNamed) {
  auto with = [&](size_t index, Entry replacement) {
    std::vector<Entry> entries = mnistLike(false, false);
    entries[index] = std::move(replacement);
    return rn::loadNpzSplits(write("a.npz", zipArchive(entries)));
  };
  expectError(with(3, {"labels.npy", npyFile("<i8", {2}, std::string(16, '\0'))}),
              "no array 'y_test' (an image .npz holds x_train, y_train, x_test, y_test as "
              "Keras' mnist.npz; this one holds labels, x_test, x_train, y_train)");
  expectError(with(0, {"x_train.npy", npyFile(">f4", {3, 2, 2}, std::string(48, '\0'))}),
              "x_train.npy: dtype '>f4' is not read (little-endian integers and floats only)");
  expectError(with(0, {"x_train.npy", npyFile("<f8", {3, 2, 2}, std::string(96, '\0'))}),
              "x_train has dtype '<f8'; images are uint8 or float32");
  expectError(with(0, {"x_train.npy", npyFile("|u1", {3, 2, 2}, std::string(12, '\0'), 1, true)}),
              "Fortran-order arrays are not read");
  expectError(with(0, {"x_train.npy", npyFile("|u1", {3, 2, 2}, std::string(11, '\0'))}),
              "x_train.npy: 11 bytes of data for |u1 [3, 2, 2], which needs 12");
  expectError(with(0, {"x_train.npy", npyFile("|u1", {3, 12}, std::string(36, '\0'))}),
              "x_train has shape [3, 12]; images are [N, H, W, C] (NHWC) or [N, H, W]");
  expectError(with(0, {"x_train.npy", npyFile("|u1", {3, 1, 2, 2}, std::string(12, '\0'))}),
              "x_train holds 1x2x2 images, x_test 2x2x1: the splits must match");
  expectError(with(1, {"y_train.npy", npyFile("<i8", {2}, std::string(16, '\0'))}),
              "y_train has shape [2]; expected [3], one label per image of x_train");
  std::string negative;
  putLe(negative, 1, 4);
  putLe(negative, 0xffffffffu, 4);
  putLe(negative, 0, 4);
  expectError(with(1, {"y_train.npy", npyFile("<i4", {3}, negative)}),
              "y_train[1] is -1; labels are class indices 0, 1, ...");
  expectError(with(1, {"y_train.npy", npyFile("<f4", {3}, std::string(12, '\0'))}),
              "y_train has dtype '<f4'; labels are integers");
}

} // namespace
