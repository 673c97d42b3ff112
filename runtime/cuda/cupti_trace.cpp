//===- cupti_trace.cpp - CUPTI activity records and their Chrome trace ------===//
//
// CUPTI hands activity records over in buffers we supply (bufferRequested)
// and return (bufferCompleted, on CUPTI's thread, or on the caller's inside
// cuptiActivityFlushAll); both are plain functions without user data, so
// they reach the one live CuptiTrace through gActive. The resource
// callbacks (graph node created / cloned) run on the thread that creates
// or instantiates the graph and get the Impl as user data. Everything the
// callbacks touch is guarded by Impl::mutex; nothing holds a lock across a
// CUPTI call that may call back (cuptiActivityFlushAll).
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/cupti_trace.h"

#include "runtime/cuda/cupti_check.h"

#include <cupti.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <map>
#include <mutex>
#include <type_traits>
#include <unordered_map>

namespace rn::cuda {

using json = nlohmann::json;

//===----------------------------------------------------------------------===//
// RN_CUPTI_TRY
//===----------------------------------------------------------------------===//

namespace {

const char *cuptiResultName(CUptiResult code) {
  switch (code) {
  case CUPTI_ERROR_NOT_INITIALIZED: return "CUPTI_ERROR_NOT_INITIALIZED";
  case CUPTI_ERROR_NOT_COMPATIBLE: return "CUPTI_ERROR_NOT_COMPATIBLE";
  case CUPTI_ERROR_NOT_SUPPORTED: return "CUPTI_ERROR_NOT_SUPPORTED";
  case CUPTI_ERROR_VIRTUALIZED_DEVICE_NOT_SUPPORTED:
    return "CUPTI_ERROR_VIRTUALIZED_DEVICE_NOT_SUPPORTED";
  case CUPTI_ERROR_INSUFFICIENT_PRIVILEGES: return "CUPTI_ERROR_INSUFFICIENT_PRIVILEGES";
  case CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED:
    return "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED";
  case CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES:
    return "CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES";
  case CUPTI_ERROR_CONFIDENTIAL_COMPUTING_NOT_SUPPORTED:
    return "CUPTI_ERROR_CONFIDENTIAL_COMPUTING_NOT_SUPPORTED";
  default: return nullptr;
  }
}

/// The results that mean "this process cannot trace", as opposed to a fault.
constexpr CUptiResult kUnavailable[] = {
    CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED, CUPTI_ERROR_INSUFFICIENT_PRIVILEGES,
    CUPTI_ERROR_VIRTUALIZED_DEVICE_NOT_SUPPORTED,
    CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES,
    CUPTI_ERROR_CONFIDENTIAL_COMPUTING_NOT_SUPPORTED, CUPTI_ERROR_NOT_COMPATIBLE};

} // namespace

std::string describe(CUptiResult code) {
  const char *name = cuptiResultName(code);
  const char *text = nullptr;
  if (!name && cuptiGetResultString(code, &text) == CUPTI_SUCCESS && text)
    name = text;
  std::string out = name ? name : "CUptiResult " + std::to_string(int(code));
  const char *message = nullptr;
  if (cuptiGetErrorMessage(code, &message) == CUPTI_SUCCESS && message && *message &&
      out != message)
    out += std::string(": ") + message;
  return out;
}

Status checkCupti(CUptiResult code, const char *call, const char *file, int line, bool inject) {
  bool injected = inject && injectedFailure();
  if (!injected && code == CUPTI_SUCCESS)
    return Status::success();
  return Error(std::string(call) + " failed: " +
               (injected ? std::string("injected failure (RN_CUDA_FAIL_CALL)") : describe(code)) +
               " [" + file + ":" + std::to_string(line) + "]");
}

bool cuptiUnavailable(const Error &error) {
  for (CUptiResult code : kUnavailable)
    if (error.message().find(cuptiResultName(code)) != std::string::npos)
      return true;
  return false;
}

//===----------------------------------------------------------------------===//
// CuptiTrace
//===----------------------------------------------------------------------===//

std::string_view activityKindName(ActivityKind kind) {
  switch (kind) {
  case ActivityKind::kernel: return "kernel";
  case ActivityKind::memcpy: return "memcpy";
  case ActivityKind::memset: return "memset";
  case ActivityKind::runtimeApi: return "runtime api";
  case ActivityKind::driverApi: return "driver api";
  case ActivityKind::synchronization: return "synchronization";
  }
  return "?";
}

namespace {

/// The labels of the calling thread, innermost last (pushLabel/popLabel);
/// the graph-node-created callback reads it on the capturing thread.
thread_local std::vector<uint64_t> tLabels;

std::mutex gMutex;                      ///< guards gActive and gRegistered
CuptiTrace::Impl *gActive = nullptr;    ///< the live trace, for the buffer callbacks
bool gRegistered = false;               ///< cuptiActivityRegisterCallbacks done
std::atomic<size_t> gBufferBytes{size_t(8) << 20};

const char *memcpyKindName(uint8_t kind) {
  switch (kind) {
  case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD: return "memcpy HtoD";
  case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH: return "memcpy DtoH";
  case CUPTI_ACTIVITY_MEMCPY_KIND_HTOA: return "memcpy HtoA";
  case CUPTI_ACTIVITY_MEMCPY_KIND_ATOH: return "memcpy AtoH";
  case CUPTI_ACTIVITY_MEMCPY_KIND_ATOA: return "memcpy AtoA";
  case CUPTI_ACTIVITY_MEMCPY_KIND_ATOD: return "memcpy AtoD";
  case CUPTI_ACTIVITY_MEMCPY_KIND_DTOA: return "memcpy DtoA";
  case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD: return "memcpy DtoD";
  case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH: return "memcpy HtoH";
  case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP: return "memcpy PtoP";
  default: return "memcpy";
  }
}

const char *synchronizationName(CUpti_ActivitySynchronizationType type) {
  switch (type) {
  case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE: return "event synchronize";
  case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT: return "stream wait event";
  case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE: return "stream synchronize";
  case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE: return "context synchronize";
  default: return "synchronization";
  }
}

uint32_t validOrZero(uint32_t v) { return v == CUPTI_SYNCHRONIZATION_INVALID_VALUE ? 0 : v; }

} // namespace

struct CuptiTrace::Impl {
  Options options;
  CUpti_SubscriberHandle subscriber = nullptr;
  std::vector<CUpti_ActivityKind> enabled; ///< by start(), for stop()

