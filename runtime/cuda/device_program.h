//===- device_program.h - A program loaded onto one GPU ---------*- C++ -*-===//
//
// What both GPU executors (cuda-eager, cuda-graph) build at load and share:
// the device context (streams, handles, arena, events), the convolution and
// GEMM runners, every tensor's device view per A/B variant, one pinned
// staging buffer per host input, the pinned output slots, and every op node
// prepared (cuDNN graphs built and autotuned, plans checked against the
// stream's workspace). The executors differ only in how a launch reaches
// the GPU: cuda-eager issues the nodes of a subgraph one by one every step;
// cuda-graph issues them once into a stream capture and replays the graph.
// Both go through issueItem, so a node's work is issued the same way.
//
// Host staging: the host writes a staging buffer only after the schedule's
// host waits say that the copy from it completed (the CPU executor's
// interleaved mode checks that order). Outputs: each output is copied
// device-to-host into the step's pinned slot (a ring of
// Options::maxStepsInFlight); once the step's launches completed (their
// completion events) the slot is decoded.
//
//===----------------------------------------------------------------------===//

#ifndef RN_RUNTIME_CUDA_DEVICE_PROGRAM_H
#define RN_RUNTIME_CUDA_DEVICE_PROGRAM_H

#include "runtime/core/executor.h"
#include "runtime/cuda/conv.h"
#include "runtime/cuda/device_context.h"
#include "runtime/cuda/device_tensor.h"
#include "runtime/cuda/gemm.h"
#include "runtime/cuda/op_launch.h"

#include <array>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace rn::cuda {

class Communicator;

class CuptiTrace;

/// What a prepared item is, for timelines: its label id (CuptiTrace's) is
/// its index in itemLabels() plus one.
struct ItemLabel {
  uint32_t fn = 0;
  const Subgraph *subgraph = nullptr;
  uint32_t node = 0;
  int part = -1;
  Stream stream = Stream::comp1;
  std::string name; ///< "17 cbr_forward.conv (DEEP_FWD_BWD)"
};

/// Every op node (and part) of `program`, in the order the executors give
/// their prepared items label ids: by function, subgraph, node, part.
std::vector<ItemLabel> itemLabels(const Program &program);

/// Pinned host memory, freed without throwing.
struct PinnedBuffer {
  void *data = nullptr;
  size_t bytes = 0;
  PinnedBuffer() = default;
  PinnedBuffer(const PinnedBuffer &) = delete;
  PinnedBuffer &operator=(const PinnedBuffer &) = delete;
  ~PinnedBuffer();
  Status allocate(size_t n);
};

/// One op node (or part) ready to launch: its stream, launcher and the
/// part-order events around it.
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
  uint64_t label = 0;    ///< its timeline label (itemLabels() index + 1)
  /// What its launcher's prepare kept for the launches (OpLaunch::prepared).
  std::unique_ptr<PreparedState> prepared;
};

/// One node's operand and result views on variant A and B.
struct NodeViews {
  std::array<std::vector<DeviceTensor>, 2> operands, results;
};

struct PreparedSubgraph {
  std::vector<std::vector<PreparedItem>> itemsOfNode; ///< by node
  std::vector<NodeViews> viewsOfNode;                 ///< by node (op nodes)
  /// Recorded on the primary stream after each launch, by variant: the
  /// program joins every stream of a subgraph back into its primary, so
  /// this covers the whole launch (host waits, step completion).
  std::array<cudaEvent_t, 2> completion{};
};

class DeviceProgram {
public:
  struct Options {
    uint64_t seed = 0;          ///< dropout RNG, as the CPU executor's
    bool syncDebug = false;     ///< cuda-eager: synchronize after every node
    bool deterministic = false; ///< deterministic convolution plans and GEMMs
    bool autotune = true;       ///< time convolution plans at load
    /// Plans timed per convolution (ConvRunner::Options; 0: all).
    int autotuneCandidates = 16;
    bool allowTf32 = false;     ///< TF32 for f32 convolutions and products
    /// Convolution plans that reduce in f16/bf16 (ConvRunner::Options).
    bool allowReducedPrecisionReduction = false;
    std::string planCacheFile;  ///< autotuning results kept across runs
    int device = 0;
    /// Steps in flight at once: pinned output slots, one per step.
    size_t maxStepsInFlight = 1024;
    /// Progress lines at load (plans, timings) on stderr.
    bool verbose = false;
    /// cuda-eager: timing events around every node's launch (profileReport).
    bool profile = false;
    /// When set (rn-run --trace), each item's launch (or capture) is
    /// labelled for the timeline. Not owned; created before the executor.
    CuptiTrace *trace = nullptr;
    /// A data-parallel run's communicator (communicator.h): all_reduce_mean
    /// goes through NCCL, and every host wait polls it against the group's
    /// deadline. Not owned; created before the executor, destroyed after.
    Communicator *communicator = nullptr;
  };

  /// Validates that every op has a GPU launcher, creates the device
  /// context, stages and prepares every node. `artifact` must outlive it;
  /// `who` names the executor in errors.
  static Result<std::unique_ptr<DeviceProgram>> create(const Artifact &artifact,
                                                       const Options &options,
                                                       std::string_view who);
  static Result<std::unique_ptr<DeviceProgram>> create(Artifact &&, const Options &,
                                                       std::string_view) = delete;
  ~DeviceProgram();

