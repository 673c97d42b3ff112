//===- device_program.cpp - A program loaded onto one GPU -----------------===//
//
// See device_program.h.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/device_program.h"

#include "runtime/core/align.h"
#include "runtime/core/dtype.h"
#include "runtime/core/op_table.h"
#include "runtime/cuda/check.h"
#include "runtime/cuda/communicator.h"
#include "runtime/cuda/cupti_trace.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <tuple>

namespace rn::cuda {

namespace {

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

/// Writes a host input's `n` elements as elements of `type` at `out`:
/// uint8 pixels as they are.
void encodeInput(DType type, const HostValue &value, size_t n, void *out) {
  if (type == DType::u8)
    std::memcpy(out, value.byteData(), n);
  else
    encode(type, value.floatData(), value.intData(), n, out);
}

} // namespace

std::vector<ItemLabel> itemLabels(const Program &program) {
  std::vector<ItemLabel> out;
  for (size_t fi = 0; fi < program.functions.size(); ++fi)
    for (const Subgraph &sg : program.functions[fi].subgraphs)
      for (size_t i = 0; i < sg.nodes.size(); ++i) {
        const Node &n = sg.nodes[i];
        if (n.kind != Node::Kind::op)
          continue;
        auto add = [&](int part, Stream stream) {
          std::string name = std::to_string(i) + " " + n.op;
          if (part >= 0)
            name += "." + n.parts[size_t(part)].role;
          out.push_back({uint32_t(fi), &sg, uint32_t(i), part, stream,
                         name + " (" + sg.name + ")"});
        };
        if (n.parts.empty())
          add(-1, n.stream);
        for (size_t q = 0; q < n.parts.size(); ++q)
          add(int(q), n.parts[q].stream);
      }
  return out;
}

PinnedBuffer::~PinnedBuffer() {
  if (data)
    (void)cudaFreeHost(data);
}

Status PinnedBuffer::allocate(size_t n) {
  bytes = n;
  return RN_CUDA_CHECK(cudaMallocHost(&data, n == 0 ? 1 : n));
}

DeviceProgram::~DeviceProgram() {
  if (ctx_)
    (void)ctx_->synchronize();
  if (syncEvent_)
    (void)cudaEventDestroy(syncEvent_);
  for (auto &[sg, p] : subgraphs_) {
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

std::string DeviceProgram::describeSubgraph(const Function &f, const Subgraph &sg,
                                            Variant variant) {
  std::string s = "function " + f.name + ", subgraph " + sg.name;
  if (sg.doubleBuffered)
    s += std::string(" (variant ") + (variant == Variant::a ? "a" : "b") + ")";
  return s;
}

std::string DeviceProgram::describeLaunch(const HostAction &a) const {
  std::string s = "function " + program().functions[a.fn].name + ", subgraph " + a.sg->name + " (";
  if (a.sg->doubleBuffered)
    s += std::string("variant ") + (a.variant == Variant::a ? "a" : "b") + ", ";
  return s + "step " + std::to_string(a.step) + ")";
}

std::string DeviceProgram::describeNode(const Node &n, uint32_t index, int part, Stream stream) {
  std::string s = "node " + std::to_string(index);
  if (n.kind == Node::Kind::op)
    s += " (" + n.op + (part >= 0 ? ", part " + n.parts[size_t(part)].role : "") + ")";
  return s + " on stream " + std::string(streamName(stream));
}

//===----------------------------------------------------------------------===//
// Load
//===----------------------------------------------------------------------===//

Result<std::unique_ptr<DeviceProgram>> DeviceProgram::create(const Artifact &artifact,
                                                             const Options &options,
                                                             std::string_view who) {
  auto start = std::chrono::steady_clock::now();
  std::unique_ptr<DeviceProgram> dp(new DeviceProgram());
  dp->artifact_ = &artifact;
  dp->options_ = options;
  if (Status st = dp->create(); !st.ok())
    return st.error().withContext(std::string(who));
  dp->loadSeconds_ =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return dp;
}

Status DeviceProgram::create() {
  const Program &p = program();
  // Every op must have a launcher before anything touches the GPU.
  for (const Function &f : p.functions)
    for (const Subgraph &sg : f.subgraphs)
      for (size_t i = 0; i < sg.nodes.size(); ++i) {
        const Node &n = sg.nodes[i];
        if (n.kind == Node::Kind::op && !(n.opKind() && findOpLauncher(*n.opKind())))
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
  co.device = options_.device;
  co.partEvents = partEvents;
  Result<std::unique_ptr<DeviceContext>> c = DeviceContext::create(p, co);
  if (!c.ok())
    return c.error();
  ctx_ = std::move(*c);

  ConvRunner::Options convOptions;
  convOptions.autotune = options_.autotune;
  convOptions.autotuneCandidates = options_.autotuneCandidates;
  convOptions.deterministic = options_.deterministic;
  convOptions.allowTf32 = options_.allowTf32;
  convOptions.allowReducedPrecisionReduction = options_.allowReducedPrecisionReduction;
  convOptions.cacheFile = options_.planCacheFile;
  Result<std::unique_ptr<ConvRunner>> cr = ConvRunner::create(convOptions);
  if (!cr.ok())
    return cr.error();
  conv_ = std::move(*cr);
  GemmRunner::Options gemmOptions;
  gemmOptions.allowTf32 = options_.allowTf32;
  gemmOptions.deterministic = options_.deterministic;
  Result<std::unique_ptr<GemmRunner>> gr = GemmRunner::create(gemmOptions);
  if (!gr.ok())
    return gr.error();
  gemm_ = std::move(*gr);

  size_t partEvent = 0;
  // Timeline labels: each item's index in itemLabels(), the one list the
  // timeline names records from.
  std::map<std::tuple<const Subgraph *, uint32_t, int>, uint64_t> labelOf;
  {
    std::vector<ItemLabel> labels = itemLabels(p);
    for (size_t k = 0; k < labels.size(); ++k)
      labelOf[{labels[k].subgraph, labels[k].node, labels[k].part}] = k + 1;
  }
  fns_.resize(p.functions.size());
  for (size_t fi = 0; fi < p.functions.size(); ++fi) {
    const Function &f = p.functions[fi];
    FnViews &v = fns_[fi];
    v.hostInputs.resize(f.tensors.size());
    v.hostCopiesOf.resize(f.tensors.size());
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
        v.tensors[0][t].data = ctx_->address(*info.slot, Variant::a);
        v.tensors[1][t].data = ctx_->address(*info.slot, Variant::b);
      }
    }
    v.outputOf.assign(f.tensors.size(), -1);
    for (size_t k = 0; k < f.outputs.size(); ++k) {
      v.outputOf[f.outputs[k].tensor] = int32_t(k);
      v.outputOffset.push_back(v.outputBytesPerStep);
      v.outputBytesPerStep += alignUp(f.tensors[f.outputs[k].tensor].bytes);
    }
    if (Status st = v.outputs->allocate(v.outputBytesPerStep * options_.maxStepsInFlight);
        !st.ok())
      return st.error().withContext("function " + f.name + ": pinned output slots");

    for (const Subgraph &sg : f.subgraphs) {
      PreparedSubgraph &ps = subgraphs_[&sg];
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
        if (n.opKind() == OpKind::host_to_device) {
          const size_t input =
              n.layout.operands.index(op_table::host_to_device::operand::input);
          if (v.hostInputs[n.operands[input]])
            v.hostCopiesOf[n.operands[input]].push_back({&ps, i, input});
        }
        std::vector<uint32_t> outputs;
        for (uint32_t t : n.results)
          if (v.outputOf[t] >= 0)
            outputs.push_back(uint32_t(v.outputOf[t]));
        const OpLauncher *launcher = findOpLauncher(*n.opKind());
        auto &items = ps.itemsOfNode[i];
        auto addItem = [&](int part, Stream stream, std::vector<uint32_t> itemOutputs) {
          PreparedItem &item = items.emplace_back();
          item.node = uint32_t(i);
          item.part = part;
          item.stream = stream;
          item.launcher = launcher;
          item.outputs = std::move(itemOutputs);
        };
        if (n.parts.empty()) {
          addItem(-1, n.stream, outputs);
        } else {
          for (size_t q = 0; q < n.parts.size(); ++q)
            addItem(int(q), n.parts[q].stream, {});
          for (const auto &[earlier, later] : n.partWaits) {
            items[earlier].recordPartEvents.push_back(partEvent);
            items[later].waitPartEvents.push_back(partEvent);
            ++partEvent;
          }
          // A forking op's outputs are copied after its last part.
          items.back().outputs = outputs;
        }
        for (PreparedItem &it : items)
          it.label = labelOf.at({&sg, uint32_t(i), it.part});
        if (options_.profile)
          for (PreparedItem &it : items) {
            RN_CUDA_TRY(cudaEventCreate(&it.profileBegin));
            RN_CUDA_TRY(cudaEventCreate(&it.profileEnd));
          }
      }
    }
  }
  // Autotuning times each candidate plan on buffers of its call's sizes.
  // The activations hold nothing before the first step, so the buffers are
  // carved from them rather than allocated on top of the arena: a cold
  // load (empty plan cache) then peaks no higher than a warm one (run L:
  // ResNet-18 bs1024 +390 MiB, ResNet-50 +950 MiB without it).
  if (const Region *activations = p.arena.find("activations"))
    conv_->setAutotuneScratch(ctx_->region("activations"), size_t(activations->bytes));
  Status prepared = prepareNodes();
  conv_->setAutotuneScratch(nullptr, 0);
  return prepared;
}

std::string DeviceProgram::describePrepare() const {
  char text[256];
  std::snprintf(text, sizeof text,
                "%zu nodes prepared (%zu convolution graphs, %.2f s building and autotuning",
                preparedNodes_, conv_->graphs(), conv_->prepareSeconds());
  std::string out = text;
  if (size_t choices = conv_->statsChoices()) {
    std::snprintf(text, sizeof text, "; batch statistics from conv + genstats for %zu of %zu convolution shapes",
                  conv_->genstatsChoices(), choices);
    out += text;
  }
  if (size_t bytes = conv_->autotuneAllocatedBytes()) {
    std::snprintf(text, sizeof text, "; %.1f MiB of timing buffers allocated beside the arena",
                  double(bytes) / double(1 << 20));
    out += text;
  }
  return out + ")";
}

Status DeviceProgram::prepareNodes() {
  const Program &p = program();
  // The most any node (or part) on a stream needs: its workspace's size.
  std::array<size_t, kStreamCount> &need = workspaceNeed_;
  for (const Function &f : p.functions) {
    for (const Subgraph &sg : f.subgraphs) {
      PreparedSubgraph &ps = subgraphs_.at(&sg);
      for (size_t i = 0; i < sg.nodes.size(); ++i) {
        const Node &n = sg.nodes[i];
        for (PreparedItem &it : ps.itemsOfNode[i]) {
          if (!it.launcher->prepare)
            continue;
          const StreamResources &stream = ctx_->stream(it.stream);
          const NodeViews &views = ps.viewsOfNode[i];
          OpLaunch l{n,      it.part,       views.operands[0], views.results[0],
                     stream, *conv_,        *gemm_,            options_.seed,
                     &it.prepared, options_.communicator,
                     p.arena.alignment};
          std::string where = "function " + f.name + ", subgraph " + sg.name + ", " +
                              describeNode(n, uint32_t(i), it.part, it.stream);
          double planMsBefore = conv_->preparedPlanMs();
          size_t untimedBefore = conv_->untimedPrepares();
          Result<size_t> bytes = it.launcher->prepare(l);
          if (!bytes.ok())
            return bytes.error().withContext(where);
          if (f.name == "train_step") {
            convFloorMs_ += conv_->preparedPlanMs() - planMsBefore;
            convFloorComplete_ &= conv_->untimedPrepares() == untimedBefore;
          }
          if (*bytes > stream.workspaceBytes)
            return Error(where + ": needs " + std::to_string(*bytes) +
                         " bytes of workspace, but workspace_" + std::string(stream.name) +
                         " has " + std::to_string(stream.workspaceBytes));
          need[size_t(it.stream)] = std::max(need[size_t(it.stream)], *bytes);
          ++preparedNodes_;
        }
      }
    }
  }
  return ctx_->sizeWorkspaces(need);
}

//===----------------------------------------------------------------------===//
// State
//===----------------------------------------------------------------------===//

Status DeviceProgram::initialize() {
  StreamResources &trans = ctx_->stream(Stream::trans);
  // Parameters, buffers and constants first, then what derives from them
  // (runtime/core/initial_state.cpp, shared with the CPU executor).
  return forEachInitialState(
      *artifact_, [&](const StateEntry &s, const std::vector<float> &v) -> Status {
        size_t n = v.size();
        std::vector<unsigned char> bytes(n * elementSize(s.dtype));
        encode(s.dtype, v.data(), nullptr, n, bytes.data());
        Status st = RN_CUDA_CHECK(cudaMemcpyAsync(ctx_->address(*s.slot, Variant::a),
                                                  bytes.data(), bytes.size(),
                                                  cudaMemcpyHostToDevice, trans.stream));
        if (st.ok())
          st = RN_CUDA_CHECK(cudaStreamSynchronize(trans.stream));
        if (!st.ok())
          return st.error().withContext("state " + s.name);
        return Status::success();
      });
}

Result<std::vector<float>> DeviceProgram::readState(std::string_view name) {
  const StateEntry *s = program().findState(name);
  if (!s || !s->slot)
    return Error("no state entry named '" + std::string(name) + "'");
  if (Status st = ctx_->synchronize(); !st.ok())
    return st.error();
  size_t n = size_t(numel(s->shape));
  std::vector<unsigned char> bytes(n * elementSize(s->dtype));
  StreamResources &trans = ctx_->stream(Stream::trans);
  RN_CUDA_TRY(cudaMemcpyAsync(bytes.data(), ctx_->address(*s->slot, Variant::a), bytes.size(),
                              cudaMemcpyDeviceToHost, trans.stream));
  RN_CUDA_TRY(cudaStreamSynchronize(trans.stream));
  std::vector<float> out(n);
  for (size_t i = 0; i < n; ++i)
    out[i] = loadElement(s->dtype, bytes.data(), i);
  return out;
}

Status DeviceProgram::writeState(std::string_view name, const std::vector<float> &values) {
  const StateEntry *s = program().findState(name);
  if (!s || !s->slot)
    return Error("no state entry named '" + std::string(name) + "'");
  size_t n = size_t(numel(s->shape));
  if (values.size() != n)
    return Error("state " + s->name + " has " + std::to_string(n) + " elements, got " +
                 std::to_string(values.size()));
  if (Status st = ctx_->synchronize(); !st.ok())
    return st;
  std::vector<unsigned char> bytes(n * elementSize(s->dtype));
  encode(s->dtype, values.data(), nullptr, n, bytes.data());
  StreamResources &trans = ctx_->stream(Stream::trans);
  RN_CUDA_TRY(cudaMemcpyAsync(ctx_->address(*s->slot, Variant::a), bytes.data(), bytes.size(),
                              cudaMemcpyHostToDevice, trans.stream));
  RN_CUDA_TRY(cudaStreamSynchronize(trans.stream));
  return Status::success();
}

//===----------------------------------------------------------------------===//
// Issuing work
//===----------------------------------------------------------------------===//

Status DeviceProgram::issueItem(const Node &n, const NodeViews &views, Variant variant,
                                PreparedItem &it) {
  StreamResources &stream = ctx_->stream(it.stream);
  for (size_t e : it.waitPartEvents)
    RN_CUDA_TRY(cudaStreamWaitEvent(stream.stream, ctx_->partEvent(e), 0));
  size_t var = variant == Variant::a ? 0 : 1;
  OpLaunch l{n,      it.part,       views.operands[var], views.results[var],
             stream, *conv_,        *gemm_,              options_.seed,
             &it.prepared, options_.communicator,
             program().arena.alignment};
  if (it.profileBegin)
    RN_CUDA_TRY(cudaEventRecord(it.profileBegin, stream.stream));
  if (options_.trace)
    RN_RETURN_IF_ERROR(options_.trace->pushLabel(it.label));
  Status launched = it.launcher->launch(l);
  if (options_.trace)
    if (Status popped = options_.trace->popLabel(); launched.ok() && !popped.ok())
      launched = popped;
  if (!launched.ok())
    return launched;
  if (it.profileEnd) {
    RN_CUDA_TRY(cudaEventRecord(it.profileEnd, stream.stream));
    it.profiled = true;
  }
  for (size_t e : it.recordPartEvents)
    RN_CUDA_TRY(cudaEventRecord(ctx_->partEvent(e), stream.stream));
  return Status::success();
}

Status DeviceProgram::copyOutput(uint32_t fn, uint32_t o, Variant variant, int64_t step,
                                 cudaStream_t stream) {
  const Function &f = program().functions[fn];
  FnViews &v = fns_[fn];
  const TensorInfo &t = f.tensors[f.outputs[o].tensor];
  char *dst = static_cast<char *>(v.outputs->data) + outputSlot(step) * v.outputBytesPerStep +
              v.outputOffset[o];
  const void *src = v.tensors[variant == Variant::a ? 0 : 1][f.outputs[o].tensor].data;
  Status st = RN_CUDA_CHECK(
      cudaMemcpyAsync(dst, src, t.bytes, cudaMemcpyDeviceToHost, stream));
  if (!st.ok())
    return st.error().withContext("output " + f.outputs[o].name);
  return Status::success();
}

Status DeviceProgram::recordCompletion(const HostAction &a) {
  PreparedSubgraph &ps = subgraphs_.at(a.sg);
  Status st = RN_CUDA_CHECK(cudaEventRecord(ps.completion[a.variant == Variant::a ? 0 : 1],
                                            ctx_->stream(a.sg->primary).stream));
  if (!st.ok())
    return st.error().withContext(describeLaunch(a));
  return Status::success();
}

//===----------------------------------------------------------------------===//
// Host primitives
//===----------------------------------------------------------------------===//

Status DeviceProgram::stage(const HostAction &a) {
  const Function &f = program().functions[a.fn];
  FnViews &v = fns_[a.fn];
  for (const Binding &b : f.inputs) {
    auto it = a.inputs->find(b.name);
    if (it == a.inputs->end())
      continue;
    const TensorInfo &t = f.tensors[b.tensor];
    const HostValue &value = it->second;
    size_t n = size_t(numel(t.shape));
    // A pinned value of a 32-bit or u8 input holds the elements as the
    // device stores them: it is the copy's source as it is (a device block
    // too: the copy runs device to device); any other value is encoded into
    // the staging buffer (after the host wait that says the previous copy
    // from it completed).
    void *source = v.hostInputs[b.tensor]->data;
    const bool storedAsIs = elementSize(t.dtype) == 4 || t.dtype == DType::u8;
    if (value.onDevice && !storedAsIs)
      return Error("function " + f.name + ": input " + b.name + " is " +
                   std::string(dtypeName(t.dtype)) +
                   ", and a device block is copied as it is: only 32-bit and ui8 inputs "
                   "take one");
    if (value.pinned && storedAsIs)
      source = const_cast<void *>(value.pinned.get());
    else // the elements checkStepInputs counted, in the tensor's dtype
      encodeInput(t.dtype, value, n, source);
    for (const auto &copy : v.hostCopiesOf[b.tensor])
      for (auto &operands : copy.subgraph->viewsOfNode[copy.node].operands)
        operands[copy.staging].data = source;
  }
  return Status::success();
}

Status DeviceProgram::hostWait(const HostAction &a) {
  const PreparedSubgraph &ps = subgraphs_.at(a.sg);
  auto start = std::chrono::steady_clock::now();
  Status st = waitEvent(ps.completion[a.variant == Variant::a ? 0 : 1], describeLaunch(a));
  blockedSeconds_ +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!st.ok())
    return st.error().withContext("host wait for " + describeLaunch(a));
  return Status::success();
}