  std::mutex mutex; ///< guards the rest (the callbacks run on other threads)
  /// Copied from CUPTI's buffers, labels not resolved yet.
  struct Pending {
    ActivityRecord record;
    uint32_t runtimeCorrelationId = 0; ///< memcpy: the runtime call's
  };
  std::vector<Pending> pending;
  std::unordered_map<uint32_t, uint64_t> externalIds; ///< correlation id -> label
  std::unordered_map<uint32_t, uint32_t> apiThreads;  ///< correlation id -> thread
  std::unordered_map<uint64_t, uint64_t> cloneOf;     ///< clone node -> original node
  std::unordered_map<uint64_t, uint64_t> nodeLabels;  ///< node -> label at its creation
  std::map<std::pair<int, uint32_t>, std::string> apiNames;
  uint64_t dropped = 0;
  std::optional<Error> callbackError; ///< the first error a callback met

  std::mutex clockMutex;
  std::vector<std::pair<int64_t, uint64_t>> clockPairs; ///< (steady ns, CUPTI ns)

  void noteError(Status status) {
    if (!status.ok() && !callbackError)
      callbackError = status.error();
  }

  void sampleClock() {
    // The tightest of a few (steady, CUPTI, steady) brackets.
    int64_t bestWidth = -1, bestSteady = 0;
    uint64_t bestCupti = 0;
    for (int i = 0; i < 5; ++i) {
      int64_t a = std::chrono::steady_clock::now().time_since_epoch().count();
      uint64_t c = 0;
      if (cuptiGetTimestamp(&c) != CUPTI_SUCCESS)
        return;
      int64_t b = std::chrono::steady_clock::now().time_since_epoch().count();
      if (bestWidth < 0 || b - a < bestWidth) {
        bestWidth = b - a;
        bestSteady = a + (b - a) / 2;
        bestCupti = c;
      }
    }
    std::lock_guard<std::mutex> lock(clockMutex);
    clockPairs.emplace_back(bestSteady, bestCupti);
  }

