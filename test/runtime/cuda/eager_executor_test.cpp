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

// A mask drawn from another key than the CPU's would move the losses far
// beyond the f32 bound.
TEST(CudaEagerExecutor, DropoutMatchesCpu) {
  SKIP_WITHOUT_GPU();
  compareTraining("dropout.rnx", 5, 1e-4);
}

TEST(CudaEagerExecutor, EvalMatchesCpu) {
  SKIP_WITHOUT_GPU();
  compareEvalWithCpu<cuda::EagerExecutor>("cnn.rnx");
}

} // namespace
} // namespace rn