  const Program &program() const { return artifact_->program; }
  const Options &options() const { return options_; }
  DeviceContext &context() { return *ctx_; }
  const DeviceContext &context() const { return *ctx_; }
  PreparedSubgraph &subgraph(const Subgraph *sg) { return subgraphs_.at(sg); }
  const PreparedSubgraph &subgraph(const Subgraph *sg) const { return subgraphs_.at(sg); }
  const ConvRunner &conv() const { return *conv_; }
  size_t preparedNodes() const { return preparedNodes_; }
  /// "121 nodes prepared (47 convolution graphs, 1.15 s building and
  /// autotuning)", with the bytes autotuning allocated for its timing
  /// buffers where it could not use the activations: the load summaries'
  /// middle part.
  std::string describePrepare() const;
  /// The conv floor of one training step: the autotuned cuDNN times of
  /// train_step's convolutions (each measured alone, layer by layer, at
  /// load or taken from the plan cache), summed; < 0 when some plan was not
  /// timed (autotuning off).
  double convFloorMs() const { return convFloorComplete_ ? convFloorMs_ : -1; }
  /// The most workspace a prepared node (or part) on stream `s` said it
  /// needs: what the context sized that stream's workspace to.
  size_t workspaceNeed(Stream s) const { return workspaceNeed_[size_t(s)]; }

  // State (nothing in flight).
  Status initialize();
  Result<std::vector<float>> readState(std::string_view name);
  Status writeState(std::string_view name, const std::vector<float> &values);

  /// Issues one item of node `node` (the node, or one part of a forking
  /// node) with variant `variant` on its stream: part-order waits, the op,
  /// part-order records (and profile events when asked). `views` are the
  /// node's (PreparedSubgraph::viewsOfNode).
  Status issueItem(const Node &node, const NodeViews &views, Variant variant,
                   PreparedItem &item);
  /// Copies output `output` of function `fn` from variant `variant` into
  /// the pinned slot of `step`, on `stream`.
  Status copyOutput(uint32_t fn, uint32_t output, Variant variant, int64_t step,
                    cudaStream_t stream);
  /// Records the completion event of a launch on the subgraph's primary.
  Status recordCompletion(const HostAction &launch);

  // The host primitives both executors share.
  Status stage(const HostAction &action);
  Status hostWait(const HostAction &action);
  Status decodeOutputs(uint32_t fn, int64_t step, StepOutputs &outputs) const;
  Result<bool> stepComplete(const PendingStep &step);
  Status waitStep(const PendingStep &step);
  Status synchronize();
  /// Blocks until `event` completes: cudaEventSynchronize, or through the
  /// communicator (deadline, NCCL errors) in a data-parallel run.
  Status waitEvent(cudaEvent_t event, std::string_view what);

  /// With Options::profile: the GPU time of the last train step by op.
  Result<std::string> profileReport(std::string_view who);

  /// "function F, subgraph S (variant a, step N)".
  std::string describeLaunch(const HostAction &a) const;
  /// "function F, subgraph S (variant a)" (no variant when single-buffered).
  static std::string describeSubgraph(const Function &f, const Subgraph &sg, Variant variant);
  /// "node I (op, part role) on stream S".
  static std::string describeNode(const Node &n, uint32_t index, int part, Stream stream);

  /// Seconds spent in hostWait and waitStep (Executor::hostBlockedSeconds).
  double blockedSeconds() const { return blockedSeconds_; }
  /// Load-time numbers for the executors' summaries.
  double loadSeconds() const { return loadSeconds_; }

  DeviceProgram(const DeviceProgram &) = delete;
  DeviceProgram &operator=(const DeviceProgram &) = delete;

private:
  DeviceProgram() = default;
  Status create();
  Status prepareNodes();
  size_t outputSlot(int64_t step) const {
    return size_t(step % int64_t(options_.maxStepsInFlight));
  }

  struct FnViews {
    /// Per tensor, per variant: the device (or pinned host) view.
    std::array<std::vector<DeviceTensor>, 2> tensors;
    std::vector<std::unique_ptr<PinnedBuffer>> hostInputs; ///< by tensor (null: device)
    /// By host tensor: the host_to_device nodes that copy it. stage() points
    /// their source operand at the step's value (the staging buffer, or a
    /// pinned block of the caller's); cuda-graph updates its copy nodes
    /// from these views before each launch.
    struct HostCopy {
      PreparedSubgraph *subgraph;
      size_t node;
      size_t staging; ///< the staging operand's index in the node's views
    };
    std::vector<std::vector<HostCopy>> hostCopiesOf;
    std::vector<int32_t> outputOf; ///< output binding per tensor, or -1
    /// Pinned output slots: maxStepsInFlight x outputs.
    std::vector<size_t> outputOffset;
    size_t outputBytesPerStep = 0;
    std::unique_ptr<PinnedBuffer> outputs = std::make_unique<PinnedBuffer>();
  };

  const Artifact *artifact_ = nullptr;
  Options options_;
  std::unique_ptr<DeviceContext> ctx_;
  std::unique_ptr<ConvRunner> conv_;
  std::unique_ptr<GemmRunner> gemm_;
  std::vector<FnViews> fns_;
  std::unordered_map<const Subgraph *, PreparedSubgraph> subgraphs_;
  double loadSeconds_ = 0;
  double blockedSeconds_ = 0;
  cudaEvent_t syncEvent_ = nullptr; ///< synchronize() with a communicator
  size_t preparedNodes_ = 0;
  std::array<size_t, kStreamCount> workspaceNeed_{};
  double convFloorMs_ = 0;
  bool convFloorComplete_ = true;
};

} // namespace rn::cuda

#endif // RN_RUNTIME_CUDA_DEVICE_PROGRAM_H
