//===- init_sampler.cpp - Initial parameter values from their #rn.init ----===//

#include "runtime/core/init_sampler.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

// The draws below are specified operation by operation; a fused multiply-add
// would change their last bits.
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

namespace rn {

//===----------------------------------------------------------------------===//
// XXH3-64 (seed 0, default secret)
//===----------------------------------------------------------------------===//

namespace {

// The default secret of XXH3 (from the xxHash specification).
constexpr uint8_t kSecret[192] = {
    0xb8, 0xfe, 0x6c, 0x39, 0x23, 0xa4, 0x4b, 0xbe, 0x7c, 0x01, 0x81, 0x2c, 0xf7, 0x21,
    0xad, 0x1c, 0xde, 0xd4, 0x6d, 0xe9, 0x83, 0x90, 0x97, 0xdb, 0x72, 0x40, 0xa4, 0xa4,
    0xb7, 0xb3, 0x67, 0x1f, 0xcb, 0x79, 0xe6, 0x4e, 0xcc, 0xc0, 0xe5, 0x78, 0x82, 0x5a,
    0xd0, 0x7d, 0xcc, 0xff, 0x72, 0x21, 0xb8, 0x08, 0x46, 0x74, 0xf7, 0x43, 0x24, 0x8e,
    0xe0, 0x35, 0x90, 0xe6, 0x81, 0x3a, 0x26, 0x4c, 0x3c, 0x28, 0x52, 0xbb, 0x91, 0xc3,
    0x00, 0xcb, 0x88, 0xd0, 0x65, 0x8b, 0x1b, 0x53, 0x2e, 0xa3, 0x71, 0x64, 0x48, 0x97,
    0xa2, 0x0d, 0xf9, 0x4e, 0x38, 0x19, 0xef, 0x46, 0xa9, 0xde, 0xac, 0xd8, 0xa8, 0xfa,
    0x76, 0x3f, 0xe3, 0x9c, 0x34, 0x3f, 0xf9, 0xdc, 0xbb, 0xc7, 0xc7, 0x0b, 0x4f, 0x1d,
    0x8a, 0x51, 0xe0, 0x4b, 0xcd, 0xb4, 0x59, 0x31, 0xc8, 0x9f, 0x7e, 0xc9, 0xd9, 0x78,
    0x73, 0x64, 0xea, 0xc5, 0xac, 0x83, 0x34, 0xd3, 0xeb, 0xc3, 0xc5, 0x81, 0xa0, 0xff,
    0xfa, 0x13, 0x63, 0xeb, 0x17, 0x0d, 0xdd, 0x51, 0xb7, 0xf0, 0xda, 0x49, 0xd3, 0x16,
    0x55, 0x26, 0x29, 0xd4, 0x68, 0x9e, 0x2b, 0x16, 0xbe, 0x58, 0x7d, 0x47, 0xa1, 0xfc,
    0x8f, 0xf8, 0xb8, 0xd1, 0x7a, 0xd0, 0x31, 0xce, 0x45, 0xcb, 0x3a, 0x8f, 0x95, 0x16,
    0x04, 0x28, 0xaf, 0xd7, 0xfb, 0xca, 0xbb, 0x4b, 0x40, 0x7e,
};

constexpr uint32_t kPrime32_1 = 0x9E3779B1u;
constexpr uint32_t kPrime32_2 = 0x85EBCA77u;
constexpr uint32_t kPrime32_3 = 0xC2B2AE3Du;
constexpr uint64_t kPrime64_1 = 0x9E3779B185EBCA87ull;
constexpr uint64_t kPrime64_2 = 0xC2B2AE3D27D4EB4Full;
constexpr uint64_t kPrime64_3 = 0x165667B19E3779F9ull;
constexpr uint64_t kPrime64_4 = 0x85EBCA77C2B2AE63ull;
constexpr uint64_t kPrime64_5 = 0x27D4EB2F165667C5ull;
constexpr uint64_t kPrimeMx1 = 0x165667919E3779F9ull;
constexpr uint64_t kPrimeMx2 = 0x9FB21C651E98DF25ull;

uint64_t load64(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i)
    v = (v << 8) | p[i];
  return v;
}

uint32_t load32(const uint8_t *p) {
  return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 |
         uint32_t(p[3]) << 24;
}

uint64_t rotl(uint64_t x, unsigned r) { return (x << r) | (x >> (64 - r)); }

uint32_t swap32(uint32_t x) {
  return (x >> 24) | ((x >> 8) & 0xff00u) | ((x << 8) & 0xff0000u) | (x << 24);
}

uint64_t swap64(uint64_t x) {
  return uint64_t(swap32(uint32_t(x))) << 32 | swap32(uint32_t(x >> 32));
}

/// The 128-bit product of a and b, its halves xor-ed.
uint64_t foldedProduct(uint64_t a, uint64_t b) {
  uint64_t aLo = a & 0xffffffffu, aHi = a >> 32;
  uint64_t bLo = b & 0xffffffffu, bHi = b >> 32;
  uint64_t ll = aLo * bLo, hl = aHi * bLo, lh = aLo * bHi, hh = aHi * bHi;
  uint64_t cross = (ll >> 32) + (hl & 0xffffffffu) + lh;
  uint64_t high = (hl >> 32) + (cross >> 32) + hh;
  uint64_t low = (cross << 32) | (ll & 0xffffffffu);
  return high ^ low;
}

uint64_t xxh64Avalanche(uint64_t h) {
  h ^= h >> 33;
  h *= kPrime64_2;
  h ^= h >> 29;
  h *= kPrime64_3;
  h ^= h >> 32;
  return h;
}

uint64_t xxh3Avalanche(uint64_t h) {
  h ^= h >> 37;
  h *= kPrimeMx1;
  h ^= h >> 32;
  return h;
}

uint64_t mix16(const uint8_t *in, const uint8_t *secret) {
  return foldedProduct(load64(in) ^ load64(secret), load64(in + 8) ^ load64(secret + 8));
}

uint64_t hashUpTo16(const uint8_t *in, size_t n) {
  if (n > 8) {
    uint64_t lo = (load64(kSecret + 24) ^ load64(kSecret + 32)) ^ load64(in);
    uint64_t hi = (load64(kSecret + 40) ^ load64(kSecret + 48)) ^ load64(in + n - 8);
    return xxh3Avalanche(uint64_t(n) + swap64(lo) + hi + foldedProduct(lo, hi));
  }
  if (n >= 4) {
    uint64_t word = uint64_t(load32(in + n - 4)) | uint64_t(load32(in)) << 32;
    uint64_t h = (load64(kSecret + 8) ^ load64(kSecret + 16)) ^ word;
    h ^= rotl(h, 49) ^ rotl(h, 24);
    h *= kPrimeMx2;
    h ^= (h >> 35) + uint64_t(n);
    h *= kPrimeMx2;
    return h ^ (h >> 28);
  }
  if (n > 0) {
    uint32_t combined = uint32_t(in[0]) << 16 | uint32_t(in[n >> 1]) << 24 |
                        uint32_t(in[n - 1]) | uint32_t(n) << 8;
    uint64_t flip = uint64_t(load32(kSecret) ^ load32(kSecret + 4));
    return xxh64Avalanche(uint64_t(combined) ^ flip);
  }
  return xxh64Avalanche(load64(kSecret + 56) ^ load64(kSecret + 64));
}

uint64_t hash17To128(const uint8_t *in, size_t n) {
  uint64_t h = uint64_t(n) * kPrime64_1;
  // Pairs of 16-byte blocks from both ends, as many as the length covers.
  size_t pairs = n > 96 ? 4 : n > 64 ? 3 : n > 32 ? 2 : 1;
  for (size_t i = 0; i < pairs; ++i) {
    h += mix16(in + 16 * i, kSecret + 32 * i);
    h += mix16(in + n - 16 * (i + 1), kSecret + 32 * i + 16);
  }
  return xxh3Avalanche(h);
}

uint64_t hash129To240(const uint8_t *in, size_t n) {
  uint64_t h = uint64_t(n) * kPrime64_1;
  for (size_t i = 0; i < 8; ++i)
    h += mix16(in + 16 * i, kSecret + 16 * i);
  h = xxh3Avalanche(h);
  for (size_t i = 8; i < n / 16; ++i)
    h += mix16(in + 16 * i, kSecret + 16 * (i - 8) + 3);
  h += mix16(in + n - 16, kSecret + 136 - 17);
  return xxh3Avalanche(h);
}

void accumulateStripe(uint64_t *acc, const uint8_t *in, const uint8_t *secret) {
  for (size_t i = 0; i < 8; ++i) {
    uint64_t data = load64(in + 8 * i);
    uint64_t key = data ^ load64(secret + 8 * i);
    acc[i ^ 1] += data;
    acc[i] += (key & 0xffffffffu) * (key >> 32);
  }
}

uint64_t hashLong(const uint8_t *in, size_t n) {
  constexpr size_t kStripe = 64, kRate = 8, kSecretSize = sizeof kSecret;
  constexpr size_t kStripesPerBlock = (kSecretSize - kStripe) / kRate;
  constexpr size_t kBlock = kStripe * kStripesPerBlock;
  uint64_t acc[8] = {kPrime32_3, kPrime64_1, kPrime64_2, kPrime64_3,
                     kPrime64_4, kPrime32_2, kPrime64_5, kPrime32_1};
  size_t blocks = (n - 1) / kBlock;
  for (size_t b = 0; b < blocks; ++b) {
    for (size_t s = 0; s < kStripesPerBlock; ++s)
      accumulateStripe(acc, in + b * kBlock + s * kStripe, kSecret + s * kRate);
    const uint8_t *scramble = kSecret + kSecretSize - kStripe;
    for (size_t i = 0; i < 8; ++i) {
      acc[i] ^= acc[i] >> 47;
      acc[i] ^= load64(scramble + 8 * i);
      acc[i] *= kPrime32_1;
    }
  }
  size_t stripes = (n - 1 - blocks * kBlock) / kStripe;
  for (size_t s = 0; s < stripes; ++s)
    accumulateStripe(acc, in + blocks * kBlock + s * kStripe, kSecret + s * kRate);
  accumulateStripe(acc, in + n - kStripe, kSecret + kSecretSize - kStripe - 7);
  uint64_t h = uint64_t(n) * kPrime64_1;
  for (size_t i = 0; i < 4; ++i)
    h += foldedProduct(acc[2 * i] ^ load64(kSecret + 11 + 16 * i),
                       acc[2 * i + 1] ^ load64(kSecret + 11 + 16 * i + 8));
  return xxh3Avalanche(h);
}

} // namespace

