//===- conv.h - Convolutions as cuDNN frontend graphs -----------*- C++ -*-===//
//
// Every convolution of a program (forward, forward with the BN statistics
// of its output fused in, data gradient, filter gradient) runs as a cuDNN
// frontend graph, NHWC activations and OHWI filters, f32 accumulation. A
// graph is built and its plan chosen once, at load (prepare), and cached by
// its ConvCall; a step only executes cached plans (run): nothing is built,
// planned or allocated inside a step. The cuDNN frontend header is compiled
// into conv.cpp alone (g++, not nvcc: it takes minutes under nvcc).
//
// Plans: with Options::autotune, the candidate plans the heuristics list
// (the first Options::autotuneCandidates that build) are timed at load and
// the fastest kept (cuDNN's first heuristic plan can be several times
// slower: docs/benchmarks.md, "Method"); with Options::deterministic only
// deterministic plans are candidates. A plan must fit the workspace of the
// stream it runs on: prepare gets the bytes available and skips plans that
// need more. f32 convolutions run as IEEE f32 unless Options::allowTf32: no
// TF32 tensor cores, no Winograd or FFT transforms.
//
//===----------------------------------------------------------------------===//

#ifndef RN_RUNTIME_CUDA_CONV_H
#define RN_RUNTIME_CUDA_CONV_H