Status DeviceProgram::decodeOutputs(uint32_t fnIndex, int64_t step, StepOutputs &outputs) const {
  const Function &f = program().functions[fnIndex];
  const FnViews &v = fns_[fnIndex];
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

Result<bool> DeviceProgram::stepComplete(const PendingStep &step) {
  // A completion event may have been recorded again by a later launch of
  // the same subgraph and variant; that record is later on the same
  // stream, so "complete" stays true when it is.
  for (const auto &[sg, variant] : step.launches) {
    cudaEvent_t e = subgraphs_.at(sg).completion[variant == Variant::a ? 0 : 1];
    cudaError_t q = cudaEventQuery(e);
    if (q == cudaErrorNotReady)
      return false;
    Status st = RN_CUDA_CHECK(q);
    if (!st.ok())
      return st.error().withContext("step " + std::to_string(step.step) + ", subgraph " +
                                    sg->name);
  }
  return true;
}

Status DeviceProgram::waitStep(const PendingStep &step) {
  for (const auto &[sg, variant] : step.launches) {
    cudaEvent_t e = subgraphs_.at(sg).completion[variant == Variant::a ? 0 : 1];
    auto start = std::chrono::steady_clock::now();
    Status st = waitEvent(e, "step " + std::to_string(step.step) + ", subgraph " + sg->name);
    blockedSeconds_ +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!st.ok())
      return st.error().withContext("step " + std::to_string(step.step) + ", subgraph " +
                                    sg->name);
  }
  return Status::success();
}

