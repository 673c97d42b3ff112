//===- cupti_trace.h - A GPU timeline from CUPTI's activity records -*- C++ -*-===//
//
// What `rn-run --trace FILE.json` records: every kernel, copy and memset
// the GPU ran between start() and stop(), with CUPTI's GPU timestamps,
// named by the program node that issued it, on a track per program stream,
// beside the host threads' spans (chrome_trace.h writes the JSON).
//
// Naming GPU work. A kernel's CUDA stream says little: the cuda-graph
// executor replays captured graphs, whose kernels run on streams of CUDA's
// choosing, and library calls (cuDNN, cuBLASLt) launch kernels of their own
// names. So the issuing code labels its work instead: pushLabel(id) ...
// popLabel() around a node's launch (ids are the caller's: an executor
// encodes function, subgraph, variant, node and part however it likes, and
// its Labeler decodes them). The label reaches the records two ways, one
// per kind of launch, and ActivityRecord::label holds whichever applies:
//   - eager launches: the label is pushed as CUPTI's external correlation
//     id, so every runtime or driver call inside the scope (several
//     kernels of one cuDNN call included) carries it, and each record
//     finds it through its correlation id;
//   - captured launches: no kernel runs while a stream is captured, but
//     CUPTI reports each graph node the capture creates (a resource
//     callback on the capturing thread), and the node is tied to the label
//     active then. Instantiation clones every node: the kernel records of a
//     replay carry the graphNodeId of the *executable* graph's node (the
//     clone), not of the captured one, so CuptiTrace also follows CUPTI's
//     node-cloned callbacks and maps each clone back to the node that was
//     captured (ActivityRecord::capturedNodeId, which is what
//     cuptiGetGraphNodeId gives for the nodes of cudaStreamEndCapture's
//     graph). Both callbacks only report what happens while the CuptiTrace
//     exists: create it before capturing and instantiating the graphs to
//     trace (start() may come later, around the steps of interest).
// A label pushed around cudaGraphLaunch (say, the step) reaches the replay's
// records as ActivityRecord::launchLabel.
//
// Clocks. CUPTI converts GPU timestamps to its own host clock (on Linux,
// CLOCK_REALTIME unless a tool registered another), in nanoseconds, the
// same for every record. Host spans are best recorded with
// std::chrono::steady_clock (monotonic, what the rest of the runtime
// times with, no CUPTI dependency at the call site) and converted with
// toCuptiNs(), a linear map fitted to (steady_clock, cuptiGetTimestamp)
// pairs sampled at create, start and stop; or read CuptiTrace::now()
// directly.
//
// One per process: CUPTI takes one subscriber, and none at all under
// compute-sanitizer, Nsight or another profiler (create fails;
// cuptiUnavailable tells that case apart). Records are copied out of
// CUPTI's buffers into plain structs as CUPTI hands them over and are read
// after stop(), which flushes: stop after the traced work has completed
// (synchronize or drain first), or its last records are missing.
//
//===----------------------------------------------------------------------===//

#ifndef RN_RUNTIME_CUDA_CUPTI_TRACE_H
#define RN_RUNTIME_CUDA_CUPTI_TRACE_H

#include "runtime/core/chrome_trace.h"
#include "runtime/core/status.h"

#include <cuda_runtime_api.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rn::cuda {

enum class ActivityKind : uint8_t {
  kernel,          ///< CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL
  memcpy,          ///< CUPTI_ACTIVITY_KIND_MEMCPY
  memset,          ///< CUPTI_ACTIVITY_KIND_MEMSET
  runtimeApi,      ///< a CUDA runtime call (CPU side)
  driverApi,       ///< a CUDA driver call (CPU side; libraries launch through it)
  synchronization, ///< a host wait: event or stream synchronize, stream wait event
};
std::string_view activityKindName(ActivityKind kind);
/// Work that ran on the GPU (kernels, copies, memsets), not a host record.
inline bool onGpu(ActivityKind kind) {
  return kind == ActivityKind::kernel || kind == ActivityKind::memcpy ||
         kind == ActivityKind::memset;
}

