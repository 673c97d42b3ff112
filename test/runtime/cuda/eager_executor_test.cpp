//===- eager_executor_test.cpp - cuda-eager against the CPU executor ------===//
//
// Trains the checked-in artifacts (Inputs/README.md: an f32 MLP, two f16
// conv-BN-ReLU layers with dynamic loss scaling, a small f32 CNN, an f32 MLP
// with two dropouts, whose masks the GPU keys from the device step) for a few
// steps on the GPU and on the CPU reference executor from the same initial
// state and batches, and compares the losses and every state entry after
// the steps. Bounds: relative L2 error per tensor 1e-4 for f32 programs
// (the products' summation order differs), 2e-2 for f16 programs (f16
// activations round at other places than the CPU's double sums). Skips
// where no CUDA device answers.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/device_context.h"
#include "runtime/cuda/eager_executor.h"

#include "../cpu/executor_test_util.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace rn {
namespace {

#define SKIP_WITHOUT_GPU()                                                                 \
  do {                                                                                     \
    Status gpu = cuda::deviceAvailable();                                                  \
    if (!gpu.ok())                                                                         \
      GTEST_SKIP() << gpu.error().message();                                               \
  } while (0)

std::vector<HostBatch> randomBatches(const Executor &ex, int count, uint64_t seed) {
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
        classes = train->tensors[node.operands[0]].shape.back();
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal;
  std::vector<HostBatch> batches(static_cast<size_t>(count));
  for (HostBatch &b : batches) {
    b.images.resize(size_t(n));
    for (float &x : b.images)
      x = normal(rng);
    b.labels.resize(size_t((*labels)[0]));
    for (int32_t &y : b.labels)
      y = int32_t(rng() % uint64_t(classes));
  }
  return batches;
}

double relativeError(const std::vector<float> &got, const std::vector<float> &want) {
  double num = 0, den = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    double d = double(got[i]) - double(want[i]);
    num += d * d;
    den += double(want[i]) * double(want[i]);
  }
  return std::sqrt(num) / std::max(std::sqrt(den), 1e-12);
}

void compareTraining(const char *artifactName, int steps, double bound) {
  Artifact artifact = test_inputs::load(artifactName);
  std::unique_ptr<CpuExecutor> cpu = test_inputs::makeExecutor(artifact);
  ASSERT_TRUE(cpu);
  cuda::EagerExecutor::Options options;
  options.syncDebug = true;
  auto gpu = cuda::EagerExecutor::create(artifact, options);
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

TEST(CudaEagerExecutor, MlpMatchesCpu) {
  SKIP_WITHOUT_GPU();
  compareTraining("mlp.rnx", 5, 1e-4);
}

TEST(CudaEagerExecutor, CnnMatchesCpu) {
  SKIP_WITHOUT_GPU();
  compareTraining("cnn.rnx", 5, 1e-4);
}

TEST(CudaEagerExecutor, CbrF16MatchesCpu) {
  SKIP_WITHOUT_GPU();
  compareTraining("cbr.rnx", 5, 2e-2);
}

// A mask drawn from another key than the CPU's would move the losses far
// beyond the f32 bound.
TEST(CudaEagerExecutor, DropoutMatchesCpu) {
  SKIP_WITHOUT_GPU();
  compareTraining("dropout.rnx", 5, 1e-4);
}

TEST(CudaEagerExecutor, EvalMatchesCpu) {
  SKIP_WITHOUT_GPU();
  Artifact artifact = test_inputs::load("cnn.rnx");
  std::unique_ptr<CpuExecutor> cpu = test_inputs::makeExecutor(artifact);
  ASSERT_TRUE(cpu);
  auto gpu = cuda::EagerExecutor::create(artifact, {});
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

} // namespace
} // namespace rn