  const std::string &apiName(int domain, uint32_t cbid) {
    auto key = std::make_pair(domain, cbid);
    auto it = apiNames.find(key);
    if (it != apiNames.end())
      return it->second;
    const char *name = nullptr;
    std::string value;
    if (cuptiGetCallbackName(CUpti_CallbackDomain(domain), cbid, &name) == CUPTI_SUCCESS && name)
      value = name;
    else
      value = (domain == CUPTI_CB_DOMAIN_RUNTIME_API ? "runtime call " : "driver call ") +
              std::to_string(cbid);
    return apiNames.emplace(key, std::move(value)).first->second;
  }

  /// Copies one buffer's records (bufferCompleted).
  void consume(CUcontext context, uint32_t streamId, uint8_t *buffer, size_t validSize) {
    std::lock_guard<std::mutex> lock(mutex);
    CUpti_Activity *raw = nullptr;
    while (validSize > 0) {
      CUptiResult result = cuptiActivityGetNextRecord(buffer, validSize, &raw);
      if (result == CUPTI_ERROR_MAX_LIMIT_REACHED || result == CUPTI_ERROR_INVALID_KIND)
        break; // the end, or an incomplete record (work stopped mid-way)
      if (result != CUPTI_SUCCESS) {
        noteError(checkCupti(result, "cuptiActivityGetNextRecord", __FILE__, __LINE__, false));
        break;
      }
      add(raw);
    }
    size_t lost = 0;
    if (cuptiActivityGetNumDroppedRecords(context, streamId, &lost) == CUPTI_SUCCESS)
      dropped += lost;
  }

  /// The fields every GPU-side record (kernel, memcpy, memset) has, in
  /// whichever version of CUPTI's record struct carries them.
  template <typename DeviceActivity>
  static void copyDeviceFields(const DeviceActivity &a, ActivityRecord &r) {
    r.startNs = a.start;
    r.endNs = a.end;
    r.deviceId = a.deviceId;
    r.streamId = a.streamId;
    r.correlationId = a.correlationId;
    r.graphId = a.graphId;
    r.graphNodeId = a.graphNodeId;
  }

  void add(const CUpti_Activity *raw) {
    Pending p;
    ActivityRecord &r = p.record;
    switch (raw->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
      const auto *k = reinterpret_cast<const CUpti_ActivityKernel10 *>(raw);
      r.kind = ActivityKind::kernel;
      r.name = k->name ? k->name : "(unnamed kernel)";
      copyDeviceFields(*k, r);
      ActivityRecord::KernelLaunch launch;
      launch.grid[0] = uint32_t(k->gridX), launch.grid[1] = uint32_t(k->gridY);
      launch.grid[2] = uint32_t(k->gridZ);
      launch.block[0] = uint32_t(k->blockX), launch.block[1] = uint32_t(k->blockY);
      launch.block[2] = uint32_t(k->blockZ);
      launch.registersPerThread = k->registersPerThread;
      launch.staticSharedBytes = uint32_t(k->staticSharedMemory);
      launch.dynamicSharedBytes = uint32_t(k->dynamicSharedMemory);
      launch.localBytesPerThread = k->localMemoryPerThread;
      r.launch = launch;
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
      const auto *m = reinterpret_cast<const CUpti_ActivityMemcpy6 *>(raw);
      r.kind = ActivityKind::memcpy;
      r.name = memcpyKindName(m->copyKind);
      copyDeviceFields(*m, r);
      r.bytes = m->bytes;
      p.runtimeCorrelationId = m->runtimeCorrelationId;
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
      const auto *m = reinterpret_cast<const CUpti_ActivityMemset4 *>(raw);
      r.kind = ActivityKind::memset;
      r.name = "memset";
      copyDeviceFields(*m, r);
      r.bytes = m->bytes;
      break;
    }
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER: {
      const auto *a = reinterpret_cast<const CUpti_ActivityAPI *>(raw);
      bool runtime = raw->kind == CUPTI_ACTIVITY_KIND_RUNTIME;
      r.kind = runtime ? ActivityKind::runtimeApi : ActivityKind::driverApi;
      r.name = apiName(runtime ? CUPTI_CB_DOMAIN_RUNTIME_API : CUPTI_CB_DOMAIN_DRIVER_API, a->cbid);
      r.startNs = a->start;
      r.endNs = a->end;
      r.correlationId = a->correlationId;
      r.threadId = a->threadId;
      apiThreads[a->correlationId] = a->threadId;
      break;
    }
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: {
      const auto *s = reinterpret_cast<const CUpti_ActivitySynchronization2 *>(raw);
      r.kind = ActivityKind::synchronization;
      r.name = synchronizationName(s->type);
      r.startNs = s->start;
      r.endNs = s->end;
      r.correlationId = s->correlationId;
      r.streamId = validOrZero(s->streamId);
      break;
    }
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: {
      const auto *e = reinterpret_cast<const CUpti_ActivityExternalCorrelation *>(raw);
      if (e->externalKind == CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0)
        externalIds[e->correlationId] = e->externalId;
      return;
    }
    default:
      return;
    }
    pending.push_back(std::move(p));
  }

