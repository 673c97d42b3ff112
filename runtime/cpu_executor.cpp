//===- cpu_executor.cpp - Reference executor of an artifact on the CPU ----===//
//
// See cpu_executor.h for the memory mapping and the interleaving model.
//
//===----------------------------------------------------------------------===//

#include "runtime/cpu_executor.h"

#include "runtime/cpu_kernels.h"
#include "runtime/dtype.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <deque>
#include <limits>
#include <unordered_map>

namespace rn {

using json = nlohmann::json;
using cpu::KernelStatus;
using cpu::TensorView;

namespace {

constexpr int kStreams = 5;
using Clock = std::array<uint32_t, kStreams>;

int64_t numel(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

bool isFloat(DType t) { return t == DType::f32 || t == DType::f16 || t == DType::bf16; }

/// Words a slot covers in the index space (data and shadow).
int64_t slotUnits(const Slot &slot, int64_t elements) {
  return std::max<int64_t>(elements, static_cast<int64_t>((slot.bytes + 1) / 2));
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

/// Per-element access record of the hazard detector (FastTrack-like).
struct Shadow {
  int32_t wNode = -1;
  uint32_t wClock = 0;
  uint8_t wStream = 0;
  std::array<int32_t, kStreams> rNode{-1, -1, -1, -1, -1};
  std::array<uint32_t, kStreams> rClock{};
};

/// What one work item reads and writes (tensor ids).
struct Access {
  std::vector<uint32_t> reads, writes;
};

} // namespace

struct CpuExecutor::Impl {
  struct FnLayout {
    std::vector<int64_t> indexA, indexB; ///< word index per tensor (-1 host)
    std::vector<int64_t> units;          ///< words covered per tensor
    std::vector<std::vector<float>> host; ///< host staging buffers
    std::unordered_map<const Node *, uint64_t> dropoutIndex;
    uint64_t numDropouts = 0;
  };
  std::map<std::string, int64_t, std::less<>> regionBase;
  std::vector<float> words;
  std::vector<FnLayout> layouts; ///< by function index
  std::vector<std::string> nodeNames;
  std::unordered_map<const Node *, int32_t> nodeIds;

  // Interleaving.
  std::mt19937_64 rng;
  std::vector<Shadow> shadow;
  std::array<Clock, kStreams> clocks{};
  std::vector<Clock> eventClocks;
  std::string firstHazard;
  uint64_t hazards = 0;
  int32_t step = 0;

  int64_t base(const std::string &region, Variant variant) const {
    if (variant == Variant::b && region == "inputs_a") {
      auto it = regionBase.find("inputs_b");
      if (it != regionBase.end())
        return it->second;
    }
    return regionBase.find(region)->second;
  }
  int64_t wordOf(const Slot &slot, Variant variant) const {
    return base(slot.region, variant) + static_cast<int64_t>(slot.offset / 2);
  }
};

CpuExecutor::~CpuExecutor() = default;

Result<std::unique_ptr<CpuExecutor>> CpuExecutor::create(const Artifact &artifact,
                                                         Options options) {
  std::unique_ptr<CpuExecutor> ex(new CpuExecutor());
  ex->artifact_ = &artifact;
  ex->options_ = options;
  ex->impl_ = std::make_unique<Impl>();
  Impl &im = *ex->impl_;
  const Program &p = artifact.program;

  // Region capacities from the slots that use them.
  std::map<std::string, int64_t, std::less<>> need;
  for (const Region &r : p.arena.regions)
    need[r.kind] = 0;
  auto use = [&](const Slot &slot, int64_t elements) {
    int64_t end = static_cast<int64_t>(slot.offset / 2) + slotUnits(slot, elements);
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

  for (const Function &f : p.functions) {
    Impl::FnLayout layout;
    for (const TensorInfo &t : f.tensors) {
      int64_t n = numel(t.shape);
      if (t.slot) {
        layout.indexA.push_back(im.wordOf(*t.slot, Variant::a));
        layout.indexB.push_back(im.wordOf(*t.slot, Variant::b));
        layout.units.push_back(slotUnits(*t.slot, n));
        layout.host.emplace_back();
      } else {
        layout.indexA.push_back(-1);
        layout.indexB.push_back(-1);
        layout.units.push_back(0);
        layout.host.emplace_back(static_cast<size_t>(n), 0.0f);
      }
    }
    for (const Subgraph &sg : f.subgraphs)
      for (size_t i = 0; i < sg.nodes.size(); ++i) {
        const Node &node = sg.nodes[i];
        im.nodeIds[&node] = static_cast<int32_t>(im.nodeNames.size());
        std::string name = "function " + f.name + ", subgraph " + sg.name +
                           ", node " + std::to_string(i);
        if (node.kind == Node::Kind::op)
          name += " (" + node.op + ")";
        im.nodeNames.push_back(std::move(name));
        if (node.kind == Node::Kind::op &&
            (node.op == "dropout" || node.op == "dropout_train"))
          layout.dropoutIndex[&node] = layout.numDropouts++;
      }
    im.layouts.push_back(std::move(layout));
  }
  im.rng.seed(options.seed);
  if (options.interleave) {
    im.shadow.assign(static_cast<size_t>(total), Shadow());
    im.eventClocks.assign(p.numEvents, Clock{});
  }
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
  const Program &p = artifact_->program;
  Impl &im = *impl_;
  auto fill = [&](const StateEntry &s, auto valueAt) {
    float *w = im.words.data() + im.wordOf(*s.slot, Variant::a);
    int64_t n = numel(s.shape);
    for (int64_t i = 0; i < n; ++i)
      writeFloatAsWord(w + i, s.dtype, valueAt(i));
  };
  // Parameters, buffers and constants first, then what derives from them.
  for (int pass = 0; pass < 2; ++pass)
    for (const StateEntry &s : p.state) {
      if (!s.slot)
        continue;
      bool derived = s.init.kind == "derived";
      if (derived != (pass == 1))
        continue;
      std::string where = "state " + s.name;
      if (derived) {
        const StateEntry *of = p.findState(s.of);
        if (!of || !of->slot || numel(of->shape) != numel(s.shape))
          return Error(where + ": derived from missing or mismatched state '" + s.of + "'");
        const float *src = im.words.data() + im.wordOf(*of->slot, Variant::a);
        DType srcType = of->dtype;
        fill(s, [&](int64_t i) { return readWordAsFloat(src + i, srcType); });
        continue;
      }
      const SafetensorsEntry *e = artifact_->tensors.find(s.name);
      if (e) {
        std::string_view bytes = artifact_->tensors.bytesOf(*e);
        int64_t n = numel(s.shape);
        if (numel(e->shape) != n || bytes.size() < size_t(n) * elementSize(e->dtype))
          return Error(where + ": the artifact's tensor has the wrong size");
        const char *d = bytes.data();
        DType et = e->dtype;
        fill(s, [&](int64_t i) -> float {
          switch (et) {
          case DType::f32: {
            float v;
            std::memcpy(&v, d + 4 * i, 4);
            return v;
          }
          case DType::f16: {
            uint16_t v;
            std::memcpy(&v, d + 2 * i, 2);
            return halfToFloat(v);
          }
          case DType::bf16: {
            uint16_t v;
            std::memcpy(&v, d + 2 * i, 2);
            return bfloat16ToFloat(v);
          }
          case DType::i32: {
            int32_t v;
            std::memcpy(&v, d + 4 * i, 4);
            return static_cast<float>(v);
          }
          case DType::i1:
            return d[i] ? 1.0f : 0.0f;
          }
          return 0.0f;
        });
        continue;
      }
      if (s.init.kind == "zeros")
        fill(s, [](int64_t) { return 0.0f; });
      else if (s.init.kind == "ones")
        fill(s, [](int64_t) { return 1.0f; });
      else if (s.init.kind == "constant")
        fill(s, [&](int64_t) { return static_cast<float>(s.init.scale); });
      else
        return Error(where + ": init '" + s.init.kind +
                     "' needs a tensor in the artifact, which has none");
    }
  return Status::success();
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

Result<std::vector<int64_t>> CpuExecutor::inputShape(std::string_view function,
                                                     std::string_view input) const {
  const Function *f = artifact_->program.findFunction(function);
  if (!f)
    return Error("no function named '" + std::string(function) + "'");
  for (const Binding &b : f->inputs)
    if (b.name == input)
      return f->tensors[b.tensor].shape;
  return Error("function " + f->name + " has no input '" + std::string(input) + "'");
}

//===----------------------------------------------------------------------===//
// Ops
//===----------------------------------------------------------------------===//

namespace {

/// The tensors a node (or one part of a forking node) reads and writes.
Access accessOf(const Node &node, int part) {
  Access a;
  const auto &o = node.operands;
  const auto &r = node.results;
  if (part < 0) {
    a.reads = o;
    a.writes = r;
    return a;
  }
  std::string_view role = node.parts[size_t(part)].role;
  if (node.op == "linear_backward" || node.op == "conv2d_backward") {
    bool dx = flagAttr(node.attributes, "input_grad");
    bool bias = o.size() == 5;
    size_t dwIndex = dx ? 1 : 0;
    if (role == "weight_grad") {
      a.reads = {o[0], o[1], o[3]};
      a.writes = {r[dwIndex]};
    } else if (role == "bias_grad") {
      a.reads = {o[0], o[4]};
      a.writes = {r[dwIndex + 1]};
    } else if (role == "input_grad") {
      a.reads = {o[0], o[2]};
      a.writes = {r[0]};
    }
    (void)bias;
  } else if (node.op == "cbr_backward") {
    bool dx = flagAttr(node.attributes, "input_grad");
    if (role == "bn_grad") {
      a.reads = {o[0], o[3], o[4], o[5], o[6], o[8], o[9]};
      if (o.size() == 11)
        a.reads.push_back(o[10]);
      a.writes = {r[0], r[dx ? 3 : 2], r[dx ? 4 : 3]};
    } else if (role == "weight_grad") {
      a.reads = {r[0], o[1], o[7]};
      a.writes = {r[dx ? 2 : 1]};
    } else if (role == "input_grad") {
      a.reads = {r[0], o[2]};
      a.writes = {r[1]};
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

  float *ptr(uint32_t t) {
    int64_t i = variant == Variant::a ? layout.indexA[t] : layout.indexB[t];
    if (i < 0)
      return layout.host[t].data();
    return ex.impl_->words.data() + i;
  }
  TensorView view(uint32_t t) {
    const TensorInfo &info = fn.tensors[t];
    return TensorView{ptr(t), info.shape, info.dtype};
  }
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

  /// Runs `node` (or its part `part`).
  KernelStatus run(const Node &node, int part) {
    const auto &o = node.operands;
    const auto &r = node.results;
    const json &at = node.attributes;
    const std::string &op = node.op;
    auto V = [&](uint32_t t) { return view(t); };

    if (part >= 0) {
      std::string_view role = node.parts[size_t(part)].role;
      if (op == "linear_backward" || op == "conv2d_backward") {
        bool conv = op == "conv2d_backward";
        bool dx = flagAttr(at, "input_grad");
        size_t dw = dx ? 1 : 0;
        cpu::Conv2dAttrs ca = conv ? convAttrs(at) : cpu::Conv2dAttrs{};
        if (role == "weight_grad")
          return conv ? cpu::conv2dBackwardFilter(V(o[0]), V(o[1]), V(o[3]), ca, V(r[dw]))
                      : cpu::linearBackwardWeight(V(o[0]), V(o[1]), V(o[3]), V(r[dw]));
        if (role == "bias_grad")
          return conv ? cpu::conv2dBackwardBias(V(o[0]), V(o[4]), V(r[dw + 1]))
                      : cpu::linearBackwardBias(V(o[0]), V(o[4]), V(r[dw + 1]));
        if (role == "input_grad")
          return conv ? cpu::conv2dBackwardInput(V(o[0]), V(o[2]), ca, V(r[0]))
                      : cpu::linearBackwardInput(V(o[0]), V(o[2]), V(r[0]));
      } else if (op == "cbr_backward") {
        bool dx = flagAttr(at, "input_grad");
        cpu::Conv2dAttrs ca = convAttrs(at);
        if (role == "bn_grad") {
          TensorView dy = V(o[0]);
          std::vector<float> masked;
          if (o.size() == 11) {
            masked.resize(size_t(std::max<int64_t>(dy.numel(), 0)));
            TensorView m = dy;
            m.data = masked.data();
            KernelStatus s = cpu::reluBackward(dy, V(o[10]), m);
            if (!s.ok())
              return s;
            dy = m;
          }
          return cpu::batchNormBackward(dy, V(o[3]), V(o[4]), V(o[5]), V(o[6]), V(o[8]),
                                        V(o[9]), V(r[0]), V(r[dx ? 3 : 2]), V(r[dx ? 4 : 3]));
        }
        if (role == "weight_grad")
          return cpu::conv2dBackwardFilter(V(r[0]), V(o[1]), V(o[7]), ca, V(r[dx ? 2 : 1]));
        if (role == "input_grad")
          return cpu::conv2dBackwardInput(V(r[0]), V(o[2]), ca, V(r[1]));
      }
      return KernelStatus{"unknown part '" + std::string(role) + "' of " + op};
    }

    if (op == "host_to_device" || op == "reshape_noop")
      return copy(o[0], r[0]);
    if (op == "all_reduce_mean") { // one replica: the mean is the value
      for (size_t k = 0; k < o.size(); ++k) {
        KernelStatus s = copy(o[k], r[k]);
        if (!s.ok())
          return s;
      }
      return {};
    }
    if (op == "conv2d") {
      TensorView bias = o.size() == 3 ? V(o[2]) : TensorView{};
      return cpu::conv2d(V(o[0]), V(o[1]), o.size() == 3 ? &bias : nullptr, convAttrs(at), V(r[0]));
    }
    if (op == "linear") {
      TensorView bias = o.size() == 3 ? V(o[2]) : TensorView{};
      return cpu::linear(V(o[0]), V(o[1]), o.size() == 3 ? &bias : nullptr, V(r[0]));
    }
    if (op == "batch_norm")
      return cpu::batchNorm(V(o[0]), V(o[1]), V(o[2]), numAttr(at, "epsilon"), V(r[0]));
    if (op == "batch_norm_train")
      return cpu::batchNormTrain(V(o[0]), V(o[1]), V(o[2]), numAttr(at, "epsilon"), V(r[0]),
                                 V(r[1]), V(r[2]));
    if (op == "batch_norm_inference")
      return cpu::batchNormInference(V(o[0]), V(o[1]), V(o[2]), V(o[3]), V(o[4]),
                                     numAttr(at, "epsilon"), V(r[0]));
    if (op == "update_running_stats")
      return cpu::updateRunningStats(V(o[0]), V(o[1]), V(o[2]), V(o[3]), numAttr(at, "epsilon"),
                                     numAttr(at, "momentum"),
                                     static_cast<int64_t>(numAttr(at, "count")), V(r[0]), V(r[1]));
    if (op == "batch_norm_backward")
      return cpu::batchNormBackward(V(o[0]), V(o[1]), V(o[2]), V(o[3]), V(o[4]), V(o[5]),
                                    V(o[6]), V(r[0]), V(r[1]), V(r[2]));
    if (op == "relu")
      return cpu::relu(V(o[0]), V(r[0]));
    if (op == "tanh")
      return cpu::tanh(V(o[0]), V(r[0]));
    if (op == "silu")
      return cpu::silu(V(o[0]), V(r[0]));
    if (op == "relu_backward")
      return cpu::reluBackward(V(o[0]), V(o[1]), V(r[0]));
    if (op == "tanh_backward")
      return cpu::tanhBackward(V(o[0]), V(o[1]), V(r[0]));
    if (op == "silu_backward")
      return cpu::siluBackward(V(o[0]), V(o[1]), V(r[0]));
    if (op == "dropout_backward")
      return cpu::dropoutBackward(V(o[0]), V(o[1]), V(r[0]));
    if (op == "add")
      return cpu::add(V(o[0]), V(o[1]), V(r[0]));
    if (op == "cast")
      return cpu::cast(V(o[0]), V(r[0]));
    if (op == "reshape")
      return cpu::reshape(V(o[0]), V(r[0]));
    if (op == "flatten")
      return cpu::flatten(V(o[0]), V(r[0]));
    if (op == "zero")
      return cpu::zero(V(r[0]));
    if (op == "dropout" || op == "dropout_train") {
      uint64_t index = layout.dropoutIndex.at(&node);
      cpu::RngKey key{ex.options_.seed,
                      uint64_t(int64_t(ex.impl_->step)) * layout.numDropouts + index};
      double p = numAttr(at, "p");
      if (op == "dropout")
        return cpu::dropout(V(o[0]), p, key, V(r[0]));
      return cpu::dropoutTrain(V(o[0]), p, key, V(r[0]), V(r[1]));
    }
    if (op == "max_pool2d")
      return cpu::maxPool2d(V(o[0]), poolAttrs(at), V(r[0]));
    if (op == "avg_pool2d")
      return cpu::avgPool2d(V(o[0]), poolAttrs(at), V(r[0]));
    if (op == "max_pool2d_backward")
      return cpu::maxPool2dBackward(V(o[0]), V(o[1]), poolAttrs(at), V(r[0]));
    if (op == "avg_pool2d_backward")
      return cpu::avgPool2dBackward(V(o[0]), poolAttrs(at), V(r[0]));
    if (op == "global_avg_pool")
      return cpu::globalAvgPool(V(o[0]), V(r[0]));
    if (op == "global_avg_pool_backward")
      return cpu::globalAvgPoolBackward(V(o[0]), V(r[0]));
    if (op == "softmax_cross_entropy") {
      float loss = 0;
      KernelStatus s = cpu::softmaxCrossEntropy(V(o[0]), labels(o[1]),
                                                numAttr(at, "label_smoothing"), loss);
      if (s.ok())
        setF(r[0], loss);
      return s;
    }
    if (op == "softmax_cross_entropy_backward")
      return cpu::softmaxCrossEntropyBackward(V(o[0]), labels(o[1]),
                                              o.size() == 3 ? f(o[2]) : 1.0f,
                                              numAttr(at, "label_smoothing"), V(r[0]));
    if (op == "count_correct") {
      int32_t correct = 0;
      KernelStatus s = cpu::countCorrect(V(o[0]), labels(o[1]), correct);
      if (s.ok())
        setI(r[0], correct);
      return s;
    }
    if (op == "check_finite") {
      std::vector<TensorView> views;
      for (uint32_t t : o)
        views.push_back(V(t));
      *ptr(r[0]) = cpu::checkFinite(views) ? 1.0f : 0.0f;
      return {};
    }
    if (op == "unscale")
      return cpu::unscale(V(o[0]), f(o[1]), V(r[0]));
    if (op == "update_loss_scale") {
      float scale = 0;
      int32_t good = 0;
      KernelStatus s = cpu::updateLossScale(
          f(o[0]), i(o[1]), f(o[2]) != 0, numAttr(at, "growth"), numAttr(at, "backoff"),
          static_cast<int64_t>(numAttr(at, "growth_interval")), scale, good);
      if (s.ok()) {
        setF(r[0], scale);
        setI(r[1], good);
      }
      return s;
    }
    if (op == "sgd_update") {
      cpu::SgdAttrs a{numAttr(at, "momentum"), numAttr(at, "weight_decay"),
                      flagAttr(at, "nesterov")};
      bool buffer = a.momentum != 0;
      size_t lrIndex = buffer ? 3 : 2;
      bool skip = o.size() > lrIndex + 1 && f(o[lrIndex + 1]) != 0;
      TensorView buf = buffer ? V(o[2]) : TensorView{};
      TensorView newBuf = buffer ? V(r[1]) : TensorView{};
      return cpu::sgdUpdate(V(o[0]), V(o[1]), buffer ? &buf : nullptr, f(o[lrIndex]), skip, a,
                            V(r[0]), buffer ? &newBuf : nullptr);
    }
    if (op == "adamw_update") {
      cpu::AdamWAttrs a{numAttr(at, "beta1"), numAttr(at, "beta2"), numAttr(at, "epsilon"),
                        numAttr(at, "weight_decay")};
      bool skip = o.size() == 7 && f(o[6]) != 0;
      return cpu::adamwUpdate(V(o[0]), V(o[1]), V(o[2]), V(o[3]), f(o[4]), i(o[5]), skip, a,
                              V(r[0]), V(r[1]), V(r[2]));
    }
    if (op == "lars_update") {
      cpu::LarsAttrs a{numAttr(at, "momentum"), numAttr(at, "weight_decay"),
                       numAttr(at, "trust_coefficient"), numAttr(at, "epsilon")};
      bool skip = o.size() == 5 && f(o[4]) != 0;
      return cpu::larsUpdate(V(o[0]), V(o[1]), V(o[2]), f(o[3]), skip, a, V(r[0]), V(r[1]));
    }
    if (op == "ema_update")
      return cpu::emaUpdate(V(o[0]), V(o[1]), numAttr(at, "decay"), V(r[0]));
    if (op == "cbr_forward")
      return cpu::cbrForward(V(o[0]), V(o[1]), V(o[2]), V(o[3]), convAttrs(at),
                             numAttr(at, "epsilon"), flagAttr(at, "relu"), V(r[0]), V(r[1]),
                             V(r[2]), V(r[3]));
    if (op == "cbr_inference")
      return cpu::cbrInference(V(o[0]), V(o[1]), V(o[2]), V(o[3]), V(o[4]), V(o[5]),
                               convAttrs(at), numAttr(at, "epsilon"), flagAttr(at, "relu"),
                               V(r[0]));
    if (op == "bn_add_relu")
      return cpu::bnAddRelu(V(o[0]), V(o[1]), V(o[2]), V(o[3]), numAttr(at, "epsilon"), V(r[0]),
                            V(r[1]), V(r[2]));
    if (op == "bn_add_relu_backward")
      return cpu::bnAddReluBackward(V(o[0]), V(o[1]), V(o[2]), V(o[3]), V(o[4]), V(o[5]),
                                    V(o[6]), V(o[7]), V(r[0]), V(r[1]), V(r[2]), V(r[3]));
    if (op == "bn_add_relu_inference")
      return cpu::bnAddReluInference(V(o[0]), V(o[1]), V(o[2]), V(o[3]), V(o[4]), V(o[5]),
                                     numAttr(at, "epsilon"), V(r[0]));
    if (op == "linear_backward" || op == "conv2d_backward" || op == "cbr_backward") {
      for (size_t k = 0; k < node.parts.size(); ++k) {
        KernelStatus s = run(node, int(k));
        if (!s.ok())
          return s;
      }
      return {};
    }
    return KernelStatus{"the CPU executor has no kernel for op '" + op + "'"};
  }
};

//===----------------------------------------------------------------------===//
// Launches
//===----------------------------------------------------------------------===//

Status CpuExecutor::launch(const Function &fn, const Subgraph &sg, Variant variant) {
  const Program &p = artifact_->program;
  size_t fnIndex = size_t(&fn - p.functions.data());
  Impl &im = *impl_;
  ExecutorAccess acc{*this, fn, im.layouts[fnIndex], variant};
  auto where = [&](size_t nodeIndex, int part, Stream stream) {
    const Node &n = sg.nodes[nodeIndex];
    std::string s = "function " + fn.name + ", subgraph " + sg.name + ", node " +
                    std::to_string(nodeIndex);
    if (n.kind == Node::Kind::op)
      s += " (" + n.op + (part >= 0 ? ", part " + n.parts[size_t(part)].role : "") + ")";
    s += " on stream " + std::string(streamName(stream));
    return s;
  };

  // Work items: (node index, part or -1, stream).
  struct Item {
    size_t node;
    int part;
    Stream stream;
  };
  std::vector<Item> items;
  for (size_t k = 0; k < sg.nodes.size(); ++k) {
    const Node &n = sg.nodes[k];
    if (n.kind == Node::Kind::op && !n.parts.empty()) {
      for (size_t q = 0; q < n.parts.size(); ++q)
        items.push_back({k, int(q), n.parts[q].stream});
    } else {
      items.push_back({k, -1, n.stream});
    }
  }

  auto execute = [&](const Item &it) -> Status {
    const Node &n = sg.nodes[it.node];
    if (n.kind != Node::Kind::op)
      return Status::success();
    ++executedNodes_;
    KernelStatus s = acc.run(n, it.part);
    if (!s.ok())
      return Error(where(it.node, it.part, it.stream) + ": " + s.error);
    return Status::success();
  };

  if (!options_.interleave) {
    for (const Item &it : items) {
      Status s = execute(it);
      if (!s.ok())
        return s;
    }
    return Status::success();
  }

  // Interleaved: per-stream FIFOs, vector clocks, hazard checks.
  std::array<std::deque<size_t>, kStreams> queues;
  for (size_t k = 0; k < items.size(); ++k)
    queues[size_t(items[k].stream)].push_back(k);
  // Events recorded in this subgraph (a distance-0 wait on them waits for
  // this launch's record).
  std::vector<char> localEvent(p.numEvents, 0), recorded(p.numEvents, 0);
  for (const Node &n : sg.nodes)
    if (n.kind == Node::Kind::event_record)
      localEvent[n.event] = 1;
  // Every earlier launch is complete: synchronize all streams.
  Clock joined{};
  for (const Clock &c : im.clocks)
    for (int s = 0; s < kStreams; ++s)
      joined[size_t(s)] = std::max(joined[size_t(s)], c[size_t(s)]);
  for (Clock &c : im.clocks)
    c = joined;
  std::vector<std::vector<std::optional<Clock>>> partDone(sg.nodes.size());
  for (size_t k = 0; k < sg.nodes.size(); ++k)
    partDone[k].resize(sg.nodes[k].parts.size());

  auto merge = [](Clock &into, const Clock &from) {
    for (int s = 0; s < kStreams; ++s)
      into[size_t(s)] = std::max(into[size_t(s)], from[size_t(s)]);
  };
  auto ready = [&](const Item &it) {
    const Node &n = sg.nodes[it.node];
    if (n.kind == Node::Kind::event_wait)
      return n.distance != 0 || !localEvent[n.event] || recorded[n.event];
    if (it.part >= 0)
      for (auto [earlier, later] : n.partWaits)
        if (later == uint32_t(it.part) && !partDone[it.node][earlier])
          return false;
    return true;
  };

  std::string launchHazard;
  auto check = [&](const Item &it, uint32_t clock, int32_t nodeId) {
    const Node &n = sg.nodes[it.node];
    Access a = accessOf(n, it.part);
    size_t s = size_t(it.stream);
    const Clock &vc = im.clocks[s];
    auto report = [&](int32_t other, int otherStream, const char *kind, uint32_t t) {
      ++im.hazards;
      if (!launchHazard.empty())
        return;
      launchHazard = std::string("hazard (") + kind + ") on tensor " + std::to_string(t) +
                     ": " + where(it.node, it.part, it.stream) + " is not ordered after " +
                     im.nodeNames[size_t(other)] + " on stream " +
                     std::string(streamName(Stream(otherStream)));
    };
    auto visit = [&](uint32_t t, bool write) {
      int64_t base = variant == Variant::a ? acc.layout.indexA[t] : acc.layout.indexB[t];
      if (base < 0)
        return;
      int64_t end = base + acc.layout.units[t];
      for (int64_t w = base; w < end; ++w) {
        Shadow &sh = im.shadow[size_t(w)];
        if (sh.wNode >= 0 && sh.wStream != s && vc[sh.wStream] < sh.wClock)
          report(sh.wNode, sh.wStream, write ? "write after write" : "read after write", t);
        if (write) {
          for (size_t q = 0; q < kStreams; ++q)
            if (q != s && sh.rNode[q] >= 0 && vc[q] < sh.rClock[q])
              report(sh.rNode[q], int(q), "write after read", t);
          sh.wNode = nodeId;
          sh.wStream = uint8_t(s);
          sh.wClock = clock;
          sh.rNode.fill(-1);
        } else {
          sh.rNode[s] = nodeId;
          sh.rClock[s] = clock;
        }
      }
    };
    for (uint32_t t : a.reads)
      visit(t, false);
    for (uint32_t t : a.writes)
      visit(t, true);
  };

  // Capture rules: a stream other than the primary joins the capture by
  // waiting on an event recorded in this launch (the fork), and must be
  // joined back (the primary waits for its last work) before the end.
  std::array<bool, kStreams> forked{};
  std::array<bool, kStreams> used{};
  forked[size_t(sg.primary)] = true;

  size_t remaining = items.size();
  std::vector<size_t> candidates;
  while (remaining > 0) {
    candidates.clear();
    for (size_t s = 0; s < kStreams; ++s)
      if (!queues[s].empty() && ready(items[queues[s].front()]))
        candidates.push_back(s);
    if (candidates.empty()) {
      std::string heads;
      for (size_t s = 0; s < kStreams; ++s)
        if (!queues[s].empty())
          heads += "; waiting: " + where(items[queues[s].front()].node,
                                         items[queues[s].front()].part, Stream(s));
      return Error("function " + fn.name + ", subgraph " + sg.name +
                   ": deadlock, no stream can proceed" + heads);
    }
    size_t s = candidates[size_t(im.rng() % candidates.size())];
    const Item &it = items[queues[s].front()];
    queues[s].pop_front();
    --remaining;
    const Node &n = sg.nodes[it.node];
    Clock &vc = im.clocks[s];
    uint32_t clock = ++vc[s];
    used[s] = true;
    if (n.kind == Node::Kind::event_wait && n.distance == 0 && localEvent[n.event])
      forked[s] = true;
    if (!forked[s])
      return Error("capture error: " + where(it.node, it.part, it.stream) +
                   " runs before the stream is forked from the primary stream " +
                   std::string(streamName(sg.primary)));
    if (n.kind == Node::Kind::event_record) {
      im.eventClocks[n.event] = vc;
      recorded[n.event] = 1;
      continue;
    }
    if (n.kind == Node::Kind::event_wait) {
      if (n.distance == 0 && localEvent[n.event])
        merge(vc, im.eventClocks[n.event]);
      continue;
    }
    if (it.part >= 0)
      for (auto [earlier, later] : n.partWaits)
        if (later == uint32_t(it.part))
          merge(vc, *partDone[it.node][earlier]);
    check(it, clock, im.nodeIds.at(&n));
    Status st = execute(it);
    if (!st.ok())
      return st;
    if (it.part >= 0)
      partDone[it.node][size_t(it.part)] = vc;
  }
  if (!launchHazard.empty())
    return Error(launchHazard);
  const Clock &primary = im.clocks[size_t(sg.primary)];
  for (size_t s = 0; s < kStreams; ++s)
    if (used[s] && s != size_t(sg.primary) && primary[s] < im.clocks[s][s])
      return Error("capture error: function " + fn.name + ", subgraph " + sg.name +
                   ": stream " + std::string(streamName(Stream(s))) +
                   " is not joined back to the primary stream " +
                   std::string(streamName(sg.primary)));
  return Status::success();
}

//===----------------------------------------------------------------------===//
// Steps
//===----------------------------------------------------------------------===//

Status CpuExecutor::runFunctionStep(const Function &fn, const Schedule &schedule,
                                    const std::map<std::string, HostValue> &inputs,
                                    std::optional<Variant> variant,
                                    const Schedule *transferFrom) {
  const Program &p = artifact_->program;
  size_t fnIndex = size_t(&fn - p.functions.data());
  Impl::FnLayout &layout = impl_->layouts[fnIndex];
  for (const Binding &b : fn.inputs) {
    auto it = inputs.find(b.name);
    if (it == inputs.end())
      continue;
    const TensorInfo &t = fn.tensors[b.tensor];
    std::vector<float> &host = layout.host[b.tensor];
    if (!t.isHost())
      return Error("function " + fn.name + ": input " + b.name + " is not a host input");
    size_t n = host.size();
    if (t.dtype == DType::i32) {
      if (it->second.ints.size() != n)
        return Error("function " + fn.name + ": input " + b.name + " needs " +
                     std::to_string(n) + " int32 values, got " +
                     std::to_string(it->second.ints.size()));
      std::memcpy(host.data(), it->second.ints.data(), n * 4);
    } else {
      if (it->second.floats.size() != n)
        return Error("function " + fn.name + ": input " + b.name + " needs " +
                     std::to_string(n) + " values, got " +
                     std::to_string(it->second.floats.size()));
      for (size_t k = 0; k < n; ++k)
        host[k] = isFloat(t.dtype) ? roundTo(t.dtype, it->second.floats[k])
                                   : (it->second.floats[k] != 0 ? 1.0f : 0.0f);
    }
  }
  auto runSteps = [&](const Schedule &s) -> Status {
    for (const Step &step : s.steps) {
      if (step.kind != Step::Kind::launch)
        continue;
      const Subgraph *sg = fn.findSubgraph(step.subgraph);
      if (!sg)
        return Error("schedule " + s.name + ": no subgraph " + step.subgraph);
      Variant v = step.variant.value_or(Variant::a);
      if (variant && step.variant)
        v = *variant;
      Status st = launch(fn, *sg, v);
      if (!st.ok())
        return st;
    }
    return Status::success();
  };
  if (transferFrom) {
    Status st = runSteps(*transferFrom);
    if (!st.ok())
      return st;
  }
  return runSteps(schedule);
}

Status CpuExecutor::runSchedule(std::string_view name,
                                const std::map<std::string, HostValue> &inputs,
                                std::optional<Variant> variant) {
  const Program &p = artifact_->program;
  const Schedule *s = p.findSchedule(name);
  if (!s)
    return Error("no schedule named '" + std::string(name) + "'");
  const Function *fn = p.findFunction(s->function);
  if (!fn)
    return Error("schedule " + s->name + ": no function " + s->function);
  return runFunctionStep(*fn, *s, inputs, variant, nullptr);
}

/// One step of `kind` ("train" or "eval") on the input variant its parity
/// selects: the prologue's copy of the inputs, then the non-prefetching
/// schedule of that parity.
Result<const Function *>
CpuExecutor::runStep(const std::string &kind, bool odd,
                     const std::map<std::string, HostValue> &inputs) {
  const Program &p = artifact_->program;
  const Schedule *prologue = p.findSchedule(kind + "_prologue");
  const Schedule *body =
      p.findSchedule(kind + (odd ? "_last_odd" : "_last_even"));
  if (!prologue || !body)
    return Error("the artifact has no " + kind + "_prologue/" + kind +
                 "_last_even/" + kind + "_last_odd schedules");
  const Function *fn = p.findFunction(body->function);
  if (!fn)
    return Error("no function " + body->function);
  Status st = runFunctionStep(*fn, *body, inputs,
                              odd ? Variant::b : Variant::a, prologue);
  if (!st.ok())
    return st.error();
  return fn;
}

Status CpuExecutor::trainStep(const HostBatch &batch, float lr, int32_t step,
                              TrainOutputs &outputs) {
  const Program &p = artifact_->program;
  bool odd = trainCalls_ % 2 == 1;
  std::map<std::string, HostValue> in;
  in["images"].floats = batch.images;
  in["labels"].ints = batch.labels;
  in["lr"].floats = {lr};
  in["step"].ints = {step};
  impl_->step = step;
  Result<const Function *> fn = runStep("train", odd, in);
  if (!fn.ok())
    return fn.error();
  ++trainCalls_;
  size_t fnIndex = size_t(*fn - p.functions.data());
  for (const Binding &b : (*fn)->outputs)
    if (b.name == "loss") {
      int64_t i = odd ? impl_->layouts[fnIndex].indexB[b.tensor]
                      : impl_->layouts[fnIndex].indexA[b.tensor];
      outputs.loss = impl_->words[size_t(i)];
    }
  return Status::success();
}

Status CpuExecutor::evalStep(const HostBatch &batch, EvalOutputs &outputs) {
  const Program &p = artifact_->program;
  bool odd = evalCalls_ % 2 == 1;
  std::map<std::string, HostValue> in;
  in["images"].floats = batch.images;
  in["labels"].ints = batch.labels;
  Result<const Function *> result = runStep("eval", odd, in);
  if (!result.ok())
    return result.error();
  const Function *fn = *result;
  ++evalCalls_;
  size_t fnIndex = size_t(fn - p.functions.data());
  const Impl::FnLayout &layout = impl_->layouts[fnIndex];
  for (const Binding &b : fn->outputs) {
    int64_t i = odd ? layout.indexB[b.tensor] : layout.indexA[b.tensor];
    if (i < 0)
      continue;
    const float *w = impl_->words.data() + i;
    if (b.name == "loss")
      outputs.loss = *w;
    else if (b.name == "correct")
      std::memcpy(&outputs.correct, w, 4);
    else if (b.name == "logits")
      outputs.logits.assign(w, w + numel(fn->tensors[b.tensor].shape));
  }
  return Status::success();
}

} // namespace rn
