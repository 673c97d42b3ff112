//===- cupti_check.h - The checking macro of the CUPTI calls -----*- C++ -*-===//
//
// RN_CUDA_TRY's twin for CUPTI (check.h): every CUPTI call of the runtime
// goes through RN_CUPTI_TRY (in functions returning Status or Result<T>)
// or RN_CUPTI_CHECK (an expression giving the Status). The error names the
// call as written, CUPTI's name and message for the result and the source
// line. Calls on the caller's thread count toward RN_CUDA_FAIL_CALL like
// every CUDA call, so fault-injection tests reach these error paths too;
// calls inside CUPTI's callbacks use RN_CUPTI_CHECK_QUIET, which does not
// count (those run on CUPTI's threads, in an order no test can predict).
//
//===----------------------------------------------------------------------===//

#ifndef RN_RUNTIME_CUDA_CUPTI_CHECK_H
#define RN_RUNTIME_CUDA_CUPTI_CHECK_H

#include "runtime/core/status.h"
#include "runtime/cuda/check.h"

#include <cupti.h>

#include <string>

namespace rn::cuda {

/// CUPTI's name of `code` and its message
/// ("CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED: ...").
std::string describe(CUptiResult code);

/// The Status of a CUPTI call that returned `code`; `inject`: whether the
/// call counts toward RN_CUDA_FAIL_CALL.
Status checkCupti(CUptiResult code, const char *call, const char *file, int line, bool inject);

/// Whether an error of CuptiTrace::create means that this process cannot
/// trace at all, rather than a fault: another CUPTI client holds the
/// subscription (compute-sanitizer, Nsight, a profiler), the device or
/// the user may not be profiled, or the device is virtualized.
bool cuptiUnavailable(const Error &error);

} // namespace rn::cuda

#define RN_CUPTI_CHECK(call) ::rn::cuda::checkCupti((call), #call, __FILE__, __LINE__, true)
#define RN_CUPTI_CHECK_QUIET(call) ::rn::cuda::checkCupti((call), #call, __FILE__, __LINE__, false)

/// Returns the checked call's error from the enclosing function.
#define RN_CUPTI_TRY(call) RN_RETURN_IF_ERROR(RN_CUPTI_CHECK(call))

#endif // RN_RUNTIME_CUDA_CUPTI_CHECK_H
