//===- replica_group_test.cpp - CPU replicas' in-memory collectives -------===//

#include "runtime/cpu/replica_group.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace rn::cpu {
namespace {

TEST(ReplicaGroup, MeanAndSumGiveEveryRankTheSameValues) {
  ReplicaGroup group(3);
  std::vector<std::vector<float>> data = {{1, 2, 3}, {4, 5, 6}, {7, 8, 10}};
  std::vector<std::vector<double>> sums = {{1.5}, {2.5}, {-1}};
  std::vector<Status> status(3, Status::success());
  std::vector<std::thread> threads;
  for (int r = 0; r < 3; ++r)
    threads.emplace_back([&, r] {
      status[size_t(r)] = group.allReduceMean(r, {{data[size_t(r)].data(), 3}});
      if (status[size_t(r)].ok())
        status[size_t(r)] = group.allReduceSum(r, sums[size_t(r)]);
    });
  for (std::thread &t : threads)
    t.join();
  for (int r = 0; r < 3; ++r) {
    ASSERT_TRUE(status[size_t(r)].ok()) << status[size_t(r)].error().message();
    EXPECT_EQ(data[size_t(r)], (std::vector<float>{4, 5, float(19.0 / 3.0)}));
    EXPECT_EQ(sums[size_t(r)], (std::vector<double>{3.0}));
  }
}

TEST(ReplicaGroup, MismatchedBuffersFailEveryRank) {
  ReplicaGroup group(2);
  std::vector<float> a(4), b(5);
  Status sa = Status::success(), sb = Status::success();
  std::thread t([&] { sa = group.allReduceMean(0, {{a.data(), a.size()}}); });
  sb = group.allReduceMean(1, {{b.data(), b.size()}});
  t.join();
  ASSERT_FALSE(sa.ok());
  ASSERT_FALSE(sb.ok());
  EXPECT_NE(sb.error().message().find("differ in size"), std::string::npos)
      << sb.error().message();
}

TEST(ReplicaGroup, AnAbortedRankReleasesTheOthers) {
  ReplicaGroup group(2);
  std::vector<float> a(4);
  Status waiting = Status::success();
  std::thread t([&] { waiting = group.allReduceMean(0, {{a.data(), a.size()}}); });
  group.abort(1);
  t.join();
  ASSERT_FALSE(waiting.ok());
  EXPECT_NE(waiting.error().message().find("replica 1 failed"), std::string::npos)
      << waiting.error().message();
  std::vector<double> later = {1};
  EXPECT_FALSE(group.allReduceSum(0, later).ok());
}

} // namespace
} // namespace rn::cpu
