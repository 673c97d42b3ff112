//===- rn-data.cpp - A data set as rn-run reads it ------------------------===//
//
//   rn-data bench DATA [--augment A] [--size HxW] [--threads 1,4,8,16] ...
//   rn-data show DATA --augment A [--size HxW] [--count N] -o GRID.png
//   rn-data to-jpeg ROOT OUT [--quality Q] [--short-side S]
//
// `bench` times the loader rn-run uses (runtime/train: DataSource::fillBatch
// on a LoaderPool, the same decode, augmentation and normalization) over
// the training split's first batches of epoch 0, for each thread count, and
// prints one line and one JSON line per count, so that a data-bound run can
// be told from a device-bound one before training. `show` writes a grid of
// training examples as augmentation draws them (a row per example: its
// evaluation view, then one draw per epoch) for docs/data.md. `to-jpeg`
// copies an image folder with every image re-encoded as JPEG, for tests,
// or shrunk so that its shorter side is S pixels (a pre-resized data set:
// fewer pixels to decode per step, the way a data-bound run keeps up).
//
//===----------------------------------------------------------------------===//

#include "rn_version.h"
#include "runtime/data/augment.h"
#include "runtime/data/image_folder.h"
#include "runtime/train/augmented_source.h"
#include "runtime/train/command_line.h"
#include "runtime/train/data_dir.h"
#include "runtime/train/loader_pool.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

namespace {

using namespace rn::train;

int fail(const std::string &message) {
  std::fprintf(stderr, "rn-data: error: %s\n", message.c_str());
  return 1;
}

constexpr const char kUsage[] =
      "usage: rn-data bench DATA [options]     images/s of rn-run's loader\n"
      "       rn-data show DATA -o GRID.png [options]  augmented samples as a picture\n"
      "       rn-data to-jpeg ROOT OUT [--quality Q] [--short-side S]  an image folder\n"
      "                     re-encoded as JPEG, optionally shrunk to a shorter side of S\n"
      "       rn-data --version\n"
      "DATA is what rn-run --data takes (docs/rn-run.md).\n"
      "\noptions:\n"
      "  --augment A        none (default), crop-flip or rrc-flip (as rn-run)\n"
      "  --size H[xW]       the model's image size (default: the data's; rrc-flip\n"
      "                     on images of several sizes needs it)\n"
      "  --mean M,... --std S,...  normalization (default: as rn-run)\n"
      "  --limit-train K    use only the first K training examples\n"
      "  --seed S           shuffling and augmentation seed (default 0)\n"
      "bench:\n"
      "  --threads 1,4,...  loader thread counts to time (default 1,4,8,16)\n"
      "  --batch N          examples per batch (default 256)\n"
      "  --pixels           time uint8 batches (a uint8 model's input: no\n"
      "                     normalization on the host) instead of f32 ones\n"
      "  --batches K        batches timed per thread count (default 20; fewer when\n"
      "                     the split is smaller), after one untimed batch\n"
      "show:\n"
      "  --count N          examples, one row each (default 8)\n"
      "  --draws D          training draws per example, epochs 0..D-1 (default 5)\n"
      "  --scale K          draw every pixel as K x K (default 1)\n"
      "  -o FILE.png        the grid\n";

void usage(FILE *out) { std::fputs(kUsage, out); }

struct Options {
  std::string command, data, out, augment = "none", mean, std, threads = "1,4,8,16";
  int64_t height = 0, width = 0, limitTrain = 0, batch = 256, batches = 20, count = 8, draws = 5,
          scale = 1;
  int quality = 90;
  bool pixels = false; ///< bench: uint8 batches (fillPixelBatch), as a uint8 model reads
  int64_t shortSide = 0; ///< to-jpeg: shrink images whose shorter side is longer
  uint64_t seed = 0;
  std::vector<std::string> positional;
};

bool parseInteger(const char *text, int64_t min, int64_t &out) {
  char *end = nullptr;
  long long v = std::strtoll(text, &end, 10);
  if (!*text || *end || v < min)
    return false;
  out = v;
  return true;
}

/// Parses the flags; 0 to go on, -1 after --help, else the exit code.
int parse(int argc, char **argv, Options &o) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> const char * {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "rn-data: error: %s needs a value\n", arg.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    auto integer = [&](int64_t min, int64_t &out) {
      const char *v = value();
      if (!parseInteger(v, min, out)) {
        std::fprintf(stderr, "rn-data: error: %s must be an integer >= %lld, got '%s'\n",
                     arg.c_str(), (long long)min, v);
        std::exit(2);
      }
    };
    if (arg == "-h" || arg == "--help") {
      usage(stdout);
      return -1;
    } else if (arg == "--version") {
      std::printf("rn-data %s (RN)\n", RN_VERSION_STRING);
      return -1;
    } else if (arg == "--augment") {
      o.augment = value();
    } else if (arg == "--mean") {
      o.mean = value();
    } else if (arg == "--std") {
      o.std = value();
    } else if (arg == "--threads") {
      o.threads = value();
    } else if (arg == "-o") {
      o.out = value();
    } else if (arg == "--size") {
      const std::string v = value();
      const size_t x = v.find('x');
      if (!parseInteger(v.substr(0, x).c_str(), 1, o.height) ||
          !parseInteger(x == std::string::npos ? v.c_str() : v.substr(x + 1).c_str(), 1,
                        o.width))
        return fail("--size must be H or HxW (positive integers), got '" + v + "'");
    } else if (arg == "--limit-train") {
      integer(1, o.limitTrain);
    } else if (arg == "--batch") {
      integer(1, o.batch);
    } else if (arg == "--batches") {
      integer(1, o.batches);
    } else if (arg == "--count") {
      integer(1, o.count);
    } else if (arg == "--draws") {
      integer(1, o.draws);
    } else if (arg == "--pixels") {
      o.pixels = true;
    } else if (arg == "--short-side") {
      integer(1, o.shortSide);
    } else if (arg == "--scale") {
      integer(1, o.scale);
    } else if (arg == "--quality") {
      int64_t q = 0;
      integer(1, q);
      if (q > 100)
        return fail("--quality must be in 1..100");
      o.quality = int(q);
    } else if (arg == "--seed") {
      int64_t s = 0;
      integer(0, s);
      o.seed = uint64_t(s);
    } else if (!arg.empty() && arg[0] == '-') {
      return fail(unknownOptionMessage(arg, flagsInUsage(kUsage)));
    } else if (o.command.empty()) {
      o.command = arg;
    } else {
      o.positional.push_back(arg);
    }
  }
  return 0;
}

