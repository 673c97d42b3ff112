//===- cpu_executor.cpp - Reference executor of an artifact on the CPU ----===//
//
// See cpu_executor.h for the memory mapping; the interleaved mode runs in
// interleaving_simulator.cpp.
//
//===----------------------------------------------------------------------===//

#include "runtime/cpu/cpu_executor.h"
#include "runtime/core/op_registry.h"
#include "runtime/core/op_table.h"
#include "runtime/core/host_program.h"

#include "runtime/cpu/cpu_kernels.h"
#include "runtime/cpu/interleaving_simulator.h"
#include "runtime/core/dtype.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <unordered_map>

namespace rn {

using json = nlohmann::json;
using cpu::Access;
using cpu::kStreams;
using cpu::KernelStatus;
using cpu::TensorView;

namespace {

bool isFloat(DType t) { return t == DType::f32 || t == DType::f16 || t == DType::bf16; }

/// Words a slot covers in the index space (data and shadow), where one word
/// stands for `unitBytes` bytes of the arena.
int64_t slotUnits(const Slot &slot, int64_t elements, int64_t unitBytes) {
  const uint64_t unit = uint64_t(unitBytes);
  return std::max<int64_t>(elements, static_cast<int64_t>((slot.bytes + unit - 1) / unit));
}

/// The arena bytes one word of the index space stands for: an element of
/// the smallest dtype, so that each slot's words hold its elements (one
/// float each) without reaching into the next slot. 2 (f16), or 1 when a
/// slot holds uint8 images (their words then take twice the memory).
int64_t unitBytesOf(const Program &p) {
  for (const Function &f : p.functions)
    for (const TensorInfo &t : f.tensors)
      if (t.slot && t.dtype == DType::u8)
        return 1;
  return 2;
}

std::array<int64_t, 2> pairAttr(const json &attrs, const char *name,
                                std::array<int64_t, 2> fallback) {
  auto it = attrs.find(name);
  if (it == attrs.end() || !it->is_array() || it->size() != 2)
    return fallback;
  return {(*it)[0].get<int64_t>(), (*it)[1].get<int64_t>()};
}
double numAttr(const json &attrs, const char *name, double fallback = 0) {
  auto it = attrs.find(name);
  return it != attrs.end() && it->is_number() ? it->get<double>() : fallback;
}
bool flagAttr(const json &attrs, const char *name) {
  auto it = attrs.find(name);
  return it != attrs.end() && it->is_boolean() && it->get<bool>();
}
cpu::Conv2dAttrs convAttrs(const json &a) {
  cpu::Conv2dAttrs c;
  c.strides = pairAttr(a, "strides", {1, 1});
  c.padding = pairAttr(a, "padding", {0, 0});
  c.dilation = pairAttr(a, "dilation", {1, 1});
  c.groups = static_cast<int64_t>(numAttr(a, "groups", 1));
  return c;
}
cpu::Pool2dAttrs poolAttrs(const json &a) {
  cpu::Pool2dAttrs p;
  p.kernel = pairAttr(a, "kernel", {1, 1});
  p.strides = pairAttr(a, "strides", {1, 1});
  p.padding = pairAttr(a, "padding", {0, 0});
  return p;
}

/// The kernel an op node runs, resolved from its op name once when the
/// executor is created (not per execution); the names are the op
/// registry's. `copy` is host_to_device; the forking ops run their parts.
enum class OpKind : uint8_t {
  unknown, copy, all_reduce_mean, conv2d, linear, batch_norm, batch_norm_train,
  batch_norm_inference, update_running_stats, batch_norm_backward, relu, tanh, silu,
  sigmoid, hardtanh, hardswish, hardsigmoid, relu_backward, tanh_backward, silu_backward,
  sigmoid_backward, hardtanh_backward, hardswish_backward, hardsigmoid_backward,
  dropout_backward, stochastic_depth_backward, add, channel_mul, channel_mul_backward, cast,
  multi_cast, pad_channels, normalize_images, reshape, flatten, zero, multi_zero, dropout_train,
  stochastic_depth_train, max_pool2d, avg_pool2d, max_pool2d_backward, avg_pool2d_backward,
  adaptive_avg_pool2d, adaptive_avg_pool2d_backward, global_avg_pool,
  global_avg_pool_backward, softmax_cross_entropy,
  softmax_cross_entropy_backward, count_correct, check_finite, unscale, multi_unscale,
  update_loss_scale, sgd_update, multi_sgd_update, adamw_update, multi_adamw_update, lars_update,
  multi_lars_update, ema_update, multi_ema_update, cbr_forward, cbr_inference,
  bn_add_relu, bn_add_relu_backward, bn_add_relu_inference, conv_bn_stats, bn_scale_bias,
  linear_backward, conv2d_backward, cbr_backward
};

OpKind opKindOf(std::string_view op) {
  static const std::unordered_map<std::string_view, OpKind> byName = {
      {"host_to_device", OpKind::copy},
      {"all_reduce_mean", OpKind::all_reduce_mean},
      {"conv2d", OpKind::conv2d},
      {"linear", OpKind::linear},
      {"batch_norm", OpKind::batch_norm},
      {"batch_norm_train", OpKind::batch_norm_train},
      {"batch_norm_inference", OpKind::batch_norm_inference},
      {"update_running_stats", OpKind::update_running_stats},
      {"batch_norm_backward", OpKind::batch_norm_backward},
      {"relu", OpKind::relu},
      {"tanh", OpKind::tanh},
      {"silu", OpKind::silu},
      {"sigmoid", OpKind::sigmoid},
      {"hardtanh", OpKind::hardtanh},
      {"hardswish", OpKind::hardswish},
      {"hardsigmoid", OpKind::hardsigmoid},
      {"relu_backward", OpKind::relu_backward},
      {"tanh_backward", OpKind::tanh_backward},
      {"silu_backward", OpKind::silu_backward},
      {"sigmoid_backward", OpKind::sigmoid_backward},
      {"hardtanh_backward", OpKind::hardtanh_backward},
      {"hardswish_backward", OpKind::hardswish_backward},
      {"hardsigmoid_backward", OpKind::hardsigmoid_backward},
      {"dropout_backward", OpKind::dropout_backward},
      {"stochastic_depth_backward", OpKind::stochastic_depth_backward},
      {"add", OpKind::add},
      {"channel_mul", OpKind::channel_mul},
      {"channel_mul_backward", OpKind::channel_mul_backward},
      {"cast", OpKind::cast},
      {"multi_cast", OpKind::multi_cast},
      {"pad_channels", OpKind::pad_channels},
      {"normalize_images", OpKind::normalize_images},
      {"reshape", OpKind::reshape},
      {"flatten", OpKind::flatten},
      {"zero", OpKind::zero},
      {"multi_zero", OpKind::multi_zero},
      {"dropout_train", OpKind::dropout_train},
      {"stochastic_depth_train", OpKind::stochastic_depth_train},
      {"max_pool2d", OpKind::max_pool2d},
      {"avg_pool2d", OpKind::avg_pool2d},
      {"max_pool2d_backward", OpKind::max_pool2d_backward},
      {"avg_pool2d_backward", OpKind::avg_pool2d_backward},
      {"adaptive_avg_pool2d", OpKind::adaptive_avg_pool2d},
      {"adaptive_avg_pool2d_backward", OpKind::adaptive_avg_pool2d_backward},
      {"global_avg_pool", OpKind::global_avg_pool},
      {"global_avg_pool_backward", OpKind::global_avg_pool_backward},
      {"softmax_cross_entropy", OpKind::softmax_cross_entropy},
      {"softmax_cross_entropy_backward", OpKind::softmax_cross_entropy_backward},
      {"count_correct", OpKind::count_correct},
      {"check_finite", OpKind::check_finite},
      {"unscale", OpKind::unscale},
      {"multi_unscale", OpKind::multi_unscale},
      {"update_loss_scale", OpKind::update_loss_scale},
      {"sgd_update", OpKind::sgd_update},
      {"multi_sgd_update", OpKind::multi_sgd_update},
      {"adamw_update", OpKind::adamw_update},
      {"multi_adamw_update", OpKind::multi_adamw_update},
      {"lars_update", OpKind::lars_update},
      {"multi_lars_update", OpKind::multi_lars_update},
      {"ema_update", OpKind::ema_update},
      {"multi_ema_update", OpKind::multi_ema_update},
      {"cbr_forward", OpKind::cbr_forward},
      {"cbr_inference", OpKind::cbr_inference},
      {"bn_add_relu", OpKind::bn_add_relu},
      {"bn_add_relu_backward", OpKind::bn_add_relu_backward},
      {"bn_add_relu_inference", OpKind::bn_add_relu_inference},
      {"conv_bn_stats", OpKind::conv_bn_stats},
      {"bn_scale_bias", OpKind::bn_scale_bias},
      {"linear_backward", OpKind::linear_backward},
      {"conv2d_backward", OpKind::conv2d_backward},
      {"cbr_backward", OpKind::cbr_backward},
  };
  auto it = byName.find(op);
  return it == byName.end() ? OpKind::unknown : it->second;
}

/// The role of one part of a forking op.
enum class PartRole : uint8_t { unknown, weight_grad, bias_grad, input_grad, bn_grad };

PartRole partRoleOf(std::string_view role) {
  if (role == "weight_grad")
    return PartRole::weight_grad;
  if (role == "bias_grad")
    return PartRole::bias_grad;
  if (role == "input_grad")
    return PartRole::input_grad;
  if (role == "bn_grad")
    return PartRole::bn_grad;
  return PartRole::unknown;
}

/// An op node ready to run: its kernel, part roles and attributes, parsed
/// from the JSON once (absent numbers read as 0, absent flags as false).
struct Kernel {
  OpKind kind = OpKind::unknown;
  std::vector<PartRole> roles; ///< per part
  cpu::Conv2dAttrs conv;       ///< convolutions
  cpu::Pool2dAttrs pool;       ///< pooling
  double epsilon = 0, momentum = 0, p = 0, labelSmoothing = 0, growth = 0, backoff = 0,
         weightDecay = 0, beta1 = 0, beta2 = 0, trustCoefficient = 0, decay = 0, minVal = 0,
         maxVal = 0;
  int64_t count = 0, growthInterval = 0;
  bool relu = false, nesterov = false;
  /// cbr_backward: the recomputed mask takes the prologue's rounding.
  bool prologueMask = false;
  /// dropout_train and stochastic_depth_train: the attributes count and
  /// index (see Note [Random streams] in runtime/cpu/cpu_kernels.h).
  uint64_t randomIndex = 0, randomCount = 0;
};

Kernel kernelOf(const Node &node) {
  Kernel k;
  k.kind = opKindOf(node.op);
  for (const Part &part : node.parts)
    k.roles.push_back(partRoleOf(part.role));
  const json &a = node.attributes;
  switch (k.kind) {
  case OpKind::conv2d:
  case OpKind::conv2d_backward:
  case OpKind::cbr_forward:
  case OpKind::cbr_inference:
  case OpKind::cbr_backward:
  case OpKind::conv_bn_stats:
    k.conv = convAttrs(a);
    break;
  case OpKind::max_pool2d:
  case OpKind::avg_pool2d:
  case OpKind::max_pool2d_backward:
  case OpKind::avg_pool2d_backward:
    k.pool = poolAttrs(a);
    break;
  default:
    break;
  }
  k.epsilon = numAttr(a, "epsilon");
  k.momentum = numAttr(a, "momentum");
  k.p = numAttr(a, "p");
  k.labelSmoothing = numAttr(a, "label_smoothing");
  k.growth = numAttr(a, "growth");
  k.backoff = numAttr(a, "backoff");
  k.weightDecay = numAttr(a, "weight_decay");
  k.beta1 = numAttr(a, "beta1");
  k.beta2 = numAttr(a, "beta2");
  k.trustCoefficient = numAttr(a, "trust_coefficient");
  k.decay = numAttr(a, "decay");
  k.minVal = numAttr(a, "min_val");
  k.maxVal = numAttr(a, "max_val");
  k.count = static_cast<int64_t>(numAttr(a, "count"));
  k.growthInterval = static_cast<int64_t>(numAttr(a, "growth_interval"));
  if (k.kind == OpKind::cbr_backward)
    k.prologueMask = cbrBackwardPrologueMask(a);
  k.relu = flagAttr(a, "relu");
  k.nesterov = flagAttr(a, "nesterov");
  if (k.kind == OpKind::dropout_train || k.kind == OpKind::stochastic_depth_train) {
    k.randomIndex = static_cast<uint64_t>(numAttr(a, "index"));
    k.randomCount = static_cast<uint64_t>(numAttr(a, "count"));
  }
  return k;
}

/// A list operand or result of a node: its ids where they sit in the
/// node's flat list (no copy).
struct IdList {
  const uint32_t *first = nullptr;
  size_t count = 0;
  const uint32_t *begin() const { return first; }
  const uint32_t *end() const { return first + count; }
  size_t size() const { return count; }
  uint32_t operator[](size_t i) const { return first[i]; }
};

Access accessOf(const Node &node, const Kernel &kernel, int part);

/// A subgraph's work items and, per node, its kernel (op nodes).
struct SubgraphItems : cpu::SubgraphWork {
  std::vector<Kernel> kernels;
};

} // namespace

bool cpu::hasKernel(std::string_view op) { return opKindOf(op) != OpKind::unknown; }

struct CpuExecutor::Impl {
  struct FnLayout {
    std::vector<int64_t> indexA, indexB; ///< word index per tensor (-1 host)
    std::vector<int64_t> units;          ///< words covered per tensor
    std::vector<std::vector<float>> host; ///< host staging buffers
    std::vector<int64_t> hostShadow;      ///< shadow index of host buffers (-1 device)
    std::vector<int32_t> outputOf;        ///< output binding per tensor, or -1
    /// Per tensor: its view on variant A and B (device words or host
    /// buffer), built once so that running a node copies no shapes.
    std::vector<TensorView> viewA, viewB;
  };
  std::map<std::string, int64_t, std::less<>> regionBase;
  int64_t unitBytes = 2; ///< arena bytes per word (unitBytesOf)
  std::vector<float> words;
  std::vector<FnLayout> layouts; ///< by function index
  std::unordered_map<const Subgraph *, SubgraphItems> items;
  /// The GPU executors' event mapping, applied in issue order so that a
  /// schedule it cannot express fails here too (host_program.h).
  std::optional<EventBinder> binder;