uint64_t xxh3_64bits(std::string_view data) {
  const uint8_t *in = reinterpret_cast<const uint8_t *>(data.data());
  size_t n = data.size();
  if (n <= 16)
    return hashUpTo16(in, n);
  if (n <= 128)
    return hash17To128(in, n);
  if (n <= 240)
    return hash129To240(in, n);
  return hashLong(in, n);
}

//===----------------------------------------------------------------------===//
// Rounding from double
//===----------------------------------------------------------------------===//

namespace {

/// `value` rounded to float toward zero, with the last bit set when that
/// lost anything ("round to odd"). A narrower format's round to nearest even
/// of this float equals its rounding of `value` itself, as long as it has at
/// least two bits fewer than float (half and bfloat16 do, subnormals included).
float roundToOddFloat(double value) {
  float nearest = static_cast<float>(value);
  if (std::isnan(value) || static_cast<double>(nearest) == value)
    return nearest;
  float truncated = std::fabs(static_cast<double>(nearest)) > std::fabs(value)
                        ? std::nextafter(nearest, 0.0f)
                        : nearest;
  uint32_t bits;
  std::memcpy(&bits, &truncated, sizeof bits);
  bits |= 1u;
  std::memcpy(&truncated, &bits, sizeof bits);
  return truncated;
}

} // namespace