Status DeviceProgram::waitEvent(cudaEvent_t event, std::string_view what) {
  if (options_.communicator)
    return options_.communicator->waitEvent(event, what);
  return RN_CUDA_CHECK(cudaEventSynchronize(event));
}

Status DeviceProgram::synchronize() {
  if (!options_.communicator)
    return ctx_->synchronize();
  // Through the communicator's deadline: a stream may hold a collective
  // waiting on a peer.
  if (!syncEvent_)
    RN_CUDA_TRY(cudaEventCreateWithFlags(&syncEvent_, cudaEventDisableTiming));
  for (Stream s : {Stream::trans, Stream::comp1, Stream::comp2, Stream::comp3, Stream::update}) {
    const StreamResources &r = ctx_->stream(s);
    RN_CUDA_TRY(cudaEventRecord(syncEvent_, r.stream));
    RN_RETURN_IF_ERROR(waitEvent(syncEvent_, "stream " + std::string(r.name) + " to finish"));
  }
  return Status::success();
}

Result<std::string> DeviceProgram::profileReport(std::string_view who) {
  if (!options_.profile)
    return Error(std::string(who) + ": profileReport needs Options::profile");
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
      const PreparedSubgraph &ps = subgraphs_.at(&sg);
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
  std::string out = std::string(who) +
                    " profile of the last train step (GPU ms per op, between events "
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

} // namespace rn::cuda
