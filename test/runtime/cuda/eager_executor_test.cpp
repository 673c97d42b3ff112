//===- eager_executor_test.cpp - cuda-eager against the CPU executor ------===//
//
// Trains the checked-in artifacts (Inputs/README.md: an f32 MLP, two f16
// conv-BN-ReLU layers with dynamic loss scaling, the same with uint8 images
// (f16 and f32), a small f32 CNN, an f32 MLP with two dropouts and one with
// a stochastic-depth residual branch and a dropout, whose masks the GPU keys
// from the device step) for a few
// steps on the GPU and on the CPU reference executor from the same initial
// state and batches, and compares the losses and every state entry after
// the steps. Bounds: relative L2 error per tensor 1e-4 for f32 programs
// (the products' summation order differs), 2e-2 for f16 programs (f16
// activations round at other places than the CPU's double sums). Skips
// where no CUDA device answers.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/eager_executor.h"

#include "executor_test_util.h"

#include <gtest/gtest.h>

namespace rn {
namespace {

using test_inputs::compareEvalWithCpu;

void compareTraining(const char *artifactName, int steps, double bound) {
  cuda::EagerExecutor::Options options;
  options.syncDebug = true;
  test_inputs::compareWithCpu<cuda::EagerExecutor>(artifactName, steps, bound, options);
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

// uint8 images: bytes on the wire, normalized by the fused stem pad (f16)
// or by normalize_images (f32).
TEST(CudaEagerExecutor, CbrUint8F16MatchesCpu) {
  SKIP_WITHOUT_GPU();
  compareTraining("cbr-u8.rnx", 5, 2e-2);
}

TEST(CudaEagerExecutor, CbrUint8F32MatchesCpu) {
  SKIP_WITHOUT_GPU();
  compareTraining("cbr-u8-f32.rnx", 5, 1e-4);
}

TEST(CudaEagerExecutor, Uint8EvalMatchesCpu) {
  SKIP_WITHOUT_GPU();
  compareEvalWithCpu<cuda::EagerExecutor>("cbr-u8-f32.rnx");
}

// A mask drawn from another key than the CPU's would move the losses far
// beyond the f32 bound.
TEST(CudaEagerExecutor, DropoutMatchesCpu) {
  SKIP_WITHOUT_GPU();
  compareTraining("dropout.rnx", 5, 1e-4);
}

// The same for the per-sample masks of stochastic depth, keyed in one
// numbering with the dropout after it.
TEST(CudaEagerExecutor, StochasticDepthMatchesCpu) {
  SKIP_WITHOUT_GPU();
  compareTraining("stochastic_depth.rnx", 5, 1e-4);
}

// The plan's workspace_<stream> regions are caps: each stream's workspace
// is allocated at the most its prepared nodes need (the conv layers' cuDNN
// plans and BN partials), so the cbr program's convolution stream has a
// workspace, smaller than the cap, and the streams without such nodes none.
TEST(CudaEagerExecutor, WorkspacesAreSizedToWhatThePlansNeed) {
  SKIP_WITHOUT_GPU();
  Artifact artifact = test_inputs::load("cbr.rnx");
  auto gpu = cuda::EagerExecutor::create(artifact, {});
  ASSERT_TRUE(gpu.ok()) << gpu.error().message();
  const cuda::DeviceProgram &dp = (*gpu)->deviceProgram();
  const cuda::DeviceContext &ctx = dp.context();
  size_t sized = 0;
  bool someNeed = false;
  for (Stream s : {Stream::trans, Stream::comp1, Stream::comp2, Stream::comp3, Stream::update}) {
    const cuda::StreamResources &r = ctx.stream(s);
    const Region *region = artifact.program.arena.find("workspace_" + std::string(r.name));
    size_t cap = region ? region->bytes : 0;
    EXPECT_EQ(r.workspaceBytes, dp.workspaceNeed(s)) << r.name;
    EXPECT_LE(r.workspaceBytes, cap) << r.name;
    EXPECT_EQ(r.workspace != nullptr, r.workspaceBytes > 0) << r.name;
    if (region) {
      EXPECT_EQ(ctx.allocatedBytes(*region), r.workspaceBytes) << r.name;
    }
    someNeed |= r.workspaceBytes > 0;
    sized += (r.workspaceBytes + 255) / 256 * 256;
  }
  EXPECT_TRUE(someNeed) << "no node of the conv program needs a workspace";
  EXPECT_EQ(ctx.workspaceBytes(), sized);
  EXPECT_LT(ctx.workspaceBytes(), ctx.plannedWorkspaceBytes());
  EXPECT_EQ(ctx.arenaBytes(),
            artifact.program.arena.bytes - ctx.plannedWorkspaceBytes() + ctx.workspaceBytes());
  // And the program trains on them (the other tests compare the values).
  ASSERT_TRUE((*gpu)->initialize().ok());
}

TEST(CudaEagerExecutor, EvalMatchesCpu) {
  SKIP_WITHOUT_GPU();
  compareEvalWithCpu<cuda::EagerExecutor>("cnn.rnx");
}

} // namespace
} // namespace rn