uint16_t doubleToHalf(double value) { return floatToHalf(roundToOddFloat(value)); }

uint16_t doubleToBFloat16(double value) {
  return floatToBFloat16(roundToOddFloat(value));
}

//===----------------------------------------------------------------------===//
// Sampling
//===----------------------------------------------------------------------===//

namespace {

/// generate_canonical<double, 53> of libstdc++ over mt19937_64: one draw,
/// converted to double (to nearest) and scaled by 2^-64, kept below 1.
double canonical(std::mt19937_64 &engine) {
  double value = static_cast<double>(engine()) * 0x1p-64;
  if (value >= 1.0)
    value = std::nextafter(1.0, 0.0);
  return value;
}

/// Calls `emit(i, value)` with the `elements` values of the init, in double.
template <typename Emit>
Status generate(std::string_view name, const Init &init, int64_t elements, uint64_t seed,
                Emit emit) {
  double scale = init.scale;
  const std::string &kind = init.kind;
  if (kind == "zeros" || kind == "ones" || kind == "constant") {
    double value = kind == "zeros" ? 0.0 : kind == "ones" ? 1.0 : scale;
    for (int64_t i = 0; i < elements; ++i)
      emit(i, value);
    return Status::success();
  }
  if (kind == "values") {
    if (int64_t(init.values.size()) != elements)
      return Error("state " + std::string(name) + ": init 'values' gives " +
                   std::to_string(init.values.size()) + " values for " +
                   std::to_string(elements) + " elements");
    for (int64_t i = 0; i < elements; ++i)
      emit(i, init.values[size_t(i)]);
    return Status::success();
  }
  std::mt19937_64 engine(initStreamSeed(name, seed));
  if (kind == "uniform") {
    // uniform_real_distribution<double>(-scale, scale).
    double a = -scale, b = scale;
    for (int64_t i = 0; i < elements; ++i)
      emit(i, canonical(engine) * (b - a) + a);
    return Status::success();
  }
  if (kind == "normal") {
    // normal_distribution<double>(0, scale > 0 ? scale : 1): the Marsaglia
    // polar method, each accepted pair giving y then x.
    double stddev = scale > 0 ? scale : 1.0, mean = 0.0;
    bool saved = false;
    double savedValue = 0.0;
    for (int64_t i = 0; i < elements; ++i) {
      double value;
      if (saved) {
        saved = false;
        value = savedValue;
      } else {
        double x, y, r2;
        do {
          x = 2.0 * canonical(engine) - 1.0;
          y = 2.0 * canonical(engine) - 1.0;
          r2 = x * x + y * y;
        } while (r2 > 1.0 || r2 == 0.0);
        double mult = std::sqrt(-2 * std::log(r2) / r2);
        savedValue = x * mult;
        saved = true;
        value = y * mult;
      }
      emit(i, value * stddev + mean);
    }
    return Status::success();
  }
  if (kind == "derived")
    return Error("init 'derived' copies its parameter; it is not sampled");
  return Error("unknown init kind '" + kind + "'");
}

int32_t toInt32(double value) {
  if (!(value > -2147483649.0))
    return std::isnan(value) ? 0 : std::numeric_limits<int32_t>::min();
  if (!(value < 2147483648.0))
    return std::numeric_limits<int32_t>::max();
  return static_cast<int32_t>(value);
}

Status checkCount(std::string_view name, int64_t elements, DType dtype) {
  if (elements < 0 ||
      uint64_t(elements) > std::numeric_limits<size_t>::max() / 8 / elementSize(dtype))
    return Error("state " + std::string(name) + ": cannot sample " +
                 std::to_string(elements) + " elements");
  return Status::success();
}

} // namespace