  /// The labels, captured node and thread of each pending record, which
  /// then joins `out` (stop(); every buffer has been handed back by then).
  void resolve(std::vector<ActivityRecord> &out) {
    std::lock_guard<std::mutex> lock(mutex);
    auto external = [&](uint32_t correlation) -> std::optional<uint64_t> {
      auto it = externalIds.find(correlation);
      if (it == externalIds.end())
        return std::nullopt;
      return it->second;
    };
    for (Pending &p : pending) {
      ActivityRecord &r = p.record;
      r.launchLabel = external(r.correlationId);
      if (!r.launchLabel && p.runtimeCorrelationId)
        r.launchLabel = external(p.runtimeCorrelationId);
      if (r.graphNodeId) {
        // Back through the clones to the node that was captured; the
        // label is the most original one found on the way.
        uint64_t node = r.graphNodeId;
        std::optional<uint64_t> label;
        for (int hops = 0; hops < 64; ++hops) {
          auto l = nodeLabels.find(node);
          if (l != nodeLabels.end())
            label = l->second;
          auto c = cloneOf.find(node);
          if (c == cloneOf.end() || c->second == node)
            break;
          node = c->second;
        }
        r.capturedNodeId = node;
        r.label = label;
      } else {
        r.label = r.launchLabel;
      }
      if (r.kind == ActivityKind::synchronization) {
        auto t = apiThreads.find(r.correlationId);
        if (t != apiThreads.end())
          r.threadId = t->second;
      }
      out.push_back(std::move(r));
    }
    pending.clear();
  }
};