/// One CUPTI activity record, copied out of CUPTI's buffer.
struct ActivityRecord {
  ActivityKind kind = ActivityKind::kernel;
  /// kernel: its name as compiled (mangled); memcpy: "memcpy HtoD" (DtoH,
  /// DtoD, HtoH, ...); memset: "memset"; API: the function
  /// ("cudaLaunchKernel_v7000"); synchronization: "event synchronize",
  /// "stream synchronize", "stream wait event", "context synchronize".
  std::string name;
  uint64_t startNs = 0; ///< CUPTI's clock; 0 and 0 when CUPTI had no times
  uint64_t endNs = 0;
  uint32_t deviceId = 0;
  /// CUPTI's id of the CUDA stream (cuptiGetStreamIdEx), not a program
  /// stream; for graph kernels, the stream CUDA ran the node on.
  uint32_t streamId = 0;
  /// Of the launching runtime or driver call; the kernels of a graph
  /// replay share the graph launch's.
  uint32_t correlationId = 0;
  uint32_t graphId = 0;        ///< 0 unless launched by a graph
  uint64_t graphNodeId = 0;    ///< as CUPTI reports it: the executable graph's node
  uint64_t capturedNodeId = 0; ///< graphNodeId followed back through the clones
  /// The label of the work (see above): of the graph node's creation for
  /// graph work, of the launching call otherwise.
  std::optional<uint64_t> label;
  /// The label around the launching call (for graph work: cudaGraphLaunch).
  std::optional<uint64_t> launchLabel;
  uint64_t bytes = 0;    ///< memcpy, memset
  uint32_t threadId = 0; ///< API and synchronization records: the calling thread
  /// Kernels: the launch as CUPTI reports it, what the kernel's occupancy
  /// follows from (a refactor that costs registers shows here).
  struct KernelLaunch {
    uint32_t grid[3] = {0, 0, 0};
    uint32_t block[3] = {0, 0, 0};
    uint32_t registersPerThread = 0;
    uint32_t staticSharedBytes = 0;
    uint32_t dynamicSharedBytes = 0;
    uint32_t localBytesPerThread = 0; ///< register spills and local arrays
  };
  std::optional<KernelLaunch> launch;
};

class CuptiTrace {
public:
  struct Options {
    bool memcpy = true;
    bool memset = true;
    /// Runtime and driver API records. Eager launches find their labels
    /// through them (CUPTI writes external correlations for API records
    /// only), so turning them off leaves eager work unlabeled.
    bool apiCalls = true;
    bool synchronization = true;
    size_t bufferBytes = size_t(8) << 20; ///< each buffer handed to CUPTI
  };

  /// Subscribes to CUPTI and follows graph node creation and cloning from
  /// now on; records nothing until start(). Fails where the libcupti
  /// loaded is of another major version than the headers built against
  /// (the records' layouts differ).
  static Result<std::unique_ptr<CuptiTrace>> create(const Options &options);
  static Result<std::unique_ptr<CuptiTrace>> create() { return create(Options()); }
  /// Stops (ignoring errors), flushes and unsubscribes.
  ~CuptiTrace();

  /// Enables the activity kinds: GPU work issued from now on is recorded.
  Status start();
  /// Disables them, flushes CUPTI's buffers into records() and resolves
  /// the labels; also reports an error a CUPTI callback met since start.
  Status stop();
  bool running() const { return running_; }

  /// Every record of the start/stop sessions so far, in CUPTI's order
  /// (by buffer, not by time).
  const std::vector<ActivityRecord> &records() const { return records_; }
  std::vector<ActivityRecord> takeRecords();
  /// Records CUPTI dropped for want of buffer space (0 in a healthy trace).
  uint64_t droppedRecords() const;

  /// Labels what this thread issues until the matching popLabel(): runtime
  /// and driver calls (eager work) and the graph nodes a capture creates.
  /// Scopes nest; the innermost label wins.
  Status pushLabel(uint64_t label);
  Status popLabel();

