//===- data_dir.cpp - What rn-run --data DIR holds ------------------------===//
//
// See data_dir.h.
//
//===----------------------------------------------------------------------===//

#include "runtime/train/data_dir.h"

#include "runtime/train/augmented_source.h"
#include "runtime/train/idx_source.h"
#include "runtime/train/image_folder_source.h"
#include "runtime/train/npz_source.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>

namespace rn::train {

namespace {

/// "a,b,..." as floats, as many as given, or an error naming the flag.
Result<std::vector<float>> channelValues(const std::string &text, const char *flag) {
  std::vector<float> out;
  const char *p = text.c_str();
  for (;;) {
    char *end = nullptr;
    float v = std::strtof(p, &end);
    if (end == p || (*end != ',' && *end != '\0'))
      return Error(std::string(flag) + " needs comma-separated numbers (one per channel), got '" +
                   text + "'");
    out.push_back(v);
    if (*end == '\0')
      return out;
    p = end + 1;
  }
}

/// The three values of `flag` (CIFAR's channels).
Result<std::array<float, 3>> threeValues(const std::string &text, const char *flag) {
  Result<std::vector<float>> v = channelValues(text, flag);
  if (!v)
    return v.error();
  if (v->size() != 3)
    return Error(std::string(flag) + " needs three values for CIFAR's red, green and blue, got '" +
                 text + "'");
  return std::array<float, 3>{(*v)[0], (*v)[1], (*v)[2]};
}

/// --mean and --std as given, one value per channel each.
struct GivenStats {
  std::vector<float> mean, std;
};

/// --mean/--std (both or neither: `absent` says what is used then); empty
/// when neither is given.
Result<std::optional<GivenStats>> givenStats(const DataDirOptions &options, const char *absent) {
  if (options.mean.empty() != options.std.empty())
    return Error(std::string("give --mean and --std together (or neither: ") + absent + ")");
  if (options.mean.empty())
    return std::optional<GivenStats>();
  Result<std::vector<float>> mean = channelValues(options.mean, "--mean");
  if (!mean)
    return mean.error();
  Result<std::vector<float>> std = channelValues(options.std, "--std");
  if (!std)
    return std.error();
  return std::optional<GivenStats>(GivenStats{*mean, *std});
}

constexpr const char *kSplitStats = "the training split's are used";

template <typename Values> std::string listed(const Values &values) {
  std::string out;
  for (float v : values) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.4f", v);
    out += (out.empty() ? "" : ",") + std::string(buf);
  }
  return out;
}

Result<DataDir> loadNpz(const std::string &path, const DataDirOptions &options) {
  if (options.label != "fine")
    return Error("--label is CIFAR-100's; " + path + " is an .npz archive");
  Result<std::optional<GivenStats>> given = givenStats(options, kSplitStats);
  if (!given)
    return given.error();
  NpzSourceOptions npz;
  npz.limitTrain = options.limitTrain;
  npz.limitTest = options.limitTest;
  if (*given) {
    npz.mean = (*given)->mean;
    npz.std = (*given)->std;
  }
  Result<NpzSources> sources = loadNpzSources(path, npz);
  if (!sources)
    return sources.error();
  DataDir out;
  out.description = "NPZ " + path + ": " + std::to_string(sources->train->count()) +
                    " training and " + std::to_string(sources->test->count()) +
                    " test examples, " + sources->train->layout() + ", " +
                    std::to_string(sources->classes) + " classes, mean " + listed(sources->mean) +
                    " std " + listed(sources->std) +
                    (sources->statsComputed ? " (computed from the training split)" : " (given)");
  out.train = std::move(sources->train);
  out.test = std::move(sources->test);
  return out;
}

Result<DataDir> loadImageFolder(const std::string &dir, const DataDirOptions &options) {
  if (options.label != "fine")
    return Error("--label is CIFAR-100's; " + dir + " is an image folder");
  Result<std::optional<GivenStats>> given = givenStats(options, kSplitStats);
  if (!given)
    return given.error();
  ImageFolderSourceOptions images;
  images.limitTrain = options.limitTrain;
  images.limitTest = options.limitTest;
  images.mixedSizes = options.mixedSizes;
  images.rank = options.rank;
  images.ranks = options.ranks;
  images.sumOverRanks = options.sumOverRanks;
  images.skipBadImages = options.skipBadImages;
  if (*given) {
    images.mean = (*given)->mean;
    images.std = (*given)->std;
  }
  Result<ImageFolderSources> sources = loadImageFolderSources(dir, images);
  if (!sources)
    return sources.error();
  DataDir out;
  out.description =
      "image folder " + dir + ": " + std::to_string(sources->train->count()) + " training and " +
      std::to_string(sources->test->count()) + " " + sources->testSplit + " examples, " +
      sources->train->layout() + ", " + std::to_string(sources->classes.size()) +
      " classes, mean " + listed(sources->mean) + " std " + listed(sources->std) +
      (sources->statsComputed
           ? " (computed from the training split, its " + std::to_string(sources->train->count()) +
                 " images decoded once" +
                 (options.ranks > 1 ? ", shared among " + std::to_string(options.ranks) + " ranks"
                                    : std::string()) +
                 ")"
           : std::string(" (given)"));
  out.sizesVary = sources->sizesDiffer;
  out.skipped = std::move(sources->skipped);
  out.train = std::move(sources->train);
  out.test = std::move(sources->test);
  return out;
}

} // namespace

