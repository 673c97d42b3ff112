//===- rn-run.cpp - Train from an artifact --------------------------------===//
//
//   rn-run MODEL.rnx --data DIR [--epochs N] [--lr LR] ...   Fashion-MNIST
//   rn-run MODEL.rnx --synthetic --steps N ...                 synthetic data
//   rn-run MODEL.rnx --benchmark --steps N ...                 ms per step
//
// The command line of the training library (runtime/train): it reads the
// flags (the table of run_options.h, which --help prints), builds the
// library's objects (rank group, executor, trainer, data sources) and
// prints what they report; the loop, the schedule, evaluation, checkpoints
// and the data-parallel ranks are the library's.
// docs/rn-run.md describes the flags and every output line, which scripts
// and tests read: keep them stable.
//
//===----------------------------------------------------------------------===//

#include "rn_version.h"
#include "runtime/core/artifact.h"
#include "runtime/core/process_group.h"
#include "runtime/train/benchmark.h"
#include "runtime/train/checkpoint.h"
#include "runtime/train/data_dir.h"
#include "runtime/train/data_parallel.h"
#include "runtime/train/executor_factory.h"
#include "runtime/train/fit.h"
#include "runtime/train/fit_printer.h"
#include "runtime/train/run_options.h"
#include "runtime/train/session.h"
#include "runtime/train/state_digest.h"
#include "runtime/train/synthetic_run.h"
#include "runtime/train/trainer.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace {

using namespace rn::train;
using Clock = std::chrono::steady_clock;

/// The flags (run_options.h) and this rank of the run.
struct Options : RunOptions {
  rn::ProcessGroup group; ///< RANK / WORLD_SIZE / ...: rank 0 of 1 unless data-parallel
  bool progress{}; ///< no --no-progress, and rank 0 of a data-parallel run
};

void usage(FILE *out) { std::fputs(runUsage().c_str(), out); }

int fail(const std::string &message) {
  std::fprintf(stderr, "rn-run: error: %s\n", message.c_str());
  return 1;
}

double secondsSince(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
}

/// "0.4914,0.4822,0.4465" (as the data line lists the normalization).
std::string listed(const std::vector<float> &values) {
  std::string out;
  for (float v : values) {
    char text[32];
    std::snprintf(text, sizeof text, "%.4f", v);
    out += (out.empty() ? "" : ",") + std::string(text);
  }
  return out;
}

int runData(const Options &o, Trainer &trainer, FitPrinter &report) {
  // The checkpoint's folder is checked before any work.
  if (!o.checkpoint.empty())
    if (rn::Status s = checkWritable(o.checkpoint); !s)
      return fail(s.error().message());
  report.setLoadStart(Clock::now());
  rn::Result<rn::AugmentKind> augment = rn::parseAugmentKind(o.augment);
  if (!augment)
    return fail(augment.error().message());
  rn::AugmentRecipe recipe;
  recipe.kind = *augment;
  DataDirOptions dataOptions{o.limitTrain, o.limitTest, o.label, o.mean, o.std};
  dataOptions.mixedSizes = recipe.kind == rn::AugmentKind::resizedCropFlip;
  // Data-parallel, each rank decodes only its share of an image folder for
  // the statistics.
  dataOptions.rank = trainer.group().rank;
  dataOptions.ranks = trainer.group().worldSize;
  dataOptions.sumOverRanks = [&](std::vector<double> &sums) { return trainer.sumOverRanks(sums); };
  dataOptions.skipBadImages = o.skipBadImages;
  rn::Result<DataDir> sources = loadDataDir(o.data, dataOptions);
  if (!sources)
    return fail(sources.error().message());
  const std::vector<int64_t> &input = trainer.imageShape(); // [batch, H, W, C]
  if (input.size() == 4) {
    if (rn::Status st = augmentDataDir(*sources, recipe, input[1], input[2]); !st)
      return fail(st.error().message());
  } else if (recipe.kind != rn::AugmentKind::none) {
    return fail("--augment needs a model whose images are [batch, H, W, C]; " + o.path +
                " takes " + rn::shapeString(input));
  }
  report.line("data: %s\n", sources->description.c_str());
  if (!sources->skipped.empty()) {
    report.line("skipped %zu images that did not read at load (--skip-bad-images):\n",
                sources->skipped.size());
    for (const std::string &why : sources->skipped)
      report.line("  %s\n", why.c_str());
  }
  if (trainer.imageDType() == rn::DType::u8) {
    // fit() sets the normalization; the line says what crosses the wire.
    if (!sources->train->hasPixels())
      return fail(o.path + ": the model takes uint8 images (normalized on the device), and " +
                  sources->train->name() + " holds float images: give it data with pixels "
                  "(uint8 .npz, IDX, CIFAR or an image folder), or compile the model with "
                  "float images");
    const rn::train::ChannelNormalization n = sources->train->normalization();
    report.line("images uint8, normalized on the device with mean %s std %s\n",
                listed(n.mean).c_str(), listed(n.std).c_str());
  }
  FitConfig config{o.epochs,     o.lr,     o.warmupEpochs,   o.seed,
                   o.checkpoint, o.resume, o.stopAfterEpoch, o.path};
  config.skipBadImages = o.skipBadImages;
  const unsigned host = std::max(1u, std::thread::hardware_concurrency());
  config.loaderThreads =
      o.loaderThreads > 0
          ? int(o.loaderThreads)
          : int(std::clamp<long long>(host / std::max(1, o.group.worldSize), 1, 8));
  if (rn::Status st = fit(trainer, *sources->train, *sources->test, config, report); !st) {
    report.clearProgress();
    return fail(st.error().message());
  }
  return 0;
}