  /// Per stream, the one shadow word standing for its workspace_<stream>
  /// region (-1: none): a workspace has no data here, and any two uses of
  /// it conflict, so one word is the whole region.
  std::array<int64_t, kStreams> workspaceShadow{-1, -1, -1, -1, -1};
  /// Interleaved mode: the simulation and its hazard checks.
  std::unique_ptr<cpu::InterleavingSimulator> simulator;

  int64_t base(const std::string &region, Variant variant) const {
    if (variant == Variant::b && region == "inputs_a") {
      auto it = regionBase.find("inputs_b");
      if (it != regionBase.end())
        return it->second;
    }
    return regionBase.find(region)->second;
  }
  int64_t wordOf(const Slot &slot, Variant variant) const {
    return base(slot.region, variant) + static_cast<int64_t>(slot.offset / uint64_t(unitBytes));
  }
  /// Copies output `binding` of function `fnIndex` (variant `variant`) to
  /// `out`; outputs without a device slot are skipped.
  void readOutput(const Function &fn, uint32_t fnIndex, size_t binding, Variant variant,
                  StepOutputs &out) const {
    const Binding &b = fn.outputs[binding];
    const TensorInfo &t = fn.tensors[b.tensor];
    const FnLayout &l = layouts[fnIndex];
    int64_t i = variant == Variant::a ? l.indexA[b.tensor] : l.indexB[b.tensor];
    if (i < 0)
      return;
    const float *w = words.data() + i;
    size_t n = size_t(numel(t.shape));
    HostValue &v = out[b.name];
    if (t.dtype == DType::i32) {
      v.ints.resize(n);
      std::memcpy(v.ints.data(), w, n * 4);
    } else {
      v.floats.assign(w, w + n);
    }
  }