namespace {

void CUPTIAPI bufferRequested(uint8_t **buffer, size_t *size, size_t *maxNumRecords) {
  size_t bytes = gBufferBytes.load();
  *buffer = static_cast<uint8_t *>(std::aligned_alloc(8, bytes));
  *size = *buffer ? bytes : 0; // no buffer: CUPTI drops records and counts them
  *maxNumRecords = 0;
}

void CUPTIAPI bufferCompleted(CUcontext context, uint32_t streamId, uint8_t *buffer,
                              size_t /*size*/, size_t validSize) {
  {
    std::lock_guard<std::mutex> lock(gMutex);
    if (gActive && buffer)
      gActive->consume(context, streamId, buffer, validSize);
  }
  std::free(buffer);
}

void CUPTIAPI onResource(void *userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                         const void *cbdata) {
  if (domain != CUPTI_CB_DOMAIN_RESOURCE || !userdata || !cbdata)
    return;
  auto *impl = static_cast<CuptiTrace::Impl *>(userdata);
  const auto *resource = static_cast<const CUpti_ResourceData *>(cbdata);
  const auto *graph = static_cast<const CUpti_GraphData *>(resource->resourceDescriptor);
  if (!graph)
    return;
  if (cbid == CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED) {
    if (tLabels.empty() || !graph->node)
      return;
    uint64_t id = 0;
    Status st = RN_CUPTI_CHECK_QUIET(cuptiGetGraphNodeId(graph->node, &id));
    std::lock_guard<std::mutex> lock(impl->mutex);
    if (st.ok())
      impl->nodeLabels[id] = tLabels.back();
    impl->noteError(st);
  } else if (cbid == CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED) {
    if (!graph->node || !graph->originalNode)
      return;
    uint64_t clone = 0, original = 0;
    Status st = RN_CUPTI_CHECK_QUIET(cuptiGetGraphNodeId(graph->node, &clone));
    if (st.ok())
      st = RN_CUPTI_CHECK_QUIET(cuptiGetGraphNodeId(graph->originalNode, &original));
    std::lock_guard<std::mutex> lock(impl->mutex);
    if (st.ok())
      impl->cloneOf[clone] = original;
    impl->noteError(st);
  }
}

} // namespace

CuptiTrace::CuptiTrace() : impl_(std::make_unique<Impl>()) {}

Result<std::unique_ptr<CuptiTrace>> CuptiTrace::create(const Options &options) {
  {
    std::lock_guard<std::mutex> lock(gMutex);
    if (gActive)
      return Error("CuptiTrace: a trace exists already (CUPTI takes one per process)");
  }
  std::unique_ptr<CuptiTrace> trace(new CuptiTrace());
  Impl &impl = *trace->impl_;
  impl.options = options;
  auto fail = [](const Error &e) { return e.withContext("CuptiTrace"); };
  uint32_t version = 0;
  RN_CUPTI_TRY(cuptiGetVersion(&version));
  if (version / 10000 != CUPTI_API_VERSION / 10000)
    return Error("CuptiTrace: the libcupti loaded has API version " + std::to_string(version) +
                 ", built against " + std::to_string(CUPTI_API_VERSION) +
                 ": another major release, whose activity records differ");
  // The destructor undoes what succeeded when a later call fails.
  Status st = RN_CUPTI_CHECK(
      cuptiSubscribe(&impl.subscriber, reinterpret_cast<CUpti_CallbackFunc>(onResource), &impl));
  if (!st.ok()) {
    impl.subscriber = nullptr;
    return fail(st.error());
  }
  for (CUpti_CallbackId cbid :
       {CUpti_CallbackId(CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED),
        CUpti_CallbackId(CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED)}) {
    st = RN_CUPTI_CHECK(cuptiEnableCallback(1, impl.subscriber, CUPTI_CB_DOMAIN_RESOURCE, cbid));
    if (!st.ok())
      return fail(st.error());
  }
  size_t bytes = std::max<size_t>(options.bufferBytes, size_t(64) << 10);
  gBufferBytes = (bytes + 7) / 8 * 8;
  {
    std::lock_guard<std::mutex> lock(gMutex);
    if (!gRegistered) {
      st = RN_CUPTI_CHECK(cuptiActivityRegisterCallbacks(bufferRequested, bufferCompleted));
      if (!st.ok())
        return fail(st.error());
      gRegistered = true;
    }
    gActive = &impl;
  }
  impl.sampleClock();
  return trace;
}

CuptiTrace::~CuptiTrace() {
  if (running_)
    (void)stop();
  Impl &impl = *impl_;
  {
    std::lock_guard<std::mutex> lock(gMutex);
    if (gActive == &impl)
      gActive = nullptr;
  }
  if (impl.subscriber)
    cuptiUnsubscribe(impl.subscriber);
}