int runSynthetic(const Options &o, Trainer &trainer, FitPrinter &report) {
  report.line("model %s: batch %lld, %lld features%s, %lld classes, %lld steps, lr %g%s\n",
              trainer.program().model.c_str(), (long long)trainer.batch(),
              (long long)trainer.imageSize(),
              trainer.imageDType() == rn::DType::u8 ? " (uint8, normalized on the device)" : "",
              (long long)trainer.classes(), (long long)o.steps, o.lr,
              o.interleave ? ", interleaved" : "");
  rn::Result<SyntheticRunResult> run = trainSynthetic(
      trainer, SyntheticRunConfig{o.steps, o.lr, o.seed, o.stateDigestEvery},
      [&](int64_t step, float loss) {
        report.line("step %lld loss %.6f\n", (long long)step, loss);
        std::fflush(stdout);
      });
  if (!run)
    return fail(run.error().message());
  report.line("loss first %.6f last %.6f\n", run->firstLoss, run->lastLoss);
  report.line("%.2f steps/s (%.3f s for %lld steps)\n", o.steps / run->seconds, run->seconds,
              (long long)o.steps);
  if (o.stateDigest.empty() || o.group.rank != 0) // every rank holds the same state
    return 0;
  nlohmann::json value = nlohmann::json{{"steps", std::move(run->digests)}};
  if (o.stateDigestEvery == 0) {
    rn::Result<nlohmann::json> digest = stateDigest(trainer.executor());
    if (!digest)
      return fail(digest.error().message());
    value = std::move(*digest);
  }
  if (rn::Status st = writeJson(o.stateDigest, value); !st)
    return fail(st.error().message());
  report.line("state digest written to %s\n", o.stateDigest.c_str());
  return 0;
}

