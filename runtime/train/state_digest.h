//===- state_digest.h - Compact fingerprints of a trainer's state -*- C++ -*-===//
//
// Two executors' states are compared across machines without carrying the
// full state: per entry its L2 norm, 16 evenly spaced elements and a 64-bit
// FNV-1a hash of all its values' f32 bit patterns, within a tolerance by
// norm and samples or bit for bit by the hash (scripts/compare-digests.py).
// And the other side of such comparisons: a reproducible perturbation of
// the parameters that measures how much an ulp-scale change moves a run
// (the noise digests of scripts/zoo-digests.sh).
//
//===----------------------------------------------------------------------===//

#ifndef RN_RUNTIME_TRAIN_STATE_DIGEST_H
#define RN_RUNTIME_TRAIN_STATE_DIGEST_H

#include "runtime/core/executor.h"
#include "runtime/core/status.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>

namespace rn::train {

/// {"<entry>": {"role", "dtype", "elements", "norm", "samples", "hash"}}
/// for every state entry with a slot; the executor must be idle.
Result<nlohmann::json> stateDigest(const Executor &executor);

/// Writes `value` to `path` (indented by one space).
Status writeJson(const std::string &path, const nlohmann::json &value);

/// Multiplies every element of every parameter (role "parameter") by
/// (1 + eps * u), u uniform in [-1, 1] from one generator seeded with
/// `seed`, drawn in state order, so that a run is reproducible and the same
/// on every executor. The product is rounded to the entry's dtype
/// (writeState); an eps far below that dtype's ulp changes nothing.
Status perturbParameters(Executor &executor, double eps, uint64_t seed);

} // namespace rn::train

#endif // RN_RUNTIME_TRAIN_STATE_DIGEST_H