/// The data set as rn-run reads it, behind the augmentation at the size
/// asked (or the data's own).
rn::Result<DataDir> load(const Options &o, const rn::AugmentRecipe &recipe) {
  DataDirOptions options;
  options.limitTrain = o.limitTrain;
  options.mean = o.mean;
  options.std = o.std;
  options.mixedSizes = recipe.kind == rn::AugmentKind::resizedCropFlip;
  rn::Result<DataDir> data = loadDataDir(o.data, options);
  if (!data)
    return data.error();
  int64_t height = o.height, width = o.width;
  if (height == 0) {
    if (data->sizesVary)
      return rn::Error(o.data + ": its images differ in size: give --size (the model's)");
    height = data->train->imageShape()[0];
    width = data->train->imageShape()[1];
  }
  if (rn::Status st = augmentDataDir(*data, recipe, height, width); !st)
    return st.error();
  return data;
}

int bench(const Options &o, const DataDir &data) {
  std::vector<int64_t> threads;
  for (size_t at = 0; at <= o.threads.size();) {
    size_t comma = std::min(o.threads.find(',', at), o.threads.size());
    int64_t n = 0;
    if (!parseInteger(o.threads.substr(at, comma - at).c_str(), 1, n))
      return fail("--threads must list positive integers, got '" + o.threads + "'");
    threads.push_back(n);
    at = comma + 1;
  }
  const DataSource &train = *data.train;
  const int64_t batch = std::min(o.batch, train.count());
  const int64_t batches = std::min(o.batches, std::max<int64_t>(1, train.count() / batch - 1));
  const std::vector<int64_t> order = shuffledOrder(train.count(), o.seed, 0);
  std::vector<float> images(static_cast<size_t>(batch * train.imageSize()));
  std::vector<uint8_t> pixels(o.pixels ? images.size() : 0);
  std::vector<int32_t> labels(static_cast<size_t>(batch));
  std::printf("loader: %s, batch %lld, %lld timed batches of epoch 0, %s\n",
              train.layout().c_str(), (long long)batch, (long long)batches,
              o.pixels ? "uint8 pixels (a uint8 model's input)" : "normalized f32");
  auto fill = [&](const int64_t *indices, const BatchOptions &options) {
    return train.fillInputBatch(o.pixels ? rn::DType::u8 : rn::DType::f32, indices, batch,
                                o.pixels ? static_cast<void *>(pixels.data()) : images.data(),
                                labels.data(), options);
  };
  for (int64_t n : threads) {
    LoaderPool pool{int(n)};
    BatchOptions options;
    options.draw = BatchDraw{true, o.seed, 0};
    options.pool = &pool;
    // One untimed batch: first touches of the files and the buffers.
    if (rn::Status st = fill(order.data(), options); !st)
      return fail(st.error().message());
    const auto start = std::chrono::steady_clock::now();
    for (int64_t b = 1; b <= batches; ++b) {
      const int64_t first = (b * batch) % std::max<int64_t>(1, train.count() - batch + 1);
      if (rn::Status st = fill(order.data() + first, options); !st)
        return fail(st.error().message());
    }
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const double rate = double(batches * batch) / seconds;
    std::printf("threads %lld: %.0f images/s, %.2f ms per batch of %lld\n", (long long)n, rate,
                1e3 * seconds / double(batches), (long long)batch);
    std::printf("{\"threads\": %lld, \"images_per_s\": %.1f, \"ms_per_batch\": %.3f, \"batch\": "
                "%lld, \"augment\": \"%s\", \"pixels\": %s}\n",
                (long long)n, rate, 1e3 * seconds / double(batches), (long long)batch,
                o.augment.c_str(), o.pixels ? "true" : "false");
    std::fflush(stdout);
  }
  return 0;
}

