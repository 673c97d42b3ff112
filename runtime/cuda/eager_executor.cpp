//===- eager_executor.cpp - The cuda-eager executor -----------------------===//
//
// See eager_executor.h.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/eager_executor.h"

#include "runtime/cuda/check.h"
#include "runtime/cuda/device_program.h"

#include <cstdio>

namespace rn::cuda {

struct EagerExecutor::Impl {
  std::unique_ptr<DeviceProgram> dp;
  std::optional<EventBinder> binder;

  Status launch(const HostAction &a);
};

Result<std::unique_ptr<EagerExecutor>> EagerExecutor::create(const Artifact &artifact,
                                                             const Options &options) {
  std::unique_ptr<EagerExecutor> ex(new EagerExecutor());
  ex->impl_ = std::make_unique<Impl>();
  Result<std::unique_ptr<DeviceProgram>> dp = DeviceProgram::create(artifact, options, "cuda-eager");
  if (!dp.ok())
    return dp.error();
  ex->impl_->dp = std::move(*dp);
  ex->impl_->binder.emplace(artifact.program);
  return ex;
}

EagerExecutor::~EagerExecutor() = default;

const Program &EagerExecutor::program() const { return impl_->dp->program(); }

std::string EagerExecutor::loadSummary() const {
  const DeviceProgram &dp = *impl_->dp;
  char line[512];
  std::snprintf(line, sizeof line,
                "cuda-eager on %s: arena %.1f MiB in %zu regions, %zu nodes prepared "
                "(%zu convolution graphs, %.2f s building and autotuning), load %.2f s",
                dp.context().deviceName().c_str(), double(dp.context().arenaBytes()) / (1 << 20),
                dp.program().arena.regions.size(), dp.preparedNodes(), dp.conv().graphs(),
                dp.conv().prepareSeconds(), dp.loadSeconds());
  return line;
}

Status EagerExecutor::initialize() { return impl_->dp->initialize(); }

Result<std::vector<float>> EagerExecutor::readState(std::string_view name) const {
  return impl_->dp->readState(name);
}

Status EagerExecutor::writeState(std::string_view name, const std::vector<float> &values) {
  return impl_->dp->writeState(name, values);
}

double EagerExecutor::hostBlockedSeconds() const { return impl_->dp->blockedSeconds(); }

//===----------------------------------------------------------------------===//
// Steps
//===----------------------------------------------------------------------===//

// Every node on its stream, as the program says: event records and waits
// where the nodes are (bound by the EventBinder in issue order), each
// output copied to the step's pinned slot right after the node that writes
// it, on its stream.
Status EagerExecutor::Impl::launch(const HostAction &a) {
  DeviceContext &ctx = dp->context();
  PreparedSubgraph &ps = dp->subgraph(a.sg);
  for (size_t i = 0; i < a.sg->nodes.size(); ++i) {
    const Node &n = a.sg->nodes[i];
    auto where = [&](int part, Stream stream) {
      return dp->describeLaunch(a) + ", " + DeviceProgram::describeNode(n, uint32_t(i), part, stream);
    };
    if (n.kind == Node::Kind::event_record) {
      EventSlot e = binder->record(n, *a.sg, a.variant, a.step);
      Status st = RN_CUDA_CHECK(cudaEventRecord(ctx.event(e), ctx.stream(n.stream).stream));
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
            RN_CUDA_CHECK(cudaStreamWaitEvent(ctx.stream(n.stream).stream, ctx.event(e), 0));
        if (!st.ok())
          return st.error().withContext(where(-1, n.stream));
      }
      continue;
    }
    for (PreparedItem &it : ps.itemsOfNode[i]) {
      if (Status st = dp->issueItem(*a.sg, a.variant, it); !st.ok())
        return st.error().withContext(where(it.part, it.stream));
      if (a.outputs)
        for (uint32_t o : it.outputs)
          if (Status st = dp->copyOutput(a.fn, o, a.variant, a.step,
                                         ctx.stream(it.stream).stream);
              !st.ok())
            return st.error().withContext(where(it.part, it.stream));
      if (dp->options().syncDebug) {
        if (Status st = ctx.synchronize(); !st.ok())
          return st.error().withContext("sync-debug after " + where(it.part, it.stream));
      }
    }
  }
  return dp->recordCompletion(a);
}

namespace {

/// The primitives of the eager executor: host staging into pinned buffers,
/// launches issued node by node, host waits as event synchronization,
/// outputs decoded from their pinned slots when a step is collected.
class EagerPrimitives final : public HostPrimitives {
public:
  explicit EagerPrimitives(EagerExecutor::Impl &impl) : impl_(impl) {}
  Status stage(const HostAction &a) override { return impl_.dp->stage(a); }
  Status launch(const HostAction &a) override { return impl_.launch(a); }
  Status hostWait(const HostAction &a) override { return impl_.dp->hostWait(a); }
  Status read(const HostAction &) override { return Status::success(); }

private:
  EagerExecutor::Impl &impl_;
};

} // namespace

Status EagerExecutor::issue(const HostProgram &program) {
  EagerPrimitives primitives(*impl_);
  if (Status st = runHostProgram(program, primitives); !st.ok())
    return st.error().withContext("cuda-eager");
  return Status::success();
}

Result<bool> EagerExecutor::stepComplete(const PendingStep &step) {
  Result<bool> done = impl_->dp->stepComplete(step);
  if (!done.ok())
    return done.error().withContext("cuda-eager");
  return done;
}

Status EagerExecutor::waitStep(const PendingStep &step) {
  if (Status st = impl_->dp->waitStep(step); !st.ok())
    return st.error().withContext("cuda-eager");
  return Status::success();
}

Status EagerExecutor::collect(PendingStep &step) {
  if (step.launches.empty())
    return Status::success();
  return impl_->dp->decodeOutputs(step.fn, step.step, step.outputs);
}

Status EagerExecutor::synchronize() {
  if (Status st = impl_->dp->synchronize(); !st.ok())
    return st.error().withContext("cuda-eager");
  return Status::success();
}

Result<std::string> EagerExecutor::profileReport() { return impl_->dp->profileReport("cuda-eager"); }

size_t EagerExecutor::maxStepsInFlight() const { return impl_->dp->options().maxStepsInFlight; }

} // namespace rn::cuda