#include "runtime/core/status.h"
#include "runtime/cuda/device_tensor.h"
#include "runtime/cuda/stream_resources.h"

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace rn::cuda {

enum class ConvKind : uint8_t {
  forward,          ///< y = conv(x, w)
  forward_stats,    ///< y = conv(x, w); sum[c], sum_sq[c] of y over N, H, W (f32)
  backward_data,    ///< dx = conv_transpose(dy, w) (overwrites dx)
  backward_filter,  ///< dw = dwAcc + wgrad(x, dy); dwAcc may alias dw
  /// y = conv(relu(x * scale + bias), w), scale and bias per input channel
  /// in x's dtype: a BN apply + ReLU as the convolution's prologue, so the
  /// normalized activation is never written (cuDNN's runtime fusion of
  /// NVIDIA's MLPerf ResNet). Each prologue step's result is rounded to x's
  /// dtype (math in f32), as those engines take it. No op uses it: on its
  /// own it is slower than the apply pass plus the plain forward it would
  /// replace (Conv.ScaleBiasReluPrologueTimes; docs/benchmarks.md,
  /// "Convolution-level fusion experiments").
  forward_scale_bias_relu,
  /// dx = conv_transpose(dy, w) + residual: a residual junction's gradient
  /// sum as the data gradient's epilogue (`residual` has x's shape and
  /// dtype; it may alias dx): the input gradient of a backward op with an
  /// addend (rn-fold-gradient-adds). Conv.ResidualAddEpilogueTimes measures
  /// what it costs over the plain data gradient.
  backward_data_add,
  /// dw = dwAcc + wgrad(relu(x * scale + bias), dy); dwAcc may alias dw:
  /// the filter gradient of a convolution whose input is a BN apply + ReLU
  /// output, computed from the pre-normalization x with the same prologue
  /// as forward_scale_bias_relu (cuDNN's runtime fusion), so the backward
  /// does not need the activation either. Accumulates like backward_filter.
  /// The filter gradient of a cbr_backward with `input_prologue`
  /// (rn-fuse-bn-prologue); Conv.ScaleBiasReluWgradTimes measures what it
  /// costs over the plain filter gradient, which is why that pass stays
  /// off by default (docs/benchmarks.md).
  backward_filter_scale_bias_relu,
  /// y = conv(relu(x * scale + bias), w) with sum[c], sum_sq[c] of y from
  /// cuDNN's genstats (f32): NVIDIA's MLPerf ResNet pattern whole, the BN
  /// apply + ReLU as the prologue and the next BN's statistics as the
  /// epilogue, so neither the activation nor a statistics pass touches
  /// memory. cuDNN may give this graph a specialized engine that the
  /// prologue alone does not get, and on Hopper it does. No fallback:
  /// prepare fails with cuDNN's message when it has no plan. The
  /// convolution of a conv_bn_stats or cbr_forward with a prologue
  /// (rn-fuse-bn-prologue); Conv.NormConvTimes measures it against the
  /// apply pass, plain forward and Welford pass it replaces
  /// (docs/benchmarks.md, "Convolution-level fusion experiments").
  forward_scale_bias_relu_stats,
  /// The backward of a BN + ReLU whose output a convolution read, from
  /// that convolution's data gradient (NVIDIA's MLPerf dgrad + dReLU +
  /// dBN-weight pattern): g = dgrad(dy, w) * (bn(x) > 0) with bn(x) =
  /// ((x + mean) * invStd) * scale + bias recomputed from the BN's input x
  /// (x's shape; `mean` enters as cuDNN's pattern adds it), g written to
  /// dx, and cuDNN's dBN-weight reductions of g and x (ConvBuffers::dbn)
  /// from the convolution's epilogue instead of a pass over g and x. No
  /// op uses it: cuDNN 9.19 has no engine for it on Hopper (its one
  /// candidate needs SM80 or SM120; Conv.DgradDreluDbnTimes prints "no
  /// plan"), so it is kept for the GPUs that have one.
  backward_data_drelu_dbn_weight,
};

/// forward_stats and forward_scale_bias_relu_stats: the kinds that give
/// the per-channel sums of y (ConvBuffers::sum, sumSq).
inline bool givesOutputSums(ConvKind kind) {
  return kind == ConvKind::forward_stats || kind == ConvKind::forward_scale_bias_relu_stats;
}

/// backward_filter and backward_filter_scale_bias_relu: the kinds whose
/// result is dw = dwAcc + wgrad (dw of `gradType`).
inline bool isFilterGradient(ConvKind kind) {
  return kind == ConvKind::backward_filter || kind == ConvKind::backward_filter_scale_bias_relu;
}

struct ConvParams {
  std::array<int64_t, 2> strides{1, 1};
  std::array<int64_t, 2> padding{0, 0};
  std::array<int64_t, 2> dilation{1, 1};
  int64_t groups = 1;
};

/// One convolution call: its kind, parameters and the shapes and dtypes of
/// x [N,H,W,C], w [O,KH,KW,C/groups] and y [N,OH,OW,O] (for the backward
/// kinds: of x, w and dy; dw has w's shape with `gradType`).
struct ConvCall {
  ConvKind kind = ConvKind::forward;
  ConvParams params;
  std::array<int64_t, 4> x{}, w{}, y{};
  DType xType = DType::f32, wType = DType::f32, yType = DType::f32;
  DType gradType = DType::f32; ///< backward_filter*: dtype of dw and dwAcc
  /// backward_filter*: dw and dwAcc cover only w's first `gradChannels`
  /// input channels (a zero-padded filter's parameter); 0: all of them.
  int64_t gradChannels = 0;
};

/// The device buffers of one call (only those its kind uses).
struct ConvBuffers {
  const void *x = nullptr;     ///< forward*, backward_filter*, backward_data_drelu_dbn_weight
  const void *w = nullptr;     ///< forward*, backward_data*
  void *y = nullptr;           ///< forward*
  const void *dy = nullptr;    ///< backward_*
  void *dx = nullptr;          ///< backward_data*
  void *dw = nullptr;          ///< backward_filter*
  const void *dwAcc = nullptr; ///< backward_filter*
  float *sum = nullptr;        ///< givesOutputSums kinds, [O]
  float *sumSq = nullptr;      ///< givesOutputSums kinds, [O]
  /// the scale_bias_relu kinds: [C] of x's dtype
  const void *scale = nullptr;
  const void *bias = nullptr;
  const void *residual = nullptr; ///< backward_data_add, x's shape and dtype
  /// backward_data_drelu_dbn_weight: f32 [C] vectors of x's channels, the
  /// BN's statistics and affine parameters in, cuDNN's dBN-weight results
  /// out (dx = eqScaleDy * g + eqScaleX * x + eqBias is the BN's input
  /// gradient by cuDNN's definition; dscale, dbias its parameters').
  struct DbnWeight {
    const float *mean = nullptr, *invStd = nullptr, *scale = nullptr, *bias = nullptr;
    float *dscale = nullptr, *dbias = nullptr, *eqScaleDy = nullptr, *eqScaleX = nullptr,
          *eqBias = nullptr;
  } dbn;
};

class ConvRunner {
public:
  struct Options {
    bool autotune = true;
    /// With autotune, the first this many plans that build (in heuristic
    /// order) are timed; 0: every candidate. The first 16 almost always
    /// hold the fastest plan, for a fraction of the cold load of timing
    /// all (docs/benchmarks.md, "Convolution-level fusion experiments").
    int autotuneCandidates = 16;
    bool deterministic = false;
    bool allowTf32 = false;
    /// Plans that reduce in the data's precision (cuDNN's
    /// REDUCED_PRECISION_REDUCTION note) are candidates too; off, every
    /// reduction is f32.
    bool allowReducedPrecisionReduction = false;
    /// The image stem's convolutions (isImageStem: 4 input channels of
    /// 16-bit data, what rn-pad-conv-channels makes of an ImageNet stem)
    /// may take such plans whatever allowReducedPrecisionReduction says:
    /// cuDNN's image first-layer kernels (engine 63), 2.6x faster there
    /// than the 8-channel stem's plans, carry the note, and
    /// Conv.ImageStemReducedPrecisionError bounds their error against the
    /// CPU at the stem's shape.
    bool reducedPrecisionStem = true;
    /// Where autotuning results are kept across processes (by GPU, cuDNN
    /// version and call); empty: not kept.
    std::string cacheFile;
    /// Where cbr_forward's batch statistics come from (genstatsChosen):
    /// the plain forward and RN's statistics pass, or cuDNN's conv +
    /// genstats graph (the sums from the convolution's epilogue). Genstats
    /// pays on some shapes and costs on others (docs/benchmarks.md), so by
    /// default both are timed at load, per call, and the faster kept. Not
    /// never, forward_stats calls build the genstats graph first (columnSums
    /// is their fallback); their sums are right only because run() zeroes
    /// the buffers first (cuDNN accumulates into them). RN_CONV_GENSTATS=0
    /// or 1 sets never or always for every runner (an experiment's switch).
    enum class Genstats : uint8_t { never, faster, always };
    Genstats genstats = Genstats::faster;
  };

  static Result<std::unique_ptr<ConvRunner>> create(const Options &options);

  /// RN_CONV_AUTOTUNE=0: no plan is timed and no genstats choice measured,
  /// whatever Options::autotune says; each convolution takes its first
  /// candidate. For runs where timing is not the point and is expensive
  /// (compute-sanitizer executes every timed candidate under
  /// instrumentation).
  static bool autotuneForbiddenByEnvironment();
  ~ConvRunner();

  /// Builds the graph of `call` and picks its plan (autotuning on
  /// `stream`'s handle and workspace), unless already cached. Returns the
  /// workspace bytes the chosen plan needs (at most stream.workspaceBytes);
  /// an error names the call when cuDNN has no plan for it. A call prepared
  /// as an alternative that may not run (the genstats twin of a forward)
  /// passes countPlanTime = false: its plan time stays out of
  /// preparedPlanMs, the convolutions' floor.
  Result<size_t> prepare(const ConvCall &call, const StreamResources &stream,
                         bool countPlanTime = true);

  /// Device memory that autotuning may overwrite with its timing buffers
  /// instead of allocating them: memory whose contents nothing needs until
  /// the caller's first run (a program's activations before its first
  /// step), so that a cold prepare peaks no higher than a warm one. A call
  /// whose buffers do not fit allocates them as without it. Not owned;
  /// (nullptr, 0) ends it.
  void setAutotuneScratch(void *base, size_t bytes);
  /// Device bytes autotuning has allocated for timing buffers so far (0
  /// while every timed call fitted in the scratch).
  size_t autotuneAllocatedBytes() const;

  /// Runs `call` on `stream`; it must have been prepared.
  Status run(const ConvCall &call, const ConvBuffers &buffers, const StreamResources &stream);

  /// Graphs built with genstats fused (forward_stats unless
  /// Genstats::never, forward_scale_bias_relu_stats).
  size_t genstatsGraphs() const;
  /// Whether forward_stats calls try the genstats graph (Options::genstats
  /// or RN_CONV_GENSTATS not never), and whether `call`, prepared on
  /// `stream`, got one (false when cuDNN had none and its sums come from
  /// columnSums; always true for a prepared forward_scale_bias_relu_stats).
  bool triesGenstats() const;
  bool statsFused(const ConvCall &call, const StreamResources &stream) const;

  /// A forward's statistics choice (cbr_forward, conv_bn_stats): whether
  /// `statsCall` (forward_stats, prepared on `stream` with a fused graph)
  /// replaces `plainCall` (its forward, prepared) followed by a statistics
  /// pass. Genstats::always: yes; never: no; faster: yes when the genstats
  /// plan's time plus `sumsMs` (turning its sums into statistics) is under
  /// the forward's plus `passMs` (the statistics pass) by at least 20% and
  /// 20 us (what its extra graph nodes cost in a step: conv.cpp), both
  /// measured by `time` only when the choice is not remembered; no when a plan time is
  /// unknown (autotuning off). Remembered per call in this process and in
  /// the cache file beside the plans, so that a warm load takes the same
  /// path (the two paths' statistics differ in the last bits).
  struct StatsPassTimes {
    double passMs = 0;
    double sumsMs = 0;
  };
  Result<bool> chooseGenstats(const ConvCall &statsCall, const ConvCall &plainCall,
                              const StreamResources &stream,
                              const std::function<Result<StatsPassTimes>()> &time);
  /// Whether chooseGenstats chose genstats for `statsCall` prepared on
  /// `stream` (then its fused graph is there to run).
  bool genstatsChosen(const ConvCall &statsCall, const StreamResources &stream) const;
  /// Statistics choices made so far: with genstats, of all.
  size_t genstatsChoices() const;
  size_t statsChoices() const;

  /// Graphs built and plans timed so far, and the seconds spent (for the
  /// load summary).
  size_t graphs() const;
  double prepareSeconds() const;
  /// The chosen plans' autotuned times (ms) summed over every prepare call
  /// so far, cached calls included, and the number of calls without a
  /// measured time (autotuning off): what a caller differences around its
  /// own prepares to get the cuDNN time of its convolutions.
  double preparedPlanMs() const;
  size_t untimedPrepares() const;
  /// Candidate plans executed for timing so far (over every prepare).
  size_t plansTimed() const;

  ConvRunner(const ConvRunner &) = delete;
  ConvRunner &operator=(const ConvRunner &) = delete;

private:
  ConvRunner() = default;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Whether `call` is an image stem's convolution in the sense of
/// Options::reducedPrecisionStem: 4 input channels, one group, f16 or bf16
/// data, a forward (with or without statistics) or a filter gradient.
bool isImageStem(const ConvCall &call);

/// "forward x[256,32,32,64] w[64,3,3,64] y[...] s1,1 p1,1 d1,1 g1 f16".
std::string describe(const ConvCall &call);

} // namespace rn::cuda

#endif // RN_RUNTIME_CUDA_CONV_H
