//===- augment.cpp - Random crops, flips and resizes of uint8 images ------===//
//
// See augment.h.
//
//===----------------------------------------------------------------------===//

#include "runtime/data/augment.h"

#include <algorithm>
#include <cmath>

namespace rn {

Result<AugmentKind> parseAugmentKind(const std::string &name) {
  if (name == "none")
    return AugmentKind::none;
  if (name == "crop-flip")
    return AugmentKind::cropFlip;
  if (name == "rrc-flip")
    return AugmentKind::resizedCropFlip;
  return Error("--augment must be none, crop-flip (CIFAR: 4-pixel padded random crop + flip) or "
               "rrc-flip (ImageNet: random-resized crop + flip), got '" +
               name + "'");
}

const char *augmentKindName(AugmentKind kind) {
  switch (kind) {
  case AugmentKind::none:
    return "none";
  case AugmentKind::cropFlip:
    return "crop-flip";
  case AugmentKind::resizedCropFlip:
    return "rrc-flip";
  }
  return "?";
}

namespace {

constexpr uint64_t kGolden = 0x9E3779B97F4A7C15ull;

/// splitmix64's output function.
uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

uint64_t splitmix64(uint64_t x) { return mix64(x + kGolden); }

} // namespace

ExampleRandom::ExampleRandom(const ExampleKey &key) {
  // Each part mixed in turn, so that neighbouring keys share nothing.
  uint64_t h = splitmix64(key.seed ^ 0x61756775ull /* "augu" */);
  h = splitmix64(h ^ uint64_t(key.epoch));
  state_ = splitmix64(h ^ uint64_t(key.example));
}

uint64_t ExampleRandom::next() {
  state_ += kGolden;
  return mix64(state_);
}

double ExampleRandom::uniform() { return double(next() >> 11) * 0x1.0p-53; }

int64_t ExampleRandom::integer(int64_t lo, int64_t hi) {
  // Multiply-shift onto [0, hi - lo]: no modulo bias worth naming at image sizes.
  const uint64_t span = uint64_t(hi - lo) + 1;
  return lo + int64_t((unsigned __int128)next() * span >> 64);
}

CropBox drawPaddedCrop(const ExampleKey &key, int64_t height, int64_t width, int64_t padding) {
  ExampleRandom random(key);
  CropBox box;
  box.top = double(random.integer(0, 2 * padding));
  box.left = double(random.integer(0, 2 * padding));
  box.height = double(height);
  box.width = double(width);
  box.flip = random.uniform() < 0.5;
  return box;
}

CropBox drawResizedCrop(const ExampleKey &key, int64_t height, int64_t width,
                        const AugmentRecipe &recipe) {
  ExampleRandom random(key);
  CropBox box;
  const double area = double(height) * double(width);
  const double logMin = std::log(recipe.minRatio), logMax = std::log(recipe.maxRatio);
  bool found = false;
  for (int attempt = 0; attempt < 10 && !found; ++attempt) {
    const double target =
        area * (recipe.minScale + (recipe.maxScale - recipe.minScale) * random.uniform());
    const double ratio = std::exp(logMin + (logMax - logMin) * random.uniform());
    const int64_t w = std::llround(std::sqrt(target * ratio));
    const int64_t h = std::llround(std::sqrt(target / ratio));
    if (w > 0 && h > 0 && w <= width && h <= height) {
      box.top = double(random.integer(0, height - h));
      box.left = double(random.integer(0, width - w));
      box.height = double(h);
      box.width = double(w);
      found = true;
    }
  }
  if (!found) {
    // The whole image, cut to the nearest allowed ratio, centered.
    const double ratio = double(width) / double(height);
    int64_t w = width, h = height;
    if (ratio < recipe.minRatio)
      h = std::llround(double(w) / recipe.minRatio);
    else if (ratio > recipe.maxRatio)
      w = std::llround(double(h) * recipe.maxRatio);
    box.top = double((height - h) / 2);
    box.left = double((width - w) / 2);
    box.height = double(h);
    box.width = double(w);
  }
  box.flip = random.uniform() < 0.5;
  return box;
}

CropBox centerBox(int64_t height, int64_t width, int64_t outHeight, int64_t outWidth,
                  double fraction) {
  // Resize so that the shorter side is out / fraction, crop out x out from
  // the center: in source pixels, a box of out / scale.
  const double shortOut = double(std::min(outHeight, outWidth)) / fraction;
  const double scale = shortOut / double(std::min(height, width));
  CropBox box;
  box.height = std::min(double(height), double(outHeight) / scale);
  box.width = std::min(double(width), double(outWidth) / scale);
  box.top = (double(height) - box.height) / 2;
  box.left = (double(width) - box.width) / 2;
  return box;
}

void cropWithPadding(const uint8_t *in, int64_t height, int64_t width, int64_t channels,
                     int64_t padding, const CropBox &box, uint8_t *out) {
  const int64_t top = int64_t(box.top) - padding, left = int64_t(box.left) - padding;
  const int64_t outHeight = int64_t(box.height), outWidth = int64_t(box.width);
  if (outHeight <= 0 || outWidth <= 0 || channels <= 0)
    return;
  const size_t rowBytes = size_t(outWidth) * size_t(channels);
  for (int64_t y = 0; y < outHeight; ++y) {
    const int64_t sy = top + y;
    uint8_t *row = out + y * outWidth * channels;
    if (sy < 0 || sy >= height) {
      std::fill_n(row, rowBytes, uint8_t(0));
      continue;
    }
    for (int64_t x = 0; x < outWidth; ++x) {
      const int64_t sx = left + (box.flip ? outWidth - 1 - x : x);
      uint8_t *pixel = row + x * channels;
      if (sx < 0 || sx >= width)
        std::fill(pixel, pixel + channels, uint8_t(0));
      else
        std::copy_n(in + (sy * width + sx) * channels, channels, pixel);
    }
  }
}

namespace {

/// One output coordinate's filter: source pixels first..first+weights.size()
/// with their weights (summing to 1).
struct Taps {
  int64_t first = 0;
  std::vector<float> weights;
};

/// The filter of each of `outSize` outputs over the source span [start,
/// start + length) of an axis of `inSize` pixels: a triangle as wide as the
/// scale when shrinking (antialiasing), bilinear when enlarging.
std::vector<Taps> axisTaps(double start, double length, int64_t inSize, int64_t outSize) {
  const double scale = length / double(outSize);
  const double support = std::max(scale, 1.0);
  std::vector<Taps> taps(static_cast<size_t>(outSize));
  for (int64_t o = 0; o < outSize; ++o) {
    const double center = start + (double(o) + 0.5) * scale;
    int64_t lo = std::max<int64_t>(0, int64_t(std::floor(center - support)));
    int64_t hi = std::min<int64_t>(inSize, int64_t(std::ceil(center + support)));
    Taps &t = taps[size_t(o)];
    double sum = 0;
    std::vector<double> w;
    for (int64_t i = lo; i < hi; ++i) {
      const double d = std::abs((double(i) + 0.5 - center) / support);
      w.push_back(d < 1 ? 1 - d : 0);
      sum += w.back();
    }
    // Trim zero weights at the ends; a span that catches nothing (cannot
    // happen inside the image) takes its nearest pixel.
    int64_t a = 0, b = int64_t(w.size());
    while (a < b && w[size_t(a)] == 0)
      ++a;
    while (b > a && w[size_t(b - 1)] == 0)
      --b;
    if (a == b || sum == 0) {
      t.first = std::clamp<int64_t>(int64_t(center), 0, inSize - 1);
      t.weights = {1.0f};
      continue;
    }
    t.first = lo + a;
    for (int64_t i = a; i < b; ++i)
      t.weights.push_back(float(w[size_t(i)] / sum));
  }
  return taps;
}

} // namespace

namespace {

/// The horizontal pass of one source row for `Channels` channels (0: any,
/// given by `channels`): out[x] = sum_k w_k * row[first_x + k].
template <int Channels>
void resizeRow(const uint8_t *row, const std::vector<Taps> &columns, bool flip, int64_t channels,
               float *out) {
  const int64_t c = Channels > 0 ? Channels : channels;
  const int64_t outWidth = int64_t(columns.size());
  for (int64_t x = 0; x < outWidth; ++x) {
    const Taps &t = columns[size_t(flip ? outWidth - 1 - x : x)];
    const uint8_t *src = row + t.first * c;
    float *dst = out + x * c;
    for (int64_t k = 0; k < c; ++k)
      dst[k] = 0;
    for (size_t j = 0; j < t.weights.size(); ++j, src += c) {
      const float w = t.weights[j];
      for (int64_t k = 0; k < c; ++k)
        dst[k] += w * float(src[k]);
    }
  }
}

} // namespace

void resizeBox(const uint8_t *in, int64_t height, int64_t width, int64_t channels,
               const CropBox &box, int64_t outHeight, int64_t outWidth, uint8_t *out) {
  const std::vector<Taps> columns = axisTaps(box.left, box.width, width, outWidth);
  const std::vector<Taps> rows = axisTaps(box.top, box.height, height, outHeight);
  int64_t rowLo = height, rowHi = 0;
  for (const Taps &t : rows) {
    rowLo = std::min(rowLo, t.first);
    rowHi = std::max(rowHi, t.first + int64_t(t.weights.size()));
  }
  // Horizontal pass over the rows the vertical one reads, then vertical
  // (each output row a weighted sum of whole rows: contiguous, vectorized).
  const int64_t rowSize = outWidth * channels;
  std::vector<float> horizontal(static_cast<size_t>((rowHi - rowLo) * rowSize));
  for (int64_t y = rowLo; y < rowHi; ++y) {
    const uint8_t *src = in + y * width * channels;
    float *dst = horizontal.data() + (y - rowLo) * rowSize;
    if (channels == 3)
      resizeRow<3>(src, columns, box.flip, channels, dst);
    else if (channels == 1)
      resizeRow<1>(src, columns, box.flip, channels, dst);
    else
      resizeRow<0>(src, columns, box.flip, channels, dst);
  }
  std::vector<float> sum(static_cast<size_t>(rowSize));
  for (int64_t y = 0; y < outHeight; ++y) {
    const Taps &t = rows[size_t(y)];
    std::fill(sum.begin(), sum.end(), 0.5f); // rounds to nearest below
    for (size_t k = 0; k < t.weights.size(); ++k) {
      const float w = t.weights[k];
      const float *src = horizontal.data() + (t.first + int64_t(k) - rowLo) * rowSize;
      for (int64_t i = 0; i < rowSize; ++i)
        sum[size_t(i)] += w * src[i];
    }
    uint8_t *dst = out + y * rowSize;
    for (int64_t i = 0; i < rowSize; ++i)
      dst[i] = uint8_t(std::clamp(sum[size_t(i)], 0.0f, 255.0f));
  }
}

} // namespace rn
