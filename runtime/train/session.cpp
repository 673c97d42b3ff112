//===- session.cpp - One rank's training objects, built and torn down in order ===//

#include "runtime/train/session.h"

#include "runtime/train/artifact_file.h"
#include "runtime/train/state_digest.h"

namespace rn::train {

Session::~Session() = default;

Result<std::unique_ptr<Session>> Session::open(std::shared_ptr<const Artifact> artifact,
                                               const Config &config, const Events &events) {
  if (!artifact)
    return Error("a session needs an artifact");
  std::unique_ptr<Session> s(new Session());
  s->artifact_ = std::move(artifact);
  const Program &program = s->artifact_->program;
  const bool cpu = config.executor.kind == "cpu";
  cpu::ReplicaGroup *replicas = config.shared ? config.shared->replicas() : nullptr;
  if (config.dataParallel)
    RN_RETURN_IF_ERROR(checkDataParallelRun(program, config.artifactPath, config.group, cpu,
                                            replicas != nullptr));
  if (events.started)
    events.started();

  if (replicas) {
    s->ranks_ = RankGroup::cpuReplica(config.group, *replicas);
  } else if (config.dataParallel && !cpu) {
    Result<std::unique_ptr<RankGroup>> gpu =
        RankGroup::connectGpu(config.group, config.artifactPath, config.executor.seed,
                              config.shared);
    if (!gpu)
      return gpu.error();
    s->ranks_ = std::move(*gpu);
    if (events.connected)
      events.connected(s->ranks_->connectionSummary());
  } else {
    s->ranks_ = std::make_unique<RankGroup>(config.group);
  }
  // Until succeeded(), tearing the session down aborts the rank's links.
  s->abortOnFailure_ = std::make_unique<AbortUnlessSucceeded>(s->ranks_.get());

  if (config.trace) {
    Result<std::unique_ptr<GpuTrace>> trace = GpuTrace::create(program);
    if (!trace)
      return trace.error();
    s->trace_ = std::move(*trace);
  }
  ExecutorConfig executorConfig = config.executor;
  executorConfig.ranks = s->ranks_.get();
  executorConfig.trace = s->trace_.get();
  Result<std::unique_ptr<Executor>> executor = createExecutor(*s->artifact_, executorConfig);
  if (!executor)
    return executor.error();
  s->executor_ = std::move(*executor);
  if (events.loaded)
    events.loaded(loadSummary(*s->executor_));
  RN_RETURN_IF_ERROR(s->executor_->initialize());
  if (config.perturbEps > 0) {
    if (Status st = perturbParameters(*s->executor_, config.perturbEps, config.perturbSeed); !st)
      return st.error().withContext("perturbing the parameters");
    if (events.perturbed)
      events.perturbed();
  }

  Trainer::Options options;
  options.window = config.window;
  options.ranks = s->ranks_.get();
  options.spans = s->trace_.get();
  Result<std::unique_ptr<Trainer>> trainer = Trainer::create(*s->executor_, options);
  if (!trainer)
    return trainer.error().withContext(config.artifactPath);
  s->trainer_ = std::move(*trainer);
  return s;
}

Result<std::shared_ptr<const Artifact>> loadArtifactFile(const std::string &path) {
  RN_RETURN_IF_ERROR(checkArtifactFile(path));
  Result<Artifact> artifact = loadArtifact(path);
  if (!artifact)
    return artifact.error();
  return std::make_shared<const Artifact>(std::move(*artifact));
}

} // namespace rn::train
