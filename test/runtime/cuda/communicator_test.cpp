//===- communicator_test.cpp - The NCCL communicator on one GPU -----------===//
//
// What one GPU can show of the data-parallel communicator: merging a
// bucket's back-to-back gradients into one range (host only, runs in CI),
// a one-rank communicator's collectives (the mean over one rank is the
// value) in a captured graph and host to host, and a rank of two whose
// peer never comes failing at its deadline instead of hanging. Two ranks
// need two GPUs (scripts/run-gpu-tests.sh, dist2).
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/communicator.h"

#include "cuda_test_util.h"

#include <gtest/gtest.h>

#include <chrono>
#include <vector>

namespace rn::cuda {
namespace {

using Buffer = Communicator::Buffer;

/// In-place buffers at byte offsets of a fake 256-aligned base.
Buffer at(size_t offset, size_t count) {
  auto *p = reinterpret_cast<float *>(uintptr_t(1) << 20) + offset / sizeof(float);
  return {p, p, count};
}

TEST(CommunicatorCoalesce, BackToBackBucketIsOneRange) {
  // 12 floats (48 bytes) padded to 256, then 3 floats, padded, then 144.
  std::vector<Buffer> bucket = {at(512, 144), at(0, 12), at(256, 3)};
  std::vector<Buffer> merged = Communicator::coalesce(bucket, 256);
  ASSERT_EQ(merged.size(), 1u);
  EXPECT_EQ(merged[0].send, at(0, 0).send);
  EXPECT_EQ(merged[0].count, 512 / sizeof(float) + 144);
}

TEST(CommunicatorCoalesce, GapsOutOfPlaceAndNoAlignmentStayApart) {
  // A gap of a whole aligned block (another slot may live there).
  std::vector<Buffer> gap = Communicator::coalesce({at(0, 12), at(512, 3)}, 256);
  EXPECT_EQ(gap.size(), 2u);
  // Out of place: send and receive ranges would both have to be contiguous.
  Buffer apart = at(256, 3);
  apart.receive = at(4096, 0).receive;
  EXPECT_EQ(Communicator::coalesce({at(0, 12), apart}, 256).size(), 2u);
  EXPECT_EQ(Communicator::coalesce({at(0, 12), at(256, 3)}, 0).size(), 2u);
  // A finer alignment than the gap: a slot could start inside it.
  EXPECT_EQ(Communicator::coalesce({at(0, 12), at(256, 3)}, 64).size(), 2u);
}

ProcessGroup oneRank() {
  ProcessGroup g;
  g.timeoutSeconds = 30;
  return g;
}

TEST(Communicator, OneRankMeanIsTheValueInACapturedGraph) {
  RN_SKIP_WITHOUT_CUDA();
  Result<std::unique_ptr<Communicator>> c = Communicator::create(oneRank());
  ASSERT_TRUE(c.ok()) << c.error().message();
  const size_t n = 1000;
  std::vector<float> host(n);
  for (size_t i = 0; i < n; ++i)
    host[i] = float(i) * 0.25f - 7.0f;
  float *device = nullptr;
  RN_ASSERT_CUDA(cudaMalloc(&device, n * sizeof(float)));
  RN_ASSERT_CUDA(cudaMemcpy(device, host.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  cudaStream_t stream = nullptr;
  RN_ASSERT_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaGraph_t graph = nullptr;
  RN_ASSERT_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  Status st = (*c)->allReduceMean({{device, device, 600}, {device + 600, device + 600, 400}},
                                  stream);
  RN_ASSERT_CUDA(cudaStreamEndCapture(stream, &graph));
  ASSERT_TRUE(st.ok()) << st.error().message();
  cudaGraphExec_t exec = nullptr;
  RN_ASSERT_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  for (int replay = 0; replay < 3; ++replay)
    RN_ASSERT_CUDA(cudaGraphLaunch(exec, stream));
  cudaEvent_t done = nullptr;
  RN_ASSERT_CUDA(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
  RN_ASSERT_CUDA(cudaEventRecord(done, stream));
  Status waited = (*c)->waitEvent(done, "the replays");
  ASSERT_TRUE(waited.ok()) << waited.error().message();
  std::vector<float> back(n);
  RN_ASSERT_CUDA(cudaMemcpy(back.data(), device, n * sizeof(float), cudaMemcpyDeviceToHost));
  EXPECT_EQ(back, host);

  std::vector<double> sums = {1.5, -2.0};
  ASSERT_TRUE((*c)->allReduceSumHost(sums).ok());
  EXPECT_EQ(sums, (std::vector<double>{1.5, -2.0}));
  EXPECT_TRUE((*c)->checkSameOnEveryRank(42, "test value").ok());
  cudaEventDestroy(done);
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(stream);
  cudaFree(device);
}

TEST(Communicator, ARankWhosePeerNeverComesFailsAtItsDeadline) {
  RN_SKIP_WITHOUT_CUDA();
  ProcessGroup g;
  g.worldSize = 2;
  g.rendezvous = "127.0.0.1:29533";
  g.timeoutSeconds = 2;
  auto start = std::chrono::steady_clock::now();
  Result<std::unique_ptr<Communicator>> c = Communicator::create(g);
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().message().find("rank 0 of 2: the NCCL communicator's initialization"),
            std::string::npos)
      << c.error().message();
  EXPECT_NE(c.error().message().find("did not complete within 2.0 s"), std::string::npos)
      << c.error().message();
  EXPECT_LT(seconds, 20.0);
}

} // namespace
} // namespace rn::cuda
