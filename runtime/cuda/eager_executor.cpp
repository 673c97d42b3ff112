//===- eager_executor.cpp - The cuda-eager executor -----------------------===//
//
// See eager_executor.h.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/eager_executor.h"

#include "runtime/core/dtype.h"
#include "runtime/cuda/check.h"
#include "runtime/cuda/conv.h"
#include "runtime/cuda/device_context.h"
#include "runtime/cuda/gemm.h"
#include "runtime/cuda/op_launch.h"

#include <chrono>
#include <cstdio>
#include <cstring>
#include <algorithm>
#include <map>
#include <unordered_map>

namespace rn::cuda {

namespace {

int64_t numel(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

/// Writes `values` as `n` elements of `type` at `out`.
void encode(DType type, const float *values, const int32_t *ints, size_t n, void *out) {
  auto *b = static_cast<unsigned char *>(out);
  // The common cases are plain copies (images, labels: a batch per step).
  if (type == DType::f32 && values) {
    std::memcpy(b, values, n * 4);
    return;
  }
  if (type == DType::i32 && ints) {
    std::memcpy(b, ints, n * 4);
    return;
  }
  for (size_t i = 0; i < n; ++i)
    storeElement(type, b, i, values[i]);
}

/// Pinned host memory, freed without throwing.
struct PinnedBuffer {
  void *data = nullptr;
  size_t bytes = 0;
  PinnedBuffer() = default;
  PinnedBuffer(const PinnedBuffer &) = delete;
  PinnedBuffer &operator=(const PinnedBuffer &) = delete;
  ~PinnedBuffer() {
    if (data)
      (void)cudaFreeHost(data);
  }
  Status allocate(size_t n) {
    bytes = n;
    return RN_CUDA_CHECK(cudaMallocHost(&data, n == 0 ? 1 : n));
  }
};

/// One op node (or part) ready to launch: its views per variant, stream and
/// the part-order events around it.
struct PreparedItem {
  uint32_t node = 0;
  int part = -1;
  Stream stream = Stream::comp1;
  const OpLauncher *launcher = nullptr;
  std::vector<size_t> waitPartEvents;   ///< before: waits on these
  std::vector<size_t> recordPartEvents; ///< after: records these
  std::vector<uint32_t> outputs;        ///< output bindings it writes
  /// Options::profile: timing events around its launch (created at load).
  cudaEvent_t profileBegin = nullptr, profileEnd = nullptr;
  bool profiled = false; ///< its events were recorded at least once
};

/// One node's operand and result views on variant A and B.
struct NodeViews {
  std::array<std::vector<DeviceTensor>, 2> operands, results;
};

struct PreparedSubgraph {
  std::vector<std::vector<PreparedItem>> itemsOfNode; ///< by node
  std::vector<NodeViews> viewsOfNode;                 ///< by node (op nodes)
  std::array<cudaEvent_t, 2> completion{};            ///< by variant
};

} // namespace

struct EagerExecutor::Impl {
  const Artifact *artifact = nullptr;
  Options options;
  std::unique_ptr<DeviceContext> ctx;
  std::unique_ptr<ConvRunner> conv;
  std::unique_ptr<GemmRunner> gemm;
  std::optional<EventBinder> binder;

  struct FnViews {
    /// Per tensor, per variant: the device (or pinned host) view.
    std::array<std::vector<DeviceTensor>, 2> tensors;
    std::vector<std::unique_ptr<PinnedBuffer>> hostInputs; ///< by tensor (null: device)
    std::vector<int32_t> outputOf; ///< output binding per tensor, or -1
    /// Pinned output slots: maxStepsInFlight x outputs.
    std::vector<size_t> outputOffset;
    size_t outputBytesPerStep = 0;
    std::unique_ptr<PinnedBuffer> outputs = std::make_unique<PinnedBuffer>();
  };
  std::vector<FnViews> fns;
  std::unordered_map<const Subgraph *, PreparedSubgraph> subgraphs;
  double loadSeconds = 0;
  size_t preparedNodes = 0;
  /// The pinned output slot of a step (a ring of maxStepsInFlight).
  size_t outputSlot(int64_t step) const {
    return size_t(step % int64_t(options.maxStepsInFlight));
  }
  /// Decodes the outputs of a completed step from its slot.
  Status decodeOutputs(uint32_t fn, int64_t step, StepOutputs &outputs) const;