Result<DataDir> loadDataDir(const std::string &dir, const DataDirOptions &options) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_regular_file(dir, ec) && fs::path(dir).extension() == ".npz")
    return loadNpz(dir, options);
  if (!fs::exists(dir, ec))
    return Error(dir + ": no such file or folder (--data takes a folder of Fashion-MNIST's IDX "
                 "files, CIFAR's binary files or images, or an .npz file)");
  if (!fs::is_directory(dir, ec))
    return Error(dir + ": cannot open the data (not a folder of IDX or CIFAR files, nor an .npz "
                 "file)");
  // ROOT/train/<class>/*.png|jpg|jpeg and ROOT/val (or test)/<class>/...
  if (isImageFolder(dir))
    return loadImageFolder(dir, options);
  DataDir out;
  if (fs::is_regular_file(fs::path(dir) / "train-images-idx3-ubyte.gz", ec)) {
    if (options.label != "fine")
      return Error("--label is CIFAR-100's; " + dir + " holds IDX files");
    Result<std::optional<GivenStats>> given =
        givenStats(options, "Fashion-MNIST's 0.2860 and 0.3530");
    if (!given)
      return given.error();
    float mean = kFashionMnistMean, std = kFashionMnistStd;
    if (*given) {
      if ((*given)->mean.size() != 1 || (*given)->std.size() != 1)
        return Error("IDX images have one channel: give --mean and --std with one value each");
      if (!((*given)->std[0] > 0))
        return Error("--std must be positive");
      mean = (*given)->mean[0], std = (*given)->std[0];
    }
    Result<IdxSources> idx = loadIdxSources(dir, options.limitTrain, options.limitTest, mean, std);
    if (!idx)
      return idx.error();
    out.description = "IDX (Fashion-MNIST) in " + dir + ": " +
                      std::to_string(idx->train->count()) + " training and " +
                      std::to_string(idx->test->count()) + " test examples, " +
                      idx->train->layout() + ", mean " + listed(std::vector<float>{mean}) +
                      " std " + listed(std::vector<float>{std}) +
                      (options.mean.empty() ? " (Fashion-MNIST's published values)" : " (given)");
    out.train = std::move(idx->train);
    out.test = std::move(idx->test);
    return out;
  }
  CifarSourceOptions cifar;
  cifar.limitTrain = options.limitTrain;
  cifar.limitTest = options.limitTest;
  if (options.label != "fine" && options.label != "coarse")
    return Error("--label must be fine or coarse, got '" + options.label + "'");
  cifar.label = options.label == "fine" ? CifarLabel::fine : CifarLabel::coarse;
  Result<std::optional<GivenStats>> given = givenStats(options, kSplitStats);
  if (!given)
    return given.error();
  if (*given) {
    Result<std::array<float, 3>> mean = threeValues(options.mean, "--mean");
    if (!mean)
      return mean.error();
    Result<std::array<float, 3>> std = threeValues(options.std, "--std");
    if (!std)
      return std.error();
    cifar.mean = *mean;
    cifar.std = *std;
  }
  Result<CifarSources> sources = loadCifarSources(dir, cifar);
  if (!sources) {
    // Only a folder with none of CIFAR's files may have meant another format.
    const std::string &why = sources.error().message();
    if (why.find("no CIFAR data") == std::string::npos)
      return sources.error();
    return Error(dir + " holds no data rn-run reads: no CIFAR-10 (data_batch_1.bin ... "
                 "data_batch_5.bin, test_batch.bin) or CIFAR-100 (train.bin, test.bin) files, "
                 "there or in cifar-10-batches-bin/ or cifar-100-binary/; no Fashion-MNIST "
                 "(train-images-idx3-ubyte.gz); no image folder (train/<class>/ and val/ or "
                 "test/)");
  }
  const bool hundred = sources->format == CifarFormat::cifar100;
  if (!hundred && options.label != "fine")
    return Error("--label is CIFAR-100's; " + dir + " holds CIFAR-10");
  out.description =
      std::string(hundred ? "CIFAR-100" : "CIFAR-10") + " in " + dir + ": " +
      std::to_string(sources->train->count()) + " training and " +
      std::to_string(sources->test->count()) + " test examples, 32x32x3, " +
      std::to_string(sources->classes) + " classes" +
      (hundred ? std::string(" (") + options.label + " labels)" : std::string()) + ", mean " +
      listed(sources->mean) + " std " + listed(sources->std) +
      (sources->statsComputed ? " (computed from the training split)" : " (given)");
  out.train = std::move(sources->train);
  out.test = std::move(sources->test);
  return out;
}

Status augmentDataDir(DataDir &data, const AugmentRecipe &recipe, int64_t height,
                      int64_t width) {
  const std::vector<int64_t> shape = data.train->imageShape();
  const bool sized = !data.sizesVary && shape[0] == height && shape[1] == width;
  if (recipe.kind == AugmentKind::none && sized)
    return Status::success();
  for (std::unique_ptr<DataSource> *split : {&data.train, &data.test}) {
    Result<std::unique_ptr<AugmentedSource>> augmented =
        AugmentedSource::create(std::move(*split), recipe, height, width);
    if (!augmented)
      return augmented.error();
    *split = std::move(*augmented);
  }
  std::string how;
  switch (recipe.kind) {
  case AugmentKind::none:
    how = "none";
    break;
  case AugmentKind::cropFlip:
    how = "crop-flip (" + std::to_string(recipe.padding) +
          "-pixel zero padding, random crop, horizontal flip; evaluation unchanged)";
    break;
  case AugmentKind::resizedCropFlip:
    how = "rrc-flip (random-resized crop to " + std::to_string(height) + "x" +
          std::to_string(width) + ", horizontal flip; evaluation: resize + center crop " +
          listed(std::vector<float>{float(recipe.evalCropFraction)}) + ")";
    break;
  }
  data.description += "; augmentation " + how;
  return Status::success();
}

} // namespace rn::train