Status CuptiTrace::start() {
  if (running_)
    return Error("CuptiTrace::start: already started");
  Impl &impl = *impl_;
  std::vector<CUpti_ActivityKind> kinds = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL};
  if (impl.options.memcpy)
    kinds.push_back(CUPTI_ACTIVITY_KIND_MEMCPY);
  if (impl.options.memset)
    kinds.push_back(CUPTI_ACTIVITY_KIND_MEMSET);
  if (impl.options.apiCalls) {
    kinds.push_back(CUPTI_ACTIVITY_KIND_RUNTIME);
    kinds.push_back(CUPTI_ACTIVITY_KIND_DRIVER);
    kinds.push_back(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION);
  }
  if (impl.options.synchronization)
    kinds.push_back(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION);
  impl.sampleClock();
  impl.enabled.clear();
  for (CUpti_ActivityKind kind : kinds) {
    Status st = RN_CUPTI_CHECK(cuptiActivityEnable(kind));
    if (!st.ok()) {
      for (CUpti_ActivityKind k : impl.enabled)
        cuptiActivityDisable(k);
      impl.enabled.clear();
      return st.error().withContext("CuptiTrace::start");
    }
    impl.enabled.push_back(kind);
  }
  running_ = true;
  return Status::success();
}

Status CuptiTrace::stop() {
  if (!running_)
    return Error("CuptiTrace::stop: not started");
  running_ = false;
  Impl &impl = *impl_;
  Status first;
  for (CUpti_ActivityKind kind : impl.enabled) {
    Status st = RN_CUPTI_CHECK(cuptiActivityDisable(kind));
    if (first.ok() && !st.ok())
      first = st;
  }
  impl.enabled.clear();
  // Blocking: every buffer comes back through bufferCompleted, on this
  // thread or CUPTI's, before it returns. No lock is held here.
  Status flushed = RN_CUPTI_CHECK(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
  if (first.ok() && !flushed.ok())
    first = flushed;
  impl.sampleClock();
  impl.resolve(records_);
  {
    std::lock_guard<std::mutex> lock(impl.mutex);
    if (first.ok() && impl.callbackError)
      first = *impl.callbackError;
    impl.callbackError.reset();
  }
  if (!first.ok())
    return first.error().withContext("CuptiTrace::stop");
  return Status::success();
}

std::vector<ActivityRecord> CuptiTrace::takeRecords() {
  std::vector<ActivityRecord> out;
  out.swap(records_);
  return out;
}

uint64_t CuptiTrace::droppedRecords() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->dropped;
}

Status CuptiTrace::pushLabel(uint64_t label) {
  RN_CUPTI_TRY(cuptiActivityPushExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0,
                                                      label));
  tLabels.push_back(label);
  return Status::success();
}

Status CuptiTrace::popLabel() {
  if (tLabels.empty())
    return Error("CuptiTrace::popLabel: no label pushed on this thread");
  uint64_t last = 0;
  RN_CUPTI_TRY(cuptiActivityPopExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0,
                                                     &last));
  tLabels.pop_back();
  return Status::success();
}

Status CuptiTrace::labelGraphNode(cudaGraphNode_t node, uint64_t label) {
  Result<uint64_t> id = graphNodeId(node);
  if (!id.ok())
    return id.error();
  std::lock_guard<std::mutex> lock(impl_->mutex);
  impl_->nodeLabels[*id] = label;
  return Status::success();
}

uint64_t CuptiTrace::now() {
  uint64_t t = 0;
  (void)cuptiGetTimestamp(&t);
  return t;
}

uint64_t CuptiTrace::toCuptiNs(std::chrono::steady_clock::time_point time) const {
  int64_t steady = time.time_since_epoch().count();
  std::lock_guard<std::mutex> lock(impl_->clockMutex);
  const auto &pairs = impl_->clockPairs;
  if (pairs.empty())
    return 0;
  const auto &a = pairs.front();
  const auto &b = pairs.back();
  // One clock against the other: an offset, and the drift between them
  // where the samples are far enough apart to measure it (NTP slews
  // CLOCK_REALTIME by parts per million).
  double slope = 1.0;
  if (b.first - a.first > 100'000'000)
    slope = double(int64_t(b.second - a.second)) / double(b.first - a.first);
  const auto &near = std::abs(steady - a.first) < std::abs(steady - b.first) ? a : b;
  double cupti = double(near.second) + slope * double(steady - near.first);
  return cupti <= 0 ? 0 : uint64_t(cupti);
}

