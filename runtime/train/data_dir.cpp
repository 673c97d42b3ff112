//===- data_dir.cpp - What rn-run --data DIR holds ------------------------===//
//
// See data_dir.h.
//
//===----------------------------------------------------------------------===//

#include "runtime/train/data_dir.h"

#include "runtime/train/idx_source.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>

namespace rn::train {

namespace {

/// "a,b,c" as three floats, or an error naming the flag.
Result<std::array<float, 3>> channelValues(const std::string &text, const char *flag) {
  std::array<float, 3> out{};
  const char *p = text.c_str();
  for (size_t c = 0; c < 3; ++c) {
    char *end = nullptr;
    out[c] = std::strtof(p, &end);
    if (end == p || (c < 2 && *end != ',') || (c == 2 && *end != '\0'))
      return Error(std::string(flag) + " needs three comma-separated numbers (one per channel), got '" +
                   text + "'");
    p = end + 1;
  }
  return out;
}

std::string triple(const std::array<float, 3> &v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.4f,%.4f,%.4f", v[0], v[1], v[2]);
  return buf;
}

} // namespace

Result<DataDir> loadDataDir(const std::string &dir, const DataDirOptions &options) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    return Error(dir + ": cannot open the data directory (not a folder)");
  DataDir out;
  if (fs::is_regular_file(fs::path(dir) / "train-images-idx3-ubyte.gz", ec)) {
    if (!options.mean.empty() || !options.std.empty() || options.label != "fine")
      return Error("--data " + dir + " holds IDX files (Fashion-MNIST's normalization, one "
                   "label): --mean, --std and --label are for CIFAR");
    Result<IdxSources> idx = loadIdxSources(dir, options.limitTrain, options.limitTest);
    if (!idx)
      return idx.error();
    out.description = "IDX (Fashion-MNIST) in " + dir + ": " +
                      std::to_string(idx->train->count()) + " training and " +
                      std::to_string(idx->test->count()) + " test examples, " +
                      idx->train->layout();
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
  if (options.mean.empty() != options.std.empty())
    return Error("give --mean and --std together (or neither: the training split's are used)");
  if (!options.mean.empty()) {
    Result<std::array<float, 3>> mean = channelValues(options.mean, "--mean");
    if (!mean)
      return mean.error();
    Result<std::array<float, 3>> std = channelValues(options.std, "--std");
    if (!std)
      return std.error();
    cifar.mean = *mean;
    cifar.std = *std;
  }
  Result<CifarSources> sources = loadCifarSources(dir, cifar);
  if (!sources)
    return Error(sources.error().message() +
                 "; nor train-images-idx3-ubyte.gz (Fashion-MNIST's IDX files)");
  const bool hundred = sources->format == CifarFormat::cifar100;
  if (!hundred && options.label != "fine")
    return Error("--label is CIFAR-100's; " + dir + " holds CIFAR-10");
  out.description =
      std::string(hundred ? "CIFAR-100" : "CIFAR-10") + " in " + dir + ": " +
      std::to_string(sources->train->count()) + " training and " +
      std::to_string(sources->test->count()) + " test examples, 32x32x3, " +
      std::to_string(sources->classes) + " classes" +
      (hundred ? std::string(" (") + options.label + " labels)" : std::string()) + ", mean " +
      triple(sources->mean) + " std " + triple(sources->std) +
      (sources->statsComputed ? " (computed from the training split)" : " (given)");
  out.train = std::move(sources->train);
  out.test = std::move(sources->test);
  return out;
}

} // namespace rn::train