/// One rank, after the artifact is loaded: its process group (from the
/// environment, or its thread's of `shared`), its session (links to the
/// other ranks, executor, trainer), then the run.
int runRank(Options o, std::shared_ptr<const rn::Artifact> artifact, const std::string &kind,
            Clock::time_point processStart, Clock::time_point loadStart,
            const InProcessRanks *shared) {
  if (!shared) {
    rn::Result<rn::ProcessGroup> group = rn::processGroupFromEnvironment();
    if (!group)
      return fail(group.error().message());
    o.group = *group;
  }
  Session::Config config;
  config.group = o.group;
  config.shared = shared;
  // Data-parallel when launched with WORLD_SIZE (torchrun's variables), even
  // with one rank: that one rank then averages through NCCL too.
  config.dataParallel = shared || std::getenv("WORLD_SIZE") != nullptr;
  o.progress = o.progress && (!config.dataParallel || o.group.rank == 0); // rank 0 reports
  FitPrinter::Options printing;
  printing.quiet = shared && o.group.rank != 0; // one report per process
  printing.progress = o.progress;
  FitPrinter report(printing);
  config.artifactPath = o.path;
  config.executor.kind = kind;
  config.executor.seed = o.seed;
  config.executor.interleave = o.interleave;
  config.executor.syncDebug = o.syncDebug;
  config.executor.deterministic = o.deterministic;
  config.executor.allowTf32 = o.allowTf32;
  config.executor.allowReducedPrecisionReduction = o.allowReducedPrecisionReduction;
  config.executor.planCacheFile = kind == "cpu" ? "" : planCachePath(o.planCache);
  config.executor.autotuneCandidates = int(o.autotuneCandidates);
  config.executor.profile = o.profile;
  config.executor.dumpGraphsDir = o.dumpGraphs;
  config.trace = !o.trace.empty();
  config.perturbEps = o.perturbEps;
  config.perturbSeed = o.perturbSeed;
  Session::Events events;
  events.started = [&] {
    report.line("rn-run: executor %s%s%s\n", kind.c_str(), o.executor == "auto" ? " (auto)" : "",
                config.dataParallel ? (", data-parallel " + o.group.describe()).c_str() : "");
    std::fflush(stdout);
  };
  events.connected = [&](const std::string &summary) {
    if (o.progress)
      report.line("%s\n", summary.c_str());
  };
  events.loaded = [&](const std::string &summary) {
    if (!summary.empty() && o.progress)
      report.line("%s\n", summary.c_str());
  };
  events.perturbed = [&] {
    report.line("parameters perturbed by a relative %g (seed %llu)\n", o.perturbEps,
                (unsigned long long)o.perturbSeed);
  };
  rn::Result<std::unique_ptr<Session>> session = Session::open(artifact, config, events);
  if (!session)
    return fail(session.error().message());
  const double loadSecs = secondsSince(loadStart);
  Trainer &trainer = (*session)->trainer();
  GpuTrace *trace = (*session)->trace();
  if (trace)
    if (rn::Status s = trace->start(); !s)
      return fail(s.error().message());
  int rc = 0;
  if (o.benchmark) {
    BenchmarkConfig bench{o.warmup, o.steps, o.lr, o.seed, processStart, loadSecs};
    rn::Result<BenchmarkResult> result = benchmark(trainer, bench);
    if (!result)
      return fail(result.error().message());
    report.line("%s\n", benchmarkJson(trainer, *result).c_str());
  } else {
    rc = o.synthetic ? runSynthetic(o, trainer, report) : runData(o, trainer, report);
  }
  if (rc == 0 && trace) { // the steps are drained: what the GPU did over them
    rn::Result<GpuTrace::Summary> s = trace->write(o.trace);
    if (!s)
      return fail(s.error().message());
    report.line("trace %s: %zu GPU records (%zu not from program nodes), GPU busy %.3f of "
                "%.3f ms (%.1f%%), %llu records dropped\n",
                o.trace.c_str(), s->gpuRecords, s->unlabeled, s->busyMs, s->windowMs,
                s->windowMs > 0 ? 100.0 * s->busyMs / s->windowMs : 0.0,
                (unsigned long long)s->dropped);
  }
  if (rc == 0 && o.benchmark && o.profile) {
    rn::Result<std::string> profile = profileReport(trainer.executor());
    if (!profile)
      return fail(profile.error().message());
    std::fprintf(stderr, "%s", profile->c_str());
  }
  if (rc == 0)
    (*session)->succeeded();
  return rc;
}