  /// Labels a graph node explicitly (for nodes not made under pushLabel,
  /// e.g. added with cudaGraphAdd*Node): its work's ActivityRecord::label.
  Status labelGraphNode(cudaGraphNode_t node, uint64_t label);

  /// CUPTI's clock now (cuptiGetTimestamp), in nanoseconds.
  static uint64_t now();
  /// A steady_clock time on CUPTI's clock.
  uint64_t toCuptiNs(std::chrono::steady_clock::time_point time) const;

  /// CUPTI's id of a graph node (cuptiGetGraphNodeId): for the nodes of a
  /// captured graph, the ActivityRecord::capturedNodeId of their work.
  static Result<uint64_t> graphNodeId(cudaGraphNode_t node);
  /// CUPTI's ids of a graph and of an executable graph (for reports).
  static Result<uint32_t> graphId(cudaGraph_t graph);
  static Result<uint32_t> graphExecId(cudaGraphExec_t graphExec);

  CuptiTrace(const CuptiTrace &) = delete;
  CuptiTrace &operator=(const CuptiTrace &) = delete;

  struct Impl; ///< cupti_trace.cpp's own (CUPTI's callbacks reach it)

private:
  CuptiTrace();
  std::unique_ptr<Impl> impl_;
  std::vector<ActivityRecord> records_;
  bool running_ = false;
};

//===----------------------------------------------------------------------===//
// Records to a Chrome trace
//===----------------------------------------------------------------------===//

/// What a Labeler says about one GPU record.
struct TraceLabel {
  std::string name;  ///< the event's name ("17 conv2d")
  std::string track; ///< its GPU track: a program stream ("COMP_1")
  nlohmann::json args = nlohmann::json::object(); ///< shown beside the record's own
};
/// Names a GPU record (usually from record.label); nullopt: not ours.
using Labeler = std::function<std::optional<TraceLabel>(const ActivityRecord &)>;

/// A span of host work on one host thread's track.
struct HostSpan {
  std::string track; ///< the thread ("main", "stager")
  std::string name;
  uint64_t startNs = 0; ///< CUPTI's clock (CuptiTrace::toCuptiNs)
  uint64_t endNs = 0;
  nlohmann::json args = nullptr;
};

struct TraceOptions {
  /// GPU tracks named and drawn in this order, even when empty; tracks a
  /// Labeler names beyond these follow in order of appearance.
  std::vector<std::string> gpuTracks = {"TRANS", "COMP_1", "COMP_2", "COMP_3", "UPDATE"};
  /// GPU records the Labeler does not name: on a track per CUDA stream
  /// ("CUDA stream 13") under their CUPTI name; false drops them.
  bool unlabeledGpuWork = true;
  /// The runtime and driver API records, on a track per host thread.
  bool apiCalls = false;
  /// Host waits (synchronization records), on a track per host thread.
  bool hostWaits = true;
  /// CUPTI time of ts 0; by default the earliest record or span.
  std::optional<uint64_t> originNs;
  std::string gpuProcessName = "GPU";
  std::string hostProcessName = "host";
};

/// The trace's process ids: one for the GPU's tracks, one for the host's.
inline constexpr int kGpuPid = 1;
inline constexpr int kHostPid = 2;

/// GPU records on the Labeler's tracks, host spans on their threads'
/// tracks, ts relative to the origin. Every event carries the record's own
/// fields in args (kernel name, CUDA stream, correlation, graph, graph
/// node, bytes) beside the label's. Where events on one track overlap
/// without nesting (two graph branches of one program stream, say), the
/// later ones go to an extra lane, "<track> (2)", so that viewers draw
/// every event.
trace::ChromeTrace buildChromeTrace(const std::vector<ActivityRecord> &records,
                                    const Labeler &labeler, const std::vector<HostSpan> &hostSpans,
                                    const TraceOptions &options = TraceOptions());

} // namespace rn::cuda

#endif // RN_RUNTIME_CUDA_CUPTI_TRACE_H
