//===- gemm.cpp - Matrix products through cuBLASLt ------------------------===//
//
// cuBLASLt is column major; a row-major [r, c] matrix is the column-major
// [c, r] matrix with the same memory, its transpose. So the row-major
// D = op(A) op(B) is computed as the column-major D^T = op(B)^T op(A)^T:
// cuBLASLt's first operand is B, its second A, its output [n, m] with
// leading dimension n. The bias epilogue adds a vector of the output's
// column-major row count (n) to every column, i.e. bias[n] to every
// row-major row: what GemmCall asks for.
//
// Descriptors, layouts and the heuristic's algorithm are built once per
// GemmCall (prepare); run sets the bias pointer and calls cublasLtMatmul.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/gemm.h"

#include "runtime/cuda/check.h"

#include <unordered_map>

namespace rn::cuda {
namespace {

cudaDataType_t cudaType(DType type) {
  switch (type) {
  case DType::f16:
    return CUDA_R_16F;
  case DType::bf16:
    return CUDA_R_16BF;
  default:
    return CUDA_R_32F;
  }
}

bool sameCall(const GemmCall &a, const GemmCall &b) {
  return a.m == b.m && a.n == b.n && a.k == b.k && a.transA == b.transA && a.transB == b.transB &&
         a.accumulate == b.accumulate && a.bias == b.bias && a.aType == b.aType &&
         a.bType == b.bType && a.cType == b.cType && a.dType == b.dType &&
         (!a.bias || a.biasType == b.biasType);
}
struct CallEq {
  bool operator()(const GemmCall &a, const GemmCall &b) const { return sameCall(a, b); }
};
struct CallHash {
  size_t operator()(const GemmCall &c) const {
    uint64_t h = 1469598103934665603ull;
    auto mix = [&h](uint64_t v) { h = (h ^ v) * 1099511628211ull; };
    mix(uint64_t(c.m));
    mix(uint64_t(c.n));
    mix(uint64_t(c.k));
    mix(uint64_t(c.transA) | uint64_t(c.transB) << 1 | uint64_t(c.accumulate) << 2 |
        uint64_t(c.bias) << 3);
    mix(uint64_t(c.aType) | uint64_t(c.bType) << 8 | uint64_t(c.cType) << 16 |
        uint64_t(c.dType) << 24 | (c.bias ? uint64_t(c.biasType) << 32 : 0));
    return size_t(h);
  }
};

/// The descriptors of one call (owned; destroyed with the runner).
struct Entry {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t first = nullptr, second = nullptr, c = nullptr, d = nullptr;
  cublasLtMatmulAlgo_t algo{};
  size_t workspace = 0;

  void destroy() {
    if (first)
      cublasLtMatrixLayoutDestroy(first);
    if (second)
      cublasLtMatrixLayoutDestroy(second);
    if (c)
      cublasLtMatrixLayoutDestroy(c);
    if (d)
      cublasLtMatrixLayoutDestroy(d);
    if (op)
      cublasLtMatmulDescDestroy(op);
    *this = Entry();
  }
};

} // namespace

std::string describe(const GemmCall &call) {
  std::string s = "gemm m" + std::to_string(call.m) + " n" + std::to_string(call.n) + " k" +
                  std::to_string(call.k) + (call.transA ? " A^T" : "") +
                  (call.transB ? " B^T" : "") + (call.accumulate ? " +C" : "") +
                  (call.bias ? " +bias:" + std::string(dtypeName(call.biasType)) : "") + " a:" +
                  std::string(dtypeName(call.aType)) + " b:" + std::string(dtypeName(call.bType)) +
                  " c:" + std::string(dtypeName(call.cType)) +
                  " d:" + std::string(dtypeName(call.dType));
  return s;
}

struct GemmRunner::Impl {
  Options options;
  std::unordered_map<GemmCall, Entry, CallHash, CallEq> entries;

  ~Impl() {
    for (auto &[call, entry] : entries)
      entry.destroy();
  }

