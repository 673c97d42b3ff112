//===- process_group_test.cpp - torchrun's variables, read and checked ----===//

#include "runtime/core/process_group.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <map>

namespace rn {
namespace {

Result<ProcessGroup> fromVariables(std::map<std::string, std::string> variables) {
  return processGroupFromEnvironment([variables](const char *name) -> std::optional<std::string> {
    auto it = variables.find(name);
    if (it == variables.end())
      return std::nullopt;
    return it->second;
  });
}

std::string errorOf(const Result<ProcessGroup> &group) {
  return group.ok() ? std::string("(no error)") : group.error().message();
}

TEST(ProcessGroup, NoVariablesIsOneRank) {
  Result<ProcessGroup> group = fromVariables({});
  ASSERT_TRUE(group.ok()) << errorOf(group);
  EXPECT_EQ(group->rank, 0);
  EXPECT_EQ(group->worldSize, 1);
  EXPECT_EQ(group->localRank, 0);
  EXPECT_FALSE(group->distributed());
  EXPECT_TRUE(group->rendezvous.empty());
  EXPECT_EQ(group->timeoutSeconds, 120);
}

TEST(ProcessGroup, TorchrunVariables) {
  Result<ProcessGroup> group = fromVariables({{"RANK", "3"},
                                              {"WORLD_SIZE", "4"},
                                              {"LOCAL_RANK", "1"},
                                              {"MASTER_ADDR", "10.0.0.7"},
                                              {"MASTER_PORT", "29500"},
                                              {"RN_DIST_TIMEOUT_S", "2.5"}});
  ASSERT_TRUE(group.ok()) << errorOf(group);
  EXPECT_EQ(group->rank, 3);
  EXPECT_EQ(group->worldSize, 4);
  EXPECT_EQ(group->localRank, 1);
  EXPECT_TRUE(group->distributed());
  EXPECT_EQ(group->rendezvous, "10.0.0.7:29500");
  EXPECT_EQ(group->timeoutSeconds, 2.5);
  EXPECT_EQ(group->describe(), "rank 3 of 4");
}

TEST(ProcessGroup, LocalRankDefaultsToRankAndIpv6IsBracketed) {
  Result<ProcessGroup> group = fromVariables(
      {{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "::1"}, {"MASTER_PORT", "1234"}});
  ASSERT_TRUE(group.ok()) << errorOf(group);
  EXPECT_EQ(group->localRank, 1);
  EXPECT_EQ(group->rendezvous, "[::1]:1234");
}

TEST(ProcessGroup, OneRankNeedsNoRendezvous) {
  Result<ProcessGroup> group = fromVariables({{"RANK", "0"}, {"WORLD_SIZE", "1"}});
  ASSERT_TRUE(group.ok()) << errorOf(group);
  EXPECT_FALSE(group->distributed());
}

TEST(ProcessGroup, ErrorsNameTheVariable) {
  EXPECT_NE(errorOf(fromVariables({{"RANK", "0"}})).find("RANK is set but WORLD_SIZE is not"),
            std::string::npos);
  EXPECT_NE(errorOf(fromVariables({{"WORLD_SIZE", "2"}})).find("WORLD_SIZE is set but RANK"),
            std::string::npos);
  EXPECT_NE(errorOf(fromVariables({{"RANK", "2"}, {"WORLD_SIZE", "2"}}))
                .find("RANK=2 is out of range [0, 1]"),
            std::string::npos);
  EXPECT_NE(errorOf(fromVariables({{"RANK", "x"}, {"WORLD_SIZE", "2"}}))
                .find("RANK='x' is not a whole number"),
            std::string::npos);
  EXPECT_NE(errorOf(fromVariables({{"RANK", "0"}, {"WORLD_SIZE", "0"}})).find("WORLD_SIZE=0"),
            std::string::npos);
  EXPECT_NE(errorOf(fromVariables({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_PORT", "1"}}))
                .find("needs MASTER_ADDR"),
            std::string::npos);
  EXPECT_NE(errorOf(fromVariables({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"}}))
                .find("needs MASTER_PORT"),
            std::string::npos);
  EXPECT_NE(errorOf(fromVariables({{"RANK", "0"},
                                   {"WORLD_SIZE", "2"},
                                   {"MASTER_ADDR", "h"},
                                   {"MASTER_PORT", "70000"}}))
                .find("MASTER_PORT=70000 is out of range"),
            std::string::npos);
  EXPECT_NE(errorOf(fromVariables({{"RN_DIST_TIMEOUT_S", "0"}})).find("RN_DIST_TIMEOUT_S='0'"),
            std::string::npos);
}

TEST(ProcessGroup, ShardsOfAGlobalBatchAreDisjointAndCoverIt) {
  ProcessGroup group;
  group.worldSize = 4;
  int64_t next = 0;
  for (int r = 0; r < 4; ++r) {
    group.rank = r;
    BatchShard shard = shardOfGlobalBatch(group, 32);
    EXPECT_EQ(shard.begin, next);
    EXPECT_EQ(shard.count, 32);
    next += shard.count;
  }
  EXPECT_EQ(next, 128);
}

TEST(ProcessGroup, DropoutSeedsDifferByRankAndRankZeroKeepsTheRunsSeed) {
  EXPECT_EQ(dropoutSeedOfRank(42, 0), 42u);
  EXPECT_NE(dropoutSeedOfRank(42, 1), dropoutSeedOfRank(42, 0));
  EXPECT_NE(dropoutSeedOfRank(42, 1), dropoutSeedOfRank(43, 0));
  EXPECT_NE(dropoutSeedOfRank(42, 2), dropoutSeedOfRank(42, 1));
}

TEST(ProcessGroup, StartupDigestSeesTheBytesAndTheSeed) {
  std::string path = ::testing::TempDir() + "/rn-digest-test.bin";
  auto write = [&](const std::string &bytes) {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
  };
  write("artifact bytes");
  Result<uint64_t> a = startupDigest(path, 0), again = startupDigest(path, 0),
                   seeded = startupDigest(path, 1);
  write("artifact bytez");
  Result<uint64_t> changed = startupDigest(path, 0);
  ASSERT_TRUE(a.ok() && again.ok() && seeded.ok() && changed.ok());
  EXPECT_EQ(*a, *again);
  EXPECT_NE(*a, *seeded);
  EXPECT_NE(*a, *changed);
  std::remove(path.c_str());
  EXPECT_FALSE(startupDigest(path, 0).ok());
}

} // namespace
} // namespace rn
