//===- conv.cpp - Convolutions as cuDNN frontend graphs -------------------===//
//
// One cached entry per (ConvCall, cuDNN handle): the frontend graph (its
// tensors carry fixed UIDs, so the variant pack is a small array filled
// from ConvBuffers), the chosen plan index, and the workspace layout. The
// frontend graph is bound to the handle it was built with, so a call
// prepared for two streams gets two graphs; the plan chosen for the first
// is reused for the second without timing again.
//
// Kinds beyond a plain graph:
// - backward_filter: cuDNN's wgrad overwrites its output, and a pointwise
//   add after wgrad is not a fusion cuDNN offers, so wgrad writes into the
//   front of the workspace (f32 when cuDNN can, else the input dtype) and
//   addFirstColumns (conv_kernels.cu) forms dw = dwAcc + wgrad (of the
//   first gradChannels input channels for a zero-padded filter).
//   backward_filter_scale_bias_relu is the same with the prologue below on
//   wgrad's x.
// - forward_scale_bias_relu, backward_filter_scale_bias_relu: the BN apply
//   + ReLU prologue's virtual tensors are in x's dtype, not the graph's f32
//   intermediates: with f32 ones the H200 (cuDNN 9.19) had no engine for
//   the prologue graph (runtime fusion takes no two-input pointwise on f32
//   data and no conv input of another type than its io type).
// - forward_stats: the conv + genstats graph (unless Options::genstats is
//   never), else the plain fprop graph followed by the deterministic
//   columnSums kernel over the output. cuDNN accumulates genstats' sums
//   into their buffers (NVIDIA's genstats test zero-fills them; without
//   that, sums of squares came out up to 2x off), so run() zeroes them
//   before every execution of a fused graph. In the step (cbr_forward,
//   RN_CONV_GENSTATS=1) genstats paid on ResNet-50 (-1.7%) and ResNet-18
//   bs1024 (-0.7%) and cost on ResNet-18 bs256 (+1.6%) and VGG-11 bs256
//   (+5.0%): hence chooseGenstats, per call, by the measured times.
// - backward_data_drelu_dbn_weight: dgrad, the dReLU of a BN output
//   recomputed from the BN's input, and cuDNN's dbn_weight node, in the
//   topology of NVIDIA's sample of the pattern (the mean is added).
// - forward_scale_bias_relu_stats: the prologue above and genstats in one
//   graph (NVIDIA's MLPerf pattern), its sums zeroed before every run like
//   a fused forward_stats'; there is no columnSums fallback.
//
// Plan choice: the candidates of heuristics modes A and FALLBACK that pass
// the filters (workspace, determinism, no TF32 for f32 unless allowed,
// never reduced-precision reductions) are built in heuristic order;
// without autotune the first built one is kept, with autotune the first
// Options::autotuneCandidates built (0: all) are timed with CUDA events on
// the stream and the fastest kept. The cache
// file maps "GPU | cuDNN version | options | call" to the heuristic index
// and the plan's name, and is trusted only when the name still matches.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/conv.h"

#include "runtime/core/align.h"
#include "runtime/cuda/check.h"
#include "runtime/cuda/conv_kernels.h"

#include <cudnn_frontend.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <optional>
#include <unordered_map>
#include <vector>

