//===- check.h - One checking macro for every CUDA library call -*- C++ -*-===//
//
// Every CUDA runtime, cuDNN, cuBLAS(Lt) and NCCL call of the runtime goes through
// RN_CUDA_TRY (in functions returning Status or Result<T>) or RN_CUDA_CHECK
// (an expression giving the Status). The error names the call as written,
// the library's own name and message for the code, and the file and line;
// callers add the context they know (function, subgraph, node, op, stream)
// with Error::withContext.
//
// Fault injection: with RN_CUDA_FAIL_CALL=N in the environment, the N-th
// checked call of the process (counting from 1) is reported as failed
// without looking at its result, so that tests can walk every error path
// on a healthy GPU ("injected failure" in the message).
//
//===----------------------------------------------------------------------===//

#ifndef RN_RUNTIME_CUDA_CHECK_H
#define RN_RUNTIME_CUDA_CHECK_H

#include "runtime/core/status.h"

#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>
#include <nccl.h>

namespace rn::cuda {

/// Whether the call being checked is the one RN_CUDA_FAIL_CALL names.
bool injectedFailure();

/// The library's name of `code` and its message ("cudaErrorMemoryAllocation:
/// out of memory").
std::string describe(cudaError_t code);
std::string describe(cudnnStatus_t code);
std::string describe(cublasStatus_t code);
std::string describe(ncclResult_t code);

inline bool failed(cudaError_t code) { return code != cudaSuccess; }
inline bool failed(cudnnStatus_t code) { return code != CUDNN_STATUS_SUCCESS; }
inline bool failed(cublasStatus_t code) { return code != CUBLAS_STATUS_SUCCESS; }
/// A non-blocking communicator's call may still be running: not a failure
/// (the caller polls ncclCommGetAsyncError).
inline bool failed(ncclResult_t code) { return code != ncclSuccess && code != ncclInProgress; }

/// The Status of a call that returned `code`.
template <typename Code>
Status checkCall(Code code, const char *call, const char *file, int line) {
  bool injected = injectedFailure();
  if (!injected && !failed(code))
    return Status::success();
  return Error(std::string(call) + " failed: " +
               (injected ? std::string("injected failure (RN_CUDA_FAIL_CALL)") : describe(code)) +
               " [" + file + ":" + std::to_string(line) + "]");
}

/// The number of checked calls so far (for tests that pick a call to fail).
uint64_t checkedCalls();
/// Makes the `call`-th checked call of the process fail (0: none),
/// overriding RN_CUDA_FAIL_CALL: tests aim at a call inside one phase.
void injectFailureAt(uint64_t call);

} // namespace rn::cuda

#define RN_CUDA_CHECK(call) ::rn::cuda::checkCall((call), #call, __FILE__, __LINE__)

/// Returns the checked call's error from the enclosing function.
#define RN_CUDA_TRY(call) RN_RETURN_IF_ERROR(RN_CUDA_CHECK(call))

/// A kernel launch: checks the launch configuration (cudaGetLastError).
#define RN_CUDA_TRY_LAUNCH() RN_CUDA_TRY(cudaGetLastError())

#endif // RN_RUNTIME_CUDA_CHECK_H
