//===- data_dir.h - What rn-run --data DIR holds ----------------*- C++ -*-===//
//
// rn-run --data names a folder or a file; this finds which data set it
// holds (the IDX files of Fashion-MNIST or MNIST, CIFAR-10's or CIFAR-100's
// binary files, or an .npz archive with Keras' mnist.npz keys), loads its
// training and test splits as data sources and says in one line what it
// found.
//
//===----------------------------------------------------------------------===//

#ifndef RN_RUNTIME_TRAIN_DATA_DIR_H
#define RN_RUNTIME_TRAIN_DATA_DIR_H

#include "runtime/data/augment.h"
#include "runtime/train/cifar_source.h"
#include "runtime/train/data_source.h"
#include "runtime/train/run_options.h"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace rn::train {

struct DataDirOptions {
  int64_t limitTrain = 0, limitTest = 0;
  /// CIFAR: "fine" or "coarse" (CIFAR-100's label). CIFAR and NPZ:
  /// "m0,m1,..." / "s0,s1,..." one value per channel (both or neither;
  /// empty: the training split's).
  std::string label = runDefaults().label, mean, std;
  /// Image folders: the images may differ in size (the augmentation
  /// resizes them).
  bool mixedSizes = false;
  /// Image folders' computed statistics, data-parallel: each rank decodes
  /// its share of the training images, sumOverRanks adds the sums
  /// (ImageFolderSourceOptions).
  int rank = 0, ranks = 1;
  std::function<Status(std::vector<double> &)> sumOverRanks;
  /// Image folders: images that do not read at load are left out and
  /// named in DataDir::skipped (rn-run --skip-bad-images).
  bool skipBadImages = false;
};

struct DataDir {
  std::unique_ptr<DataSource> train, test;
  /// "CIFAR-10 in DIR: 50000 training and 10000 test examples, 32x32x3, 10
  /// classes, mean ..., std ... (computed from the training split)".
  std::string description;
  /// The training images differ in size (an image folder read with
  /// mixedSizes): they need a resizing augmentation.
  bool sizesVary = false;
  /// DataDirOptions::skipBadImages: the images left out at load ("PATH: why").
  std::vector<std::string> skipped;
};

/// The data set in `dir` (a folder, or an .npz file); an error that names the folder and what was
/// looked for when it holds none, or what is wrong with the options.
Result<DataDir> loadDataDir(const std::string &dir, const DataDirOptions &options);

/// Puts `data`'s splits behind AugmentedSource (training draws `recipe`,
/// evaluation its deterministic view) with images of `height` x `width`,
/// and says so in its description. The recipe `none` on images of that
/// size leaves the sources as they are.
Status augmentDataDir(DataDir &data, const AugmentRecipe &recipe, int64_t height, int64_t width);

} // namespace rn::train

#endif // RN_RUNTIME_TRAIN_DATA_DIR_H