Result<std::vector<uint8_t>> sampleInitialBytes(std::string_view name, const Init &init,
                                                DType dtype, int64_t elements,
                                                uint64_t seed) {
  if (Status st = checkCount(name, elements, dtype); !st.ok())
    return st.error();
  size_t width = elementSize(dtype);
  std::vector<uint8_t> bytes(size_t(elements) * width);
  auto store = [&](int64_t i, uint64_t bits) {
    for (size_t b = 0; b < width; ++b)
      bytes[size_t(i) * width + b] = uint8_t(bits >> (8 * b));
  };
  Status st = generate(name, init, elements, seed, [&](int64_t i, double value) {
    switch (dtype) {
    case DType::f32: {
      float single = static_cast<float>(value);
      uint32_t word;
      std::memcpy(&word, &single, sizeof word);
      store(i, word);
      break;
    }
    case DType::f16:
      store(i, doubleToHalf(value));
      break;
    case DType::bf16:
      store(i, doubleToBFloat16(value));
      break;
    case DType::i32:
      store(i, uint32_t(toInt32(value)));
      break;
    case DType::i1:
      store(i, value != 0.0 ? 1 : 0);
      break;
    case DType::u8:
      store(i, uint8_t(std::fmin(std::fmax(std::nearbyint(value), 0.0), 255.0)));
      break;
    }
  });
  if (!st.ok())
    return st.error();
  return bytes;
}

Result<std::vector<float>> sampleInitialValues(std::string_view name, const Init &init,
                                               DType dtype, int64_t elements,
                                               uint64_t seed) {
  if (Status st = checkCount(name, elements, dtype); !st.ok())
    return st.error();
  std::vector<float> values(static_cast<size_t>(elements));
  Status st = generate(name, init, elements, seed, [&](int64_t i, double value) {
    float &out = values[size_t(i)];
    switch (dtype) {
    case DType::f32:
      out = static_cast<float>(value);
      break;
    case DType::f16:
      out = halfToFloat(doubleToHalf(value));
      break;
    case DType::bf16:
      out = bfloat16ToFloat(doubleToBFloat16(value));
      break;
    case DType::i32:
      out = static_cast<float>(toInt32(value));
      break;
    case DType::i1:
      out = value != 0.0 ? 1.0f : 0.0f;
      break;
    case DType::u8:
      out = float(std::fmin(std::fmax(std::nearbyint(value), 0.0), 255.0));
      break;
    }
  });
  if (!st.ok())
    return st.error();
  return values;
}

} // namespace rn
