//===- graph_executor.h - The cuda-graph executor ---------------*- C++ -*-===//
//
// Runs a program on one GPU the way docs/design.md describes: at load, each
// subgraph is captured once per A/B variant into a CUDA graph and
// instantiated; every step, the shared schedule walk launches those graphs
// on their primary streams, and nothing else happens per node.
//
// Capture of one (subgraph, variant), on the subgraph's primary stream, in
// thread-local capture mode (a legacy-stream use or a synchronous call on
// this thread fails the capture instead of silently escaping it): record a
// fork event on the primary and make every other stream the subgraph uses
// wait on it; issue the nodes exactly as cuda-eager does (device_program.h's
// issueItem), with the program's event records and waits as fixed by
// capture_bindings.h: a wait on a record of the same launch becomes a graph
// edge, a wait on a record of another launch an event wait node, and a
// record that other launches wait on an event record node (added to the
// capture graph explicitly; capture-internal records use events of their
// own, so the program's events are only ever recorded by nodes); join every
// stream back into the primary; end the capture; instantiate. The graph
// node -> program node map is kept (for timelines and errors). An error
// during capture names the subgraph, variant and node, ends the capture and
// leaves no stream capturing.
//
// Per step the host does, per launch: cudaGraphLaunch on the primary, the
// device-to-host copies of the outputs the subgraph writes (into the step's
// pinned slot, which changes per step, so outside the graph) and the
// completion event. Host waits are event synchronizations, as in cuda-eager.
//
//===----------------------------------------------------------------------===//

#ifndef RN_RUNTIME_CUDA_GRAPH_EXECUTOR_H
#define RN_RUNTIME_CUDA_GRAPH_EXECUTOR_H

#include "runtime/cuda/device_executor.h"

#include <memory>
#include <string>

namespace rn::cuda {

/// A kernel (or copy, memset, event) node of a captured graph: the program
/// node it was issued for.
struct GraphNodeOrigin {
  const Subgraph *subgraph = nullptr;
  Variant variant = Variant::a;
  uint32_t node = 0; ///< index in the subgraph
  int part = -1;     ///< part of a forking node, or -1
  Stream stream = Stream::comp1; ///< the program stream it was issued on
};

class GraphExecutor final : public DeviceExecutor {
public:
  struct Options : DeviceProgram::Options {
    /// When set, every captured graph is written there as Graphviz
    /// (cudaGraphDebugDotPrint), one file per subgraph and variant.
    std::string dumpGraphsDir;
  };

  /// `artifact` must outlive the executor (a temporary does not compile).
  static Result<std::unique_ptr<GraphExecutor>> create(const Artifact &artifact,
                                                       const Options &options);
  static Result<std::unique_ptr<GraphExecutor>> create(Artifact &&, const Options &) = delete;
  ~GraphExecutor() override;

  std::string_view name() const override { return "cuda-graph"; }

  /// What load did: device, arena and regions, graphs and their nodes, the
  /// launches and host synchronizations of a step, and the seconds spent.
  std::string loadSummary() const;

  /// The program node a node of a captured graph came from, by the graph
  /// node's handle (captured graph) or null.
  const GraphNodeOrigin *origin(cudaGraphNode_t node) const;

  GraphExecutor(const GraphExecutor &) = delete;
  GraphExecutor &operator=(const GraphExecutor &) = delete;

  struct Impl; ///< graph_executor.cpp's own

private:
  GraphExecutor() = default;
  Status launch(const HostAction &action) override;
  std::unique_ptr<Impl> impl_;
};

} // namespace rn::cuda

#endif // RN_RUNTIME_CUDA_GRAPH_EXECUTOR_H