static_assert(std::is_same_v<std::chrono::steady_clock::duration, std::chrono::nanoseconds>,
              "toCuptiNs reads steady_clock ticks as nanoseconds");

Result<uint64_t> CuptiTrace::graphNodeId(cudaGraphNode_t node) {
  uint64_t id = 0;
  RN_CUPTI_TRY(cuptiGetGraphNodeId(reinterpret_cast<CUgraphNode>(node), &id));
  return id;
}

Result<uint32_t> CuptiTrace::graphId(cudaGraph_t graph) {
  uint32_t id = 0;
  RN_CUPTI_TRY(cuptiGetGraphId(reinterpret_cast<CUgraph>(graph), &id));
  return id;
}

Result<uint32_t> CuptiTrace::graphExecId(cudaGraphExec_t graphExec) {
  uint32_t id = 0;
  RN_CUPTI_TRY(cuptiGetGraphExecId(reinterpret_cast<CUgraphExec>(graphExec), &id));
  return id;
}

//===----------------------------------------------------------------------===//
// Records to a Chrome trace
//===----------------------------------------------------------------------===//

namespace {

struct Span {
  std::string name;
  const char *category;
  uint64_t startNs, endNs;
  json args;
  size_t lane = 0;
};

/// The tracks of one process in drawing order, each with its spans.
struct TrackList {
  std::vector<std::string> order;
  std::map<std::string, std::vector<Span>> spans;
  std::vector<Span> &operator[](const std::string &track) {
    auto it = spans.find(track);
    if (it == spans.end()) {
      order.push_back(track);
      it = spans.emplace(track, std::vector<Span>()).first;
    }
    return it->second;
  }
};

json recordArgs(const ActivityRecord &r) {
  json args = {{"kind", std::string(activityKindName(r.kind))},
               {"correlation", r.correlationId}};
  if (onGpu(r.kind)) {
    args["device"] = r.deviceId;
    args["cuda stream"] = r.streamId;
  }
  if (r.graphNodeId) {
    args["graph"] = r.graphId;
    args["graph node"] = r.capturedNodeId;
    args["exec graph node"] = r.graphNodeId;
  }
  if (r.bytes)
    args["bytes"] = r.bytes;
  if (r.launch) {
    const ActivityRecord::KernelLaunch &k = *r.launch;
    args["grid"] = {k.grid[0], k.grid[1], k.grid[2]};
    args["block"] = {k.block[0], k.block[1], k.block[2]};
    args["registers per thread"] = k.registersPerThread;
    args["shared bytes"] = k.staticSharedBytes + k.dynamicSharedBytes;
    args["local bytes per thread"] = k.localBytesPerThread;
  }
  if (r.label)
    args["label"] = *r.label;
  if (r.launchLabel && r.launchLabel != r.label)
    args["launch label"] = *r.launchLabel;
  if (r.threadId)
    args["thread"] = r.threadId;
  return args;
}

const char *categoryOf(ActivityKind kind) {
  switch (kind) {
  case ActivityKind::kernel: return "kernel";
  case ActivityKind::memcpy: return "memcpy";
  case ActivityKind::memset: return "memset";
  case ActivityKind::runtimeApi:
  case ActivityKind::driverApi: return "cuda api";
  case ActivityKind::synchronization: return "wait";
  }
  return "?";
}

/// Spreads `spans` over lanes so that the spans of each lane nest or
/// follow each other: sorted by start (longer first on ties), each goes to
/// the first lane where it starts after the open spans end or fits in the
/// innermost one.
size_t assignLanes(std::vector<Span> &spans) {
  std::stable_sort(spans.begin(), spans.end(), [](const Span &a, const Span &b) {
    return a.startNs != b.startNs ? a.startNs < b.startNs : a.endNs > b.endNs;
  });
  std::vector<std::vector<uint64_t>> open; // per lane, the end times of open spans
  for (Span &s : spans) {
    size_t lane = 0;
    for (; lane < open.size(); ++lane) {
      auto &stack = open[lane];
      while (!stack.empty() && stack.back() <= s.startNs)
        stack.pop_back();
      if (stack.empty() || s.endNs <= stack.back())
        break;
    }
    if (lane == open.size())
      open.emplace_back();
    open[lane].push_back(s.endNs);
    s.lane = lane;
  }
  return std::max<size_t>(open.size(), 1);
}

} // namespace