namespace rn::cuda {

namespace fe = cudnn_frontend;

namespace {

/// Whether environment variable `name` is set to something other than ""
/// or "0" (the diagnostics' on switch).
bool envFlagOn(const char *name) {
  const char *v = std::getenv(name);
  return v && *v && std::string(v) != "0";
}

/// RN_CONV_LOG=1: every convolution's candidate plans, their times and the
/// choice on stderr (a diagnostic; rn-run --verbose is not needed for it).
bool planLog() {
  static const bool on = envFlagOn("RN_CONV_LOG");
  return on;
}

/// The cuDNN heuristics that propose candidates: A and the fallback list,
/// or RN_CONV_HEURISTICS (a comma list of A, B, FALLBACK) to widen the
/// search when looking at a slow plan.
std::vector<fe::HeurMode_t> heuristicModes() {
  const char *v = std::getenv("RN_CONV_HEURISTICS");
  if (!v || !*v)
    return {fe::HeurMode_t::A, fe::HeurMode_t::FALLBACK};
  std::vector<fe::HeurMode_t> modes;
  std::string s(v);
  for (size_t p = 0; p <= s.size();) {
    size_t q = s.find(',', p);
    std::string m = s.substr(p, q == std::string::npos ? std::string::npos : q - p);
    if (m == "A")
      modes.push_back(fe::HeurMode_t::A);
    else if (m == "B")
      modes.push_back(fe::HeurMode_t::B);
    else if (m == "FALLBACK")
      modes.push_back(fe::HeurMode_t::FALLBACK);
    if (q == std::string::npos)
      break;
    p = q + 1;
  }
  return modes.empty() ? std::vector<fe::HeurMode_t>{fe::HeurMode_t::A} : modes;
}

/// RN_CONV_ENGINE_SEARCH=1: besides the heuristics' candidates, every
/// engine of the operation graph with its default knobs (cuDNN's global
/// engine index 0 .. ENGINE_GLOBAL_COUNT-1), to find an engine the
/// heuristics do not propose for a shape. A diagnostic: it times every
/// engine that builds, some of them 100x slower than the best. The
/// numerical-note filters still apply (ResNet-50's 4-channel stem engine,
/// 63, is barred by REDUCED_PRECISION_REDUCTION, not unproposed).
bool engineSearch() {
  static const bool on = envFlagOn("RN_CONV_ENGINE_SEARCH");
  return on;
}

/// RN_CONV_ENGINES (a comma list of substrings): only plans whose cuDNN
/// engine name contains one of them are candidates. A diagnostic like
/// RN_CONV_HEURISTICS: pins a family of engines when comparing plans, or,
/// naming none that exists, makes every convolution a configuration cuDNN
/// cannot run (the load's error path, scripts/run-gpu-tests.sh "errors").
const std::vector<std::string> &allowedEngines() {
  static const std::vector<std::string> allowed = [] {
    std::vector<std::string> list;
    const char *v = std::getenv("RN_CONV_ENGINES");
    std::string s = v ? v : "";
    for (size_t p = 0; !s.empty() && p <= s.size();) {
      size_t q = s.find(',', p);
      std::string part = s.substr(p, q == std::string::npos ? std::string::npos : q - p);
      if (!part.empty())
        list.push_back(part);
      if (q == std::string::npos)
        break;
      p = q + 1;
    }
    return list;
  }();
  return allowed;
}

bool engineAllowed(const std::string &name) {
  const std::vector<std::string> &allowed = allowedEngines();
  if (allowed.empty())
    return true;
  for (const std::string &part : allowed)
    if (name.find(part) != std::string::npos)
      return true;
  return false;
}

/// Tensor UIDs of the graphs; also the slots of the pointer array of run.
enum Uid : int64_t {
  uidX = 1,
  uidW,
  uidY,
  uidDy,
  uidDx,
  uidDw,
  uidSum,
  uidSumSq,
  uidScale,
  uidBias,
  uidResidual,
  uidDbnMean,
  uidDbnInvStd,
  uidDbnScale,
  uidDbnBias,
  uidDbnDscale,
  uidDbnDbias,
  uidDbnEqScaleDy,
  uidDbnEqScaleX,
  uidDbnEqBias,
  uidCount
};

const char *kindName(ConvKind kind) {
  switch (kind) {
  case ConvKind::forward:
    return "forward";
  case ConvKind::forward_stats:
    return "forward_stats";
  case ConvKind::backward_data:
    return "backward_data";
  case ConvKind::backward_filter:
    return "backward_filter";
  case ConvKind::forward_scale_bias_relu:
    return "forward_scale_bias_relu";
  case ConvKind::backward_data_add:
    return "backward_data_add";
  case ConvKind::backward_filter_scale_bias_relu:
    return "backward_filter_scale_bias_relu";
  case ConvKind::forward_scale_bias_relu_stats:
    return "forward_scale_bias_relu_stats";
  case ConvKind::backward_data_drelu_dbn_weight:
    return "backward_data_drelu_dbn_weight";
  }
  return "?";
}

/// The Status of a frontend call: the frontend's message and the call;
/// counted for fault injection like every checked library call.
Status feCheck(fe::error_t result, const char *what, const ConvCall &call) {
  bool injected = injectedFailure();
  if (!injected && result.is_good())
    return Status::success();
  return Error(std::string("cuDNN frontend ") + what + " failed for conv " + describe(call) + ": " +
               (injected ? std::string("injected failure (RN_CUDA_FAIL_CALL)")
                         : result.get_message()));
}

#define RN_FE_TRY(expr, what, call) RN_RETURN_IF_ERROR(feCheck((expr), what, call))

fe::DataType_t feType(DType type) {
  switch (type) {
  case DType::f16:
    return fe::DataType_t::HALF;
  case DType::bf16:
    return fe::DataType_t::BFLOAT16;
  case DType::i32:
    return fe::DataType_t::INT32;
  case DType::i1:
    return fe::DataType_t::BYTE_BOOLEAN;
  default:
    return fe::DataType_t::FLOAT;
  }
}

/// cuDNN's dims [N, C, H, W] with NHWC strides of an [N, H, W, C] tensor
/// (the same for an OHWI filter: [K, C, R, S] with KRSC strides).
std::vector<int64_t> dimsOf(const std::array<int64_t, 4> &nhwc) {
  return {nhwc[0], nhwc[3], nhwc[1], nhwc[2]};
}
std::vector<int64_t> stridesOf(const std::array<int64_t, 4> &nhwc) {
  return {nhwc[1] * nhwc[2] * nhwc[3], 1, nhwc[2] * nhwc[3], nhwc[3]};
}
int64_t numelOf(const std::array<int64_t, 4> &s) { return s[0] * s[1] * s[2] * s[3]; }

/// RN_CONV_GENSTATS=0 or 1: Genstats::never or always for every runner,
/// overriding Options::genstats (an experiment's switch); else none.
std::optional<ConvRunner::Options::Genstats> genstatsOverride() {
  static const std::optional<ConvRunner::Options::Genstats> policy =
      []() -> std::optional<ConvRunner::Options::Genstats> {
    const char *v = std::getenv("RN_CONV_GENSTATS");
    if (v && std::string(v) == "1")
      return ConvRunner::Options::Genstats::always;
    if (v && std::string(v) == "0")
      return ConvRunner::Options::Genstats::never;
    return std::nullopt;
  }();
  return policy;
}

/// chooseGenstats keeps conv + genstats only where, timed alone, it saves
/// at least this share of the plain path (forward and statistics pass)
/// and this many milliseconds. Timed alone, genstats was 8-21% faster on
/// VGG-11's CIFAR shapes at batch 256 (6-16 us a call), yet the step that
/// took it there ran 1.7% slower (run E2, H100): its extra graph nodes
/// (the sums' zeroing, cuDNN's workspace set-up) and a longer convolution
/// on the critical path cost what timing a call alone does not see. The
/// bottleneck shapes of ResNet-50 save 21-44% and 23-150 us.
constexpr double kGenstatsMinSaving = 0.2;
constexpr double kGenstatsMinSavingMs = 0.02;

/// The key of a statistics choice in chooseGenstats' map and the cache
/// file: the statistics call's, with the margin it was chosen under (a
/// cache written under another margin is not taken for this one).
std::string statsChoiceSuffix() {
  char text[64];
  std::snprintf(text, sizeof text, " | statistics, margin %g and %g ms", kGenstatsMinSaving,
                kGenstatsMinSavingMs);
  return text;
}

struct CallKey {
  ConvCall call;
  cudnnHandle_t handle;
};
bool sameCall(const ConvCall &a, const ConvCall &b) {
  return a.kind == b.kind && a.params.strides == b.params.strides &&
         a.params.padding == b.params.padding && a.params.dilation == b.params.dilation &&
         a.params.groups == b.params.groups && a.x == b.x && a.w == b.w && a.y == b.y &&
         a.xType == b.xType && a.wType == b.wType && a.yType == b.yType &&
         (!isFilterGradient(a.kind) || a.gradType == b.gradType);
}
struct CallKeyEq {
  bool operator()(const CallKey &a, const CallKey &b) const {
    return a.handle == b.handle && sameCall(a.call, b.call);
  }
};
struct CallKeyHash {
  size_t operator()(const CallKey &k) const {
    uint64_t h = 1469598103934665603ull;
    auto mix = [&h](uint64_t v) { h = (h ^ v) * 1099511628211ull; };
    const ConvCall &c = k.call;
    mix(uint64_t(c.kind));
    for (int i = 0; i < 2; ++i) {
      mix(uint64_t(c.params.strides[i]));
      mix(uint64_t(c.params.padding[i]));
      mix(uint64_t(c.params.dilation[i]));
    }
    mix(uint64_t(c.params.groups));
    for (int i = 0; i < 4; ++i) {
      mix(uint64_t(c.x[i]));
      mix(uint64_t(c.w[i]));
      mix(uint64_t(c.y[i]));
    }
    mix(uint64_t(c.xType) | uint64_t(c.wType) << 8 | uint64_t(c.yType) << 16 |
        (isFilterGradient(c.kind) ? uint64_t(c.gradType) << 24 : 0));
    mix(uint64_t(reinterpret_cast<uintptr_t>(k.handle)));
    return size_t(h);
  }
};

/// A prepared call.
struct Entry {
  std::shared_ptr<fe::graph::Graph> graph;
  int64_t plan = -1;
  /// For each user UID of the variant pack, in the frontend's order, the
  /// slot of the pointer array (its Uid).
  std::vector<int64_t> packUids;
  size_t cudnnWorkspace = 0;
  /// backward_filter*: bytes of the wgrad result at the workspace's front
  /// (cuDNN's workspace follows it); 0 otherwise.
  size_t wgradBytes = 0;
  DType wgradType = DType::f32;
  /// forward_stats without genstats: columnSums runs after the fprop.
  bool statsKernel = false;
  /// forward_stats with genstats that chooseGenstats chose for its forward
  /// (read per launch, so that no key string is built there).
  bool genstatsChosen = false;
  size_t totalWorkspace = 0;
  /// The chosen plan's time when autotuning measured (or cached) it; < 0
  /// when unknown.
  float planMs = -1;
};

} // namespace

bool isImageStem(const ConvCall &call) {
  const bool kind = call.kind == ConvKind::forward || call.kind == ConvKind::forward_stats ||
                    call.kind == ConvKind::backward_filter;
  const bool sixteenBit = call.xType == DType::f16 || call.xType == DType::bf16;
  return kind && sixteenBit && call.x[3] == 4 && call.params.groups == 1;
}

std::string describe(const ConvCall &call) {
  auto shape = [](const std::array<int64_t, 4> &s) {
    return "[" + std::to_string(s[0]) + "," + std::to_string(s[1]) + "," + std::to_string(s[2]) +
           "," + std::to_string(s[3]) + "]";
  };
  bool backward = call.kind == ConvKind::backward_data ||
                  call.kind == ConvKind::backward_data_add ||
                  call.kind == ConvKind::backward_data_drelu_dbn_weight ||
                  isFilterGradient(call.kind);
  const ConvParams &p = call.params;
  std::string s = std::string(kindName(call.kind)) + " x" + shape(call.x) + " w" + shape(call.w) +
                  (backward ? " dy" : " y") + shape(call.y) + " s" + std::to_string(p.strides[0]) +
                  "," + std::to_string(p.strides[1]) + " p" + std::to_string(p.padding[0]) + "," +
                  std::to_string(p.padding[1]) + " d" + std::to_string(p.dilation[0]) + "," +
                  std::to_string(p.dilation[1]) + " g" + std::to_string(p.groups) + " " +
                  std::string(dtypeName(call.xType));
  if (call.wType != call.xType || call.yType != call.xType)
    s += " w:" + std::string(dtypeName(call.wType)) + " " + (backward ? "dy:" : "y:") +
         std::string(dtypeName(call.yType));
  if (isFilterGradient(call.kind))
    s += " dw:" + std::string(dtypeName(call.gradType));
  return s;
}

struct ConvRunner::Impl {
  Options options;
  std::unordered_map<CallKey, Entry, CallKeyHash, CallKeyEq> entries;
  /// A plan chosen before: its index among the filtered candidates, its
  /// engine name (checked: the index must name the same engine) and time.
  struct Remembered {
    int64_t plan = -1;
    std::string name;
    float ms = -1;
  };
  /// Plans chosen in this process, by planKey (reused for other handles).
  std::unordered_map<std::string, Remembered> chosen;
  /// The key of an entry's plan choice in `chosen` and the cache file.
  std::string planKey(const ConvCall &call, const Entry &entry) const {
    return cacheKey(call) + (entry.statsKernel ? " unfused" : "") +
           (isFilterGradient(call.kind) ? " wgrad:" + std::string(dtypeName(entry.wgradType))
                                        : "");
  }
  /// The plan chosen for `key` in this process or in the cache file.
  std::optional<Remembered> remembered(const std::string &key) const {
    if (auto it = chosen.find(key); it != chosen.end())
      return it->second;
    if (auto it = cache.find(key); it != cache.end() && it->is_object())
      return Remembered{it->value("plan", int64_t(-1)), it->value("name", std::string()),
                        it->value("ms", -1.0f)};
    return std::nullopt;
  }
  nlohmann::json cache = nlohmann::json::object(); ///< the cache file's contents
  std::string device;                               ///< "NVIDIA H200 | cuDNN 91900"
  size_t graphCount = 0;
  size_t genstatsGraphCount = 0;
  size_t timedPlanCount = 0;
  /// setAutotuneScratch's memory, and what autotuning allocated instead.
  char *autotuneScratch = nullptr;
  size_t autotuneScratchBytes = 0;
  size_t autotuneAllocated = 0;
  double seconds = 0;
  /// Sum of the chosen plans' times over every prepare call, and the calls
  /// whose time is unknown (autotuning off).
  double plannedMs = 0;
  size_t untimedCalls = 0;
  void notePlanMs(const Entry &entry) {
    if (entry.planMs >= 0)
      plannedMs += entry.planMs;
    else
      ++untimedCalls;
  }

