//===- graph_executor.cpp - The cuda-graph executor -----------------------===//
//
// See graph_executor.h.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/graph_executor.h"

#include "runtime/core/capture_bindings.h"
#include "runtime/core/op_table.h"
#include "runtime/cuda/check.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <set>
#include <unordered_map>
#include <unordered_set>

namespace rn::cuda {

namespace {

size_t variantIndex(Variant v) { return v == Variant::a ? 0 : 1; }

/// One instantiated graph of a (subgraph, variant) and what replay needs.
/// A host-to-device copy node of a captured graph, whose source follows
/// the step's value (DeviceProgram::stage points the node's source view at
/// it): the staging buffer, or a pinned block of the caller's.
struct HostCopyNode {
  cudaGraphNode_t node = nullptr;
  const DeviceTensor *source = nullptr; ///< the node's source view
  void *destination = nullptr;
  size_t bytes = 0;
  const void *captured = nullptr; ///< the source the exec graph reads now
};

struct CapturedGraph {
  cudaGraph_t graph = nullptr; ///< kept for the node map and dumps
  cudaGraphExec_t exec = nullptr;
  size_t nodes = 0;
  std::vector<uint32_t> outputs; ///< output bindings its nodes write
  std::vector<HostCopyNode> hostCopies;
};

/// The streams a subgraph issues work on besides its primary.
std::vector<Stream> secondaryStreams(const Subgraph &sg) {
  std::set<Stream> used;
  for (const Node &n : sg.nodes) {
    used.insert(n.stream);
    for (const Part &p : n.parts)
      used.insert(p.stream);
  }
  used.erase(sg.primary);
  return {used.begin(), used.end()};
}

/// Adds an event record (or wait) node on `event` to the graph `stream` is
/// capturing into, after the stream's current dependencies, and makes it
/// the stream's dependency: what cudaEventRecordWithFlags /
/// cudaStreamWaitEvent with the External flags capture, written out so that
/// the node does not depend on the event's state at capture time.
Status appendEventNode(cudaStream_t stream, cudaEvent_t event, bool record) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  cudaGraph_t graph = nullptr;
  const cudaGraphNode_t *deps = nullptr;
  size_t count = 0;
  RN_CUDA_TRY(cudaStreamGetCaptureInfo(stream, &status, nullptr, &graph, &deps, nullptr, &count));
  if (status != cudaStreamCaptureStatusActive)
    return Error("the stream is not capturing");
  std::vector<cudaGraphNode_t> after(deps, deps + count);
  cudaGraphNode_t node = nullptr;
  if (record)
    RN_CUDA_TRY(cudaGraphAddEventRecordNode(&node, graph, after.data(), after.size(), event));
  else
    RN_CUDA_TRY(cudaGraphAddEventWaitNode(&node, graph, after.data(), after.size(), event));
  RN_CUDA_TRY(cudaStreamUpdateCaptureDependencies(stream, &node, nullptr, 1,
                                                  cudaStreamSetCaptureDependencies));
  return Status::success();
}

} // namespace

struct GraphExecutor::Impl {
  DeviceProgram *dp = nullptr; ///< the executor's (DeviceExecutor::device_)
  std::string dumpGraphsDir;
  std::optional<CaptureBindings> bindings;
  std::unordered_map<const Subgraph *, std::array<CapturedGraph, 2>> graphs;
  std::unordered_map<cudaGraphNode_t, GraphNodeOrigin> origins;
  cudaEvent_t fork = nullptr;
  std::array<cudaEvent_t, kStreamCount> join{};
  /// Per (event id, slot): the event of waits inside one capture (graph
  /// edges). The program's CUDA events (DeviceContext::event) are only
  /// recorded by event record nodes and eager calls: an event whose last
  /// record was a capture-internal one of an ended capture is rejected by
  /// later waits (cudaErrorInvalidValue).
  std::vector<cudaEvent_t> internalEvents;
  cudaEvent_t internalEvent(EventSlot slot) const {
    return internalEvents[size_t(slot.event) * 2 + size_t(slot.slot)];
  }
  double captureSeconds = 0, loadSeconds = 0;
  size_t graphCount = 0, graphNodes = 0;