  Status build(const GemmCall &call, const StreamResources &stream, Entry &e);
};

Status GemmRunner::Impl::build(const GemmCall &call, const StreamResources &stream, Entry &e) {
  bool f32 = call.aType == DType::f32 && call.bType == DType::f32;
  cublasComputeType_t compute =
      f32 && options.allowTf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  RN_CUDA_TRY(cublasLtMatmulDescCreate(&e.op, compute, CUDA_R_32F));
  // First operand B, second A (see the file comment).
  cublasOperation_t opFirst = call.transB ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasOperation_t opSecond = call.transA ? CUBLAS_OP_T : CUBLAS_OP_N;
  RN_CUDA_TRY(cublasLtMatmulDescSetAttribute(e.op, CUBLASLT_MATMUL_DESC_TRANSA, &opFirst,
                                             sizeof(opFirst)));
  RN_CUDA_TRY(cublasLtMatmulDescSetAttribute(e.op, CUBLASLT_MATMUL_DESC_TRANSB, &opSecond,
                                             sizeof(opSecond)));
  if (call.bias) {
    cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_BIAS;
    RN_CUDA_TRY(cublasLtMatmulDescSetAttribute(e.op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue,
                                               sizeof(epilogue)));
    cudaDataType_t biasType = cudaType(call.biasType);
    RN_CUDA_TRY(cublasLtMatmulDescSetAttribute(e.op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE,
                                               &biasType, sizeof(biasType)));
  }
  // Column-major layouts of the row-major operands: B is [k, n] (stored
  // [n, k] with transB), A is [m, k] ([k, m] with transA), C and D [m, n].
  uint64_t n = uint64_t(call.n), m = uint64_t(call.m), k = uint64_t(call.k);
  if (call.transB)
    RN_CUDA_TRY(cublasLtMatrixLayoutCreate(&e.first, cudaType(call.bType), k, n, int64_t(k)));
  else
    RN_CUDA_TRY(cublasLtMatrixLayoutCreate(&e.first, cudaType(call.bType), n, k, int64_t(n)));
  if (call.transA)
    RN_CUDA_TRY(cublasLtMatrixLayoutCreate(&e.second, cudaType(call.aType), m, k, int64_t(m)));
  else
    RN_CUDA_TRY(cublasLtMatrixLayoutCreate(&e.second, cudaType(call.aType), k, m, int64_t(k)));
  DType cType = call.accumulate ? call.cType : call.dType;
  RN_CUDA_TRY(cublasLtMatrixLayoutCreate(&e.c, cudaType(cType), n, m, int64_t(n)));
  RN_CUDA_TRY(cublasLtMatrixLayoutCreate(&e.d, cudaType(call.dType), n, m, int64_t(n)));

  cublasLtMatmulPreference_t preference = nullptr;
  RN_CUDA_TRY(cublasLtMatmulPreferenceCreate(&preference));
  struct Guard {
    cublasLtMatmulPreference_t p;
    ~Guard() { cublasLtMatmulPreferenceDestroy(p); }
  } guard{preference};
  uint64_t workspace = stream.workspaceBytes;
  RN_CUDA_TRY(cublasLtMatmulPreferenceSetAttribute(
      preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace, sizeof(workspace)));
  if (options.deterministic) {
    // In-place split-K reductions accumulate with atomics: order varies.
    uint32_t schemes = CUBLASLT_REDUCTION_SCHEME_MASK & ~uint32_t(CUBLASLT_REDUCTION_SCHEME_INPLACE);
    RN_CUDA_TRY(cublasLtMatmulPreferenceSetAttribute(
        preference, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &schemes, sizeof(schemes)));
  }
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  RN_CUDA_TRY(cublasLtMatmulAlgoGetHeuristic(stream.cublasLt, e.op, e.first, e.second, e.c, e.d,
                                             preference, 1, &result, &found));
  if (found == 0)
    return Error("cuBLASLt has no algorithm for " + describe(call) + " within " +
                 std::to_string(stream.workspaceBytes) + " bytes of workspace");
  e.algo = result.algo;
  e.workspace = result.workspaceSize;
  return Status::success();
}

Result<std::unique_ptr<GemmRunner>> GemmRunner::create(const Options &options) {
  std::unique_ptr<GemmRunner> runner(new GemmRunner());
  runner->impl_ = std::make_unique<Impl>();
  runner->impl_->options = options;
  return runner;
}

GemmRunner::~GemmRunner() = default;

Result<size_t> GemmRunner::prepare(const GemmCall &call, const StreamResources &stream) {
  if (call.m <= 0 || call.n <= 0 || call.k <= 0)
    return Error(describe(call) + ": empty or negative dimension");
  if (auto it = impl_->entries.find(call); it != impl_->entries.end()) {
    if (it->second.workspace > stream.workspaceBytes)
      return Error(describe(call) + " needs " + std::to_string(it->second.workspace) +
                   " bytes of workspace, stream " + std::string(stream.name) + " has " +
                   std::to_string(stream.workspaceBytes));
    return it->second.workspace;
  }
  Entry entry;
  Status s = impl_->build(call, stream, entry);
  if (!s.ok()) {
    entry.destroy();
    return s.error().withContext(describe(call));
  }
  size_t workspace = entry.workspace;
  impl_->entries.emplace(call, entry);
  return workspace;
}

Status GemmRunner::run(const GemmCall &call, const GemmBuffers &buffers,
                       const StreamResources &stream) {
  auto it = impl_->entries.find(call);
  if (it == impl_->entries.end())
    return Error(describe(call) + " was not prepared");
  Entry &e = it->second;
  if (!buffers.a || !buffers.b || !buffers.d || (call.accumulate && !buffers.c) ||
      (call.bias && !buffers.bias))
    return Error(describe(call) + ": a buffer it needs is null");
  if (e.workspace > stream.workspaceBytes)
    return Error(describe(call) + ": stream " + std::string(stream.name) +
                 " has too little workspace");
  if (call.bias)
    RN_CUDA_TRY(cublasLtMatmulDescSetAttribute(e.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                                               &buffers.bias, sizeof(buffers.bias)));
  float alpha = 1.0f, beta = call.accumulate ? 1.0f : 0.0f;
  const void *c = call.accumulate ? buffers.c : buffers.d;
  RN_CUDA_TRY(cublasLtMatmul(stream.cublasLt, e.op, &alpha, buffers.b, e.first, buffers.a,
                             e.second, &beta, c, e.c, buffers.d, e.d, &e.algo, stream.workspace,
                             e.workspace, stream.stream));
  return Status::success();
}

} // namespace rn::cuda