int show(const Options &o, const DataDir &data) {
  if (o.out.empty())
    return fail("show needs -o FILE.png");
  const auto *source = dynamic_cast<const AugmentedSource *>(data.train.get());
  const DataSource &train = *data.train;
  const std::vector<int64_t> shape = train.imageShape();
  const int64_t k = o.scale, h = shape[0] * k, w = shape[1] * k, c = shape[2], gap = 2;
  const int64_t rows = std::min(o.count, train.count()), columns = 1 + o.draws;
  rn::ImageSize grid{rows * (h + gap) - gap, columns * (w + gap) - gap, c};
  std::vector<uint8_t> pixels(static_cast<size_t>(grid.pixels()), uint8_t(255));
  PixelImage image;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t col = 0; col < columns; ++col) {
      // Column 0: the evaluation view; then training draws of epochs 0, 1, ...
      const BatchDraw draw =
          col == 0 ? BatchDraw{} : BatchDraw{true, o.seed, col - 1};
      rn::Status st = source ? source->augmentedPixels(r, draw, image) : train.readPixels(r, image);
      if (!st)
        return fail(st.error().message());
      for (int64_t y = 0; y < h; ++y)
        for (int64_t x = 0; x < w; ++x)
          std::copy_n(image.pixels.data() + ((y / k) * (w / k) + x / k) * c, c,
                      pixels.data() + ((r * (h + gap) + y) * grid.width + col * (w + gap) + x) * c);
    }
  if (rn::Status st = rn::writeImageFile(o.out, grid, pixels.data()); !st)
    return fail(st.error().message());
  std::printf("wrote %s: %lld examples x (evaluation view + %lld training draws), %s\n",
              o.out.c_str(), (long long)rows, (long long)o.draws, grid.str().c_str());
  return 0;
}