  ~Impl() {
    if (dp)
      (void)dp->synchronize();
    for (auto &[sg, variants] : graphs)
      for (CapturedGraph &g : variants) {
        if (g.exec)
          (void)cudaGraphExecDestroy(g.exec);
        if (g.graph)
          (void)cudaGraphDestroy(g.graph);
      }
    for (cudaEvent_t e : join)
      if (e)
        (void)cudaEventDestroy(e);
    for (cudaEvent_t e : internalEvents)
      if (e)
        (void)cudaEventDestroy(e);
    if (fork)
      (void)cudaEventDestroy(fork);
  }

  Status captureAll();
  Status capture(const Function &f, const Subgraph &sg, Variant v, CapturedGraph &out);
  Status captureNodes(const Subgraph &sg, Variant v, cudaStream_t primary,
                      const std::vector<Stream> &secondaries, CapturedGraph &out);
  Status mapNewNodes(cudaGraph_t graph, std::unordered_set<cudaGraphNode_t> &seen,
                     const GraphNodeOrigin &origin,
                     std::vector<cudaGraphNode_t> *added = nullptr);
  Status noteHostCopy(const Node &node, const NodeViews &views, Variant v,
                      const std::vector<cudaGraphNode_t> &added, CapturedGraph &out);
  Status updateHostCopies(CapturedGraph &g);
  Status launch(const HostAction &a);
  Status dumpGraphs() const;
};

/// Keeps the memcpy node a host_to_device node captured, so that launches
/// can point it at the step's source.
Status GraphExecutor::Impl::noteHostCopy(const Node &node, const NodeViews &views, Variant v,
                                         const std::vector<cudaGraphNode_t> &added,
                                         CapturedGraph &out) {
  using namespace op_table::host_to_device;
  const DeviceTensor &source =
      views.operands[variantIndex(v)][node.layout.operands.index(operand::input)];
  const DeviceTensor &destination =
      views.results[variantIndex(v)][node.layout.results.index(result::result)];
  size_t bytes = size_t(destination.numel()) * elementSize(destination.dtype);
  if (bytes == 0)
    return Status::success();
  for (cudaGraphNode_t node : added) {
    cudaGraphNodeType type{};
    RN_CUDA_TRY(cudaGraphNodeGetType(node, &type));
    if (type == cudaGraphNodeTypeMemcpy) {
      out.hostCopies.push_back({node, &source, destination.data, bytes, source.data});
      return Status::success();
    }
  }
  return Error("host_to_device: the capture holds no memcpy node for it");
}

/// Points each host copy node at its view's current source where that
/// changed (the update applies to later launches only, so launches in
/// flight keep the source they were given).
Status GraphExecutor::Impl::updateHostCopies(CapturedGraph &g) {
  for (HostCopyNode &c : g.hostCopies) {
    if (c.source->data == c.captured)
      continue;
    RN_CUDA_TRY(cudaGraphExecMemcpyNodeSetParams1D(g.exec, c.node, c.destination, c.source->data,
                                                   c.bytes, cudaMemcpyDefault));
    c.captured = c.source->data;
  }
  return Status::success();
}

//===----------------------------------------------------------------------===//
// Capture
//===----------------------------------------------------------------------===//

