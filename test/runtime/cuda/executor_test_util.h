//===- executor_test_util.h - GPU executors against the CPU ----*- C++ -*-===//
//
// What the cuda-eager and cuda-graph tests share: a skip where no CUDA
// device answers, random batches for an artifact, the relative L2 error of
// a tensor, and one comparison of a GPU executor's training against the CPU
// executor's from the same initial state and batches (losses, then every
// state entry, within `bound`).
//
//===----------------------------------------------------------------------===//

#ifndef RN_TEST_RUNTIME_CUDA_EXECUTOR_TEST_UTIL_H
#define RN_TEST_RUNTIME_CUDA_EXECUTOR_TEST_UTIL_H

#include "runtime/cuda/device_context.h"
#include "runtime/core/op_table.h"

#include "../cpu/executor_test_util.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

namespace rn::test_inputs {

#define SKIP_WITHOUT_GPU()                                                                 \
  do {                                                                                     \
    ::rn::Status gpu = ::rn::cuda::deviceAvailable();                                      \
    if (!gpu.ok())                                                                         \
      GTEST_SKIP() << gpu.error().message();                                               \
  } while (0)

/// `count` batches of normal images (random pixels for a uint8 images
/// input) and labels below the loss's class count.
inline std::vector<HostBatch> randomBatches(const Executor &ex, int count, uint64_t seed) {
  Result<std::vector<int64_t>> images = ex.inputShape("train_step", "images");
  Result<std::vector<int64_t>> labels = ex.inputShape("train_step", "labels");
  EXPECT_TRUE(images.ok() && labels.ok());
  int64_t n = 1;
  for (int64_t d : *images)
    n *= d;
  const Function *train = ex.program().findFunction("train_step");
  int64_t classes = 2;
  for (const Subgraph &sg : train->subgraphs)
    for (const Node &node : sg.nodes)
      if (node.op == "softmax_cross_entropy")
        classes = train->tensors[node.operand(op_table::softmax_cross_entropy::operand::logits)]
                      .shape.back();
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal;
  const bool pixels = *ex.inputDType("train_step", "images") == DType::u8;
  std::vector<HostBatch> batches(static_cast<size_t>(count));
  for (HostBatch &b : batches) {
    if (pixels) {
      b.pixels.resize(size_t(n));
      for (uint8_t &p : b.pixels)
        p = uint8_t(rng());
    } else {
      b.images.resize(size_t(n));
      for (float &x : b.images)
        x = normal(rng);
    }
    b.labels.resize(size_t((*labels)[0]));
    for (int32_t &y : b.labels)
      y = int32_t(rng() % uint64_t(classes));
  }
  return batches;
}

inline double relativeError(const std::vector<float> &got, const std::vector<float> &want) {
  double num = 0, den = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    double d = double(got[i]) - double(want[i]);
    num += d * d;
    den += double(want[i]) * double(want[i]);
  }
  return std::sqrt(num) / std::max(std::sqrt(den), 1e-12);
}

/// Trains `steps` steps of `artifactName` on `GpuExecutor` (created with
/// `options`) and on the CPU executor; losses and every state entry within
/// `bound`.
template <typename GpuExecutor>
void compareWithCpu(const char *artifactName, int steps, double bound,
                    const typename GpuExecutor::Options &options = {}) {
  Artifact artifact = load(artifactName);
  std::unique_ptr<CpuExecutor> cpu = makeExecutor(artifact);
  ASSERT_TRUE(cpu);
  auto gpu = GpuExecutor::create(artifact, options);
  ASSERT_TRUE(gpu.ok()) << gpu.error().message();
  ASSERT_TRUE((*gpu)->initialize().ok());
  std::vector<HostBatch> batches = randomBatches(*cpu, steps, 7);
  std::vector<float> lrs(size_t(steps), 0.05f);
  std::vector<TrainOutputs> cpuOut, gpuOut;
  Status a = cpu->trainSteps(batches, lrs, 1, cpuOut);
  ASSERT_TRUE(a.ok()) << a.error().message();
  Status b = (*gpu)->trainSteps(batches, lrs, 1, gpuOut);
  ASSERT_TRUE(b.ok()) << b.error().message();
  for (int i = 0; i < steps; ++i)
    EXPECT_NEAR(gpuOut[size_t(i)].loss, cpuOut[size_t(i)].loss,
                bound * std::max(1.0f, std::fabs(cpuOut[size_t(i)].loss)))
        << artifactName << " step " << i;
  for (const StateEntry &s : artifact.program.state) {
    if (!s.slot)
      continue;
    Result<std::vector<float>> want = cpu->readState(s.name);
    Result<std::vector<float>> got = (*gpu)->readState(s.name);
    ASSERT_TRUE(want.ok() && got.ok()) << s.name;
    EXPECT_LE(relativeError(*got, *want), bound) << artifactName << " state " << s.name;
  }
}

/// One evaluation step of `artifactName` on `GpuExecutor` and the CPU.
template <typename GpuExecutor> void compareEvalWithCpu(const char *artifactName) {
  Artifact artifact = load(artifactName);
  std::unique_ptr<CpuExecutor> cpu = makeExecutor(artifact);
  ASSERT_TRUE(cpu);
  auto gpu = GpuExecutor::create(artifact, {});
  ASSERT_TRUE(gpu.ok()) << gpu.error().message();
  ASSERT_TRUE((*gpu)->initialize().ok());
  HostBatch batch = randomBatches(*cpu, 1, 3)[0];
  EvalOutputs want, got;
  ASSERT_TRUE(cpu->evalStep(batch, want).ok());
  Status st = (*gpu)->evalStep(batch, got);
  ASSERT_TRUE(st.ok()) << st.error().message();
  EXPECT_NEAR(got.loss, want.loss, 1e-4 * std::max(1.0f, want.loss));
  EXPECT_EQ(got.correct, want.correct);
}

} // namespace rn::test_inputs

#endif // RN_TEST_RUNTIME_CUDA_EXECUTOR_TEST_UTIL_H
