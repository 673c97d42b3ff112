//===- graph_executor_test.cpp - cuda-graph against cuda-eager and the CPU -===//
//
// The cuda-graph executor on the checked-in artifacts (Inputs/README.md):
//   - trained for a few steps from the CPU executor's initial state and
//     batches, losses and every state entry within the bounds of
//     eager_executor_test.cpp (1e-4 relative L2 for f32 programs, 2e-2 for
//     the f16 one);
//   - in deterministic mode with the plan choices of one shared plan cache,
//     bit-identical to cuda-eager after every step, steps streamed several
//     in flight (f16 with dynamic loss scaling, dropout on, stochastic
//     depth on);
//   - images handed over in page-locked blocks train bit for bit as the
//     same images in vectors (cuda-graph and cuda-eager);
//   - a step whose gradients overflow is skipped (dynamic loss scaling) and
//     training goes on, as on the CPU;
//   - a failure injected into a capture names the subgraph and node and
//     leaves the device usable: a new executor captures and trains.
// Skips where no CUDA device answers.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/input_block_pool.h"
#include "runtime/cuda/check.h"
#include "runtime/cuda/eager_executor.h"
#include "runtime/cuda/graph_executor.h"

#include "executor_test_util.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <random>
#include <unistd.h>

namespace rn {
namespace {

using test_inputs::randomBatches;
using test_inputs::relativeError;

void compareWithCpu(const char *artifactName, int steps, double bound) {
  test_inputs::compareWithCpu<cuda::GraphExecutor>(artifactName, steps, bound);
}

TEST(CudaGraphExecutor, MlpMatchesCpu) {
  SKIP_WITHOUT_GPU();
  compareWithCpu("mlp.rnx", 5, 1e-4);
}

TEST(CudaGraphExecutor, CnnMatchesCpu) {
  SKIP_WITHOUT_GPU();
  compareWithCpu("cnn.rnx", 5, 1e-4);
}

TEST(CudaGraphExecutor, CbrF16MatchesCpu) {
  SKIP_WITHOUT_GPU();
  compareWithCpu("cbr.rnx", 5, 2e-2);
}

// uint8 images normalized on the device: the fused stem pad (f16) and
// normalize_images as its own op (f32).
TEST(CudaGraphExecutor, CbrUint8F16MatchesCpu) {
  SKIP_WITHOUT_GPU();
  compareWithCpu("cbr-u8.rnx", 5, 2e-2);
}

TEST(CudaGraphExecutor, CbrUint8F32MatchesCpu) {
  SKIP_WITHOUT_GPU();
  compareWithCpu("cbr-u8-f32.rnx", 5, 1e-4);
}

TEST(CudaGraphExecutor, DropoutMatchesCpu) {
  SKIP_WITHOUT_GPU();
  compareWithCpu("dropout.rnx", 5, 1e-4);
}

TEST(CudaGraphExecutor, StochasticDepthMatchesCpu) {
  SKIP_WITHOUT_GPU();
  compareWithCpu("stochastic_depth.rnx", 5, 1e-4);
}

TEST(CudaGraphExecutor, EvalMatchesCpu) {
  SKIP_WITHOUT_GPU();
  test_inputs::compareEvalWithCpu<cuda::GraphExecutor>("cnn.rnx");
}

/// A plan cache file of this test process, removed at the end.
struct TempPlanCache {
  std::string path = "/tmp/rn-graph-test-plans-" + std::to_string(::getpid()) + ".json";
  ~TempPlanCache() { std::remove(path.c_str()); }
};

/// Expects `b`'s losses and state entries bit for bit equal to `a`'s
/// (`first`: the first of the steps, for the messages).
void expectSameSteps(const Artifact &artifact, const char *artifactName, Executor &a,
                     Executor &b, const std::vector<StepOutputs> &outA,
                     const std::vector<StepOutputs> &outB, size_t first) {
  ASSERT_EQ(outB.size(), outA.size());
  for (size_t i = 0; i < outA.size(); ++i)
    EXPECT_EQ(outB[i].at("loss").floats, outA[i].at("loss").floats)
        << artifactName << " step " << first + i;
  for (const StateEntry &s : artifact.program.state) {
    if (!s.slot)
      continue;
    Result<std::vector<float>> x = a.readState(s.name);
    Result<std::vector<float>> y = b.readState(s.name);
    ASSERT_TRUE(x.ok() && y.ok()) << s.name;
    EXPECT_EQ(*y, *x) << artifactName << " state " << s.name << " after step "
                      << first + outA.size();
  }
}

// Tests that cuda-graph and cuda-eager give bit-identical state after every
// one of 12 steps in deterministic mode (the same plans, from one cache),
// with the steps streamed: three submitted at once, then polled.
void bitIdenticalToEager(const char *artifactName) {
  Artifact artifact = test_inputs::load(artifactName);
  TempPlanCache cache;
  cuda::GraphExecutor::Options options;
  options.deterministic = true;
  options.planCacheFile = cache.path;
  auto eager = cuda::EagerExecutor::create(artifact, options);
  ASSERT_TRUE(eager.ok()) << eager.error().message();
  auto graph = cuda::GraphExecutor::create(artifact, options);
  ASSERT_TRUE(graph.ok()) << graph.error().message();
  std::array<Executor *, 2> executors{eager->get(), graph->get()};
  for (Executor *ex : executors)
    ASSERT_TRUE(ex->initialize().ok());
  std::vector<HostBatch> batches = randomBatches(*executors[0], 12, 11);
  for (size_t first = 0; first < batches.size(); first += 3) {
    std::array<std::vector<StepOutputs>, 2> outputs;
    for (size_t e = 0; e < 2; ++e) {
      std::vector<StepInputs> steps;
      for (size_t i = first; i < first + 3; ++i)
        steps.push_back(Executor::trainInputs(batches[i], 0.05f, int32_t(i + 1)));
      Status st = executors[e]->submit("train", std::move(steps));
      ASSERT_TRUE(st.ok()) << st.error().message();
      st = executors[e]->drain(outputs[e]);
      ASSERT_TRUE(st.ok()) << st.error().message();
    }
    ASSERT_EQ(outputs[0].size(), 3u);
    ASSERT_NO_FATAL_FAILURE(expectSameSteps(artifact, artifactName, *executors[0], *executors[1],
                                            outputs[0], outputs[1], first));
  }
}

TEST(CudaGraphExecutor, BitIdenticalToEagerCbrF16) {
  SKIP_WITHOUT_GPU();
  bitIdenticalToEager("cbr.rnx");
}

TEST(CudaGraphExecutor, BitIdenticalToEagerDropout) {
  SKIP_WITHOUT_GPU();
  bitIdenticalToEager("dropout.rnx");
}

TEST(CudaGraphExecutor, BitIdenticalToEagerStochasticDepth) {
  SKIP_WITHOUT_GPU();
  bitIdenticalToEager("stochastic_depth.rnx");
}

TEST(CudaGraphExecutor, BitIdenticalToEagerCnn) {
  SKIP_WITHOUT_GPU();
  bitIdenticalToEager("cnn.rnx");
}

// Tests that images handed over in blocks train exactly as the same images
// in vectors: page-locked blocks (HostValue::pinned, which the copy reads in
// place of the staging buffer: cuda-graph points its memcpy node at each
// step's block) or device blocks (onDevice: the same node copies device to
// device, as for the Python trainer's CUDA tensors). 12 steps, four
// submitted at once, with blocks from an InputBlockPool (reused once their
// steps completed) and every third step given as a vector (the copy
// switching back to the staging buffer), the state bit-identical after every
// group to a run from vectors only.
template <typename GpuExecutor>
void blocksMatchVectors(const char *artifactName, InputBlockPool::Memory memory) {
  Artifact artifact = test_inputs::load(artifactName);
  TempPlanCache cache;
  cuda::GraphExecutor::Options options;
  options.deterministic = true;
  options.planCacheFile = cache.path;
  auto vectors = GpuExecutor::create(artifact, options);
  ASSERT_TRUE(vectors.ok()) << vectors.error().message();
  auto blocks = GpuExecutor::create(artifact, options);
  ASSERT_TRUE(blocks.ok()) << blocks.error().message();
  std::array<Executor *, 2> executors{vectors->get(), blocks->get()};
  for (Executor *ex : executors)
    ASSERT_TRUE(ex->initialize().ok());
  std::vector<HostBatch> batches = randomBatches(*executors[0], 12, 5);
  const bool onDevice = memory == InputBlockPool::Memory::device;
  // A batch's images as the block holds them: floats, or a uint8 model's bytes.
  const bool pixels = !batches[0].pixels.empty();
  auto imageData = [&](const HostBatch &b) -> const void * {
    return pixels ? static_cast<const void *>(b.pixels.data()) : b.images.data();
  };
  const size_t imageCount = pixels ? batches[0].pixels.size() : batches[0].images.size();
  const size_t imageBytes = imageCount * (pixels ? 1 : sizeof(float));
  InputBlockPool pool(*executors[1], imageBytes, memory);
  for (size_t first = 0; first < batches.size(); first += 4) {
    std::array<std::vector<StepOutputs>, 2> outputs;
    for (size_t e = 0; e < 2; ++e) {
      std::vector<StepInputs> steps;
      for (size_t i = first; i < first + 4; ++i) {
        const HostBatch &b = batches[i];
        if (e == 0 || i % 3 == 2) {
          steps.push_back(Executor::trainInputs(b, 0.05f, int32_t(i + 1)));
          continue;
        }
        Result<std::shared_ptr<void>> block = pool.acquire();
        ASSERT_TRUE(block.ok()) << block.error().message();
        if (onDevice)
          ASSERT_EQ(cudaMemcpy(block->get(), imageData(b), imageBytes, cudaMemcpyHostToDevice),
                    cudaSuccess);
        else
          std::memcpy(block->get(), imageData(b), imageBytes);
        steps.push_back(Executor::trainInputs(*block, imageCount, b.labels, 0.05f,
                                              int32_t(i + 1), onDevice));
      }
      Status st = executors[e]->submit("train", std::move(steps));
      ASSERT_TRUE(st.ok()) << st.error().message();
      st = executors[e]->drain(outputs[e]);
      ASSERT_TRUE(st.ok()) << st.error().message();
    }
    ASSERT_NO_FATAL_FAILURE(expectSameSteps(artifact, artifactName, *executors[0], *executors[1],
                                            outputs[0], outputs[1], first));
  }
  // Drained groups hand their blocks back: three block steps a group.
  EXPECT_LE(pool.blocks(), 3u);
}

TEST(CudaGraphExecutor, PinnedInputsMatchVectorsCnn) {
  SKIP_WITHOUT_GPU();
  blocksMatchVectors<cuda::GraphExecutor>("cnn.rnx", InputBlockPool::Memory::host);
}

TEST(CudaGraphExecutor, PinnedInputsMatchVectorsCbrF16) {
  SKIP_WITHOUT_GPU();
  blocksMatchVectors<cuda::GraphExecutor>("cbr.rnx", InputBlockPool::Memory::host);
}

TEST(CudaEagerExecutor, PinnedInputsMatchVectorsCnn) {
  SKIP_WITHOUT_GPU();
  blocksMatchVectors<cuda::EagerExecutor>("cnn.rnx", InputBlockPool::Memory::host);
}

TEST(CudaGraphExecutor, DeviceInputsMatchVectorsCnn) {
  SKIP_WITHOUT_GPU();
  blocksMatchVectors<cuda::GraphExecutor>("cnn.rnx", InputBlockPool::Memory::device);
}

TEST(CudaGraphExecutor, DeviceInputsMatchVectorsCbrF16) {
  SKIP_WITHOUT_GPU();
  blocksMatchVectors<cuda::GraphExecutor>("cbr.rnx", InputBlockPool::Memory::device);
}

// uint8 images: pinned and device blocks of bytes are the copy's source as
// they are, as vectors of bytes are staged.
TEST(CudaGraphExecutor, PinnedInputsMatchVectorsCbrUint8) {
  SKIP_WITHOUT_GPU();
  blocksMatchVectors<cuda::GraphExecutor>("cbr-u8.rnx", InputBlockPool::Memory::host);
}

TEST(CudaGraphExecutor, DeviceInputsMatchVectorsCbrUint8) {
  SKIP_WITHOUT_GPU();
  blocksMatchVectors<cuda::GraphExecutor>("cbr-u8.rnx", InputBlockPool::Memory::device);
}

TEST(CudaEagerExecutor, DeviceInputsMatchVectorsCnn) {
  SKIP_WITHOUT_GPU();
  blocksMatchVectors<cuda::EagerExecutor>("cnn.rnx", InputBlockPool::Memory::device);
}

// Tests that a step whose gradients overflow (a loss scale of 2^40 on the
// f16 program with dynamic loss scaling) is skipped by cuda-graph as by the
// CPU: every parameter keeps its bits, the loss scale shrinks to the CPU's
// value, and the steps after it train as the CPU's do.
TEST(CudaGraphExecutor, OverflowedStepIsSkippedAndTrainingGoesOn) {
  SKIP_WITHOUT_GPU();
  Artifact artifact = test_inputs::load("cbr.rnx");
  std::unique_ptr<CpuExecutor> cpu = test_inputs::makeExecutor(artifact);
  ASSERT_TRUE(cpu);
  auto gpu = cuda::GraphExecutor::create(artifact, {});
  ASSERT_TRUE(gpu.ok()) << gpu.error().message();
  ASSERT_TRUE((*gpu)->initialize().ok());
  std::array<Executor *, 2> executors{cpu.get(), gpu->get()};
  std::vector<HostBatch> batches = randomBatches(*cpu, 5, 13);
  std::vector<std::string> parameters;
  for (const StateEntry &s : artifact.program.state)
    if (s.slot && s.role == "parameter")
      parameters.push_back(s.name);
  ASSERT_FALSE(parameters.empty());
  auto train = [&](Executor &ex, int step) {
    TrainOutputs out;
    Status st = ex.trainStep(batches[size_t(step - 1)], 0.05f, step, out);
    EXPECT_TRUE(st.ok()) << st.error().message();
    return out.loss;
  };
  for (Executor *ex : executors)
    train(*ex, 1);
  std::map<std::string, std::vector<float>> before;
  for (const std::string &name : parameters)
    before[name] = *(*gpu)->readState(name);
  for (Executor *ex : executors)
    ASSERT_TRUE(ex->writeState("loss_scale", {1099511627776.0f}).ok());
  for (Executor *ex : executors)
    train(*ex, 2);
  for (const std::string &name : parameters)
    EXPECT_EQ(*(*gpu)->readState(name), before[name]) << "parameter " << name
                                                      << " moved in the skipped step";
  std::vector<float> scaleCpu = *cpu->readState("loss_scale");
  std::vector<float> scaleGpu = *(*gpu)->readState("loss_scale");
  EXPECT_EQ(scaleGpu, scaleCpu);
  EXPECT_LT(scaleGpu.at(0), 1099511627776.0f);
  // Training goes on from a usable scale.
  for (Executor *ex : executors)
    ASSERT_TRUE(ex->writeState("loss_scale", {1024.0f}).ok());
  for (int step = 3; step <= 5; ++step) {
    float want = train(*cpu, step), got = train(**gpu, step);
    EXPECT_TRUE(std::isfinite(got)) << "step " << step;
    EXPECT_NEAR(got, want, 2e-2 * std::max(1.0f, std::fabs(want))) << "step " << step;
  }
  for (const std::string &name : parameters)
    EXPECT_LE(relativeError(*(*gpu)->readState(name), *cpu->readState(name)), 2e-2) << name;
}

// Tests that a cold load (autotuning, no plan cache) times its convolution
// plans in the arena's activations and allocates no timing buffers beside
// the arena (the load summary would name them), and that the program then
// trains as the CPU does: no step reads what the timing left there.
TEST(CudaGraphExecutor, ColdLoadTimesPlansInTheActivations) {
  SKIP_WITHOUT_GPU();
  {
    cuda::GraphExecutor::Options options;
    options.autotune = true;
    const Artifact artifact = test_inputs::load("cbr.rnx"); // outlives the executor
    auto gpu = cuda::GraphExecutor::create(artifact, options);
    ASSERT_TRUE(gpu.ok()) << gpu.error().message();
    const std::string summary = (*gpu)->loadSummary();
    EXPECT_NE(summary.find("convolution graphs"), std::string::npos) << summary;
    EXPECT_EQ(summary.find("timing buffers allocated"), std::string::npos) << summary;
  }
  compareWithCpu("cbr.rnx", 3, 2e-2);
}

// Tests that a call failing inside a capture is reported with the captured
// subgraph and leaves no stream capturing: a new executor loads and trains.
TEST(CudaGraphExecutor, FailureDuringCaptureIsReportedAndRecoverable) {
  SKIP_WITHOUT_GPU();
  Artifact artifact = test_inputs::load("cnn.rnx");
  cuda::GraphExecutor::Options options;
  options.autotune = false; // the same calls at every load
  // Count the calls of loading the program alone and of a whole load.
  uint64_t start = cuda::checkedCalls();
  { ASSERT_TRUE(cuda::EagerExecutor::create(artifact, options).ok()); }
  uint64_t programCalls = cuda::checkedCalls() - start;
  start = cuda::checkedCalls();
  { ASSERT_TRUE(cuda::GraphExecutor::create(artifact, options).ok()); }
  uint64_t allCalls = cuda::checkedCalls() - start;
  ASSERT_GT(allCalls, programCalls + 10);
  // A call in the middle of the captures.
  cuda::injectFailureAt(cuda::checkedCalls() + programCalls + (allCalls - programCalls) / 2);
  auto failed = cuda::GraphExecutor::create(artifact, options);
  cuda::injectFailureAt(0);
  ASSERT_FALSE(failed.ok());
  const std::string message = failed.error().message();
  EXPECT_NE(message.find("injected failure"), std::string::npos) << message;
  EXPECT_NE(message.find("capture of function"), std::string::npos) << message;
  EXPECT_EQ(message.find("still capturing"), std::string::npos) << message;

  auto again = cuda::GraphExecutor::create(artifact, options);
  ASSERT_TRUE(again.ok()) << again.error().message();
  ASSERT_TRUE((*again)->initialize().ok());
  std::vector<HostBatch> batches = randomBatches(**again, 2, 5);
  std::vector<TrainOutputs> out;
  Status st = (*again)->trainSteps(batches, {0.05f, 0.05f}, 1, out);
  ASSERT_TRUE(st.ok()) << st.error().message();
  EXPECT_TRUE(std::isfinite(out.back().loss));
}

} // namespace
} // namespace rn
