//===- cpu_executor.cpp - Reference executor of an artifact on the CPU ----===//
//
// See cpu_executor.h for the memory mapping; the interleaved mode runs in
// interleaving_simulator.cpp. Each op node runs through its op's entry in
// the family tables (cpu_ops.h), resolved once when the executor is
// created.
//
//===----------------------------------------------------------------------===//

#include "runtime/cpu/cpu_executor.h"
#include "runtime/core/dtype.h"
#include "runtime/core/host_program.h"
#include "runtime/core/op_registry.h"
#include "runtime/cpu/cpu_kernels.h"
#include "runtime/cpu/cpu_ops.h"
#include "runtime/cpu/interleaving_simulator.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <unordered_map>

namespace rn {

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

/// The tensors a node (or one part of a forking node, by its role) reads
/// and writes: a node that does not fork all its operands and results
/// (cbr_forward's and conv_bn_stats' prologue operands included), a part
/// what its op's entry says.
Access accessOf(const Node &node, const cpu::CpuOp &op, int part) {
  if (part < 0 || !op.partAccess) {
    Access a;
    a.reads = node.operands;
    a.writes = node.results;
    return a;
  }
  return op.partAccess(node, node.parts[size_t(part)].role);
}

/// A subgraph's work items and, per node, its op's entry (op nodes).
struct SubgraphItems : cpu::SubgraphWork {
  std::vector<const cpu::CpuOp *> ops;
};

} // namespace

bool cpu::hasKernel(std::string_view op) {
  std::optional<OpKind> kind = opKindOf(op);
  return kind && cpu::findCpuOp(*kind);
}

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
  // Every op an artifact may hold has exactly one kernel entry.
  RN_RETURN_IF_ERROR(cpu::checkCpuOps());
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
        const cpu::CpuOp *&op = si.ops.emplace_back(nullptr);
        if (node.kind == Node::Kind::op) {
          std::optional<OpKind> kind = opKindOf(node.op);
          op = kind ? cpu::findCpuOp(*kind) : nullptr;
          if (!op)
            return Error("function " + f.name + ", subgraph " + sg.name + ", node " +
                         std::to_string(i) + ": the CPU executor has no kernel for op '" +
                         node.op + "'");
        }
        auto add = [&](int part, Stream stream) {
          cpu::WorkItem it;
          it.node = uint32_t(i);
          it.part = part;
          it.stream = stream;
          if (node.kind == Node::Kind::op) {
            it.access = accessOf(node, *op, part);
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

/// Runs op nodes on one launch's tensors through their entries (cpu_ops.h).
struct ExecutorAccess {
  CpuExecutor &ex;
  const Function &fn;
  CpuExecutor::Impl::FnLayout &layout;
  Variant variant;

  /// Runs `node` (or its part `part`) with its op's entry `op`. A forking
  /// node issued whole runs its parts in order: those the node lists, else
  /// the op's (ForkingOpInterface order).
  KernelStatus run(const Node &node, const cpu::CpuOp &op, int part) {
    cpu::OpRun r{node, {}, variant == Variant::a ? layout.viewA : layout.viewB,
                 ex.options_.seed, ex.options_.replicas, ex.options_.replicaRank};
    if (part >= 0) {
      r.role = node.parts[size_t(part)].role;
    } else if (op.partAccess) {
      std::vector<std::string_view> roles;
      for (const Part &p : node.parts)
        roles.push_back(p.role);
      if (roles.empty() && node.info && node.info->forkParts)
        roles = node.info->forkParts({node.layout, node.attributes});
      for (std::string_view role : roles) {
        r.role = role;
        if (KernelStatus s = op.run(r); !s.ok())
          return s;
      }
      return {};
    }
    return op.run(r);
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
        KernelStatus s = acc.run(n, *si.ops[it.node], it.part);
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
      KernelStatus ks = acc.run(l.sg->nodes[it.node], *im.items.at(l.sg).ops[it.node], it.part);
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