  /// First shadow word and word count of tensor `t` of function `fn`.
  std::pair<int64_t, int64_t> shadowRange(uint32_t fn, uint32_t t, Variant variant) const {
    const FnLayout &l = layouts[fn];
    if (l.hostShadow[t] >= 0)
      return {l.hostShadow[t], int64_t(l.host[t].size())};
    return {variant == Variant::a ? l.indexA[t] : l.indexB[t], l.units[t]};
  }
};

CpuExecutor::~CpuExecutor() = default;

Result<std::unique_ptr<CpuExecutor>> CpuExecutor::create(const Artifact &artifact,
                                                         Options options) {
  if (options.replicas && options.interleave)
    return Error("the CPU executor's replicas do not run interleaved (each replica's random "
                 "order would issue its all-reduce buckets in another order)");
  std::unique_ptr<CpuExecutor> ex(new CpuExecutor());
  ex->artifact_ = &artifact;
  ex->options_ = options;
  ex->impl_ = std::make_unique<Impl>();
  Impl &im = *ex->impl_;
  im.binder.emplace(artifact.program);
  const Program &p = artifact.program;

  // Region capacities from the slots that use them.
  im.unitBytes = unitBytesOf(p);
  std::map<std::string, int64_t, std::less<>> need;
  for (const Region &r : p.arena.regions)
    need[r.kind] = 0;
  auto use = [&](const Slot &slot, int64_t elements) {
    int64_t end = static_cast<int64_t>(slot.offset / uint64_t(im.unitBytes)) +
                  slotUnits(slot, elements, im.unitBytes);
    int64_t &n = need[slot.region];
    n = std::max(n, end);
    if (slot.region == "inputs_a") {
      int64_t &b = need["inputs_b"];
      b = std::max(b, end);
    }
  };
  for (const StateEntry &s : p.state)
    if (s.slot)
      use(*s.slot, numel(s.shape));
  for (const Function &f : p.functions)
    for (const TensorInfo &t : f.tensors)
      if (t.slot)
        use(*t.slot, numel(t.shape));
  int64_t total = 0;
  for (auto &[kind, words] : need) {
    im.regionBase[kind] = total;
    total += words;
  }
  im.words.assign(static_cast<size_t>(total), 0.0f);

  // Workspaces, then host staging buffers, get shadow words after the
  // arena's.
  int64_t shadowWords = total;
  for (const Region &r : p.arena.regions)
    for (int s = 0; s < kStreams; ++s)
      if (r.bytes > 0 && r.kind == "workspace_" + std::string(streamName(Stream(s))))
        im.workspaceShadow[size_t(s)] = shadowWords++;
  for (const Function &f : p.functions) {
    Impl::FnLayout layout;
    layout.outputOf.assign(f.tensors.size(), -1);
    for (size_t k = 0; k < f.outputs.size(); ++k)
      layout.outputOf[f.outputs[k].tensor] = int32_t(k);
    for (const TensorInfo &t : f.tensors) {
      int64_t n = numel(t.shape);
      if (t.slot) {
        layout.indexA.push_back(im.wordOf(*t.slot, Variant::a));
        layout.indexB.push_back(im.wordOf(*t.slot, Variant::b));
        layout.units.push_back(slotUnits(*t.slot, n, im.unitBytes));
        layout.host.emplace_back();
        layout.hostShadow.push_back(-1);
      } else {
        layout.indexA.push_back(-1);
        layout.indexB.push_back(-1);
        layout.units.push_back(0);
        layout.host.emplace_back(static_cast<size_t>(n), 0.0f);
        layout.hostShadow.push_back(shadowWords);
        shadowWords += n;
      }
    }
    for (const Subgraph &sg : f.subgraphs) {
      SubgraphItems &si = im.items[&sg];
      for (size_t i = 0; i < sg.nodes.size(); ++i) {
        const Node &node = sg.nodes[i];
        si.firstItem.push_back(uint32_t(si.items.size()));
        Kernel &kernel = si.kernels.emplace_back();
        if (node.kind == Node::Kind::op)
          kernel = kernelOf(node);
        auto add = [&](int part, Stream stream) {
          cpu::WorkItem it;
          it.node = uint32_t(i);
          it.part = part;
          it.stream = stream;
          if (node.kind == Node::Kind::op) {
            it.access = accessOf(node, kernel, part);
            it.access.workspace = im.workspaceShadow[size_t(stream)];
            for (uint32_t t : it.access.writes)
              if (layout.outputOf[t] >= 0)
                it.outputs.push_back(uint32_t(layout.outputOf[t]));
          }
          si.items.push_back(std::move(it));
        };
        if (node.kind == Node::Kind::op && !node.parts.empty()) {
          for (size_t q = 0; q < node.parts.size(); ++q)
            add(int(q), node.parts[q].stream);
        } else {
          add(-1, node.stream);
        }
      }
    }
    im.layouts.push_back(std::move(layout));
  }
  // The arena and the host buffers are in place for good now.
  for (size_t f = 0; f < p.functions.size(); ++f) {
    Impl::FnLayout &l = im.layouts[f];
    const std::vector<TensorInfo> &tensors = p.functions[f].tensors;
    for (size_t t = 0; t < tensors.size(); ++t) {
      auto viewAt = [&](int64_t index) {
        float *data = index < 0 ? l.host[t].data() : im.words.data() + index;
        return TensorView{data, tensors[t].shape, tensors[t].dtype};
      };
      l.viewA.push_back(viewAt(l.indexA[t]));
      l.viewB.push_back(viewAt(l.indexB[t]));
    }
  }
  if (options.interleave)
    im.simulator = std::make_unique<cpu::InterleavingSimulator>(
        p, static_cast<size_t>(shadowWords), options.seed);
  return ex;
}

//===----------------------------------------------------------------------===//
// State
//===----------------------------------------------------------------------===//

namespace {
float readWordAsFloat(const float *w, DType t) {
  if (t == DType::i32) {
    int32_t v;
    std::memcpy(&v, w, 4);
    return static_cast<float>(v);
  }
  return *w;
}
void writeFloatAsWord(float *w, DType t, float value) {
  if (t == DType::i32) {
    int32_t v = static_cast<int32_t>(value);
    std::memcpy(w, &v, 4);
  } else if (t == DType::i1) {
    *w = value != 0 ? 1.0f : 0.0f;
  } else {
    *w = roundTo(t, value);
  }
}
} // namespace

Status CpuExecutor::initialize() {
  Impl &im = *impl_;
  // Parameters, buffers and constants first, then what derives from them
  // (runtime/core/initial_state.cpp, shared with the GPU executors).
  return forEachInitialState(
      *artifact_, [&](const StateEntry &s, const std::vector<float> &values) {
        float *w = im.words.data() + im.wordOf(*s.slot, Variant::a);
        for (size_t i = 0; i < values.size(); ++i)
          writeFloatAsWord(w + i, s.dtype, values[i]);
        return Status::success();
      });
}

Result<std::vector<float>> CpuExecutor::readState(std::string_view name) const {
  const StateEntry *s = artifact_->program.findState(name);
  if (!s || !s->slot)
    return Error("no state entry named '" + std::string(name) + "'");
  const float *w = impl_->words.data() + impl_->wordOf(*s->slot, Variant::a);
  std::vector<float> out(static_cast<size_t>(numel(s->shape)));
  for (size_t i = 0; i < out.size(); ++i)
    out[i] = readWordAsFloat(w + i, s->dtype);
  return out;
}

Status CpuExecutor::writeState(std::string_view name, const std::vector<float> &values) {
  const StateEntry *s = artifact_->program.findState(name);
  if (!s || !s->slot)
    return Error("no state entry named '" + std::string(name) + "'");
  if (int64_t(values.size()) != numel(s->shape))
    return Error("state " + s->name + ": expected " + std::to_string(numel(s->shape)) +
                 " values, got " + std::to_string(values.size()));
  float *w = impl_->words.data() + impl_->wordOf(*s->slot, Variant::a);
  for (size_t i = 0; i < values.size(); ++i)
    writeFloatAsWord(w + i, s->dtype, values[i]);
  return Status::success();
}


//===----------------------------------------------------------------------===//
// Ops
//===----------------------------------------------------------------------===//

namespace {

/// The tensors a node (or one part of a forking node) reads and writes: a
/// node that does not fork all its operands and results (cbr_forward's and
/// conv_bn_stats' prologue operands included).
Access accessOf(const Node &node, const Kernel &k, int part) {
  Access a;
  if (part < 0) {
    a.reads = node.operands;
    a.writes = node.results;
    return a;
  }
  const ValueLayout &ins = node.layout.operands;
  // Single operands and results by their ODS names, optional ones only
  // when present.
  auto reads = [&](std::initializer_list<size_t> operands) {
    for (size_t ods : operands)
      if (ins.has(ods))
        a.reads.push_back(node.operand(ods));
  };
  auto readsResult = [&](size_t ods) { a.reads.push_back(node.result(ods)); };
  auto writes = [&](std::initializer_list<size_t> results) {
    for (size_t ods : results)
      a.writes.push_back(node.result(ods));
  };
  PartRole role = k.roles[size_t(part)];
  if (k.kind == OpKind::conv2d_backward) {
    using namespace op_table::conv2d_backward;
    if (role == PartRole::weight_grad) {
      reads({operand::output_grad, operand::input, operand::filter_grad_acc});
      writes({result::filter_grad});
    } else if (role == PartRole::bias_grad) {
      reads({operand::output_grad, operand::bias_grad_acc});
      writes({result::bias_grad});
    } else if (role == PartRole::input_grad) {
      reads({operand::output_grad, operand::filter, operand::input_grad_addend});
      writes({result::input_grad});
    }
  } else if (k.kind == OpKind::linear_backward) {
    using namespace op_table::linear_backward;
    if (role == PartRole::weight_grad) {
      reads({operand::output_grad, operand::input, operand::weight_grad_acc});
      writes({result::weight_grad});
    } else if (role == PartRole::bias_grad) {
      reads({operand::output_grad, operand::bias_grad_acc});
      writes({result::bias_grad});
    } else if (role == PartRole::input_grad) {
      reads({operand::output_grad, operand::weight});
      writes({result::input_grad});
    }
  } else if (k.kind == OpKind::cbr_backward) {
    using namespace op_table::cbr_backward;
    if (role == PartRole::bn_grad) {
      reads({operand::output_grad, operand::conv_output, operand::gamma, operand::batch_mean,
             operand::batch_inv_std, operand::gamma_grad_acc, operand::beta_grad_acc,
             operand::relu_output, operand::relu_beta});
      writes({result::conv_output_grad, result::gamma_grad, result::beta_grad});
    } else if (role == PartRole::weight_grad) { // at P(input) with an input prologue
      readsResult(result::conv_output_grad);
      reads({operand::input, operand::filter_grad_acc, operand::input_scale,
             operand::input_bias});
      writes({result::filter_grad});
    } else if (role == PartRole::input_grad) {
      readsResult(result::conv_output_grad);
      reads({operand::filter, operand::input_grad_addend});
      writes({result::input_grad});
    }
  }
  return a;
}

} // namespace

struct ExecutorAccess {
  CpuExecutor &ex;
  const Function &fn;
  CpuExecutor::Impl::FnLayout &layout;
  Variant variant;

