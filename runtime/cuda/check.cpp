//===- check.cpp - Messages and fault injection of RN_CUDA_TRY ------------===//

#include "runtime/cuda/check.h"

#include <atomic>
#include <cstdlib>

namespace rn::cuda {

namespace {
std::atomic<uint64_t> callCount{0};
std::atomic<uint64_t> failingOverride{0};
std::atomic<bool> overridden{false};

uint64_t failingCall() {
  if (overridden.load())
    return failingOverride.load();
  static const uint64_t n = [] {
    const char *v = std::getenv("RN_CUDA_FAIL_CALL");
    return v && *v ? std::strtoull(v, nullptr, 10) : 0;
  }();
  return n;
}
} // namespace

bool injectedFailure() {
  uint64_t n = ++callCount;
  uint64_t failing = failingCall();
  return failing != 0 && n == failing;
}

uint64_t checkedCalls() { return callCount.load(); }

void injectFailureAt(uint64_t call) {
  failingOverride = call;
  overridden = true;
}

std::string describe(cudaError_t code) {
  return std::string(cudaGetErrorName(code)) + ": " + cudaGetErrorString(code);
}

std::string describe(cudnnStatus_t code) { return cudnnGetErrorString(code); }

std::string describe(cublasStatus_t code) {
  switch (code) {
  case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
  case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
  case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
  case CUBLAS_STATUS_ARCH_MISMATCH: return "CUBLAS_STATUS_ARCH_MISMATCH";
  case CUBLAS_STATUS_MAPPING_ERROR: return "CUBLAS_STATUS_MAPPING_ERROR";
  case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
  case CUBLAS_STATUS_INTERNAL_ERROR: return "CUBLAS_STATUS_INTERNAL_ERROR";
  case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
  case CUBLAS_STATUS_LICENSE_ERROR: return "CUBLAS_STATUS_LICENSE_ERROR";
  default: return "cublasStatus_t " + std::to_string(int(code));
  }
}

std::string describe(ncclResult_t code) {
  // ncclGetLastError would add NCCL's detail but needs the communicator;
  // the communicator adds it where it has one.
  return "ncclResult_t " + std::to_string(int(code)) + ": " + ncclGetErrorString(code);
}

} // namespace rn::cuda
