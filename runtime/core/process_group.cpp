//===- process_group.cpp - Which data-parallel rank this process is -------===//
//
// See process_group.h.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/process_group.h"

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <vector>

namespace rn {

std::string ProcessGroup::describe() const {
  return "rank " + std::to_string(rank) + " of " + std::to_string(worldSize);
}

namespace {

/// A whole decimal number in [low, high], or an error naming `name`.
Result<int64_t> integerVariable(const char *name, const std::string &text, int64_t low,
                                int64_t high) {
  errno = 0;
  char *end = nullptr;
  long long value = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno == ERANGE)
    return Error(std::string(name) + "='" + text + "' is not a whole number");
  if (value < low || value > high)
    return Error(std::string(name) + "=" + text + " is out of range [" + std::to_string(low) +
                 ", " + std::to_string(high) + "]");
  return int64_t(value);
}

} // namespace

Result<ProcessGroup> processGroupFromEnvironment(const EnvironmentLookup &lookup) {
  ProcessGroup group;
  std::optional<std::string> rank = lookup("RANK"), world = lookup("WORLD_SIZE"),
                             local = lookup("LOCAL_RANK"), addr = lookup("MASTER_ADDR"),
                             port = lookup("MASTER_PORT"), timeout = lookup("RN_DIST_TIMEOUT_S");
  if (timeout) {
    errno = 0;
    char *end = nullptr;
    double seconds = std::strtod(timeout->c_str(), &end);
    if (timeout->empty() || *end != '\0' || errno == ERANGE || !(seconds > 0))
      return Error("RN_DIST_TIMEOUT_S='" + *timeout + "' is not a positive number of seconds");
    group.timeoutSeconds = seconds;
  }
  if (!rank && !world)
    return group;
  if (!rank || !world)
    return Error(std::string(rank ? "RANK is set but WORLD_SIZE is not"
                                  : "WORLD_SIZE is set but RANK is not") +
                 " (set both, as torchrun does)");
  Result<int64_t> w = integerVariable("WORLD_SIZE", *world, 1, 1 << 16);
  if (!w.ok())
    return w.error();
  Result<int64_t> r = integerVariable("RANK", *rank, 0, *w - 1);
  if (!r.ok())
    return r.error().withContext("WORLD_SIZE=" + *world);
  group.worldSize = int(*w);
  group.rank = int(*r);
  if (local) {
    Result<int64_t> l = integerVariable("LOCAL_RANK", *local, 0, 1023);
    if (!l.ok())
      return l.error();
    group.localRank = int(*l);
  } else {
    // One node: the global rank is the GPU.
    group.localRank = group.rank;
  }
  if (group.worldSize == 1)
    return group;
  if (!addr || addr->empty())
    return Error("WORLD_SIZE=" + *world + " needs MASTER_ADDR (the host of rank 0)");
  if (!port)
    return Error("WORLD_SIZE=" + *world + " needs MASTER_PORT (the port of rank 0's bootstrap)");
  Result<int64_t> p = integerVariable("MASTER_PORT", *port, 1, 65535);
  if (!p.ok())
    return p.error();
  group.rendezvous = (addr->find(':') != std::string::npos ? "[" + *addr + "]" : *addr) + ":" +
                     std::to_string(*p);
  return group;
}

Result<ProcessGroup> processGroupFromEnvironment() {
  return processGroupFromEnvironment([](const char *name) -> std::optional<std::string> {
    const char *value = std::getenv(name);
    if (!value)
      return std::nullopt;
    return std::string(value);
  });
}

BatchShard shardOfGlobalBatch(const ProcessGroup &group, int64_t perRankBatch) {
  return {int64_t(group.rank) * perRankBatch, perRankBatch};
}

uint64_t dropoutSeedOfRank(uint64_t seed, int rank) {
  // The golden-ratio increment: distinct for every rank, no small-offset
  // collision between (seed, rank) and (seed + 1, rank - 1).
  return seed + uint64_t(rank) * 0x9e3779b97f4a7c15ull;
}

Result<uint64_t> startupDigest(const std::string &path, uint64_t salt) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return Error("cannot read " + path + " to compute its digest");
  constexpr uint64_t kPrime = 0x100000001b3ull;
  uint64_t h = 0xcbf29ce484222325ull;
  auto mix = [&](unsigned char byte) {
    h ^= byte;
    h *= kPrime;
  };
  for (int i = 0; i < 8; ++i)
    mix((unsigned char)(salt >> (8 * i)));
  std::vector<char> chunk(size_t(1) << 20);
  while (in) {
    in.read(chunk.data(), std::streamsize(chunk.size()));
    for (std::streamsize i = 0; i < in.gcount(); ++i)
      mix((unsigned char)chunk[size_t(i)]);
  }
  if (in.bad())
    return Error("reading " + path + " failed while computing its digest");
  return h;
}

} // namespace rn