  /// Options::genstats unless RN_CONV_GENSTATS overrides it.
  Options::Genstats genstatsPolicy() const {
    return genstatsOverride().value_or(options.genstats);
  }
  /// Whether forward_stats calls try conv + genstats.
  bool triesGenstats() const { return genstatsPolicy() != Options::Genstats::never; }
  /// chooseGenstats' choices, by the statistics call's cache key (one per
  /// shape, whatever the handles it is prepared on).
  std::unordered_map<std::string, bool> statsChoices;

  /// Whether `call`'s candidates include reduced-precision reductions.
  bool allowsReducedPrecision(const ConvCall &call) const {
    return options.allowReducedPrecisionReduction ||
           (options.reducedPrecisionStem && isImageStem(call));
  }

  std::string cacheKey(const ConvCall &call) const {
    return device + " | " + (options.deterministic ? "det" : "any") +
           (options.allowTf32 ? " tf32" : " ieee") +
           (allowsReducedPrecision(call) ? " rpr" : "") +
           (call.kind == ConvKind::forward_stats && triesGenstats() ? " genstats" : "") +
           " | " + describe(call);
  }

  Result<Entry> build(const ConvCall &call, const StreamResources &stream, bool fuseStats,
                      DType wgradType);
  Result<int64_t> choosePlan(const ConvCall &call, Entry &entry, const StreamResources &stream,
                             const std::vector<int64_t> &candidates);
  Status execute(const Entry &entry, void *const *slots, const StreamResources &stream,
                 int64_t plan) const;
  Status storeCache();
};

/// Builds the graph of `call` and every plan that passes the filters;
/// entry.plan is left unset. An error when no plan builds.
Result<Entry> ConvRunner::Impl::build(const ConvCall &call, const StreamResources &stream,
                                      bool fuseStats, DType wgradType) {
  Entry entry;
  auto graph = std::make_shared<fe::graph::Graph>();
  graph->set_io_data_type(feType(call.xType))
      .set_intermediate_data_type(fe::DataType_t::FLOAT)
      .set_compute_data_type(fe::DataType_t::FLOAT);

  const ConvParams &p = call.params;
  std::vector<int64_t> padding{p.padding[0], p.padding[1]}, strides{p.strides[0], p.strides[1]},
      dilation{p.dilation[0], p.dilation[1]};
  auto tensor = [&](const char *name, Uid uid, const std::array<int64_t, 4> &shape, DType type) {
    return graph->tensor(fe::graph::Tensor_attributes()
                             .set_name(name)
                             .set_uid(uid)
                             .set_dim(dimsOf(shape))
                             .set_stride(stridesOf(shape))
                             .set_data_type(feType(type)));
  };
  auto output = [&](std::shared_ptr<fe::graph::Tensor_attributes> t, Uid uid,
                    const std::array<int64_t, 4> &shape, DType type) {
    t->set_output(true)
        .set_uid(uid)
        .set_dim(dimsOf(shape))
        .set_stride(stridesOf(shape))
        .set_data_type(feType(type));
  };

  // The convolution nodes every kind builds on (f32 math).
  auto fprop = [&](std::shared_ptr<fe::graph::Tensor_attributes> x) {
    auto w = tensor("w", uidW, call.w, call.wType);
    return graph->conv_fprop(x, w,
                             fe::graph::Conv_fprop_attributes()
                                 .set_name("fprop")
                                 .set_padding(padding)
                                 .set_stride(strides)
                                 .set_dilation(dilation)
                                 .set_compute_data_type(fe::DataType_t::FLOAT));
  };
  auto dgrad = [&] {
    auto dy = tensor("dy", uidDy, call.y, call.yType);
    auto w = tensor("w", uidW, call.w, call.wType);
    return graph->conv_dgrad(dy, w,
                             fe::graph::Conv_dgrad_attributes()
                                 .set_name("dgrad")
                                 .set_padding(padding)
                                 .set_stride(strides)
                                 .set_dilation(dilation)
                                 .set_compute_data_type(fe::DataType_t::FLOAT));
  };
  auto pointwise = [&](const char *name, fe::PointwiseMode_t mode) {
    return fe::graph::Pointwise_attributes().set_name(name).set_mode(mode).set_compute_data_type(
        fe::DataType_t::FLOAT);
  };
  // relu(x * scale + bias) per input channel, each step's result in x's
  // dtype (f32 math): see the file comment for why not f32.
  auto scaleBiasRelu = [&] {
    auto x = tensor("x", uidX, call.x, call.xType);
    std::array<int64_t, 4> perChannel{1, 1, 1, call.x[3]};
    auto scale = tensor("scale", uidScale, perChannel, call.xType);
    auto bias = tensor("bias", uidBias, perChannel, call.xType);
    auto scaled = graph->pointwise(x, scale, pointwise("scale", fe::PointwiseMode_t::MUL));
    scaled->set_data_type(feType(call.xType));
    auto shifted = graph->pointwise(scaled, bias, pointwise("bias", fe::PointwiseMode_t::ADD));
    shifted->set_data_type(feType(call.xType));
    auto activated = graph->pointwise(shifted, pointwise("relu", fe::PointwiseMode_t::RELU_FWD));
    activated->set_data_type(feType(call.xType));
    return activated;
  };
  // wgrad(x, dy) into the workspace's front, in wgradType.
  auto wgrad = [&](std::shared_ptr<fe::graph::Tensor_attributes> x) {
    auto dy = tensor("dy", uidDy, call.y, call.yType);
    auto dw = graph->conv_wgrad(dy, x,
                                fe::graph::Conv_wgrad_attributes()
                                    .set_name("wgrad")
                                    .set_padding(padding)
                                    .set_stride(strides)
                                    .set_dilation(dilation)
                                    .set_compute_data_type(fe::DataType_t::FLOAT));
    output(dw, uidDw, call.w, wgradType);
    entry.wgradType = wgradType;
    entry.wgradBytes = alignUp(size_t(numelOf(call.w)) * elementSize(wgradType));
  };

  // sum[c] and sum_sq[c] of y from genstats (f32).
  auto genstats = [&](std::shared_ptr<fe::graph::Tensor_attributes> y) {
    auto [sum, sumSq] = graph->genstats(
        y, fe::graph::Genstats_attributes().set_name("stats").set_compute_data_type(
               fe::DataType_t::FLOAT));
    std::array<int64_t, 4> perChannel{1, 1, 1, call.y[3]};
    output(sum, uidSum, perChannel, DType::f32);
    output(sumSq, uidSumSq, perChannel, DType::f32);
  };

  switch (call.kind) {
  case ConvKind::forward:
  case ConvKind::forward_stats: {
    auto y = fprop(tensor("x", uidX, call.x, call.xType));
    output(y, uidY, call.y, call.yType);
    if (call.kind == ConvKind::forward_stats && fuseStats)
      genstats(y);
    break;
  }
  case ConvKind::forward_scale_bias_relu:
  case ConvKind::forward_scale_bias_relu_stats: {
    auto y = fprop(scaleBiasRelu());
    output(y, uidY, call.y, call.yType);
    if (call.kind == ConvKind::forward_scale_bias_relu_stats)
      genstats(y);
    break;
  }
  case ConvKind::backward_data:
    output(dgrad(), uidDx, call.x, call.xType);
    break;
  case ConvKind::backward_data_add: {
    auto dx = dgrad();
    dx->set_dim(dimsOf(call.x)).set_stride(stridesOf(call.x));
    auto residual = tensor("residual", uidResidual, call.x, call.xType);
    output(graph->pointwise(dx, residual, pointwise("residual_add", fe::PointwiseMode_t::ADD)),
           uidDx, call.x, call.xType);
    break;
  }
  case ConvKind::backward_data_drelu_dbn_weight: {
    auto g = dgrad();
    g->set_dim(dimsOf(call.x)).set_stride(stridesOf(call.x));
    auto x = tensor("x", uidX, call.x, call.xType);
    std::array<int64_t, 4> perChannel{1, 1, 1, call.x[3]};
    auto vector = [&](const char *name, Uid uid) {
      return tensor(name, uid, perChannel, DType::f32);
    };
    auto mean = vector("mean", uidDbnMean), invStd = vector("inv_std", uidDbnInvStd),
         scale = vector("scale", uidDbnScale);
    // The BN's output recomputed from x for the ReLU mask, in the form of
    // cuDNN's pattern (the engines match its shape).
    auto centered = graph->pointwise(x, mean, pointwise("center", fe::PointwiseMode_t::ADD));
    auto normalized =
        graph->pointwise(centered, invStd, pointwise("normalize", fe::PointwiseMode_t::MUL));
    auto scaled = graph->pointwise(normalized, scale, pointwise("scale", fe::PointwiseMode_t::MUL));
    auto shifted = graph->pointwise(scaled, vector("bias", uidDbnBias),
                                    pointwise("bias", fe::PointwiseMode_t::ADD));
    auto masked = graph->pointwise(g, shifted, pointwise("drelu", fe::PointwiseMode_t::RELU_BWD));
    output(masked, uidDx, call.x, call.xType);
    auto [dscale, dbias, eqScaleDy, eqScaleX, eqBias] =
        graph->dbn_weight(masked, x, mean, invStd, scale,
                          fe::graph::DBN_weight_attributes().set_name("dbn_weight"));
    output(dscale, uidDbnDscale, perChannel, DType::f32);
    output(dbias, uidDbnDbias, perChannel, DType::f32);
    output(eqScaleDy, uidDbnEqScaleDy, perChannel, DType::f32);
    output(eqScaleX, uidDbnEqScaleX, perChannel, DType::f32);
    output(eqBias, uidDbnEqBias, perChannel, DType::f32);
    break;
  }
  case ConvKind::backward_filter:
    wgrad(tensor("x", uidX, call.x, call.xType));
    break;
  case ConvKind::backward_filter_scale_bias_relu:
    wgrad(scaleBiasRelu());
    break;
  }
  entry.statsKernel = call.kind == ConvKind::forward_stats && !fuseStats;

  size_t reserved = entry.wgradBytes;
  if (stream.workspaceBytes < reserved)
    return Error("conv " + describe(call) + ": the wgrad result needs " + std::to_string(reserved) +
                 " bytes of workspace, stream " + std::string(stream.name) + " has " +
                 std::to_string(stream.workspaceBytes));

  RN_FE_TRY(graph->validate(), "validate", call);
  RN_FE_TRY(graph->build_operation_graph(stream.cudnn), "build_operation_graph", call);
  RN_FE_TRY(graph->create_execution_plans(heuristicModes()), "create_execution_plans", call);
  if (engineSearch()) {
    // An engine that does not support this graph fails its finalization:
    // that is cuDNN's "not this engine", skipped like a failing build.
    int64_t engines = 0;
    RN_FE_TRY(graph->get_engine_count(engines), "get_engine_count", call);
    for (int64_t engine = 0; engine < engines; ++engine)
      (void)graph->create_execution_plan(engine, {});
  }
  ++graphCount;

  // Filters: f32 accumulation always; IEEE f32 for f32 data unless TF32 is
  // allowed (tensor-core engines on f32 data are TF32 engines).
  std::vector<fe::NumericalNote_t> barred;
  if (!allowsReducedPrecision(call))
    barred.push_back(fe::NumericalNote_t::REDUCED_PRECISION_REDUCTION);
  if (call.xType == DType::f32 && !options.allowTf32) {
    barred.push_back(fe::NumericalNote_t::TENSOR_CORE);
    barred.push_back(fe::NumericalNote_t::DOWN_CONVERT_INPUTS);
    // Winograd and FFT transforms lose about three decimal digits on f32
    // data (measured on the H200: ResNet-18's 8x8 3x3 dgrads came out 1e-3
    // off the CPU's), which is not what an f32 program asks for.
    for (fe::NumericalNote_t note :
         {fe::NumericalNote_t::FFT, fe::NumericalNote_t::WINOGRAD,
          fe::NumericalNote_t::WINOGRAD_TILE_4x4, fe::NumericalNote_t::WINOGRAD_TILE_6x6,
          fe::NumericalNote_t::WINOGRAD_TILE_13x13})
      barred.push_back(note);
  }
  if (options.deterministic)
    barred.push_back(fe::NumericalNote_t::NONDETERMINISTIC);
  graph->deselect_numeric_notes(barred);
  graph->deselect_workspace_greater_than(int64_t(stream.workspaceBytes - reserved));

  // A plan chosen before (in this process or in the plan cache) is the
  // only one built when it still builds and names the same engine: a warm
  // load skips building the other candidates, most of its time.
  std::vector<int64_t> built;
  std::string failures;
  if (options.autotune)
    if (std::optional<Remembered> r = remembered(planKey(call, entry));
        r && r->plan >= 0 && r->plan < graph->get_execution_plan_count() &&
        graph->build_plan_at_index(r->plan).is_good()) {
      std::string name;
      int64_t workspace = 0;
      // The same engine, and within this stream's workspace (not part of
      // the key: another program may give the stream less).
      if (graph->get_plan_name_at_index(r->plan, name).is_good() && name == r->name &&
          engineAllowed(name) &&
          graph->get_workspace_size_plan_at_index(r->plan, workspace).is_good() &&
          workspace <= int64_t(stream.workspaceBytes - reserved))
        built.push_back(r->plan);
    }
  // Otherwise the candidates that pass, to be timed: the first
  // autotuneCandidates (0: all) with autotune, else only the first, the one
  // kept. A failing candidate is not an error (that is how cuDNN says "not
  // this engine"), only having none is.
  const bool reusedChoice = !built.empty();
  const size_t wanted = !options.autotune ? 1
                        : options.autotuneCandidates > 0 ? size_t(options.autotuneCandidates)
                                                         : std::numeric_limits<size_t>::max();
  for (int64_t i = 0;
       !reusedChoice && built.size() < wanted && i < graph->get_execution_plan_count(); ++i) {
    if (!allowedEngines().empty()) {
      std::string name;
      if (graph->get_plan_name_at_index(i, name).is_bad() || !engineAllowed(name)) {
        if (failures.size() < 2000)
          failures += "\n  plan " + std::to_string(i) + " (" + name + "): not in RN_CONV_ENGINES";
        continue;
      }
    }
    fe::error_t result = graph->build_plan_at_index(i);
    if (result.is_good())
      built.push_back(i);
    else if (failures.size() < 2000)
      failures += "\n  plan " + std::to_string(i) + ": " + result.get_message();
  }
  if (planLog())
    std::fprintf(stderr, "conv-plans: %s: %zu of %lld candidates built (workspace cap %zu bytes)\n",
                 describe(call).c_str(), built.size(),
                 (long long)graph->get_execution_plan_count(), stream.workspaceBytes - reserved);
  if (built.empty())
    return Error("cuDNN has no plan for conv " + describe(call) + " within " +
                 std::to_string(stream.workspaceBytes - reserved) + " bytes of workspace (" +
                 std::to_string(graph->get_execution_plan_count()) + " candidates)" + failures);
  RN_FE_TRY(graph->prepare_variant_pack_template(), "prepare_variant_pack_template", call);
  entry.packUids = graph->get_variant_pack_uids_sorted();
  for (int64_t uid : entry.packUids)
    if (uid <= 0 || uid >= uidCount)
      return Error("conv " + describe(call) + ": unexpected tensor UID " + std::to_string(uid) +
                   " in the cuDNN variant pack");
  entry.graph = std::move(graph);

  Result<int64_t> plan = choosePlan(call, entry, stream, built);
  if (!plan.ok())
    return plan.error();
  entry.plan = *plan;
  int64_t workspace = 0;
  RN_FE_TRY(entry.graph->get_workspace_size_plan_at_index(entry.plan, workspace),
            "get_workspace_size_plan_at_index", call);
  entry.cudnnWorkspace = size_t(workspace);
  entry.totalWorkspace = entry.wgradBytes + entry.cudnnWorkspace;
  if (entry.statsKernel)
    entry.totalWorkspace = std::max(entry.totalWorkspace,
                                    columnSumsWorkspaceBytes(numelOf(call.y) / call.y[3], call.y[3]));
  if (entry.totalWorkspace > stream.workspaceBytes)
    return Error("conv " + describe(call) + " needs " + std::to_string(entry.totalWorkspace) +
                 " bytes of workspace, stream " + std::string(stream.name) + " has " +
                 std::to_string(stream.workspaceBytes));
  return entry;
}

/// Runs plan `plan` of `entry` with the pointers of `slots` (indexed by Uid).
Status ConvRunner::Impl::execute(const Entry &entry, void *const *slots,
                                 const StreamResources &stream, int64_t plan) const {
  void *pack[uidCount];
  int n = 0;
  for (int64_t uid : entry.packUids)
    pack[n++] = slots[uid];
  void *workspace = static_cast<char *>(stream.workspace) + entry.wgradBytes;
  fe::error_t result =
      entry.graph->execute_plan_at_index(stream.cudnn, pack, n, workspace, plan);
  bool injected = injectedFailure();
  if (injected || result.is_bad())
    return Error("cuDNN frontend execute failed: " +
                 (injected ? std::string("injected failure (RN_CUDA_FAIL_CALL)")
                           : result.get_message()));
  return Status::success();
}

Result<int64_t> ConvRunner::Impl::choosePlan(const ConvCall &call, Entry &entry,
                                             const StreamResources &stream,
                                             const std::vector<int64_t> &candidates) {
  auto nameOf = [&](int64_t plan) {
    std::string name;
    if (entry.graph->get_plan_name_at_index(plan, name).is_bad())
      name.clear();
    return name;
  };
  auto isCandidate = [&](int64_t plan) {
    return std::find(candidates.begin(), candidates.end(), plan) != candidates.end();
  };
  // A single candidate is timed too: the wgrad result dtype is chosen by
  // comparing the times of two graphs, and an untimed one (measured on the
  // H200: an f32 result whose only plan was a fallback engine at 1.3 ms
  // against 0.036 ms for the f16 result) would win by default.
  if (!options.autotune)
    return candidates.front();

  // Chosen before: in this process (another handle), or in the cache file.
  std::string key = planKey(call, entry);
  if (std::optional<Remembered> r = remembered(key);
      r && isCandidate(r->plan) && nameOf(r->plan) == r->name) {
    chosen[key] = *r;
    entry.planMs = r->ms;
    return r->plan;
  }

  // Time every candidate on buffers of the call's sizes (contents: a
  // harmless constant; the values do not change which plan is fastest):
  // carved from the autotuning scratch when they all fit, else allocated.
  auto bytesOf = [](const std::array<int64_t, 4> &s, DType t) {
    return size_t(numelOf(s)) * elementSize(t);
  };
  auto bufferBytes = [&](int64_t uid) -> size_t {
    switch (uid) {
    case uidX:
    case uidDx:
    case uidResidual:
      return bytesOf(call.x, call.xType);
    case uidW:
      return bytesOf(call.w, call.wType);
    case uidY:
    case uidDy:
      return bytesOf(call.y, call.yType);
    case uidSum:
    case uidSumSq:
      return size_t(call.y[3]) * sizeof(float);
    case uidScale:
    case uidBias:
      return size_t(call.x[3]) * elementSize(call.xType);
    case uidDbnMean:
    case uidDbnInvStd:
    case uidDbnScale:
    case uidDbnBias:
    case uidDbnDscale:
    case uidDbnDbias:
    case uidDbnEqScaleDy:
    case uidDbnEqScaleX:
    case uidDbnEqBias:
      return size_t(call.x[3]) * sizeof(float);
    default:
      return 0; // uidDw: the wgrad result lives in the stream's workspace
    }
  };
  size_t needed = 0;
  for (int64_t uid : entry.packUids)
    if (uid != uidDw)
      needed += alignUp(std::max<size_t>(bufferBytes(uid), 1));
  const bool inScratch = needed <= autotuneScratchBytes;
  struct DeviceBuffers {
    std::vector<void *> pointers;
    ~DeviceBuffers() {
      for (void *p : pointers)
        cudaFree(p);
    }
  } buffers;
  void *slots[uidCount] = {};
  size_t carved = 0;
  for (int64_t uid : entry.packUids) {
    if (uid == uidDw) {
      slots[uid] = stream.workspace;
      continue;
    }
    const size_t bytes = alignUp(std::max<size_t>(bufferBytes(uid), 1));
    void *p = nullptr;
    if (inScratch) {
      p = autotuneScratch + carved;
      carved += bytes;
    } else {
      RN_CUDA_TRY(cudaMalloc(&p, bytes));
      buffers.pointers.push_back(p);
      autotuneAllocated += bytes;
    }
    RN_CUDA_TRY(cudaMemsetAsync(p, 0x3c, bytes, stream.stream));
    slots[uid] = p;
  }

  cudaEvent_t start = nullptr, stop = nullptr;
  RN_CUDA_TRY(cudaEventCreate(&start));
  RN_CUDA_TRY(cudaEventCreate(&stop));
  struct Events {
    cudaEvent_t a, b;
    ~Events() {
      cudaEventDestroy(a);
      cudaEventDestroy(b);
    }
  } events{start, stop};

  int64_t best = -1;
  float bestMs = std::numeric_limits<float>::max();
  for (int64_t plan : candidates) {
    // A plan that fails to execute is skipped, like one that fails to build.
    ++timedPlanCount;
    if (!execute(entry, slots, stream, plan).ok())
      continue;
    float planMs = std::numeric_limits<float>::max();
    bool failed = false;
    for (int rep = 0; rep < 3 && !failed; ++rep) {
      RN_CUDA_TRY(cudaEventRecord(start, stream.stream));
      failed = !execute(entry, slots, stream, plan).ok();
      RN_CUDA_TRY(cudaEventRecord(stop, stream.stream));
      RN_CUDA_TRY(cudaEventSynchronize(stop));
      float ms = 0;
      RN_CUDA_TRY(cudaEventElapsedTime(&ms, start, stop));
      planMs = std::min(planMs, ms);
    }
    if (planLog())
      std::fprintf(stderr, "conv-plans:   %-48s %9.4f ms%s\n", nameOf(plan).c_str(),
                   failed ? -1.0f : planMs, failed ? " (failed)" : "");
    if (!failed && planMs < bestMs) {
      bestMs = planMs;
      best = plan;
    }
  }
  if (planLog())
    std::fprintf(stderr, "conv-plans: %s: chose %s (%.4f ms)\n", key.c_str(),
                 best >= 0 ? nameOf(best).c_str() : "none", bestMs);
  RN_CUDA_TRY(cudaStreamSynchronize(stream.stream));
  if (best < 0)
    return Error("conv " + describe(call) + ": none of the " + std::to_string(candidates.size()) +
                 " cuDNN plans ran");
  chosen[key] = {best, nameOf(best), bestMs};
  entry.planMs = bestMs;
  if (!options.cacheFile.empty()) {
    cache[key] = {{"plan", best}, {"name", nameOf(best)}, {"ms", bestMs}};
    Status s = storeCache();
    if (!s.ok())
      return s.error();
  }
  return best;
}

/// Writes the cache file whole (to a temporary file, then renamed, so that
/// a reader never sees half a file).
Status ConvRunner::Impl::storeCache() {
  std::string temporary = options.cacheFile + ".tmp";
  {
    std::ofstream out(temporary, std::ios::trunc);
    out << cache.dump(1) << "\n";
    if (!out)
      return Error("cannot write the conv plan cache " + temporary);
  }
  if (std::rename(temporary.c_str(), options.cacheFile.c_str()) != 0)
    return Error("cannot replace the conv plan cache " + options.cacheFile);
  return Status::success();
}

bool ConvRunner::autotuneForbiddenByEnvironment() {
  static const bool off = [] {
    const char *v = std::getenv("RN_CONV_AUTOTUNE");
    return v && std::string(v) == "0";
  }();
  return off;
}

Result<std::unique_ptr<ConvRunner>> ConvRunner::create(const Options &options) {
  std::unique_ptr<ConvRunner> runner(new ConvRunner());
  runner->impl_ = std::make_unique<Impl>();
  Impl &impl = *runner->impl_;
  impl.options = options;
  if (autotuneForbiddenByEnvironment())
    impl.options.autotune = false;
  int device = 0;
  RN_CUDA_TRY(cudaGetDevice(&device));
  cudaDeviceProp properties{};
  RN_CUDA_TRY(cudaGetDeviceProperties(&properties, device));
  impl.device = std::string(properties.name) + " | cuDNN " + std::to_string(cudnnGetVersion());
  if (!options.cacheFile.empty()) {
    std::ifstream in(options.cacheFile);
    if (in) {
      try {
        impl.cache = nlohmann::json::parse(in);
      } catch (const std::exception &e) {
        return Error("conv plan cache " + options.cacheFile + ": " + e.what());
      }
      if (!impl.cache.is_object())
        return Error("conv plan cache " + options.cacheFile + ": not a JSON object");
    }
  }
  return runner;
}

ConvRunner::~ConvRunner() = default;

Result<size_t> ConvRunner::prepare(const ConvCall &call, const StreamResources &stream,
                                   bool countPlanTime) {
  Impl &impl = *impl_;
  CallKey key{call, stream.cudnn};
  if (auto it = impl.entries.find(key); it != impl.entries.end()) {
    if (countPlanTime)
      impl.notePlanMs(it->second);
    if (it->second.totalWorkspace > stream.workspaceBytes)
      return Error("conv " + describe(call) + " needs " +
                   std::to_string(it->second.totalWorkspace) + " bytes of workspace, stream " +
                   std::string(stream.name) + " has " + std::to_string(stream.workspaceBytes));
    return it->second.totalWorkspace;
  }
  for (int i = 0; i < 4; ++i)
    if (call.x[i] <= 0 || call.w[i] <= 0 || call.y[i] <= 0)
      return Error("conv " + describe(call) + ": empty or negative dimension");
  const ConvParams &p = call.params;
  if (p.groups < 1 || call.w[3] * p.groups != call.x[3] || call.w[0] % p.groups != 0 ||
      call.w[0] != call.y[3] || call.x[0] != call.y[0])
    return Error("conv " + describe(call) + ": shapes do not agree (x channels = w channels * "
                 "groups, y channels = filters, a multiple of groups)");
  for (int i = 0; i < 2; ++i) {
    int64_t extent = call.x[1 + i] + 2 * p.padding[i] - p.dilation[i] * (call.w[1 + i] - 1) - 1;
    if (p.strides[i] < 1 || p.dilation[i] < 1 || p.padding[i] < 0 || extent < 0 ||
        extent / p.strides[i] + 1 != call.y[1 + i])
      return Error("conv " + describe(call) + ": the output size does not match the input, "
                   "filter, strides, padding and dilation");
  }

  auto begin = std::chrono::steady_clock::now();
  Result<Entry> entry = Error("");
  try {
    switch (call.kind) {
    case ConvKind::forward_stats: {
      const bool fuse = impl.triesGenstats();
      if (fuse)
        entry = impl.build(call, stream, /*fuseStats=*/true, DType::f32);
      if (fuse && entry.ok())
        ++impl.genstatsGraphCount;
      if (!fuse || !entry.ok())
        entry = impl.build(call, stream, /*fuseStats=*/false, DType::f32);
      break;
    }
    case ConvKind::backward_filter:
    case ConvKind::backward_filter_scale_bias_relu: {
      // An f32 wgrad result keeps the accumulation exact to f32, but for
      // f16/bf16 data cuDNN's fast engines may write only their own dtype
      // (measured on the H200: f16 x/dy with an f32 result ran several times
      // slower than with an f16 one). With autotuning, both are built and
      // timed and the faster kept; the f16 result rounds the contribution
      // once more before the f32 accumulation.
      entry = impl.build(call, stream, false, DType::f32);
      if (call.xType != DType::f32 && (!entry.ok() || impl.options.autotune)) {
        Result<Entry> narrow = impl.build(call, stream, false, call.xType);
        if (narrow.ok() && (!entry.ok() || entry->planMs < 0 ||
                            (narrow->planMs >= 0 && narrow->planMs < entry->planMs)))
          entry = std::move(narrow);
      }
      break;
    }
    case ConvKind::forward_scale_bias_relu_stats:
      entry = impl.build(call, stream, /*fuseStats=*/true, DType::f32);
      if (entry.ok())
        ++impl.genstatsGraphCount;
      break;
    default:
      entry = impl.build(call, stream, false, DType::f32);
      break;
    }
  } catch (const std::exception &e) {
    entry = Error("cuDNN frontend threw for conv " + describe(call) + ": " + e.what());
  }
  impl.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  if (!entry.ok())
    return entry.error();
  size_t workspace = entry->totalWorkspace;
  if (countPlanTime)
    impl.notePlanMs(*entry);
  impl.entries.emplace(key, std::move(entry).value());
  return workspace;
}

Status ConvRunner::run(const ConvCall &call, const ConvBuffers &buffers,
                       const StreamResources &stream) {
  const Impl &impl = *impl_;
  auto it = impl.entries.find(CallKey{call, stream.cudnn});
  if (it == impl.entries.end())
    return Error("conv " + describe(call) + " was not prepared for stream " +
                 std::string(stream.name));
  const Entry &entry = it->second;
  if (entry.totalWorkspace > stream.workspaceBytes || (entry.totalWorkspace && !stream.workspace))
    return Error("conv " + describe(call) + ": stream " + std::string(stream.name) +
                 " has too little workspace");

  void *slots[uidCount] = {};
  slots[uidX] = const_cast<void *>(buffers.x);
  slots[uidW] = const_cast<void *>(buffers.w);
  slots[uidY] = buffers.y;
  slots[uidDy] = const_cast<void *>(buffers.dy);
  slots[uidDx] = buffers.dx;
  slots[uidDw] = stream.workspace;
  slots[uidSum] = buffers.sum;
  slots[uidSumSq] = buffers.sumSq;
  slots[uidScale] = const_cast<void *>(buffers.scale);
  slots[uidBias] = const_cast<void *>(buffers.bias);
  slots[uidResidual] = const_cast<void *>(buffers.residual);
  const ConvBuffers::DbnWeight &dbn = buffers.dbn;
  slots[uidDbnMean] = const_cast<float *>(dbn.mean);
  slots[uidDbnInvStd] = const_cast<float *>(dbn.invStd);
  slots[uidDbnScale] = const_cast<float *>(dbn.scale);
  slots[uidDbnBias] = const_cast<float *>(dbn.bias);
  slots[uidDbnDscale] = dbn.dscale;
  slots[uidDbnDbias] = dbn.dbias;
  slots[uidDbnEqScaleDy] = dbn.eqScaleDy;
  slots[uidDbnEqScaleX] = dbn.eqScaleX;
  slots[uidDbnEqBias] = dbn.eqBias;
  for (int64_t uid : entry.packUids)
    if (!slots[uid])
      return Error("conv " + describe(call) + ": a buffer its kind needs is null");
  if (isFilterGradient(call.kind) && (!buffers.dw || !buffers.dwAcc))
    return Error("conv " + describe(call) + ": dw and dwAcc must be given");
  if (givesOutputSums(call.kind) && (!buffers.sum || !buffers.sumSq))
    return Error("conv " + describe(call) + ": sum and sumSq must be given");

  // A fused genstats adds its sums into their buffers (see the file
  // comment): they start from zero on every execution.
  if (givesOutputSums(call.kind) && !entry.statsKernel) {
    // Adjacent sums (cbr_forward's layout) take one memset node, not two.
    const size_t sumBytes = size_t(call.y[3]) * sizeof(float);
    if (buffers.sumSq == buffers.sum + call.y[3]) {
      RN_CUDA_TRY(cudaMemsetAsync(buffers.sum, 0, 2 * sumBytes, stream.stream));
    } else {
      RN_CUDA_TRY(cudaMemsetAsync(buffers.sum, 0, sumBytes, stream.stream));
      RN_CUDA_TRY(cudaMemsetAsync(buffers.sumSq, 0, sumBytes, stream.stream));
    }
  }
  Status s = impl.execute(entry, slots, stream, entry.plan);
  if (!s.ok())
    return s.error().withContext("conv " + describe(call));
  if (isFilterGradient(call.kind))
    return addFirstColumns(buffers.dwAcc, call.gradType, stream.workspace, entry.wgradType,
                           call.w[3], buffers.dw, call.gradType,
                           call.w[3] > 0 ? numelOf(call.w) / call.w[3] : 0,
                           call.gradChannels > 0 ? call.gradChannels : call.w[3], stream.stream);
  if (entry.statsKernel)
    return columnSums(buffers.y, call.yType, numelOf(call.y) / call.y[3], call.y[3], nullptr,
                      buffers.sum, DType::f32, buffers.sumSq, stream.workspace,
                      stream.workspaceBytes, stream.stream);
  return Status::success();
}

void ConvRunner::setAutotuneScratch(void *base, size_t bytes) {
  impl_->autotuneScratch = static_cast<char *>(base);
  impl_->autotuneScratchBytes = base ? bytes : 0;
}
size_t ConvRunner::autotuneAllocatedBytes() const { return impl_->autotuneAllocated; }

size_t ConvRunner::graphs() const { return impl_->graphCount; }
size_t ConvRunner::genstatsGraphs() const { return impl_->genstatsGraphCount; }
bool ConvRunner::triesGenstats() const { return impl_->triesGenstats(); }
bool ConvRunner::statsFused(const ConvCall &call, const StreamResources &stream) const {
  if (!givesOutputSums(call.kind))
    return false;
  auto it = impl_->entries.find(CallKey{call, stream.cudnn});
  return it != impl_->entries.end() && !it->second.statsKernel;
}
Result<bool> ConvRunner::chooseGenstats(const ConvCall &statsCall, const ConvCall &plainCall,
                                        const StreamResources &stream,
                                        const std::function<Result<StatsPassTimes>()> &time) {
  Impl &impl = *impl_;
  const std::string key = impl.cacheKey(statsCall) + statsChoiceSuffix();
  auto fused = impl.entries.find(CallKey{statsCall, stream.cudnn});
  auto plain = impl.entries.find(CallKey{plainCall, stream.cudnn});
  if (fused == impl.entries.end() || plain == impl.entries.end())
    return Error("conv " + describe(statsCall) +
                 ": the statistics choice needs both convolutions prepared on stream " +
                 std::string(stream.name));
  // The shape's choice, made once; the entry of this handle carries it.
  auto decide = [&](bool genstats) {
    const bool chosen = impl.statsChoices.emplace(key, genstats).first->second;
    fused->second.genstatsChosen = chosen && !fused->second.statsKernel;
    return fused->second.genstatsChosen;
  };
  if (auto it = impl.statsChoices.find(key); it != impl.statsChoices.end())
    return decide(it->second);
  const Options::Genstats policy = impl.genstatsPolicy();
  if (policy == Options::Genstats::never || fused->second.statsKernel)
    return decide(false);
  if (policy == Options::Genstats::always)
    return decide(true);
  if (auto it = impl.cache.find(key); it != impl.cache.end() && it->is_object() &&
                                      it->contains("genstats"))
    return decide(it->value("genstats", false));
  if (fused->second.planMs < 0 || plain->second.planMs < 0)
    return decide(false); // autotuning off: no times to compare
  Result<StatsPassTimes> passes = time();
  if (!passes.ok())
    return passes.error();
  const double genstatsMs = fused->second.planMs + passes->sumsMs;
  const double plainMs = plain->second.planMs + passes->passMs;
  const bool genstats = genstatsMs <= (1.0 - kGenstatsMinSaving) * plainMs &&
                        plainMs - genstatsMs >= kGenstatsMinSavingMs;
  if (planLog())
    std::fprintf(stderr, "conv-plans: %s: %s (conv + genstats %.4f ms, conv + pass %.4f ms)\n",
                 key.c_str(), genstats ? "genstats" : "statistics pass", genstatsMs, plainMs);
  if (!impl.options.cacheFile.empty()) {
    impl.cache[key] = {{"genstats", genstats}, {"genstats_ms", genstatsMs}, {"plain_ms", plainMs}};
    if (Status s = impl.storeCache(); !s.ok())
      return s.error();
  }
  return decide(genstats);
}

bool ConvRunner::genstatsChosen(const ConvCall &statsCall, const StreamResources &stream) const {
  auto it = impl_->entries.find(CallKey{statsCall, stream.cudnn});
  return it != impl_->entries.end() && it->second.genstatsChosen;
}
size_t ConvRunner::genstatsChoices() const {
  return size_t(std::count_if(impl_->statsChoices.begin(), impl_->statsChoices.end(),
                              [](const auto &choice) { return choice.second; }));
}
size_t ConvRunner::statsChoices() const { return impl_->statsChoices.size(); }
double ConvRunner::prepareSeconds() const { return impl_->seconds; }
double ConvRunner::preparedPlanMs() const { return impl_->plannedMs; }
size_t ConvRunner::untimedPrepares() const { return impl_->untimedCalls; }
size_t ConvRunner::plansTimed() const { return impl_->timedPlanCount; }

} // namespace rn::cuda