  const TensorView &view(uint32_t t) const {
    return variant == Variant::a ? layout.viewA[t] : layout.viewB[t];
  }
  float *ptr(uint32_t t) const { return view(t).data; }
  cpu::LabelView labels(uint32_t t) {
    return cpu::LabelView{reinterpret_cast<const int32_t *>(ptr(t)), fn.tensors[t].shape};
  }
  float f(uint32_t t) { return *ptr(t); }
  int32_t i(uint32_t t) {
    int32_t v;
    std::memcpy(&v, ptr(t), 4);
    return v;
  }
  void setF(uint32_t t, float v) { *ptr(t) = roundTo(fn.tensors[t].dtype, v); }
  void setI(uint32_t t, int32_t v) { std::memcpy(ptr(t), &v, 4); }

  KernelStatus copy(uint32_t from, uint32_t to) {
    const TensorInfo &src = fn.tensors[from], &dst = fn.tensors[to];
    int64_t n = numel(dst.shape);
    if (numel(src.shape) != n)
      return KernelStatus{"copy: element counts differ"};
    float *s = ptr(from), *d = ptr(to);
    if (s == d)
      return {};
    if (isFloat(dst.dtype) && isFloat(src.dtype)) {
      for (int64_t k = 0; k < n; ++k)
        d[k] = roundTo(dst.dtype, s[k]);
    } else {
      std::memmove(d, s, size_t(n) * 4);
    }
    return {};
  }

