//===- cutlass_dgrad.cu - Hopper dgrad with the BN backward's sums --------===//
//
// The two kernels of cutlass_dgrad.h, instantiated once (sm_90a only: the
// warpgroup MMA and TMA instructions need the architecture-specific
// target). In CUTLASS's dgrad GEMM the rows M are dx's pixels and the
// columns N its channels, so a per-channel sum is a row-vector reduction
// over M (Sm90RowReduction). It reduces deterministically: each CTA writes
// its tile's partial sums to the workspace and the last CTA of a column
// adds them in a fixed order (no atomics), so a replayed step gives the
// same bits.
//
// The fused epilogue is a DAG of visitor nodes (Sm90TopologicalVisitor):
//
//   0 acc           the dgrad's accumulator (d relu_result)
//   1 reluResult    aux load, dx's layout
//   2 g             acc where reluResult > 0, else 0
//   3 sum(g)        row reduction, passes g through
//   4 x             aux load, dx's layout
//   5 mean, 6 invStd  row broadcasts
//   7 g * xhat      g * (x - mean) * invStd
//   8 sum(g * xhat) row reduction
//   9 D = g         the output (f16), reading 3 and 8 so both are live
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/cutlass/cutlass_dgrad.h"

#include "runtime/cuda/check.h"

// CUTLASS's headers are not self-contained: the device adapter (and what
// it includes) must come before the collective builders.
#include "cutlass/cutlass.h"
#include "cute/tensor.hpp"
#include "cutlass/conv/device/conv_universal_adapter.hpp"
#include "cutlass/conv/kernel/conv_universal.hpp"
#include "cutlass/conv/collective/collective_builder.hpp"
#include "cutlass/epilogue/collective/collective_builder.hpp"
#include "cutlass/epilogue/fusion/sm90_visitor_tma_warpspecialized.hpp"

#include <string>

