//===- init_sampler.h - Initial parameter values from their #rn.init -*- C++ -*-===//
//
// The one parameter sampler of the project: rn-compile calls it to write the
// parameters into an artifact, and the runtime calls it to create them from
// a weight-free artifact (`rn-compile --no-weights`, docs/artifact.md), so
// both give the same bits. Each parameter has its own stream of random
// numbers, std::mt19937_64 seeded with `seed ^ XXH3-64(name)`, so adding a
// layer changes no other layer's values. Uniform and normal values are drawn
// in double exactly as libstdc++'s uniform_real_distribution<double> and
// normal_distribution<double> draw them (written out here so that the values
// do not depend on the standard library the runtime is built with), and are
// rounded once to the parameter's dtype (round to nearest, ties to even).
//
// Nothing here links LLVM or MLIR: XXH3-64 is implemented here, bit for bit
// equal to llvm::xxh3_64bits (seedless, default secret, every input length).
//
//===----------------------------------------------------------------------===//

#ifndef RN_RUNTIME_CORE_INIT_SAMPLER_H
#define RN_RUNTIME_CORE_INIT_SAMPLER_H

#include "runtime/core/dtype.h"
#include "runtime/core/status.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace rn {

/// How a state entry gets its initial value: the `#rn.init` of its op.
struct Init {
  std::string kind; ///< zeros, ones, uniform, normal, constant, derived, values
  double scale = 0; ///< uniform: bound; normal: std (1 when not positive); constant: value
  std::vector<double> values; ///< values: every element, in order
};

/// The name of this sampler in a weight-free program's "init" entry.
inline constexpr std::string_view kInitSampler = "mt19937_64-xxh3";

/// Whether the sampler computes values of this kind from the init alone:
/// every kind but "derived" (a copy of its parameter, made by the runtime).
inline bool isSampledInit(std::string_view kind) {
  return kind == "zeros" || kind == "ones" || kind == "uniform" ||
         kind == "normal" || kind == "constant" || kind == "values";
}

/// XXH3-64 of `data` without seed and with the default secret, equal to
/// llvm::xxh3_64bits for every length.
uint64_t xxh3_64bits(std::string_view data);

/// The seed of a parameter's mt19937_64 stream.
inline uint64_t initStreamSeed(std::string_view name, uint64_t seed) {
  return seed ^ xxh3_64bits(name);
}

/// IEEE binary16 / bfloat16 bits of `value`, rounded once to nearest even
/// (as llvm::APFloat's conversion from double with rmNearestTiesToEven);
/// overflow gives infinity, NaN stays NaN.
uint16_t doubleToHalf(double value);
uint16_t doubleToBFloat16(double value);

/// The `elements` initial values of the state `name` in `dtype`, little
/// endian, as a safetensors tensor holds them (i32: the value truncated
/// toward zero; i1: one byte, 1 when non-zero). Fails for "derived",
/// unknown kinds, and "values" of another count than `elements`.
Result<std::vector<uint8_t>> sampleInitialBytes(std::string_view name, const Init &init,
                                                DType dtype, int64_t elements,
                                                uint64_t seed);

/// The same values as floats (each exactly the value the dtype holds).
Result<std::vector<float>> sampleInitialValues(std::string_view name, const Init &init,
                                               DType dtype, int64_t elements,
                                               uint64_t seed);

} // namespace rn

#endif // RN_RUNTIME_CORE_INIT_SAMPLER_H