  /// Runs `node` (or its part `part`) with its kernel `k`. Operands and
  /// results by their ODS names (op_table.h), through the node's layout.
  KernelStatus run(const Node &node, const Kernel &k, int part) {
    const ValueLayout &ins = node.layout.operands, &outs = node.layout.results;
    auto in = [&](size_t ods) -> const TensorView & { return view(node.operand(ods)); };
    auto out = [&](size_t ods) -> const TensorView & { return view(node.result(ods)); };
    auto inIfAny = [&](size_t ods) { return ins.has(ods) ? &in(ods) : nullptr; };
    auto outIfAny = [&](size_t ods) { return outs.has(ods) ? &out(ods) : nullptr; };
    // The tensor ids of list operand (result) `ods`, in place in the node's
    // flat list.
    auto inIds = [&](size_t ods) {
      return IdList{node.operands.data() + ins.index(ods), ins.count(ods)};
    };
    auto outIds = [&](size_t ods) {
      return IdList{node.results.data() + outs.index(ods), outs.count(ods)};
    };
    auto views = [&](IdList ids, size_t from, size_t count) {
      std::vector<TensorView> result;
      for (size_t q = from; q < from + count; ++q)
        result.push_back(view(ids[q]));
      return result;
    };
    auto inList = [&](size_t ods) { return views(inIds(ods), 0, ins.count(ods)); };
    auto skipIf = [&](size_t ods) { return ins.has(ods) && f(node.operand(ods)) != 0; };

    if (part >= 0) {
      PartRole role = k.roles[size_t(part)];
      switch (k.kind) {
      case OpKind::linear_backward: {
        using namespace op_table::linear_backward;
        if (role == PartRole::weight_grad)
          return cpu::linearBackwardWeight(in(operand::output_grad), in(operand::input),
                                           in(operand::weight_grad_acc), out(result::weight_grad));
        if (role == PartRole::bias_grad)
          return cpu::linearBackwardBias(in(operand::output_grad), in(operand::bias_grad_acc),
                                         out(result::bias_grad));
        if (role == PartRole::input_grad)
          return cpu::linearBackwardInput(in(operand::output_grad), in(operand::weight),
                                          out(result::input_grad));
        break;
      }
      case OpKind::conv2d_backward: {
        using namespace op_table::conv2d_backward;
        if (role == PartRole::weight_grad)
          return cpu::conv2dBackwardFilter(in(operand::output_grad), in(operand::input),
                                           in(operand::filter_grad_acc), k.conv,
                                           out(result::filter_grad));
        if (role == PartRole::bias_grad)
          return cpu::conv2dBackwardBias(in(operand::output_grad), in(operand::bias_grad_acc),
                                         out(result::bias_grad));
        if (role == PartRole::input_grad)
          return cpu::conv2dBackwardInput(in(operand::output_grad), in(operand::filter), k.conv,
                                          out(result::input_grad),
                                          inIfAny(operand::input_grad_addend));
        break;
      }
      case OpKind::cbr_backward: {
        using namespace op_table::cbr_backward;
        if (role == PartRole::bn_grad) {
          cpu::CbrBackwardOptions forms;
          forms.reluOutput = inIfAny(operand::relu_output);
          forms.reluBeta = inIfAny(operand::relu_beta);
          forms.prologueMask = k.prologueMask;
          return cpu::cbrBackwardBatchNorm(
              in(operand::output_grad), in(operand::conv_output), in(operand::gamma),
              in(operand::batch_mean), in(operand::batch_inv_std), in(operand::gamma_grad_acc),
              in(operand::beta_grad_acc), forms, out(result::conv_output_grad),
              out(result::gamma_grad), out(result::beta_grad));
        }
        if (role == PartRole::weight_grad) // at P(input) with an input prologue
          return cpu::cbrBackwardFilter(out(result::conv_output_grad), in(operand::input),
                                        inIfAny(operand::input_scale),
                                        inIfAny(operand::input_bias),
                                        in(operand::filter_grad_acc), k.conv,
                                        out(result::filter_grad));
        if (role == PartRole::input_grad)
          return cpu::conv2dBackwardInput(out(result::conv_output_grad), in(operand::filter),
                                          k.conv, out(result::input_grad),
                                          inIfAny(operand::input_grad_addend));
        break;
      }
      default:
        break;
      }
      return KernelStatus{"unknown part '" + node.parts[size_t(part)].role + "' of " + node.op};
    }

    switch (k.kind) {
    case OpKind::copy: {
      using namespace op_table::host_to_device;
      return copy(node.operand(operand::input), node.result(result::result));
    }
    case OpKind::all_reduce_mean: { // one replica: the mean is the value
      using namespace op_table::all_reduce_mean;
      const IdList from = inIds(operand::inputs), to = outIds(result::results);
      for (size_t q = 0; q < from.size(); ++q) {
        KernelStatus s = copy(from[q], to[q]);
        if (!s.ok())
          return s;
      }
      if (!ex.options_.replicas)
        return {};
      std::vector<cpu::ReplicaGroup::Buffer> buffers;
      for (uint32_t t : to)
        buffers.push_back({ptr(t), size_t(numel(fn.tensors[t].shape))});
      if (Status st = ex.options_.replicas->allReduceMean(ex.options_.replicaRank, buffers);
          !st.ok())
        return KernelStatus{st.error().message()};
      return {};
    }
    case OpKind::conv2d: {
      using namespace op_table::conv2d;
      return cpu::conv2d(in(operand::input), in(operand::filter), inIfAny(operand::bias), k.conv,
                         out(result::result));
    }
    case OpKind::linear: {
      using namespace op_table::linear;
      return cpu::linear(in(operand::input), in(operand::weight), inIfAny(operand::bias),
                         out(result::result));
    }
    case OpKind::batch_norm: {
      using namespace op_table::batch_norm;
      return cpu::batchNorm(in(operand::input), in(operand::weight), in(operand::bias), k.epsilon,
                            out(result::result));
    }
    case OpKind::batch_norm_train: {
      using namespace op_table::batch_norm_train;
      return cpu::batchNormTrain(in(operand::input), in(operand::weight), in(operand::bias),
                                 k.epsilon, out(result::result), out(result::batch_mean),
                                 out(result::batch_inv_std));
    }
    case OpKind::batch_norm_inference: {
      using namespace op_table::batch_norm_inference;
      return cpu::batchNormInference(in(operand::input), in(operand::weight), in(operand::bias),
                                     in(operand::running_mean), in(operand::running_var),
                                     k.epsilon, out(result::result));
    }
    case OpKind::update_running_stats: {
      using namespace op_table::update_running_stats;
      return cpu::updateRunningStats(in(operand::running_mean), in(operand::running_var),
                                     in(operand::batch_mean), in(operand::batch_inv_std),
                                     k.epsilon, k.momentum, k.count,
                                     out(result::new_running_mean),
                                     out(result::new_running_var));
    }
    case OpKind::batch_norm_backward: {
      using namespace op_table::batch_norm_backward;
      return cpu::batchNormBackward(
          in(operand::output_grad), in(operand::input), in(operand::weight),
          in(operand::batch_mean), in(operand::batch_inv_std), in(operand::weight_grad_acc),
          in(operand::bias_grad_acc), out(result::input_grad), out(result::weight_grad),
          out(result::bias_grad));
    }
    case OpKind::relu: {
      using namespace op_table::relu;
      return cpu::relu(in(operand::input), out(result::result));
    }
    case OpKind::tanh: {
      using namespace op_table::tanh;
      return cpu::tanh(in(operand::input), out(result::result));
    }
    case OpKind::silu: {
      using namespace op_table::silu;
      return cpu::silu(in(operand::input), out(result::result));
    }
    case OpKind::sigmoid: {
      using namespace op_table::sigmoid;
      return cpu::sigmoid(in(operand::input), out(result::result));
    }
    case OpKind::hardtanh: {
      using namespace op_table::hardtanh;
      return cpu::hardtanh(in(operand::input), k.minVal, k.maxVal, out(result::result));
    }
    case OpKind::hardswish: {
      using namespace op_table::hardswish;
      return cpu::hardswish(in(operand::input), out(result::result));
    }
    case OpKind::hardsigmoid: {
      using namespace op_table::hardsigmoid;
      return cpu::hardsigmoid(in(operand::input), out(result::result));
    }
    case OpKind::relu_backward: {
      using namespace op_table::relu_backward;
      return cpu::reluBackward(in(operand::output_grad), in(operand::saved),
                               out(result::input_grad));
    }
    case OpKind::tanh_backward: {
      using namespace op_table::tanh_backward;
      return cpu::tanhBackward(in(operand::output_grad), in(operand::saved),
                               out(result::input_grad));
    }
    case OpKind::silu_backward: {
      using namespace op_table::silu_backward;
      return cpu::siluBackward(in(operand::output_grad), in(operand::saved),
                               out(result::input_grad));
    }
    case OpKind::sigmoid_backward: {
      using namespace op_table::sigmoid_backward;
      return cpu::sigmoidBackward(in(operand::output_grad), in(operand::saved),
                                  out(result::input_grad));
    }
    case OpKind::hardtanh_backward: {
      using namespace op_table::hardtanh_backward;
      return cpu::hardtanhBackward(in(operand::output_grad), in(operand::saved), k.minVal,
                                   k.maxVal, out(result::input_grad));
    }
    case OpKind::hardswish_backward: {
      using namespace op_table::hardswish_backward;
      return cpu::hardswishBackward(in(operand::output_grad), in(operand::saved),
                                    out(result::input_grad));
    }
    case OpKind::hardsigmoid_backward: {
      using namespace op_table::hardsigmoid_backward;
      return cpu::hardsigmoidBackward(in(operand::output_grad), in(operand::saved),
                                      out(result::input_grad));
    }
    case OpKind::dropout_backward: {
      using namespace op_table::dropout_backward;
      return cpu::dropoutBackward(in(operand::output_grad), in(operand::saved),
                                  out(result::input_grad));
    }
    case OpKind::stochastic_depth_backward: {
      using namespace op_table::stochastic_depth_backward;
      return cpu::stochasticDepthBackward(in(operand::output_grad), in(operand::mask),
                                          out(result::input_grad));
    }
    case OpKind::add: {
      using namespace op_table::add;
      return cpu::add(in(operand::lhs), in(operand::rhs), out(result::result));
    }
    case OpKind::channel_mul: {
      using namespace op_table::channel_mul;
      return cpu::channelMul(in(operand::input), in(operand::scale), out(result::result));
    }
    case OpKind::channel_mul_backward: {
      using namespace op_table::channel_mul_backward;
      return cpu::channelMulBackward(in(operand::output_grad), in(operand::input),
                                     in(operand::scale), out(result::input_grad),
                                     out(result::scale_grad));
    }
    case OpKind::cast: {
      using namespace op_table::cast;
      return cpu::cast(in(operand::input), out(result::result));
    }
    case OpKind::pad_channels: {
      using namespace op_table::pad_channels;
      return cpu::padChannels(in(operand::input), out(result::result), inIfAny(operand::mean),
                              inIfAny(operand::std));
    }
    case OpKind::normalize_images: {
      using namespace op_table::normalize_images;
      return cpu::normalizeImages(in(operand::input), in(operand::mean), in(operand::std),
                                  out(result::result));
    }
    case OpKind::multi_cast: { // rn.cast of each tensor
      using namespace op_table::multi_cast;
      const IdList from = inIds(operand::inputs), to = outIds(result::results);
      for (size_t q = 0; q < to.size(); ++q)
        if (KernelStatus s = cpu::cast(view(from[q]), view(to[q])); !s.ok())
          return s;
      return {};
    }
    case OpKind::reshape: {
      using namespace op_table::reshape;
      return cpu::reshape(in(operand::input), out(result::result));
    }
    case OpKind::flatten: {
      using namespace op_table::flatten;
      return cpu::flatten(in(operand::input), out(result::result));
    }
    case OpKind::zero:
      return cpu::zero(out(op_table::zero::result::result));
    case OpKind::multi_zero: // rn.zero of each tensor
      for (uint32_t t : outIds(op_table::multi_zero::result::results))
        if (KernelStatus s = cpu::zero(view(t)); !s.ok())
          return s;
      return {};
    case OpKind::dropout_train: {
      using namespace op_table::dropout_train;
      // See Note [Random streams] in runtime/cpu/cpu_kernels.h.
      cpu::RngKey key{ex.options_.seed, uint64_t(int64_t(i(node.operand(operand::step)))) *
                                                k.randomCount +
                                            k.randomIndex};
      return cpu::dropoutTrain(in(operand::input), k.p, key, out(result::result),
                               out(result::mask));
    }
    case OpKind::stochastic_depth_train: {
      using namespace op_table::stochastic_depth_train;
      // See Note [Random streams] in runtime/cpu/cpu_kernels.h.
      cpu::RngKey key{ex.options_.seed, uint64_t(int64_t(i(node.operand(operand::step)))) *
                                                k.randomCount +
                                            k.randomIndex};
      return cpu::stochasticDepthTrain(in(operand::input), k.p, key, out(result::result),
                                       out(result::mask));
    }
    case OpKind::max_pool2d: {
      using namespace op_table::max_pool2d;
      return cpu::maxPool2d(in(operand::input), k.pool, out(result::result));
    }
    case OpKind::avg_pool2d: {
      using namespace op_table::avg_pool2d;
      return cpu::avgPool2d(in(operand::input), k.pool, out(result::result));
    }
    case OpKind::max_pool2d_backward: {
      using namespace op_table::max_pool2d_backward;
      return cpu::maxPool2dBackward(in(operand::output_grad), in(operand::input), k.pool,
                                    out(result::input_grad));
    }
    case OpKind::avg_pool2d_backward: {
      using namespace op_table::avg_pool2d_backward;
      return cpu::avgPool2dBackward(in(operand::output_grad), k.pool, out(result::input_grad));
    }
    case OpKind::adaptive_avg_pool2d: {
      using namespace op_table::adaptive_avg_pool2d;
      return cpu::adaptiveAvgPool2d(in(operand::input), out(result::result));
    }
    case OpKind::adaptive_avg_pool2d_backward: {
      using namespace op_table::adaptive_avg_pool2d_backward;
      return cpu::adaptiveAvgPool2dBackward(in(operand::output_grad), out(result::input_grad));
    }
    case OpKind::global_avg_pool: {
      using namespace op_table::global_avg_pool;
      return cpu::globalAvgPool(in(operand::input), out(result::result));
    }
    case OpKind::global_avg_pool_backward: {
      using namespace op_table::global_avg_pool_backward;
      return cpu::globalAvgPoolBackward(in(operand::output_grad), out(result::input_grad));
    }
    case OpKind::softmax_cross_entropy: {
      using namespace op_table::softmax_cross_entropy;
      float loss = 0;
      KernelStatus s = cpu::softmaxCrossEntropy(
          in(operand::logits), labels(node.operand(operand::labels)), k.labelSmoothing, loss);
      if (s.ok())
        setF(node.result(result::loss), loss);
      return s;
    }
    case OpKind::softmax_cross_entropy_backward: {
      using namespace op_table::softmax_cross_entropy_backward;
      return cpu::softmaxCrossEntropyBackward(
          in(operand::logits), labels(node.operand(operand::labels)),
          ins.has(operand::scale) ? f(node.operand(operand::scale)) : 1.0f, k.labelSmoothing,
          out(result::logits_grad));
    }
    case OpKind::count_correct: {
      using namespace op_table::count_correct;
      int32_t correct = 0;
      KernelStatus s =
          cpu::countCorrect(in(operand::logits), labels(node.operand(operand::labels)), correct);
      if (s.ok())
        setI(node.result(result::correct), correct);
      return s;
    }
    case OpKind::check_finite: {
      using namespace op_table::check_finite;
      *ptr(node.result(result::found_non_finite)) =
          cpu::checkFinite(inList(operand::inputs)) ? 1.0f : 0.0f;
      return {};
    }
    case OpKind::unscale: {
      using namespace op_table::unscale;
      return cpu::unscale(in(operand::grad), f(node.operand(operand::scale)),
                          out(result::result));
    }
    case OpKind::multi_unscale: { // rn.unscale of each grad by the scale
      using namespace op_table::multi_unscale;
      const float scale = f(node.operand(operand::scale));
      const IdList grads = inIds(operand::grads), to = outIds(result::results);
      for (size_t q = 0; q < to.size(); ++q)
        if (KernelStatus s = cpu::unscale(view(grads[q]), scale, view(to[q])); !s.ok())
          return s;
      return {};
    }
    case OpKind::update_loss_scale: {
      using namespace op_table::update_loss_scale;
      float scale = 0;
      int32_t good = 0;
      KernelStatus s = cpu::updateLossScale(
          f(node.operand(operand::scale)), i(node.operand(operand::good_steps)),
          f(node.operand(operand::found_non_finite)) != 0, k.growth, k.backoff,
          k.growthInterval, scale, good);
      if (s.ok()) {
        setF(node.result(result::new_scale), scale);
        setI(node.result(result::new_good_steps), good);
      }
      return s;
    }
    case OpKind::sgd_update: {
      using namespace op_table::sgd_update;
      cpu::SgdAttrs a{k.momentum, k.weightDecay, k.nesterov};
      return cpu::sgdUpdate(in(operand::param), in(operand::grad),
                            inIfAny(operand::momentum_buffer), f(node.operand(operand::lr)),
                            skipIf(operand::skip_if), a, out(result::new_param),
                            outIfAny(result::new_momentum_buffer));
    }
    case OpKind::multi_sgd_update: {
      // new_values: the new params, then (with momentum) the new buffers.
      using namespace op_table::multi_sgd_update;
      cpu::SgdAttrs a{k.momentum, k.weightDecay, k.nesterov};
      const IdList newValues = outIds(result::new_values);
      const size_t n = ins.count(operand::params);
      return cpu::multiSgdUpdate(inList(operand::params), inList(operand::grads),
                                 inList(operand::momentum_buffers),
                                 f(node.operand(operand::lr)), skipIf(operand::skip_if), a,
                                 views(newValues, 0, n),
                                 views(newValues, n, newValues.size() - n));
    }
    case OpKind::adamw_update: {
      using namespace op_table::adamw_update;
      cpu::AdamWAttrs a{k.beta1, k.beta2, k.epsilon, k.weightDecay};
      return cpu::adamwUpdate(in(operand::param), in(operand::grad), in(operand::exp_avg),
                              in(operand::exp_avg_sq), f(node.operand(operand::lr)),
                              i(node.operand(operand::step)), skipIf(operand::skip_if), a,
                              out(result::new_param), out(result::new_exp_avg),
                              out(result::new_exp_avg_sq));
    }
    case OpKind::multi_adamw_update: {
      // new_values: the new params, exp_avgs, then exp_avg_sqs.
      using namespace op_table::multi_adamw_update;
      cpu::AdamWAttrs a{k.beta1, k.beta2, k.epsilon, k.weightDecay};
      const IdList newValues = outIds(result::new_values);
      const size_t n = ins.count(operand::params);
      return cpu::multiAdamwUpdate(
          inList(operand::params), inList(operand::grads), inList(operand::exp_avgs),
          inList(operand::exp_avg_sqs), f(node.operand(operand::lr)),
          i(node.operand(operand::step)), skipIf(operand::skip_if), a, views(newValues, 0, n),
          views(newValues, n, n), views(newValues, 2 * n, n));
    }
    case OpKind::lars_update: {
      using namespace op_table::lars_update;
      cpu::LarsAttrs a{k.momentum, k.weightDecay, k.trustCoefficient, k.epsilon};
      return cpu::larsUpdate(in(operand::param), in(operand::grad), in(operand::momentum_buffer),
                             f(node.operand(operand::lr)), skipIf(operand::skip_if), a,
                             out(result::new_param), out(result::new_momentum_buffer));
    }
    case OpKind::multi_lars_update: {
      // new_values: the new params, then the new momentum buffers.
      using namespace op_table::multi_lars_update;
      cpu::LarsAttrs a{k.momentum, k.weightDecay, k.trustCoefficient, k.epsilon};
      const IdList newValues = outIds(result::new_values);
      const size_t n = ins.count(operand::params);
      return cpu::multiLarsUpdate(inList(operand::params), inList(operand::grads),
                                  inList(operand::momentum_buffers),
                                  f(node.operand(operand::lr)), skipIf(operand::skip_if), a,
                                  views(newValues, 0, n), views(newValues, n, n));
    }
    case OpKind::ema_update: {
      using namespace op_table::ema_update;
      return cpu::emaUpdate(in(operand::average), in(operand::param), k.decay,
                            out(result::new_average));
    }
    case OpKind::multi_ema_update: { // rn.ema_update of (averages[q], params[q])
      using namespace op_table::multi_ema_update;
      const IdList averages = inIds(operand::averages), params = inIds(operand::params),
                   to = outIds(result::results);
      for (size_t q = 0; q < to.size(); ++q)
        if (KernelStatus s = cpu::emaUpdate(view(averages[q]), view(params[q]), k.decay,
                                            view(to[q]));
            !s.ok())
          return s;
      return {};
    }
    case OpKind::cbr_forward: {
      using namespace op_table::cbr_forward;
      return cpu::cbrForward(in(operand::input), in(operand::filter), in(operand::gamma),
                             in(operand::beta), inIfAny(operand::prologue_scale),
                             inIfAny(operand::prologue_bias), k.conv, k.epsilon, k.relu,
                             out(result::result), out(result::conv_output),
                             out(result::batch_mean), out(result::batch_inv_std));
    }
    case OpKind::conv_bn_stats: {
      using namespace op_table::conv_bn_stats;
      return cpu::convBnStats(in(operand::input), in(operand::filter),
                              inIfAny(operand::prologue_scale), inIfAny(operand::prologue_bias),
                              k.conv, k.epsilon, out(result::conv_output),
                              out(result::batch_mean), out(result::batch_inv_std));
    }
    case OpKind::bn_scale_bias: {
      using namespace op_table::bn_scale_bias;
      return cpu::bnScaleBias(in(operand::batch_mean), in(operand::batch_inv_std),
                              in(operand::gamma), in(operand::beta), out(result::scale),
                              out(result::bias));
    }
    case OpKind::cbr_inference: {
      using namespace op_table::cbr_inference;
      return cpu::cbrInference(in(operand::input), in(operand::filter), in(operand::gamma),
                               in(operand::beta), in(operand::running_mean),
                               in(operand::running_var), k.conv, k.epsilon, k.relu,
                               out(result::result));
    }
    case OpKind::bn_add_relu: {
      using namespace op_table::bn_add_relu;
      return cpu::bnAddRelu(in(operand::input), in(operand::gamma), in(operand::beta),
                            in(operand::shortcut), k.epsilon, out(result::result),
                            out(result::batch_mean), out(result::batch_inv_std));
    }
    case OpKind::bn_add_relu_backward: {
      using namespace op_table::bn_add_relu_backward;
      return cpu::bnAddReluBackward(
          in(operand::output_grad), in(operand::relu_output), in(operand::input),
          in(operand::gamma), in(operand::batch_mean), in(operand::batch_inv_std),
          in(operand::gamma_grad_acc), in(operand::beta_grad_acc), out(result::input_grad),
          out(result::shortcut_grad), out(result::gamma_grad), out(result::beta_grad));
    }
    case OpKind::bn_add_relu_inference: {
      using namespace op_table::bn_add_relu_inference;
      return cpu::bnAddReluInference(in(operand::input), in(operand::gamma), in(operand::beta),
                                     in(operand::running_mean), in(operand::running_var),
                                     in(operand::shortcut), k.epsilon, out(result::result));
    }
    case OpKind::linear_backward:
    case OpKind::conv2d_backward:
    case OpKind::cbr_backward:
      for (size_t q = 0; q < node.parts.size(); ++q) {
        KernelStatus s = run(node, k, int(q));
        if (!s.ok())
          return s;
      }
      return {};
    case OpKind::unknown:
      break;
    }
    return KernelStatus{"the CPU executor has no kernel for op '" + node.op + "'"};
  }
};

//===----------------------------------------------------------------------===//
// Host programs
//===----------------------------------------------------------------------===//

namespace {

/// Checks `inputs` against the host inputs of `fn` and, with `host`, stores
/// them in the staging buffers (rounded to the input's dtype). Inputs not
/// named keep their buffer's contents.
Status stageInputs(const Function &fn, std::vector<std::vector<float>> *host,
                   const std::map<std::string, HostValue> &inputs) {
  for (const Binding &b : fn.inputs) {
    auto it = inputs.find(b.name);
    if (it == inputs.end())
      continue;
    const TensorInfo &t = fn.tensors[b.tensor];
    if (!t.isHost())
      return Error("function " + fn.name + ": input " + b.name + " is not a host input");
    size_t n = size_t(numel(t.shape));
    const HostValue &value = it->second;
    if (value.onDevice)
      return Error("function " + fn.name + ": input " + b.name +
                   " is in device memory, which the cpu executor cannot read");
    if (value.elements(t.dtype) != n)
      return Error("function " + fn.name + ": input " + b.name + " needs " +
                   std::to_string(n) + " " + std::string(dtypeName(t.dtype)) +
                   " values, got " + std::to_string(value.elements(t.dtype)));
    if (t.dtype == DType::i32) {
      if (host)
        std::memcpy((*host)[b.tensor].data(), value.intData(), n * 4);
    } else if (t.dtype == DType::u8) {
      // Each byte becomes the float of its value (0 to 255, exact).
      if (host) {
        std::vector<float> &buffer = (*host)[b.tensor];
        const uint8_t *in = value.byteData();
        for (size_t k = 0; k < n; ++k)
          buffer[k] = float(in[k]);
      }
    } else {
      if (host) {
        std::vector<float> &buffer = (*host)[b.tensor];
        const float *in = value.floatData();
        for (size_t k = 0; k < n; ++k)
          buffer[k] = isFloat(t.dtype) ? roundTo(t.dtype, in[k]) : (in[k] != 0 ? 1.0f : 0.0f);
      }
    }
  }
  return Status::success();
}

} // namespace

Status CpuExecutor::run(const HostProgram &program) {
  return options_.interleave ? runInterleaved(program) : runSequential(program);
}

Status CpuExecutor::runSequential(const HostProgram &program) {
  const Program &p = artifact_->program;
  Impl &im = *impl_;
  using Kind = HostAction::Kind;
  for (const HostAction &a : program.actions) {
    const Function &fn = p.functions[a.fn];
    switch (a.kind) {
    case Kind::stage: {
      Status s = stageInputs(fn, &im.layouts[a.fn].host, *a.inputs);
      if (!s.ok())
        return s;
      break;
    }
    case Kind::launch: {
      for (const Node &n : a.sg->nodes) {
        if (n.kind == Node::Kind::event_record) {
          im.binder->record(n, *a.sg, a.variant, a.step);
        } else if (n.kind == Node::Kind::event_wait) {
          Result<std::vector<EventSlot>> bound = im.binder->wait(n, *a.sg, a.step);
          if (!bound.ok())
            return bound.error().withContext("function " + fn.name);
        }
      }
      ExecutorAccess acc{*this, fn, im.layouts[a.fn], a.variant};
      const SubgraphItems &si = im.items.at(a.sg);
      for (const cpu::WorkItem &it : si.items) {
        const Node &n = a.sg->nodes[it.node];
        if (n.kind != Node::Kind::op)
          continue;
        ++executedNodes_;
        KernelStatus s = acc.run(n, si.kernels[it.node], it.part);
        if (!s.ok())
          return Error(cpu::describeItem(p, {a.fn, a.sg, a.variant, a.step}, it.node, it.part) +
                       ": " + s.error);
        if (a.outputs)
          for (uint32_t o : it.outputs)
            im.readOutput(fn, a.fn, o, a.variant, *a.outputs);
      }
      break;
    }
    case Kind::wait:
      break;
    case Kind::read:
      for (size_t o = 0; o < fn.outputs.size(); ++o)
        im.readOutput(fn, a.fn, o, a.variant, *a.outputs);
      break;
    }
  }
  return Status::success();
}

Status CpuExecutor::runInterleaved(const HostProgram &program) {
  const Program &p = artifact_->program;
  Impl &im = *impl_;
  // The executor's side of the simulation: the kernels and the data.
  struct Device final : cpu::SimulatedExecutor {
    CpuExecutor &ex;
    const Program &p;
    Impl &im;
    Device(CpuExecutor &ex, const Program &p, Impl &im) : ex(ex), p(p), im(im) {}

    const cpu::SubgraphWork &work(const Subgraph &sg) const override { return im.items.at(&sg); }
    std::pair<int64_t, int64_t> shadowRange(uint32_t fn, uint32_t t,
                                            Variant variant) const override {
      return im.shadowRange(fn, t, variant);
    }
    Status runItem(const cpu::LaunchInfo &l, const cpu::WorkItem &it,
                   StepOutputs *outputs) override {
      const Function &fn = p.functions[l.fn];
      ExecutorAccess acc{ex, fn, im.layouts[l.fn], l.variant};
      ++ex.executedNodes_;
      KernelStatus ks = acc.run(l.sg->nodes[it.node], im.items.at(l.sg).kernels[it.node], it.part);
      if (!ks.ok())
        return Error(cpu::describeItem(p, l, it.node, it.part) + ": " + ks.error);
      if (outputs)
        for (uint32_t o : it.outputs)
          im.readOutput(fn, l.fn, o, l.variant, *outputs);
      return Status::success();
    }
    Status stage(const HostAction &a) override {
      return stageInputs(p.functions[a.fn], &im.layouts[a.fn].host, *a.inputs);
    }
    void readOutput(const HostAction &a, size_t binding) override {
      im.readOutput(p.functions[a.fn], a.fn, binding, a.variant, *a.outputs);
    }
  } device(*this, p, im);
  return im.simulator->run(program, device);
}

//===----------------------------------------------------------------------===//
// Steps
//===----------------------------------------------------------------------===//

uint64_t CpuExecutor::hazards() const {
  return impl_->simulator ? impl_->simulator->hazards() : 0;
}

Status CpuExecutor::issue(const HostProgram &program) { return run(program); }

// Launches run to completion inside issue(): every issued step is complete
// and its outputs were written by the nodes and reads that produced them.
Result<bool> CpuExecutor::stepComplete(const PendingStep &) { return true; }
Status CpuExecutor::waitStep(const PendingStep &) { return Status::success(); }
Status CpuExecutor::collect(PendingStep &) { return Status::success(); }
Status CpuExecutor::synchronize() { return Status::success(); }




Status CpuExecutor::runSchedule(std::string_view name,
                                const std::map<std::string, HostValue> &inputs,
                                std::optional<Variant> variant) {
  const Program &p = artifact_->program;
  const Schedule *s = p.findSchedule(name);
  const Function *fn = s ? p.findFunction(s->function) : nullptr;
  int64_t step = fn ? stepCounter(uint32_t(fn - p.functions.data())) : 0;
  Result<HostProgram> program = buildScheduleProgram(p, name, inputs, step, variant);
  if (!program.ok())
    return program.error();
  return run(*program);
}

} // namespace rn
