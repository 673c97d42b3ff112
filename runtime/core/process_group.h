//===- process_group.h - Which data-parallel rank this process is -*- C++ -*-===//
//
// A data-parallel run is one process per GPU, started the way torchrun
// starts them: RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT in
// the environment. This file reads and checks those variables and says
// which part of a global batch a rank trains on; it knows nothing of CUDA
// or NCCL, so that CI tests it. The communicator (runtime/cuda/
// communicator.h) bootstraps NCCL from the rendezvous address and enforces
// the deadlines named here.
//
//   RN_DIST_TIMEOUT_S   seconds a rank waits for its peers, at start-up
//                       (communicator init) and for every step's completion,
//                       before it aborts the communicator and exits with an
//                       error (default 120)
//
//===----------------------------------------------------------------------===//

#ifndef RN_RUNTIME_CORE_PROCESS_GROUP_H
#define RN_RUNTIME_CORE_PROCESS_GROUP_H

#include "runtime/core/status.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace rn {

struct ProcessGroup {
  int rank = 0;
  int worldSize = 1;
  /// The GPU of this process on its node (cudaSetDevice).
  int localRank = 0;
  /// host:port of rank 0's bootstrap (MASTER_ADDR:MASTER_PORT); empty for
  /// one rank, which needs no peer.
  std::string rendezvous;
  /// RN_DIST_TIMEOUT_S.
  double timeoutSeconds = 120;

  bool distributed() const { return worldSize > 1; }
  /// "rank 1 of 2" (or "rank 0 of 1").
  std::string describe() const;
};

/// Reads a variable (std::getenv in production; a map in tests).
using EnvironmentLookup = std::function<std::optional<std::string>(const char *name)>;

/// The process group the environment describes: one rank (rank 0 of 1,
/// device 0) when none of RANK / WORLD_SIZE is set; an error naming the
/// variable when a value is not a number, out of range, or when a
/// multi-rank run lacks MASTER_ADDR or MASTER_PORT.
Result<ProcessGroup> processGroupFromEnvironment(const EnvironmentLookup &lookup);
/// The same with std::getenv.
Result<ProcessGroup> processGroupFromEnvironment();

/// The samples rank `rank` trains on of each global batch of
/// `perRankBatch * worldSize` samples: [begin, begin + perRankBatch). Every
/// rank walks the same shuffled order, so the ranks' shards of one global
/// batch are disjoint and together the whole batch.
struct BatchShard {
  int64_t begin = 0;
  int64_t count = 0;
};
BatchShard shardOfGlobalBatch(const ProcessGroup &group, int64_t perRankBatch);

/// The dropout seed of rank `rank` in a run of seed `seed`: the ranks draw
/// independent masks (their Philox keys differ), rank 0 the masks of a
/// one-process run with `seed`, so a run's masks do not depend on how many
/// ranks there are for rank 0 and the CPU executor reproduces rank r's with
/// this seed.
uint64_t dropoutSeedOfRank(uint64_t seed, int rank);

/// A 64-bit FNV-1a digest of the file at `path` with `salt` (the run's
/// seed, from which a weight-free artifact's parameters are sampled) mixed
/// in: what the ranks compare at start-up, so that they train one model.
Result<uint64_t> startupDigest(const std::string &path, uint64_t salt);

} // namespace rn

#endif // RN_RUNTIME_CORE_PROCESS_GROUP_H