namespace rn::cuda {
namespace {

using namespace cute;
namespace fusion = cutlass::epilogue::fusion;

using Act = cutlass::half_t;
constexpr auto kDgrad = cutlass::conv::Operator::kDgrad;
constexpr int kAlignment = 8; // f16 elements in 16 bytes: channels multiples of 8
using TileShape = Shape<_128, _128, Shape<_64>>;
using ClusterShape = Shape<_1, _1, _1>;
using EpilogueSchedule = cutlass::epilogue::TmaWarpSpecialized;
using MainloopSchedule = cutlass::conv::KernelImplicitTmaWarpSpecializedSm90;
/// dx's (and reluResult's, x's) stride: ((W, H, N) pixels, C, batch).
using StrideAct = cutlass::detail::TagToStrideC_t<cutlass::layout::TensorNHWC>;
constexpr auto kRound = cutlass::FloatRoundStyle::round_to_nearest;

/// acc where the ReLU's result is positive, else 0 (the ReLU's gradient).
template <class T> struct MaskByRelu {
  CUTLASS_HOST_DEVICE T operator()(T gradient, T reluResult) const {
    return reluResult > T(0) ? gradient : T(0);
  }
};
template <class T, int N> struct MaskByRelu<cutlass::Array<T, N>> {
  CUTLASS_HOST_DEVICE cutlass::Array<T, N> operator()(cutlass::Array<T, N> const &gradient,
                                                      cutlass::Array<T, N> const &reluResult) const {
    cutlass::Array<T, N> out;
    CUTLASS_PRAGMA_UNROLL
    for (int i = 0; i < N; ++i)
      out[i] = reluResult[i] > T(0) ? gradient[i] : T(0);
    return out;
  }
};

/// g * (x - mean) * invStd: g times the BN's normalized input.
template <class T> struct TimesNormalized;
template <class T, int N> struct TimesNormalized<cutlass::Array<T, N>> {
  CUTLASS_HOST_DEVICE cutlass::Array<T, N>
  operator()(cutlass::Array<T, N> const &g, cutlass::Array<T, N> const &x,
             cutlass::Array<T, N> const &mean, cutlass::Array<T, N> const &invStd) const {
    cutlass::Array<T, N> out;
    CUTLASS_PRAGMA_UNROLL
    for (int i = 0; i < N; ++i)
      out[i] = g[i] * ((x[i] - mean[i]) * invStd[i]);
    return out;
  }
};

/// Its first operand: the output node reads both sums so that the DAG
/// keeps them, and stores g.
template <class T> struct FirstOf;
template <class T, int N> struct FirstOf<cutlass::Array<T, N>> {
  CUTLASS_HOST_DEVICE cutlass::Array<T, N> operator()(cutlass::Array<T, N> const &first,
                                                      cutlass::Array<T, N> const &) const {
    return first;
  }
};

using EpilogueDescriptor = cutlass::epilogue::collective::detail::EpilogueDescriptor<
    TileShape, cutlass::epilogue::collective::EpilogueTileAuto, void, Act, EpilogueSchedule>;
using EpilogueTile = typename EpilogueDescriptor::EpilogueTile;

/// Loads straight from global memory (no shared-memory stage): each
/// element is read once, by the thread that uses it.
using ActLoad = fusion::Sm90AuxLoad<0, EpilogueTile, Act, StrideAct, void, void, kAlignment>;
using ChannelBroadcast = fusion::Sm90RowBroadcast<0, TileShape, float, float>;
using ChannelSum = fusion::Sm90RowReduction<cutlass::plus, cutlass::plus, cutlass::plus, 0,
                                            TileShape, float, float, kRound>;

using BnSumsCallbacks = fusion::Sm90TopologicalVisitor<
    float,
    cute::tuple<cute::seq<>, cute::seq<>, cute::seq<0, 1>, cute::seq<2>, cute::seq<>, cute::seq<>,
                cute::seq<>, cute::seq<2, 4, 5, 6>, cute::seq<7>, cute::seq<3, 8>>,
    fusion::Sm90AccFetch,                                // 0 acc
    ActLoad,                                             // 1 reluResult
    fusion::Sm90Compute<MaskByRelu, float, float, kRound>, // 2 g
    ChannelSum,                                          // 3 sum(g)
    ActLoad,                                             // 4 x
    ChannelBroadcast,                                    // 5 mean
    ChannelBroadcast,                                    // 6 invStd
    fusion::Sm90Compute<TimesNormalized, float, float, kRound>, // 7 g * xhat
    ChannelSum,                                          // 8 sum(g * xhat)
    fusion::Sm90Compute<FirstOf, Act, float, kRound>>;   // 9 D = g

/// A dgrad kernel with epilogue fusion `Fusion` (CUTLASS's linear
/// combination for the plain one).
template <class Fusion> struct DgradKernel {
  using Epilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, TileShape, ClusterShape,
      cutlass::epilogue::collective::EpilogueTileAuto, float, float, void,
      cutlass::layout::TensorNHWC, kAlignment, Act, cutlass::layout::TensorNHWC, kAlignment,
      EpilogueSchedule, Fusion>::CollectiveOp;
  using Mainloop = typename cutlass::conv::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, kDgrad, Act,
      cutlass::layout::TensorNHWC, kAlignment, Act, cutlass::layout::TensorNHWC, kAlignment,
      float, TileShape, ClusterShape,
      cutlass::conv::collective::StageCountAutoCarveout<
          static_cast<int>(sizeof(typename Epilogue::SharedStorage))>,
      MainloopSchedule>::CollectiveOp;
  using Problem =
      cutlass::conv::ConvProblemShape<kDgrad, Mainloop::DispatchPolicy::NumSpatialDimensions>;
  using Kernel = cutlass::conv::kernel::ConvUniversal<Problem, Mainloop, Epilogue>;
  using Conv = cutlass::conv::device::ConvUniversalAdapter<Kernel>;
};

using PlainDgrad = DgradKernel<fusion::LinearCombination<Act, float, void, float>>;
using BnSumsDgrad = DgradKernel<BnSumsCallbacks>;

template <class K> typename K::Problem problemOf(const DgradShape &s) {
  // CUTLASS's dgrad problem is described by the forward convolution:
  // activation [n, h, w, c], filter [k, r, s, c], output [n, p, q, k].
  return typename K::Problem(
      cutlass::conv::Mode::kCrossCorrelation, {int(s.n), int(s.h), int(s.w), int(s.c)},
      {int(s.k), int(s.r), int(s.s), int(s.c)}, {int(s.padH), int(s.padW)},
      {int(s.padH), int(s.padW)}, {int(s.strideH), int(s.strideW)}, {1, 1}, 1);
}

/// dx's stride in the epilogue's ((W, H, N), C, L) form.
template <class K> StrideAct actStride(const typename K::Problem &problem) {
  StrideAct stride{};
  cute::for_each(cute::make_seq<cute::rank<0>(StrideAct{})>{}, [&](auto i) {
    cute::get<0, i>(stride) = problem.stride_C[K::Problem::RankT - 2 - i];
  });
  return stride;
}

template <class K>
typename K::Conv::Arguments plainArguments(const DgradShape &s, const void *dy,
                                           const void *filter, void *dx) {
  auto problem = problemOf<K>(s);
  StrideAct stride = actStride<K>(problem);
  typename K::Conv::Arguments args{
      problem,
      {static_cast<const Act *>(dy), static_cast<const Act *>(filter)},
      {{}, nullptr, stride, static_cast<Act *>(dx), stride}};
  args.epilogue.thread.alpha = 1.f;
  args.epilogue.thread.beta = 0.f;
  return args;
}

template <class K>
typename K::Conv::Arguments bnSumsArguments(const DgradShape &s, const void *dy,
                                            const void *filter, void *g,
                                            const BnSumsEpilogue &bn) {
  auto problem = problemOf<K>(s);
  StrideAct stride = actStride<K>(problem);
  typename K::Conv::Arguments args{
      problem,
      {static_cast<const Act *>(dy), static_cast<const Act *>(filter)},
      {{}, nullptr, stride, static_cast<Act *>(g), stride}};
  auto &thread = args.epilogue.thread;
  // Node arguments in topological order (those without any are empty).
  get<1>(thread) = {static_cast<const Act *>(bn.reluResult), Act(0), stride};
  get<3>(thread) = {bn.sumG, 0.f, {}};
  get<4>(thread) = {static_cast<const Act *>(bn.x), Act(0), stride};
  get<5>(thread) = {bn.mean, 0.f, {}};
  get<6>(thread) = {bn.invStd, 0.f, {}};
  get<8>(thread) = {bn.sumGXhat, 0.f, {}};
  return args;
}

std::string describe(const DgradShape &s) {
  return "dgrad dx[" + std::to_string(s.n) + "," + std::to_string(s.h) + "," +
         std::to_string(s.w) + "," + std::to_string(s.c) + "] w[" + std::to_string(s.k) + "," +
         std::to_string(s.r) + "," + std::to_string(s.s) + "," + std::to_string(s.c) + "] s" +
         std::to_string(s.strideH) + "," + std::to_string(s.strideW) + " p" +
         std::to_string(s.padH) + "," + std::to_string(s.padW);
}

Status shapeRule(const DgradShape &s) {
  if (s.n <= 0 || s.h <= 0 || s.w <= 0 || s.c <= 0 || s.k <= 0 || s.r <= 0 || s.s <= 0)
    return Error(describe(s) + ": every extent must be positive");
  if (s.c % kAlignment != 0 || s.k % kAlignment != 0)
    return Error(describe(s) + ": CUTLASS's f16 dgrad needs channel counts that are multiples of " +
                 std::to_string(kAlignment));
  if (s.p() <= 0 || s.q() <= 0)
    return Error(describe(s) + ": the forward's output would be empty");
  return Status::success();
}

const char *statusText(cutlass::Status status) { return cutlass::cutlassGetStatusString(status); }

template <class K> Status canImplement(const DgradShape &s, const typename K::Conv::Arguments &a) {
  cutlass::Status status = K::Conv::can_implement(a);
  if (status != cutlass::Status::kSuccess)
    return Error(describe(s) + ": CUTLASS cannot run it (" + statusText(status) + ")");
  return Status::success();
}

template <class K>
Status runConv(const DgradShape &s, const typename K::Conv::Arguments &args, void *workspace,
               size_t workspaceBytes, cudaStream_t stream) {
  RN_RETURN_IF_ERROR(shapeRule(s));
  RN_RETURN_IF_ERROR(canImplement<K>(s, args));
  const size_t need = K::Conv::get_workspace_size(args);
  if (need > workspaceBytes)
    return Error(describe(s) + ": needs " + std::to_string(need) + " workspace bytes, given " +
                 std::to_string(workspaceBytes));
  typename K::Conv conv;
  cutlass::Status status = conv.initialize(args, need ? workspace : nullptr, stream);
  if (status != cutlass::Status::kSuccess)
    return Error(describe(s) + ": CUTLASS initialize failed (" + statusText(status) + ")");
  status = conv.run(stream);
  if (status != cutlass::Status::kSuccess)
    return Error(describe(s) + ": CUTLASS run failed (" + statusText(status) + ")");
  RN_CUDA_TRY_LAUNCH();
  return Status::success();
}

} // namespace

Status cutlassDgradSupports(const DgradShape &shape, bool withBnSums) {
  RN_RETURN_IF_ERROR(shapeRule(shape));
  return withBnSums
             ? canImplement<BnSumsDgrad>(shape, bnSumsArguments<BnSumsDgrad>(shape, nullptr, nullptr,
                                                                             nullptr, {}))
             : canImplement<PlainDgrad>(shape,
                                        plainArguments<PlainDgrad>(shape, nullptr, nullptr, nullptr));
}

size_t cutlassDgradWorkspaceBytes(const DgradShape &shape, bool withBnSums) {
  if (!shapeRule(shape).ok())
    return 0;
  return withBnSums ? BnSumsDgrad::Conv::get_workspace_size(
                          bnSumsArguments<BnSumsDgrad>(shape, nullptr, nullptr, nullptr, {}))
                    : PlainDgrad::Conv::get_workspace_size(
                          plainArguments<PlainDgrad>(shape, nullptr, nullptr, nullptr));
}

Status cutlassDgrad(const DgradShape &shape, const void *dy, const void *filter, void *dx,
                    void *workspace, size_t workspaceBytes, cudaStream_t stream) {
  return runConv<PlainDgrad>(shape, plainArguments<PlainDgrad>(shape, dy, filter, dx), workspace,
                             workspaceBytes, stream);
}

Status cutlassDgradBnSums(const DgradShape &shape, const void *dy, const void *filter, void *g,
                          const BnSumsEpilogue &bn, void *workspace, size_t workspaceBytes,
                          cudaStream_t stream) {
  if (!bn.reluResult || !bn.x || !bn.mean || !bn.invStd || !bn.sumG || !bn.sumGXhat)
    return Error(describe(shape) + ": the BN sums epilogue needs every one of its pointers");
  return runConv<BnSumsDgrad>(shape, bnSumsArguments<BnSumsDgrad>(shape, dy, filter, g, bn),
                              workspace, workspaceBytes, stream);
}

} // namespace rn::cuda
