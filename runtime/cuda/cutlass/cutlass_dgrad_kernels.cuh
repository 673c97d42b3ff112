//===- cutlass_dgrad_kernels.cuh - The dgrad kernels, by tile width -------===//
//
// The CUTLASS types of cutlass_dgrad.h's kernels, parametrized on the CTA
// tile's width in channels (N: 64 for 64-channel data gradients, where a
// 128-wide tile would leave half its columns idle, else 128). Each width
// is instantiated once, in cutlass_dgrad_n<width>.cu, so that the two
// heavy units compile side by side; only those two include this file.
//
// In CUTLASS's dgrad GEMM the rows M are dx's pixels and the columns N its
// channels, so a per-channel sum is a row-vector reduction over M
// (Sm90RowReduction). Each CTA stores its tile's sums as one row of
// partials ([rows of 128 pixels][channels]); the BN backward's next kernel
// adds them in double in a fixed order (no atomics), so a replayed step
// gives the same bits.
//
// The fused epilogue is a DAG of visitor nodes (Sm90TopologicalVisitor):
//
//   0 acc           the dgrad's accumulator (d relu_result)
//   1 reluResult    aux load, dx's layout
//   2 g             acc where reluResult > 0, else 0
//   3 sum(g)        row reduction (per-CTA partials), passes g through
//   4 x             aux load, dx's layout
//   5 mean, 6 invStd  row broadcasts
//   7 g * xhat      g * (x - mean) * invStd
//   8 sum(g * xhat) row reduction (per-CTA partials)
//   9 D = g         the output (f16), reading 3 and 8 so both are live
//
//===----------------------------------------------------------------------===//

#ifndef RN_RUNTIME_CUDA_CUTLASS_CUTLASS_DGRAD_KERNELS_CUH
#define RN_RUNTIME_CUDA_CUTLASS_CUTLASS_DGRAD_KERNELS_CUH

#include "runtime/cuda/cutlass/cutlass_dgrad_internal.h"

#include "runtime/cuda/check.h"

// CUTLASS's headers are not self-contained: the device adapter (and what
// it includes) must come before the collective builders.
// clang-format off
#include "cutlass/cutlass.h"
#include "cute/tensor.hpp"
#include "cutlass/conv/device/conv_universal_adapter.hpp"
#include "cutlass/conv/kernel/conv_universal.hpp"
#include "cutlass/conv/collective/collective_builder.hpp"
#include "cutlass/epilogue/collective/collective_builder.hpp"
#include "cutlass/epilogue/fusion/sm90_visitor_tma_warpspecialized.hpp"
// clang-format on

#include <string>