trace::ChromeTrace buildChromeTrace(const std::vector<ActivityRecord> &records,
                                    const Labeler &labeler, const std::vector<HostSpan> &hostSpans,
                                    const TraceOptions &options) {
  TrackList gpu, host;
  for (const std::string &name : options.gpuTracks)
    (void)gpu[name];
  auto add = [](TrackList &list, const std::string &track, Span span) {
    if (span.endNs < span.startNs)
      span.endNs = span.startNs;
    list[track].push_back(std::move(span));
  };
  std::optional<uint64_t> earliest;
  auto seen = [&](uint64_t t) { earliest = earliest ? std::min(*earliest, t) : t; };

  for (const ActivityRecord &r : records) {
    if (r.startNs == 0 && r.endNs == 0)
      continue; // CUPTI had no times for it
    json args = recordArgs(r);
    if (onGpu(r.kind)) {
      std::optional<TraceLabel> label = labeler ? labeler(r) : std::nullopt;
      if (label) {
        if (label->args.is_object())
          for (auto &[key, value] : label->args.items())
            args[key] = value;
        args["cupti name"] = r.name;
        add(gpu, label->track, {label->name, categoryOf(r.kind), r.startNs, r.endNs, args});
      } else if (options.unlabeledGpuWork) {
        add(gpu, "CUDA stream " + std::to_string(r.streamId),
            {r.name, categoryOf(r.kind), r.startNs, r.endNs, args});
      } else {
        continue;
      }
    } else if (r.kind == ActivityKind::synchronization) {
      if (!options.hostWaits)
        continue;
      std::string track = r.threadId ? "waits, thread " + std::to_string(r.threadId) : "waits";
      add(host, track, {r.name, categoryOf(r.kind), r.startNs, r.endNs, args});
    } else {
      if (!options.apiCalls)
        continue;
      add(host, "CUDA API, thread " + std::to_string(r.threadId),
          {r.name, categoryOf(r.kind), r.startNs, r.endNs, args});
    }
    seen(r.startNs);
  }
  for (const HostSpan &s : hostSpans) {
    add(host, s.track, {s.name, "host", s.startNs, s.endNs, s.args});
    seen(s.startNs);
  }
  uint64_t origin = options.originNs ? *options.originNs : earliest.value_or(0);

  trace::ChromeTrace out;
  out.nameProcess(kGpuPid, options.gpuProcessName, 0);
  out.nameProcess(kHostPid, options.hostProcessName, 1);
  out.setMetadata("clock", "CUPTI timestamps; ts = (ns - originNs) / 1000");
  out.setMetadata("originNs", origin);
  for (auto [pid, list] : {std::pair<int, TrackList *>{kGpuPid, &gpu}, {kHostPid, &host}}) {
    int tid = 0;
    for (size_t i = 0; i < list->order.size(); ++i) {
      const std::string &name = list->order[i];
      std::vector<Span> &spans = list->spans[name];
      size_t lanes = assignLanes(spans);
      std::vector<trace::Track> tracks;
      for (size_t lane = 0; lane < lanes; ++lane) {
        trace::Track t{pid, tid++};
        out.nameTrack(t, lane == 0 ? name : name + " (" + std::to_string(lane + 1) + ")",
                      int(i * 100 + lane));
        tracks.push_back(t);
      }
      for (Span &s : spans)
        out.complete(tracks[s.lane], s.name, s.category,
                     trace::nsToUs(int64_t(s.startNs) - int64_t(origin)),
                     trace::nsToUs(int64_t(s.endNs - s.startNs)), std::move(s.args));
    }
  }
  return out;
}

} // namespace rn::cuda
