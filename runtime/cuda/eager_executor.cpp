//===- eager_executor.cpp - The cuda-eager executor -----------------------===//
//
// See eager_executor.h.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/eager_executor.h"

#include "runtime/cuda/check.h"

#include <cstdio>

namespace rn::cuda {

Result<std::unique_ptr<EagerExecutor>> EagerExecutor::create(const Artifact &artifact,
                                                             const Options &options) {
  std::unique_ptr<EagerExecutor> ex(new EagerExecutor());
  Result<std::unique_ptr<DeviceProgram>> dp = DeviceProgram::create(artifact, options, "cuda-eager");
  if (!dp.ok())
    return dp.error();
  ex->device_ = std::move(*dp);
  ex->binder_.emplace(artifact.program);
  return ex;
}

EagerExecutor::~EagerExecutor() = default;

std::string EagerExecutor::loadSummary() const {
  const DeviceProgram &dp = *device_;
  char line[512];
  std::snprintf(line, sizeof line, "cuda-eager on %s: %s, %s, load %.2f s",
                dp.context().deviceName().c_str(), dp.context().describeArena().c_str(),
                dp.describePrepare().c_str(), dp.loadSeconds());
  return line;
}

Result<std::string> EagerExecutor::profileReport() { return device_->profileReport(name()); }

// Every node on its stream, as the program says: event records and waits
// where the nodes are (bound by the EventBinder in issue order), each
// output copied to the step's pinned slot right after the node that writes
// it, on its stream.
Status EagerExecutor::launch(const HostAction &a) {
  DeviceContext &ctx = device_->context();
  PreparedSubgraph &ps = device_->subgraph(a.sg);
  for (size_t i = 0; i < a.sg->nodes.size(); ++i) {
    const Node &n = a.sg->nodes[i];
    auto where = [&](int part, Stream stream) {
      return device_->describeLaunch(a) + ", " +
             DeviceProgram::describeNode(n, uint32_t(i), part, stream);
    };
    if (n.kind == Node::Kind::event_record) {
      EventSlot e = binder_->record(n, *a.sg, a.variant, a.step);
      Status st = RN_CUDA_CHECK(cudaEventRecord(ctx.event(e), ctx.stream(n.stream).stream));
      if (!st.ok())
        return st.error().withContext(where(-1, n.stream));
      continue;
    }
    if (n.kind == Node::Kind::event_wait) {
      Result<std::vector<EventSlot>> bound = binder_->wait(n, *a.sg, a.step);
      if (!bound.ok())
        return bound.error().withContext(where(-1, n.stream));
      for (EventSlot e : *bound) {
        Status st =
            RN_CUDA_CHECK(cudaStreamWaitEvent(ctx.stream(n.stream).stream, ctx.event(e), 0));
        if (!st.ok())
          return st.error().withContext(where(-1, n.stream));
      }
      continue;
    }
    for (PreparedItem &it : ps.itemsOfNode[i]) {
      if (Status st = device_->issueItem(n, ps.viewsOfNode[i], a.variant, it); !st.ok())
        return st.error().withContext(where(it.part, it.stream));
      if (a.outputs)
        for (uint32_t o : it.outputs)
          if (Status st = device_->copyOutput(a.fn, o, a.variant, a.step,
                                              ctx.stream(it.stream).stream);
              !st.ok())
            return st.error().withContext(where(it.part, it.stream));
      if (device_->options().syncDebug) {
        if (Status st = ctx.synchronize(); !st.ok())
          return st.error().withContext("sync-debug after " + where(it.part, it.stream));
      }
    }
  }
  return device_->recordCompletion(a);
}

} // namespace rn::cuda