namespace rn::cuda::cutlass_dgrad {

namespace fusion = cutlass::epilogue::fusion;

using Act = cutlass::half_t;
constexpr auto kDgrad = cutlass::conv::Operator::kDgrad;
using ClusterShape = cute::Shape<cute::_1, cute::_1, cute::_1>;
using EpilogueSchedule = cutlass::epilogue::TmaWarpSpecialized;
using MainloopSchedule = cutlass::conv::KernelImplicitTmaWarpSpecializedSm90;
/// dx's stride for the output's TMA store: ((W, H, N) pixels, C, batch).
using StrideAct = cutlass::detail::TagToStrideC_t<cutlass::layout::TensorNHWC>;
/// reluResult's and x's stride for the epilogue's own loads, which index
/// the linearized problem (M = N * H * W pixels, one scalar): rows of C.
using StrideAux = cute::Stride<int64_t, cute::_1, cute::_0>;
constexpr auto kRound = cutlass::FloatRoundStyle::round_to_nearest;

/// acc where the ReLU's result is positive, else 0 (the ReLU's gradient).
template <class T> struct MaskByRelu;
template <class T, int N> struct MaskByRelu<cutlass::Array<T, N>> {
  CUTLASS_HOST_DEVICE cutlass::Array<T, N>
  operator()(cutlass::Array<T, N> const &gradient, cutlass::Array<T, N> const &reluResult) const {
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
  CUTLASS_HOST_DEVICE cutlass::Array<T, N> operator()(cutlass::Array<T, N> const &g,
                                                      cutlass::Array<T, N> const &x,
                                                      cutlass::Array<T, N> const &mean,
                                                      cutlass::Array<T, N> const &invStd) const {
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

/// The kernels of one CTA tile: 128 pixels by `TileN` channels by 64 of
/// the reduction.
template <int TileN> struct DgradKernels {
  using TileShape =
      cute::Shape<cute::Int<kTileRows>, cute::Int<TileN>, cute::Shape<cute::_64>>;

  /// Loads straight from global memory (no shared-memory stage, so no
  /// epilogue tile, smem layout or copy op to name): each element is read
  /// once, by the thread that uses it.
  using ActLoad = fusion::Sm90AuxLoad<0, void, Act, StrideAux, void, void, kAlignment>;
  using ChannelBroadcast = fusion::Sm90RowBroadcast<0, TileShape, float, float>;
  /// Not the final reduction: each CTA stores its tile's per-channel sums
  /// as one row of the partials (the sm90 conv kernel gives its epilogue
  /// no workspace for a last-CTA reduction, and atomics would make the
  /// sums' bits depend on the CTAs' order); bnBackwardFromSums adds the
  /// rows in double, in order.
  using ChannelSum =
      fusion::Sm90RowReduction<cutlass::plus, cutlass::plus, cutlass::plus, 0, TileShape, float,
                               float, kRound, cute::Stride<cute::_0, cute::_1, cute::_0>,
                               128 / cutlass::sizeof_bits_v<float>, /*EnableNullptr=*/true,
                               /*FinalReduction=*/false>;
  using BnSumsCallbacks = fusion::Sm90TopologicalVisitor<
      float,
      cute::tuple<cute::seq<>, cute::seq<>, cute::seq<0, 1>, cute::seq<2>, cute::seq<>, cute::seq<>,
                  cute::seq<>, cute::seq<2, 4, 5, 6>, cute::seq<7>, cute::seq<3, 8>>,
      fusion::Sm90AccFetch,                                       // 0 acc
      ActLoad,                                                    // 1 reluResult
      fusion::Sm90Compute<MaskByRelu, float, float, kRound>,      // 2 g
      ChannelSum,                                                 // 3 sum(g)
      ActLoad,                                                    // 4 x
      ChannelBroadcast,                                           // 5 mean
      ChannelBroadcast,                                           // 6 invStd
      fusion::Sm90Compute<TimesNormalized, float, float, kRound>, // 7 g * xhat
      ChannelSum,                                                 // 8 sum(g * xhat)
      fusion::Sm90Compute<FirstOf, Act, float, kRound>>;          // 9 D = g

  /// A dgrad kernel with epilogue fusion `Fusion` (CUTLASS's linear
  /// combination for the plain one).
  template <class Fusion> struct Kernel {
    using Epilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
        cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, TileShape, ClusterShape,
        cutlass::epilogue::collective::EpilogueTileAuto, float, float, void,
        cutlass::layout::TensorNHWC, kAlignment, Act, cutlass::layout::TensorNHWC, kAlignment,
        EpilogueSchedule, Fusion>::CollectiveOp;
    using Mainloop = typename cutlass::conv::collective::CollectiveBuilder<
        cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, kDgrad, Act,
        cutlass::layout::TensorNHWC, kAlignment, Act, cutlass::layout::TensorNHWC, kAlignment,
        float, TileShape, ClusterShape,
        cutlass::conv::collective::StageCountAutoCarveout<static_cast<int>(
            sizeof(typename Epilogue::SharedStorage))>,
        MainloopSchedule>::CollectiveOp;
    using Problem =
        cutlass::conv::ConvProblemShape<kDgrad, Mainloop::DispatchPolicy::NumSpatialDimensions>;
    using Conv = cutlass::conv::device::ConvUniversalAdapter<
        cutlass::conv::kernel::ConvUniversal<Problem, Mainloop, Epilogue>>;
  };
  using Plain = Kernel<fusion::LinearCombination<Act, float, void, float>>;
  using BnSums = Kernel<BnSumsCallbacks>;

  template <class K> static typename K::Problem problemOf(const DgradShape &s) {
    // CUTLASS's dgrad problem is described by the forward convolution:
    // activation [n, h, w, c], filter [k, r, s, c], output [n, p, q, k].
    return typename K::Problem(
        cutlass::conv::Mode::kCrossCorrelation, {int(s.n), int(s.h), int(s.w), int(s.c)},
        {int(s.k), int(s.r), int(s.s), int(s.c)}, {int(s.padH), int(s.padW)},
        {int(s.padH), int(s.padW)}, {int(s.strideH), int(s.strideW)}, {1, 1}, 1);
  }

  /// dx's stride in the epilogue's ((W, H, N), C, L) form.
  template <class K> static StrideAct actStride(const typename K::Problem &problem) {
    StrideAct stride{};
    cute::for_each(cute::make_seq<cute::rank<0>(StrideAct{})>{}, [&](auto i) {
      cute::get<0, i>(stride) = problem.stride_C[K::Problem::RankT - 2 - i];
    });
    return stride;
  }

  static typename Plain::Conv::Arguments plainArguments(const DgradShape &s, const void *dy,
                                                        const void *filter, void *dx) {
    auto problem = problemOf<Plain>(s);
    StrideAct stride = actStride<Plain>(problem);
    typename Plain::Conv::Arguments args{
        problem,
        {static_cast<const Act *>(dy), static_cast<const Act *>(filter)},
        {{}, nullptr, stride, static_cast<Act *>(dx), stride}};
    args.epilogue.thread.alpha = 1.f;
    args.epilogue.thread.beta = 0.f;
    return args;
  }

  static typename BnSums::Conv::Arguments bnSumsArguments(const DgradShape &s, const void *dy,
                                                          const void *filter, void *g,
                                                          const BnSumsEpilogue &bn) {
    auto problem = problemOf<BnSums>(s);
    StrideAct stride = actStride<BnSums>(problem);
    typename BnSums::Conv::Arguments args{
        problem,
        {static_cast<const Act *>(dy), static_cast<const Act *>(filter)},
        {{}, nullptr, stride, static_cast<Act *>(g), stride}};
    auto &thread = args.epilogue.thread;
    StrideAux rows{};
    cute::get<0>(rows) = s.c;
    // Node arguments in topological order (those without any are empty).
    cute::get<1>(thread) = {static_cast<const Act *>(bn.reluResult), Act(0), rows};
    cute::get<3>(thread) = {bn.partialG, 0.f, {}};
    cute::get<4>(thread) = {static_cast<const Act *>(bn.x), Act(0), rows};
    cute::get<5>(thread) = {bn.mean, 0.f, {}};
    cute::get<6>(thread) = {bn.invStd, 0.f, {}};
    cute::get<8>(thread) = {bn.partialGXhat, 0.f, {}};
    return args;
  }

  template <class K>
  static Status canImplement(const DgradShape &s, const typename K::Conv::Arguments &a) {
    cutlass::Status status = K::Conv::can_implement(a);
    if (status != cutlass::Status::kSuccess)
      return Error(describe(s) + ": CUTLASS cannot run it (" +
                   cutlass::cutlassGetStatusString(status) + ")");
    return Status::success();
  }

  template <class K>
  static Status run(const DgradShape &s, const typename K::Conv::Arguments &args, void *workspace,
                    size_t workspaceBytes, cudaStream_t stream) {
    RN_RETURN_IF_ERROR(canImplement<K>(s, args));
    const size_t need = K::Conv::get_workspace_size(args);
    if (need > workspaceBytes)
      return Error(describe(s) + ": needs " + std::to_string(need) + " workspace bytes, given " +
                   std::to_string(workspaceBytes));
    typename K::Conv conv;
    cutlass::Status status = conv.initialize(args, need ? workspace : nullptr, stream);
    if (status != cutlass::Status::kSuccess)
      return Error(describe(s) + ": CUTLASS initialize failed (" +
                   cutlass::cutlassGetStatusString(status) + ")");
    status = conv.run(stream);
    if (status != cutlass::Status::kSuccess)
      return Error(describe(s) + ": CUTLASS run failed (" +
                   cutlass::cutlassGetStatusString(status) + ")");
    RN_CUDA_TRY_LAUNCH();
    return Status::success();
  }

  static Status supports(const DgradShape &s, bool withBnSums) {
    return withBnSums ? canImplement<BnSums>(s, bnSumsArguments(s, nullptr, nullptr, nullptr, {}))
                      : canImplement<Plain>(s, plainArguments(s, nullptr, nullptr, nullptr));
  }

  static size_t workspaceBytes(const DgradShape &s, bool withBnSums) {
    return withBnSums
               ? BnSums::Conv::get_workspace_size(bnSumsArguments(s, nullptr, nullptr, nullptr, {}))
               : Plain::Conv::get_workspace_size(plainArguments(s, nullptr, nullptr, nullptr));
  }

  static Status plain(const DgradShape &s, const void *dy, const void *filter, void *dx,
                      void *workspace, size_t workspaceBytes, cudaStream_t stream) {
    return run<Plain>(s, plainArguments(s, dy, filter, dx), workspace, workspaceBytes, stream);
  }

  static Status bnSums(const DgradShape &s, const void *dy, const void *filter, void *g,
                       const BnSumsEpilogue &bn, void *workspace, size_t workspaceBytes,
                       cudaStream_t stream) {
    return run<BnSums>(s, bnSumsArguments(s, dy, filter, g, bn), workspace, workspaceBytes, stream);
  }
};

/// The instantiation of one width, as cutlass_dgrad_internal.h declares it.
#define RN_CUTLASS_DGRAD_INSTANTIATE(WIDTH)                                                        \
  template <> const TileKernels &tileKernels<WIDTH>() {                                            \
    static const TileKernels kernels{&DgradKernels<WIDTH>::supports,                               \
                                     &DgradKernels<WIDTH>::workspaceBytes,                         \
                                     &DgradKernels<WIDTH>::plain, &DgradKernels<WIDTH>::bnSums};   \
    return kernels;                                                                                \
  }

} // namespace rn::cuda::cutlass_dgrad

#endif // RN_RUNTIME_CUDA_CUTLASS_CUTLASS_DGRAD_KERNELS_CUH