  ~Impl() {
    if (ctx)
      (void)ctx->synchronize();
    for (auto &[sg, p] : subgraphs) {
      for (cudaEvent_t e : p.completion)
        if (e)
          (void)cudaEventDestroy(e);
      for (auto &items : p.itemsOfNode)
        for (PreparedItem &it : items)
          for (cudaEvent_t e : {it.profileBegin, it.profileEnd})
            if (e)
              (void)cudaEventDestroy(e);
    }
  }

  const Program &program() const { return artifact->program; }

  static std::string describeLaunch(const Program &p, const HostAction &a) {
    std::string s = "function " + p.functions[a.fn].name + ", subgraph " + a.sg->name + " (";
    if (a.sg->doubleBuffered)
      s += std::string("variant ") + (a.variant == Variant::a ? "a" : "b") + ", ";
    return s + "step " + std::to_string(a.step) + ")";
  }
  static std::string describeNode(const Node &n, uint32_t index, int part, Stream stream) {
    std::string s = "node " + std::to_string(index);
    if (n.kind == Node::Kind::op)
      s += " (" + n.op + (part >= 0 ? ", part " + n.parts[size_t(part)].role : "") + ")";
    return s + " on stream " + std::string(streamName(stream));
  }

  Status create();
  Status prepareNodes();
  Status launch(const HostAction &a);
};

//===----------------------------------------------------------------------===//
// Load
//===----------------------------------------------------------------------===//

Status EagerExecutor::Impl::create() {
  const Program &p = program();
  // Every op must have a launcher before anything touches the GPU.
  for (const Function &f : p.functions)
    for (const Subgraph &sg : f.subgraphs)
      for (size_t i = 0; i < sg.nodes.size(); ++i) {
        const Node &n = sg.nodes[i];
        if (n.kind == Node::Kind::op && !findOpLauncher(n.op))
          return Error("function " + f.name + ", subgraph " + sg.name + ", node " +
                       std::to_string(i) + " (" + n.op +
                       "): the GPU runtime has no kernel for this op");
      }

  size_t partEvents = 0;
  for (const Function &f : p.functions)
    for (const Subgraph &sg : f.subgraphs)
      for (const Node &n : sg.nodes)
        partEvents += n.partWaits.size();
  DeviceContext::Options co;
  co.device = options.device;
  co.partEvents = partEvents;
  Result<std::unique_ptr<DeviceContext>> c = DeviceContext::create(p, co);
  if (!c.ok())
    return c.error();
  ctx = std::move(*c);

  ConvRunner::Options convOptions;
  convOptions.autotune = options.autotune;
  convOptions.deterministic = options.deterministic;
  convOptions.allowTf32 = options.allowTf32;
  convOptions.allowReducedPrecisionReduction = options.allowReducedPrecisionReduction;
  convOptions.cacheFile = options.planCacheFile;
  Result<std::unique_ptr<ConvRunner>> cr = ConvRunner::create(convOptions);
  if (!cr.ok())
    return cr.error();
  conv = std::move(*cr);
  GemmRunner::Options gemmOptions;
  gemmOptions.allowTf32 = options.allowTf32;
  gemmOptions.deterministic = options.deterministic;
  Result<std::unique_ptr<GemmRunner>> gr = GemmRunner::create(gemmOptions);
  if (!gr.ok())
    return gr.error();
  gemm = std::move(*gr);
  binder.emplace(p);

  size_t partEvent = 0;
  fns.resize(p.functions.size());
  for (size_t fi = 0; fi < p.functions.size(); ++fi) {
    const Function &f = p.functions[fi];
    FnViews &v = fns[fi];
    v.hostInputs.resize(f.tensors.size());
    for (int var = 0; var < 2; ++var)
      v.tensors[var].resize(f.tensors.size());
    for (size_t t = 0; t < f.tensors.size(); ++t) {
      const TensorInfo &info = f.tensors[t];
      for (int var = 0; var < 2; ++var) {
        DeviceTensor &d = v.tensors[var][t];
        d.dtype = info.dtype;
        d.shape = info.shape;
      }
      if (info.isHost()) {
        auto buffer = std::make_unique<PinnedBuffer>();
        if (Status st = buffer->allocate(info.bytes); !st.ok())
          return st.error().withContext("function " + f.name + ": staging buffer of input '" +
                                        info.hostInput + "'");
        std::memset(buffer->data, 0, info.bytes);
        for (int var = 0; var < 2; ++var)
          v.tensors[var][t].data = buffer->data;
        v.hostInputs[t] = std::move(buffer);
      } else {
        v.tensors[0][t].data = ctx->address(*info.slot, Variant::a);
        v.tensors[1][t].data = ctx->address(*info.slot, Variant::b);
      }
    }
    v.outputOf.assign(f.tensors.size(), -1);
    for (size_t k = 0; k < f.outputs.size(); ++k) {
      v.outputOf[f.outputs[k].tensor] = int32_t(k);
      v.outputOffset.push_back(v.outputBytesPerStep);
      v.outputBytesPerStep += (f.tensors[f.outputs[k].tensor].bytes + 255) / 256 * 256;
    }
    if (Status st = v.outputs->allocate(v.outputBytesPerStep * options.maxStepsInFlight); !st.ok())
      return st.error().withContext("function " + f.name + ": pinned output slots");

    for (const Subgraph &sg : f.subgraphs) {
      PreparedSubgraph &ps = subgraphs[&sg];
      for (cudaEvent_t &e : ps.completion)
        RN_CUDA_TRY(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
      ps.itemsOfNode.resize(sg.nodes.size());
      ps.viewsOfNode.resize(sg.nodes.size());
      for (size_t i = 0; i < sg.nodes.size(); ++i) {
        const Node &n = sg.nodes[i];
        if (n.kind != Node::Kind::op)
          continue;
        auto &ops = ps.viewsOfNode[i].operands;
        auto &res = ps.viewsOfNode[i].results;
        for (int var = 0; var < 2; ++var) {
          for (uint32_t t : n.operands)
            ops[var].push_back(v.tensors[var][t]);
          for (uint32_t t : n.results)
            res[var].push_back(v.tensors[var][t]);
        }
        std::vector<uint32_t> outputs;
        for (uint32_t t : n.results)
          if (v.outputOf[t] >= 0)
            outputs.push_back(uint32_t(v.outputOf[t]));
        const OpLauncher *launcher = findOpLauncher(n.op);
        auto &items = ps.itemsOfNode[i];
        if (n.parts.empty()) {
          items.push_back({uint32_t(i), -1, n.stream, launcher, {}, {}, outputs});
        } else {
          for (size_t q = 0; q < n.parts.size(); ++q)
            items.push_back({uint32_t(i), int(q), n.parts[q].stream, launcher, {}, {}, {}});
          for (const auto &[earlier, later] : n.partWaits) {
            items[earlier].recordPartEvents.push_back(partEvent);
            items[later].waitPartEvents.push_back(partEvent);
            ++partEvent;
          }
          // A forking op's outputs are copied after its last part.
          items.back().outputs = outputs;
        }
        if (options.profile)
          for (PreparedItem &it : items) {
            RN_CUDA_TRY(cudaEventCreate(&it.profileBegin));
            RN_CUDA_TRY(cudaEventCreate(&it.profileEnd));
          }
      }
    }
  }
  return prepareNodes();
}

Status EagerExecutor::Impl::prepareNodes() {
  const Program &p = program();
  for (const Function &f : p.functions) {
    for (const Subgraph &sg : f.subgraphs) {
      const PreparedSubgraph &ps = subgraphs.at(&sg);
      for (size_t i = 0; i < sg.nodes.size(); ++i) {
        const Node &n = sg.nodes[i];
        for (const PreparedItem &it : ps.itemsOfNode[i]) {
          if (!it.launcher->prepare)
            continue;
          const StreamResources &stream = ctx->stream(it.stream);
          const NodeViews &views = ps.viewsOfNode[i];
          OpLaunch l{n, it.part, views.operands[0], views.results[0], stream,
                     *conv, *gemm, options.seed};
          std::string where = "function " + f.name + ", subgraph " + sg.name + ", " +
                              describeNode(n, uint32_t(i), it.part, it.stream);
          Result<size_t> bytes = it.launcher->prepare(l);
          if (!bytes.ok())
            return bytes.error().withContext(where);
          if (*bytes > stream.workspaceBytes)
            return Error(where + ": needs " + std::to_string(*bytes) +
                         " bytes of workspace, but workspace_" + std::string(stream.name) +
                         " has " + std::to_string(stream.workspaceBytes));
          ++preparedNodes;
        }
      }
    }
  }
  return Status::success();
}

Result<std::unique_ptr<EagerExecutor>> EagerExecutor::create(const Artifact &artifact,
                                                             const Options &options) {
  auto start = std::chrono::steady_clock::now();
  std::unique_ptr<EagerExecutor> ex(new EagerExecutor());
  ex->impl_ = std::make_unique<Impl>();
  ex->impl_->artifact = &artifact;
  ex->impl_->options = options;
  if (Status st = ex->impl_->create(); !st.ok())
    return st.error().withContext("cuda-eager");
  ex->impl_->loadSeconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return ex;
}

EagerExecutor::~EagerExecutor() = default;

const Program &EagerExecutor::program() const { return impl_->program(); }

std::string EagerExecutor::loadSummary() const {
  const Impl &im = *impl_;
  char line[512];
  std::snprintf(line, sizeof line,
                "cuda-eager on %s: arena %.1f MiB in %zu regions, %zu nodes prepared "
                "(%zu convolution graphs, %.2f s building and autotuning), load %.2f s",
                im.ctx->deviceName().c_str(), double(im.ctx->arenaBytes()) / (1 << 20),
                im.program().arena.regions.size(), im.preparedNodes, im.conv->graphs(),
                im.conv->prepareSeconds(), im.loadSeconds);
  return line;
}

//===----------------------------------------------------------------------===//
// State
//===----------------------------------------------------------------------===//

Status EagerExecutor::initialize() {
  StreamResources &trans = impl_->ctx->stream(Stream::trans);
  // Parameters, buffers and constants first, then what derives from them
  // (runtime/core/initial_state.cpp, shared with the CPU executor).
  return forEachInitialState(
      *impl_->artifact, [&](const StateEntry &s, const std::vector<float> &v) -> Status {
        size_t n = v.size();
        std::vector<unsigned char> bytes(n * elementSize(s.dtype));
        encode(s.dtype, v.data(), nullptr, n, bytes.data());
        Status st = RN_CUDA_CHECK(cudaMemcpyAsync(impl_->ctx->address(*s.slot, Variant::a),
                                                  bytes.data(), bytes.size(),
                                                  cudaMemcpyHostToDevice, trans.stream));
        if (st.ok())
          st = RN_CUDA_CHECK(cudaStreamSynchronize(trans.stream));
        if (!st.ok())
          return st.error().withContext("state " + s.name);
        return Status::success();
      });
}

Result<std::vector<float>> EagerExecutor::readState(std::string_view name) const {
  const StateEntry *s = program().findState(name);
  if (!s || !s->slot)
    return Error("no state entry named '" + std::string(name) + "'");
  if (Status st = impl_->ctx->synchronize(); !st.ok())
    return st.error();
  size_t n = size_t(numel(s->shape));
  std::vector<unsigned char> bytes(n * elementSize(s->dtype));
  StreamResources &trans = impl_->ctx->stream(Stream::trans);
  RN_CUDA_TRY(cudaMemcpyAsync(bytes.data(), impl_->ctx->address(*s->slot, Variant::a),
                              bytes.size(), cudaMemcpyDeviceToHost, trans.stream));
  RN_CUDA_TRY(cudaStreamSynchronize(trans.stream));
  std::vector<float> out(n);
  for (size_t i = 0; i < n; ++i)
    out[i] = loadElement(s->dtype, bytes.data(), i);
  return out;
}

Status EagerExecutor::writeState(std::string_view name, const std::vector<float> &values) {
  const StateEntry *s = program().findState(name);
  if (!s || !s->slot)
    return Error("no state entry named '" + std::string(name) + "'");
  size_t n = size_t(numel(s->shape));
  if (values.size() != n)
    return Error("state " + s->name + " has " + std::to_string(n) + " elements, got " +
                 std::to_string(values.size()));
  if (Status st = impl_->ctx->synchronize(); !st.ok())
    return st;
  std::vector<unsigned char> bytes(n * elementSize(s->dtype));
  encode(s->dtype, values.data(), nullptr, n, bytes.data());
  StreamResources &trans = impl_->ctx->stream(Stream::trans);
  RN_CUDA_TRY(cudaMemcpyAsync(impl_->ctx->address(*s->slot, Variant::a), bytes.data(),
                              bytes.size(), cudaMemcpyHostToDevice, trans.stream));
  RN_CUDA_TRY(cudaStreamSynchronize(trans.stream));
  return Status::success();
}

//===----------------------------------------------------------------------===//
// Steps
//===----------------------------------------------------------------------===//

Status EagerExecutor::Impl::launch(const HostAction &a) {
  const Program &p = program();
  const Function &f = p.functions[a.fn];
  FnViews &v = fns[a.fn];
  PreparedSubgraph &ps = subgraphs.at(a.sg);
  int var = a.variant == Variant::a ? 0 : 1;
  size_t slot = outputSlot(a.step);
  for (size_t i = 0; i < a.sg->nodes.size(); ++i) {
    const Node &n = a.sg->nodes[i];
    auto where = [&](int part, Stream stream) {
      return describeLaunch(p, a) + ", " + describeNode(n, uint32_t(i), part, stream);
    };
    if (n.kind == Node::Kind::event_record) {
      EventSlot e = binder->record(n, *a.sg, a.variant, a.step);
      Status st = RN_CUDA_CHECK(cudaEventRecord(ctx->event(e), ctx->stream(n.stream).stream));
      if (!st.ok())
        return st.error().withContext(where(-1, n.stream));
      continue;
    }
    if (n.kind == Node::Kind::event_wait) {
      Result<std::vector<EventSlot>> bound = binder->wait(n, *a.sg, a.step);
      if (!bound.ok())
        return bound.error().withContext(where(-1, n.stream));
      for (EventSlot e : *bound) {
        Status st =
            RN_CUDA_CHECK(cudaStreamWaitEvent(ctx->stream(n.stream).stream, ctx->event(e), 0));
        if (!st.ok())
          return st.error().withContext(where(-1, n.stream));
      }
      continue;
    }
    for (PreparedItem &it : ps.itemsOfNode[i]) {
      StreamResources &stream = ctx->stream(it.stream);
      for (size_t e : it.waitPartEvents) {
        Status st = RN_CUDA_CHECK(cudaStreamWaitEvent(stream.stream, ctx->partEvent(e), 0));
        if (!st.ok())
          return st.error().withContext(where(it.part, it.stream));
      }
      const NodeViews &views = ps.viewsOfNode[i];
      OpLaunch l{n, it.part, views.operands[size_t(var)], views.results[size_t(var)], stream,
                 *conv, *gemm, options.seed};
      if (it.profileBegin) {
        if (Status st = RN_CUDA_CHECK(cudaEventRecord(it.profileBegin, stream.stream)); !st.ok())
          return st.error().withContext(where(it.part, it.stream));
      }
      if (Status st = it.launcher->launch(l); !st.ok())
        return st.error().withContext(where(it.part, it.stream));
      if (it.profileEnd) {
        if (Status st = RN_CUDA_CHECK(cudaEventRecord(it.profileEnd, stream.stream)); !st.ok())
          return st.error().withContext(where(it.part, it.stream));
        it.profiled = true;
      }
      for (size_t e : it.recordPartEvents) {
        Status st = RN_CUDA_CHECK(cudaEventRecord(ctx->partEvent(e), stream.stream));
        if (!st.ok())
          return st.error().withContext(where(it.part, it.stream));
      }
      // Outputs go to the host right after the node that writes them, on
      // its stream, into the step's pinned slot.
      if (a.outputs)
        for (uint32_t o : it.outputs) {
          const TensorInfo &t = f.tensors[f.outputs[o].tensor];
          char *dst = static_cast<char *>(v.outputs->data) +
                      slot * v.outputBytesPerStep + v.outputOffset[o];
          Status st = RN_CUDA_CHECK(cudaMemcpyAsync(dst, v.tensors[var][f.outputs[o].tensor].data,
                                                    t.bytes, cudaMemcpyDeviceToHost,
                                                    stream.stream));
          if (!st.ok())
            return st.error().withContext(where(it.part, it.stream) + ", output " +
                                          f.outputs[o].name);
        }
      if (options.syncDebug) {
        if (Status st = ctx->synchronize(); !st.ok())
          return st.error().withContext("sync-debug after " + where(it.part, it.stream));
      }
    }
  }
  // Completion of the launch, for host waits: its streams were joined back
  // into the primary (the program's fork/join events; the CPU executor
  // checks it), so the primary's position covers the whole launch.
  Status st = RN_CUDA_CHECK(cudaEventRecord(ps.completion[size_t(var)],
                                            ctx->stream(a.sg->primary).stream));
  if (!st.ok())
    return st.error().withContext(describeLaunch(p, a));
  return Status::success();
}

namespace {

/// The primitives of the eager executor: host staging into pinned buffers,
/// launches issued node by node, host waits as event synchronization,
/// outputs decoded from their pinned slots.
class EagerPrimitives final : public HostPrimitives {
public:
  EagerPrimitives(EagerExecutor::Impl &impl) : impl_(impl) {}
  Status stage(const HostAction &a) override;
  Status launch(const HostAction &a) override { return impl_.launch(a); }
  Status hostWait(const HostAction &a) override;
  Status read(const HostAction &a) override;

private:
  EagerExecutor::Impl &impl_;
};

} // namespace

Status EagerPrimitives::stage(const HostAction &a) {
  const Function &f = impl_.program().functions[a.fn];
  auto &v = impl_.fns[a.fn];
  for (const Binding &b : f.inputs) {
    auto it = a.inputs->find(b.name);
    if (it == a.inputs->end())
      continue;
    const TensorInfo &t = f.tensors[b.tensor];
    const HostValue &value = it->second;
    size_t n = size_t(numel(t.shape));
    encode(t.dtype, value.floats.empty() ? nullptr : value.floats.data(),
           value.ints.empty() ? nullptr : value.ints.data(), n, v.hostInputs[b.tensor]->data);
  }
  return Status::success();
}

Status EagerPrimitives::hostWait(const HostAction &a) {
  const PreparedSubgraph &ps = impl_.subgraphs.at(a.sg);
  Status st = RN_CUDA_CHECK(cudaEventSynchronize(ps.completion[a.variant == Variant::a ? 0 : 1]));
  if (!st.ok())
    return st.error().withContext("host wait for " +
                                  EagerExecutor::Impl::describeLaunch(impl_.program(), a));
  return Status::success();
}

// Outputs are decoded when the executor collects a completed step.
Status EagerPrimitives::read(const HostAction &) { return Status::success(); }

Status EagerExecutor::Impl::decodeOutputs(uint32_t fnIndex, int64_t step,
                                          StepOutputs &outputs) const {
  const Function &f = program().functions[fnIndex];
  const FnViews &v = fns[fnIndex];
  for (size_t o = 0; o < f.outputs.size(); ++o) {
    const TensorInfo &t = f.tensors[f.outputs[o].tensor];
    const auto *src = static_cast<const unsigned char *>(v.outputs->data) +
                      outputSlot(step) * v.outputBytesPerStep + v.outputOffset[o];
    size_t n = size_t(numel(t.shape));
    HostValue &out = outputs[f.outputs[o].name];
    if (t.dtype == DType::i32) {
      out.ints.resize(n);
      std::memcpy(out.ints.data(), src, n * 4);
    } else {
      out.floats.resize(n);
      for (size_t i = 0; i < n; ++i)
        out.floats[i] = loadElement(t.dtype, src, i);
    }
  }
  return Status::success();
}

Status EagerExecutor::issue(const HostProgram &program) {
  EagerPrimitives primitives(*impl_);
  if (Status st = runHostProgram(program, primitives); !st.ok())
    return st.error().withContext("cuda-eager");
  return Status::success();
}

Result<bool> EagerExecutor::stepComplete(const PendingStep &step) {
  // A completion event may have been recorded again by a later launch of
  // the same subgraph and variant; that record is later on the same
  // stream, so "complete" stays true when it is.
  for (const auto &[sg, variant] : step.launches) {
    cudaEvent_t e = impl_->subgraphs.at(sg).completion[variant == Variant::a ? 0 : 1];
    cudaError_t q = cudaEventQuery(e);
    if (q == cudaErrorNotReady)
      return false;
    Status st = RN_CUDA_CHECK(q);
    if (!st.ok())
      return st.error().withContext("cuda-eager: step " + std::to_string(step.step) +
                                    ", subgraph " + sg->name);
  }
  return true;
}

Status EagerExecutor::waitStep(const PendingStep &step) {
  for (const auto &[sg, variant] : step.launches) {
    cudaEvent_t e = impl_->subgraphs.at(sg).completion[variant == Variant::a ? 0 : 1];
    Status st = RN_CUDA_CHECK(cudaEventSynchronize(e));
    if (!st.ok())
      return st.error().withContext("cuda-eager: step " + std::to_string(step.step) +
                                    ", subgraph " + sg->name);
  }
  return Status::success();
}

Status EagerExecutor::collect(PendingStep &step) {
  if (step.launches.empty())
    return Status::success();
  return impl_->decodeOutputs(step.fn, step.step, step.outputs);
}

Status EagerExecutor::synchronize() {
  if (Status st = impl_->ctx->synchronize(); !st.ok())
    return st.error().withContext("cuda-eager");
  return Status::success();
}

Result<std::string> EagerExecutor::profileReport() {
  if (!impl_->options.profile)
    return Error("cuda-eager: profileReport needs Options::profile");
  if (Status st = synchronize(); !st.ok())
    return st.error();
  // GPU time of each node's (or part's) most recent launch, summed by op
  // (and part role), largest first.
  struct Row {
    double ms = 0;
    size_t count = 0;
  };
  std::map<std::string, Row> rows;
  double total = 0;
  for (const Function &f : program().functions)
    for (const Subgraph &sg : f.subgraphs) {
      const PreparedSubgraph &ps = impl_->subgraphs.at(&sg);
      for (size_t i = 0; i < sg.nodes.size(); ++i)
        for (const PreparedItem &it : ps.itemsOfNode[i]) {
          if (!it.profiled || f.name != "train_step")
            continue;
          float ms = 0;
          RN_CUDA_TRY(cudaEventElapsedTime(&ms, it.profileBegin, it.profileEnd));
          const Node &n = sg.nodes[i];
          std::string key = n.op + (it.part >= 0 ? "." + n.parts[size_t(it.part)].role : "");
          rows[key].ms += ms;
          rows[key].count += 1;
          total += ms;
        }
    }
  std::vector<std::pair<std::string, Row>> sorted(rows.begin(), rows.end());
  std::sort(sorted.begin(), sorted.end(),
            [](const auto &a, const auto &b) { return a.second.ms > b.second.ms; });
  std::string out = "cuda-eager profile of the last train step (GPU ms per op, between events "
                    "on its stream):\n";
  char line[256];
  for (const auto &[key, row] : sorted) {
    std::snprintf(line, sizeof line, "  %-40s %5zu x %9.3f ms %5.1f%%\n", key.c_str(), row.count,
                  row.ms, total > 0 ? 100.0 * row.ms / total : 0.0);
    out += line;
  }
  std::snprintf(line, sizeof line, "  %-40s         %9.3f ms\n", "sum", total);
  return out + line;
}

size_t EagerExecutor::maxStepsInFlight() const { return impl_->options.maxStepsInFlight; }

} // namespace rn::cuda