/// --gpus N / --cpu-replicas N: rank r in a host thread of its own, each
/// with its executor; rank 0 reports.
int runThreadedRanks(const Options &o, std::shared_ptr<const rn::Artifact> artifact,
                     const std::string &kind, Clock::time_point processStart,
                     Clock::time_point loadStart) {
  const bool cpuRun = o.cpuReplicas > 0;
  const int count = int(cpuRun ? o.cpuReplicas : o.gpus);
  const std::string flag = cpuRun ? "--cpu-replicas" : "--gpus";
  if (o.gpus > 0 && o.cpuReplicas > 0)
    return fail("--gpus and --cpu-replicas exclude each other");
  if (std::getenv("WORLD_SIZE"))
    return fail(flag + " and WORLD_SIZE exclude each other: one process runs the ranks, or "
                       "one process per GPU is started (torchrun)");
  if (cpuRun && kind != "cpu")
    return fail("--cpu-replicas needs --executor cpu (GPU ranks: --gpus N)");
  if (!cpuRun && kind == "cpu")
    return fail("--gpus needs a GPU executor (CPU replicas: --cpu-replicas N)");
  if (!o.trace.empty() || o.profile || !o.dumpGraphs.empty())
    return fail("--trace, --profile and --dump-graphs observe one GPU: not with " + flag);
  rn::Result<rn::ProcessGroup> environment = rn::processGroupFromEnvironment();
  if (!environment)
    return fail(environment.error().message());
  std::unique_ptr<InProcessRanks> ranks;
  if (cpuRun) {
    ranks = InProcessRanks::cpuReplicas(count);
  } else {
    rn::Result<std::unique_ptr<InProcessRanks>> gpus = InProcessRanks::gpus(count);
    if (!gpus)
      return fail("--gpus " + std::to_string(count) + ": " + gpus.error().message());
    ranks = std::move(*gpus);
  }
  bool ok = ranks->run([&](int r) {
    Options mine = o;
    mine.group.rank = r;
    mine.group.worldSize = count;
    mine.group.localRank = r;
    mine.group.timeoutSeconds = environment->timeoutSeconds;
    return runRank(mine, artifact, kind, processStart, loadStart, ranks.get()) == 0;
  });
  return ok ? 0 : 1;
}

/// Parses the flags into `o`: 0 to go on, -1 after --help or --version,
/// else the exit code (a flag without its value exits with 2).
int parse(int argc, char **argv, Options &o) {
  ParsedFlags parsed;
  if (rn::Status s = parseRunOptions(argc, argv, o, parsed); !s) {
    fail(s.error().message());
    return parsed.missingValue ? 2 : 1;
  }
  o.progress = !o.noProgress;
  if (o.help)
    usage(stdout);
  else if (o.version)
    std::printf("rn-run %s (RN; GPU executors: %s)\n", RN_VERSION_STRING,
                builtWithCuda() ? "built" : "not built");
  return o.help || o.version ? -1 : 0;
}

} // namespace

int main(int argc, char **argv) {
  const auto processStart = Clock::now();
  Options o;
  if (int rc = parse(argc, argv, o); rc != 0)
    return rc < 0 ? 0 : rc;
  if (o.path.empty()) {
    usage(stderr);
    return fail("no artifact given");
  }
  // The file first: a model given instead of its artifact is the likelier
  // mistake than a missing flag, and its message says what to do.
  auto loadStart = Clock::now();
  rn::Result<std::shared_ptr<const rn::Artifact>> artifact = loadArtifactFile(o.path);
  if (!artifact)
    return fail(artifact.error().message());
  o.synthetic = o.synthetic || o.benchmark;
  if (o.synthetic && !o.data.empty())
    return fail("--synthetic and --data exclude each other");
  if (!o.synthetic && o.data.empty())
    return fail("no data: give --data DIR or --synthetic");
  if (o.stateDigestEvery > 0 && o.stateDigest.empty())
    return fail("--state-digest-every needs --state-digest FILE");
  if (o.synthetic && (!o.checkpoint.empty() || !o.resume.empty()))
    return fail("--checkpoint and --resume need --data");
  if (o.perturbEps > 0 && !o.resume.empty())
    return fail("--perturb-state and --resume exclude each other (the checkpoint's state "
                "replaces the perturbed one)");

  // --executor auto: the GPU when a driver and device answer, else the CPU.
  const std::string kind = resolveExecutorKind(o.executor);
  if (kind != "cpu") {
    if (rn::Status gpu = gpuAvailable(); !gpu)
      return fail("--executor " + kind + ": " + gpu.error().message());
  }
  if (o.interleave && kind != "cpu")
    return fail("--interleave needs --executor cpu");
  if (o.profile && kind != "cuda-eager")
    return fail("--profile needs --executor cuda-eager (it times every node between events "
                "on its stream)");
  if (!o.dumpGraphs.empty() && kind != "cuda-graph")
    return fail("--dump-graphs needs --executor cuda-graph");
  if (!o.trace.empty() && kind == "cpu")
    return fail("--trace needs a GPU executor (cuda-graph or cuda-eager)");
  if (o.gpus > 0 || o.cpuReplicas > 0)
    return runThreadedRanks(o, *artifact, kind, processStart, loadStart);
  return runRank(o, *artifact, kind, processStart, loadStart, nullptr);
}