Status GraphExecutor::Impl::captureAll() {
  auto start = std::chrono::steady_clock::now();
  RN_CUDA_TRY(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
  for (cudaEvent_t &e : join)
    RN_CUDA_TRY(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  internalEvents.assign(size_t(dp->program().numEvents) * 2, nullptr);
  for (cudaEvent_t &e : internalEvents)
    RN_CUDA_TRY(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  for (const Function &f : dp->program().functions)
    for (const Subgraph &sg : f.subgraphs) {
      auto &variants = graphs[&sg];
      for (Variant v : {Variant::a, Variant::b}) {
        if (v == Variant::b && !sg.doubleBuffered)
          continue;
        if (Status st = capture(f, sg, v, variants[variantIndex(v)]); !st.ok())
          return st;
        ++graphCount;
        graphNodes += variants[variantIndex(v)].nodes;
      }
    }
  captureSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return Status::success();
}

Status GraphExecutor::Impl::capture(const Function &f, const Subgraph &sg, Variant v,
                                    CapturedGraph &out) {
  DeviceContext &ctx = dp->context();
  cudaStream_t primary = ctx.stream(sg.primary).stream;
  std::vector<Stream> secondaries = secondaryStreams(sg);
  std::string where = "capture of " + DeviceProgram::describeSubgraph(f, sg, v);

  if (Status st = RN_CUDA_CHECK(cudaStreamBeginCapture(primary, cudaStreamCaptureModeThreadLocal));
      !st.ok())
    return st.error().withContext(where);
  Status st = captureNodes(sg, v, primary, secondaries, out);
  // Join every stream back into the primary (also after an error, so that
  // ending the capture takes every stream out of capture mode).
  for (Stream s : secondaries) {
    cudaStream_t stream = ctx.stream(s).stream;
    Status joined = RN_CUDA_CHECK(cudaEventRecord(join[size_t(s)], stream));
    if (joined.ok())
      joined = RN_CUDA_CHECK(cudaStreamWaitEvent(primary, join[size_t(s)], 0));
    if (st.ok() && !joined.ok())
      st = joined.error().withContext("joining stream " + std::string(streamName(s)));
  }
  cudaGraph_t graph = nullptr;
  cudaError_t ended = cudaStreamEndCapture(primary, &graph);
  if (st.ok() && ended != cudaSuccess)
    st = RN_CUDA_CHECK(ended);
  if (!st.ok()) {
    if (graph)
      (void)cudaGraphDestroy(graph);
    (void)cudaGetLastError(); // capture errors are not sticky; clear the last one
    std::string left;
    for (size_t s = 0; s < kStreamCount; ++s) {
      cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
      if (cudaStreamIsCapturing(ctx.stream(Stream(s)).stream, &status) == cudaSuccess &&
          status != cudaStreamCaptureStatusNone)
        left += std::string(left.empty() ? "" : ", ") + std::string(streamName(Stream(s)));
    }
    std::string message = where;
    if (!left.empty())
      message += " (streams still capturing afterwards: " + left + ")";
    return st.error().withContext(message);
  }
  out.graph = graph;
  if (Status inst = RN_CUDA_CHECK(cudaGraphInstantiateWithFlags(&out.exec, graph, 0)); !inst.ok())
    return inst.error().withContext("instantiating " + DeviceProgram::describeSubgraph(f, sg, v));
  size_t count = 0;
  RN_CUDA_TRY(cudaGraphGetNodes(graph, nullptr, &count));
  out.nodes = count;
  return Status::success();
}

Status GraphExecutor::Impl::mapNewNodes(cudaGraph_t graph, std::unordered_set<cudaGraphNode_t> &seen,
                                        const GraphNodeOrigin &origin,
                                        std::vector<cudaGraphNode_t> *added) {
  size_t count = 0;
  RN_CUDA_TRY(cudaGraphGetNodes(graph, nullptr, &count));
  if (count == seen.size())
    return Status::success();
  std::vector<cudaGraphNode_t> nodes(count);
  RN_CUDA_TRY(cudaGraphGetNodes(graph, nodes.data(), &count));
  for (cudaGraphNode_t n : nodes)
    if (seen.insert(n).second) {
      origins[n] = origin;
      if (added)
        added->push_back(n);
    }
  return Status::success();
}

Status GraphExecutor::Impl::captureNodes(const Subgraph &sg, Variant v, cudaStream_t primary,
                                         const std::vector<Stream> &secondaries,
                                         CapturedGraph &out) {
  DeviceContext &ctx = dp->context();
  // Fork: every stream the subgraph uses joins the capture from the primary.
  RN_CUDA_TRY(cudaEventRecord(fork, primary));
  for (Stream s : secondaries)
    RN_CUDA_TRY(cudaStreamWaitEvent(ctx.stream(s).stream, fork, 0));
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  cudaGraph_t graph = nullptr;
  RN_CUDA_TRY(cudaStreamGetCaptureInfo(primary, &status, nullptr, &graph, nullptr, nullptr,
                                       nullptr));
  std::unordered_set<cudaGraphNode_t> seen;

  PreparedSubgraph &ps = dp->subgraph(&sg);
  for (size_t i = 0; i < sg.nodes.size(); ++i) {
    const Node &n = sg.nodes[i];
    auto where = [&](int part, Stream stream) {
      return DeviceProgram::describeNode(n, uint32_t(i), part, stream);
    };
    cudaStream_t stream = ctx.stream(n.stream).stream;
    const NodeBinding &b = bindings->at(sg, v, i);
    GraphNodeOrigin origin{&sg, v, uint32_t(i), -1, n.stream};
    if (n.kind == Node::Kind::event_record) {
      EventSlot slot{n.event, sg.doubleBuffered ? v : Variant::a};
      // An event record node for the launches that wait on it, and the
      // capture-internal record that later waits of this launch bind to.
      if (b.externalRecord)
        if (Status st = appendEventNode(stream, ctx.event(slot), /*record=*/true); !st.ok())
          return st.error().withContext(where(-1, n.stream));
      if (Status st = RN_CUDA_CHECK(cudaEventRecord(internalEvent(slot), stream)); !st.ok())
        return st.error().withContext(where(-1, n.stream));
    } else if (n.kind == Node::Kind::event_wait) {
      for (const BoundWait &w : b.waits) {
        Status st = w.internal ? RN_CUDA_CHECK(cudaStreamWaitEvent(stream, internalEvent(w.slot),
                                                                   cudaEventWaitDefault))
                               : appendEventNode(stream, ctx.event(w.slot), /*record=*/false);
        if (!st.ok())
          return st.error().withContext(where(-1, n.stream));
      }
    } else {
      for (PreparedItem &it : ps.itemsOfNode[i]) {
        if (Status st = dp->issueItem(n, ps.viewsOfNode[i], v, it); !st.ok())
          return st.error().withContext(where(it.part, it.stream));
        out.outputs.insert(out.outputs.end(), it.outputs.begin(), it.outputs.end());
        origin.part = it.part;
        origin.stream = it.stream;
        std::vector<cudaGraphNode_t> added;
        if (Status st = mapNewNodes(graph, seen, origin, &added); !st.ok())
          return st.error().withContext(where(it.part, it.stream));
        if (n.opKind() == OpKind::host_to_device)
          if (Status st = noteHostCopy(n, ps.viewsOfNode[i], v, added, out); !st.ok())
            return st.error().withContext(where(it.part, it.stream));
      }
      continue;
    }
    if (Status st = mapNewNodes(graph, seen, origin); !st.ok())
      return st.error().withContext(where(-1, n.stream));
  }
  return Status::success();
}

Status GraphExecutor::Impl::dumpGraphs() const {
  std::error_code ec;
  std::filesystem::create_directories(dumpGraphsDir, ec);
  if (ec)
    return Error("--dump-graphs: cannot create " + dumpGraphsDir + ": " + ec.message());
  for (const Function &f : dp->program().functions)
    for (const Subgraph &sg : f.subgraphs)
      for (Variant v : {Variant::a, Variant::b}) {
        const CapturedGraph &g = graphs.at(&sg)[variantIndex(v)];
        if (!g.graph)
          continue;
        std::string name = f.name + "." + sg.name + (sg.doubleBuffered ? (v == Variant::a ? ".a" : ".b") : "");
        std::string path = dumpGraphsDir + "/" + name + ".dot";
        Status st = RN_CUDA_CHECK(
            cudaGraphDebugDotPrint(g.graph, path.c_str(), cudaGraphDebugDotFlagsVerbose));
        if (!st.ok())
          return st.error().withContext("--dump-graphs: " + path);
      }
  return Status::success();
}

Result<std::unique_ptr<GraphExecutor>> GraphExecutor::create(const Artifact &artifact,
                                                             const Options &options) {
  auto start = std::chrono::steady_clock::now();
  std::unique_ptr<GraphExecutor> ex(new GraphExecutor());
  ex->impl_ = std::make_unique<Impl>();
  Impl &im = *ex->impl_;
  im.dumpGraphsDir = options.dumpGraphsDir;
  // The bindings first: a schedule a captured graph cannot express fails
  // before anything touches the GPU.
  Result<CaptureBindings> bindings = CaptureBindings::analyze(artifact.program);
  if (!bindings.ok())
    return bindings.error().withContext("cuda-graph");
  im.bindings.emplace(std::move(*bindings));
  Result<std::unique_ptr<DeviceProgram>> dp = DeviceProgram::create(artifact, options, "cuda-graph");
  if (!dp.ok())
    return dp.error();
  ex->device_ = std::move(*dp);
  im.dp = ex->device_.get();
  if (Status st = im.captureAll(); !st.ok())
    return st.error().withContext("cuda-graph");
  if (!options.dumpGraphsDir.empty())
    if (Status st = im.dumpGraphs(); !st.ok())
      return st.error().withContext("cuda-graph");
  im.loadSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return ex;
}

GraphExecutor::~GraphExecutor() = default;

const GraphNodeOrigin *GraphExecutor::origin(cudaGraphNode_t node) const {
  auto it = impl_->origins.find(node);
  return it == impl_->origins.end() ? nullptr : &it->second;
}

std::string GraphExecutor::loadSummary() const {
  const Impl &im = *impl_;
  const DeviceProgram &dp = *im.dp;
  const Program &p = dp.program();
  std::string out;
  char line[512];
  std::snprintf(line, sizeof line,
                "cuda-graph on %s: %s, %s, %zu graphs with %zu nodes captured in %.2f s, "
                "load %.2f s",
                dp.context().deviceName().c_str(), dp.context().describeArena().c_str(),
                dp.describePrepare().c_str(), im.graphCount, im.graphNodes, im.captureSeconds,
                im.loadSeconds);
  out += line;
  for (const Region &r : p.arena.regions) {
    std::snprintf(line, sizeof line, "\n  region %-16s %10.2f MiB", r.kind.c_str(),
                  double(dp.context().allocatedBytes(r)) / (1 << 20));
    out += line;
    if (dp.context().allocatedBytes(r) != r.bytes) {
      std::snprintf(line, sizeof line, " (sized to need; the plan's cap %.2f MiB)",
                    double(r.bytes) / (1 << 20));
      out += line;
    }
  }
  for (const Function &f : p.functions) {
    for (const Subgraph &sg : f.subgraphs) {
      const auto &g = im.graphs.at(&sg);
      std::snprintf(line, sizeof line, "\n  graph %s.%s: %zu nodes%s", f.name.c_str(),
                    sg.name.c_str(), g[0].nodes,
                    sg.doubleBuffered ? (" (a), " + std::to_string(g[1].nodes) + " (b)").c_str()
                                      : "");
      out += line;
    }
  }
  // What the host does per step in steady state: the even schedule's
  // graph launches and host waits, and the output copies.
  for (const char *kind : {"train", "eval"}) {
    const Schedule *even = p.findSchedule(std::string(kind) + "_even");
    if (!even)
      continue;
    size_t launches = 0, waits = 0;
    for (const Step &s : even->steps)
      ++(s.kind == Step::Kind::host_wait ? waits : launches);
    Result<uint32_t> fn = pipelinedFunction(p, kind);
    size_t copies = fn.ok() ? p.functions[*fn].outputs.size() : 0;
    std::snprintf(line, sizeof line,
                  "\n  per %s step: %zu graph launches, %zu host synchronizations, %zu output "
                  "copies",
                  kind, launches, waits, copies);
    out += line;
  }
  std::snprintf(line, sizeof line,
                "\n  events: %zu external waits and %zu external records (event nodes), %zu "
                "waits inside graphs (edges)",
                im.bindings->externalWaits(), im.bindings->externalRecords(),
                im.bindings->internalWaits());
  return out + line;
}

//===----------------------------------------------------------------------===//
// Replay
//===----------------------------------------------------------------------===//

Status GraphExecutor::Impl::launch(const HostAction &a) {
  CapturedGraph &g = graphs.at(a.sg)[variantIndex(a.variant)];
  cudaStream_t primary = dp->context().stream(a.sg->primary).stream;
  if (Status st = updateHostCopies(g); !st.ok())
    return st.error().withContext(dp->describeLaunch(a));
  if (Status st = RN_CUDA_CHECK(cudaGraphLaunch(g.exec, primary)); !st.ok())
    return st.error().withContext(dp->describeLaunch(a));
  // The step's pinned slot changes per step, so outputs are copied after
  // the graph, on its primary stream.
  if (a.outputs)
    for (uint32_t o : g.outputs)
      if (Status st = dp->copyOutput(a.fn, o, a.variant, a.step, primary); !st.ok())
        return st.error().withContext(dp->describeLaunch(a));
  if (Status st = dp->recordCompletion(a); !st.ok())
    return st;
  if (dp->options().syncDebug)
    if (Status st = dp->synchronize(); !st.ok())
      return st.error().withContext("sync-debug after " + dp->describeLaunch(a));
  return Status::success();
}

Status GraphExecutor::launch(const HostAction &a) { return impl_->launch(a); }

} // namespace rn::cuda