/// One image of `to-jpeg`: decoded, shrunk when asked, written as JPEG.
rn::Status copyAsJpeg(const Options &o, const std::string &from, const std::string &to) {
  rn::Result<rn::ImageSize> size = rn::readImageSize(from);
  if (!size)
    return size.error();
  std::vector<uint8_t> pixels(static_cast<size_t>(size->pixels()));
  RN_RETURN_IF_ERROR(rn::decodeImage(from, *size, pixels.data()));
  rn::ImageSize outSize = *size;
  const int64_t shorter = std::min(size->height, size->width);
  if (o.shortSide > 0 && shorter > o.shortSide) {
    // The whole image through augmentation's antialiased resize.
    const double scale = double(o.shortSide) / double(shorter);
    outSize.height = std::max<int64_t>(1, std::llround(double(size->height) * scale));
    outSize.width = std::max<int64_t>(1, std::llround(double(size->width) * scale));
    std::vector<uint8_t> resized(static_cast<size_t>(outSize.pixels()));
    rn::resizeBox(pixels.data(), size->height, size->width, size->channels,
                  rn::CropBox{0, 0, double(size->height), double(size->width), false},
                  outSize.height, outSize.width, resized.data());
    pixels = std::move(resized);
  }
  return rn::writeImageFile(to, outSize, pixels.data(), o.quality);
}

int toJpeg(const Options &o) {
  if (o.positional.size() != 1)
    return fail("to-jpeg takes ROOT and OUT");
  namespace fs = std::filesystem;
  const fs::path out = o.positional[0];
  rn::Result<rn::ImageFolder> folder = rn::listImageFolder(o.data);
  if (!folder)
    return fail(folder.error().message());
  std::vector<std::pair<std::string, std::string>> copies;
  for (const std::vector<rn::ImageFile> *split : {&folder->train, &folder->test})
    for (const rn::ImageFile &file : *split) {
      fs::path target = out / fs::relative(fs::path(file.path), fs::path(o.data));
      target.replace_extension(".jpg");
      std::error_code ec;
      fs::create_directories(target.parent_path(), ec);
      copies.emplace_back(file.path, target.string());
    }
  // Every host thread: a folder of photos takes minutes on one.
  LoaderPool pool(int(std::max(1u, std::thread::hardware_concurrency())));
  std::vector<rn::Status> status(copies.size());
  pool.run(int64_t(copies.size()), [&](int64_t i) {
    status[size_t(i)] = copyAsJpeg(o, copies[size_t(i)].first, copies[size_t(i)].second);
  });
  for (const rn::Status &st : status)
    if (!st)
      return fail(st.error().message());
  std::printf("wrote %lld JPEG images (quality %d%s) to %s\n", (long long)copies.size(),
              o.quality,
              o.shortSide > 0 ? (", shorter side at most " + std::to_string(o.shortSide)).c_str()
                              : "",
              out.string().c_str());
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  Options o;
  if (int rc = parse(argc, argv, o); rc != 0)
    return rc < 0 ? 0 : rc;
  if (o.command.empty() || o.positional.empty()) {
    usage(stderr);
    return fail(o.command.empty() ? "no command given" : "no data given");
  }
  o.data = o.positional.front();
  o.positional.erase(o.positional.begin());
  if (o.command == "to-jpeg")
    return toJpeg(o);
  if (o.command != "bench" && o.command != "show") {
    usage(stderr);
    return fail("unknown command '" + o.command + "' (bench, show or to-jpeg)");
  }
  if (!o.positional.empty())
    return fail("more than one data set given");
  rn::Result<rn::AugmentKind> kind = rn::parseAugmentKind(o.augment);
  if (!kind)
    return fail(kind.error().message());
  rn::AugmentRecipe recipe;
  recipe.kind = *kind;
  rn::Result<DataDir> data = load(o, recipe);
  if (!data)
    return fail(data.error().message());
  std::printf("data: %s\n", data->description.c_str());
  return o.command == "bench" ? bench(o, *data) : show(o, *data);
}
