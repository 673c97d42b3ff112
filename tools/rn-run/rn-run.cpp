//===- rn-run.cpp - Train from an artifact --------------------------------===//
//
//   rn-run MODEL.rnx --data DIR [--epochs N] [--lr LR] ...   Fashion-MNIST
//   rn-run MODEL.rnx --synthetic --steps N ...                 synthetic data
//   rn-run MODEL.rnx --benchmark --steps N ...                 ms per step
//
// The command line of the training library (runtime/train): it parses the
// flags, builds the library's objects (rank group, executor, trainer, data
// sources) and prints what they report; the loop, the schedule,
// evaluation, checkpoints and the data-parallel ranks are the library's.
// docs/rn-run.md describes the flags and every output line, which scripts
// and tests read: keep them stable.
//
//===----------------------------------------------------------------------===//

#include "rn_version.h"
#include "runtime/core/artifact.h"
#include "runtime/core/process_group.h"
#include "runtime/train/benchmark.h"
#include "runtime/train/checkpoint.h"
#include "runtime/train/command_line.h"
#include "runtime/train/data_parallel.h"
#include "runtime/train/executor_factory.h"
#include "runtime/train/fit.h"
#include "runtime/train/fit_printer.h"
#include "runtime/train/data_dir.h"
#include "runtime/train/session.h"
#include "runtime/train/state_digest.h"
#include "runtime/train/synthetic_run.h"
#include "runtime/train/trainer.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <iterator>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

namespace {

using namespace rn::train;
using Clock = std::chrono::steady_clock;

struct Options {
  std::string path, executor = "auto", data, checkpoint, resume, planCache, dumpGraphs, trace,
      stateDigest, label = "fine", mean, std, augment = "none";
  rn::ProcessGroup group; ///< RANK / WORLD_SIZE / ...: rank 0 of 1 unless data-parallel
  bool synthetic = false, interleave = false, progress = true, benchmark = false, profile = false;
  bool syncDebug = false, deterministic = false, allowTf32 = false, allowRpr = false;
  bool skipBadImages = false;
  long long loaderThreads = 0; ///< 0: min(8, the host's threads / ranks)
  long long steps = 10, epochs = 1, autotuneCandidates = 16, stateDigestEvery = 0, warmup = 10;
  long long gpus = 0, cpuReplicas = 0, limitTrain = 0, limitTest = 0, stopAfterEpoch = 0;
  double lr = 0.1, warmupEpochs = 0, perturbEps = 0;
  unsigned long long seed = 0, perturbSeed = 0;
};

constexpr const char kUsage[] =
      "usage: rn-run MODEL.rnx --data DIR [--epochs N] [--lr LR] [options]\n"
      "       rn-run MODEL.rnx --synthetic --steps N [--lr LR] [options]\n"
      "       rn-run MODEL.rnx --benchmark [--steps N] [--warmup W] [options]\n"
      "       rn-run --version\n"
      "MODEL.rnx is an artifact from rn-compile (docs/rn-run.md).\n"
      "\ntraining:\n"
      "  --epochs N         epochs (default 1)\n"
      "  --lr LR            (peak) learning rate (default 0.1)\n"
      "  --warmup-epochs W  linear warmup epochs, then cosine decay to 0 (default 0)\n"
      "  --seed S           shuffling, dropout and interleaving seed (default 0)\n"
      "  --checkpoint PATH  save all state after each epoch (safetensors)\n"
      "  --resume PATH      restore a checkpoint and continue with its next epoch\n"
      "  --stop-after-epoch E  stop after epoch E (the schedule still spans\n"
      "                     --epochs; to resume later from --checkpoint)\n"
      "  --no-progress      no progress lines on stderr\n"
      "\ndata:\n"
      "  --data DIR         train on the data set in DIR: Fashion-MNIST's IDX files\n"
      "                     (train-images-idx3-ubyte.gz, ...) or CIFAR-10/100's binary\n"
      "                     files (data_batch_1.bin ... or train.bin, test.bin)\n"
      "  --data FILE.npz    or a NumPy archive with x_train, y_train, x_test, y_test\n"
      "                     (uint8 or float32 images, NHWC or NHW)\n"
      "  --data ROOT        or an image folder: ROOT/train/<class>/*.png|jpg|jpeg and\n"
      "                     ROOT/val/<class>/... (or test/); classes in sorted order,\n"
      "                     all images one size unless --augment rrc-flip resizes them\n"
      "  --mean M,... --std S,...  per-channel normalization (default: IDX,\n"
      "                     Fashion-MNIST's 0.2860/0.3530; CIFAR, NPZ and image\n"
      "                     folders, the training split's, computed and printed)\n"
      "  --label fine|coarse  CIFAR-100's label (default fine)\n"
      "  --augment A        training augmentation, drawn by (seed, epoch, example):\n"
      "                     none (default), crop-flip (CIFAR: 4-pixel zero padding,\n"
      "                     random crop, horizontal flip) or rrc-flip (ImageNet:\n"
      "                     random-resized crop to the model's input size + flip;\n"
      "                     evaluation resizes and takes the center crop)\n"
      "  --loader-threads N threads that read, decode and augment examples\n"
      "                     (default: min(8, host threads / ranks)); batches do not\n"
      "                     depend on it\n"
      "  --skip-bad-images  an image that does not decode is skipped (its batch slot\n"
      "                     takes another example of the batch) and counted, instead\n"
      "                     of stopping the run\n"
      "  --limit-train K    use only the first K training examples\n"
      "  --limit-test K     use only the first K test examples\n"
      "  --synthetic        train on a fixed synthetic dataset (random images,\n"
      "                     labels from a random linear teacher)\n"
      "  --steps N          synthetic or benchmark steps (default 10)\n"
      "\nGPU:\n"
      "  --executor E       cpu (reference kernels), cuda-eager (each node launched\n"
      "                     on its stream), cuda-graph (each subgraph captured once\n"
      "                     as a CUDA graph and replayed) or auto (default:\n"
      "                     cuda-graph when a GPU answers, else cpu); the first\n"
      "                     line says which\n"
      "  --deterministic    deterministic convolution plans and kernels\n"
      "  --allow-tf32       TF32 for f32 convolutions and products (default IEEE f32)\n"
      "  --allow-reduced-precision-reduction  convolution plans that reduce in f16/bf16\n"
      "                     (the 4-channel image stem may take them always)\n"
      "  --plan-cache FILE  keep convolution autotuning results in FILE (default:\n"
      "                     $XDG_CACHE_HOME/rn/conv-plans.json or ~/.cache/rn/...;\n"
      "                     none: time the plans at every load)\n"
      "  --autotune-candidates N  time the first N convolution plans that build,\n"
      "                     in cuDNN's heuristic order (default 16; 0: all)\n"
      "\ndiagnostics:\n"
      "  --benchmark        time training steps on random data: --warmup W steps\n"
      "                     (default 10), then 3 x --steps N; prints one JSON line:\n"
      "                     median ms/step, images/s, host ms/step, load time,\n"
      "                     time to first step, peak device memory in use\n"
      "  --state-digest F   after --synthetic training, write a digest of every state\n"
      "                     entry to F (JSON: L2 norm, 16 sampled elements and a hash\n"
      "                     of its bits), to compare executors across machines\n"
      "  --state-digest-every K  with --state-digest: a digest after every K\n"
      "                     steps ({\"steps\": [{\"step\", \"state\"}, ...]})\n"
      "  --perturb-state EPS SEED  after initialization, multiply every element of\n"
      "                     every parameter by (1 + EPS*u), u uniform in [-1, 1]\n"
      "                     from SEED (the noise digest of scripts/zoo-digests.sh)\n"
      "  --interleave       run the streams interleaved at random and check\n"
      "                     for hazards (slow; cpu executor)\n"
      "  --sync-debug       cuda-eager: synchronize after every node, so that an\n"
      "                     asynchronous fault names its node; cuda-graph: after\n"
      "                     every graph launch\n"
      "  --profile          cuda-eager: GPU time per op of the last step (stderr)\n"
      "  --dump-graphs DIR  cuda-graph: write every captured graph to DIR as\n"
      "                     Graphviz (one .dot per subgraph and variant)\n"
      "  --trace FILE       GPU executors: a timeline of the training steps\n"
      "                     (Chrome trace / Perfetto JSON: one track per program\n"
      "                     stream, kernels named by node and op, host spans) and\n"
      "                     the GPU's busy and idle time over them\n"
      "\ndata-parallel:\n"
      "  --gpus N           N GPUs of this machine from this one process (a host\n"
      "                     thread and a stream set per GPU; the artifact compiled\n"
      "                     data-parallel, its batch per GPU)\n"
      "  --cpu-replicas N   the same with N CPU executors (the reference of --gpus:\n"
      "                     gradients averaged in memory; not with --interleave)\n"
      "  One process per GPU, as torchrun starts them: RANK, WORLD_SIZE, LOCAL_RANK\n"
      "  (the GPU), MASTER_ADDR and MASTER_PORT (rank 0's NCCL bootstrap) in the\n"
      "  environment; each rank trains its share of every global batch and NCCL\n"
      "  averages the gradients inside the step. RN_DIST_TIMEOUT_S (default 120)\n"
      "  bounds every wait for a peer: a missing or dead rank ends every other rank\n"
      "  with an error.\n";

void usage(FILE *out) { std::fputs(kUsage, out); }

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
              (long long)trainer.classes(), o.steps, o.lr, o.interleave ? ", interleaved" : "");
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
              o.steps);
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
  config.executor.allowReducedPrecisionReduction = o.allowRpr;
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
                o.perturbSeed);
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
int runThreadedRanks(const Options &o, std::shared_ptr<const rn::Artifact> artifact, const std::string &kind,
                     Clock::time_point processStart, Clock::time_point loadStart) {
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

/// Parses the flags into `o`: 0 to go on, -1 after --help, else the exit
/// code (a flag without its value exits with 2).
int parse(int argc, char **argv, Options &o) {
  const std::pair<const char *, bool *> switches[] = {
      {"--synthetic", &o.synthetic}, {"--interleave", &o.interleave},
      {"--sync-debug", &o.syncDebug}, {"--deterministic", &o.deterministic},
      {"--allow-tf32", &o.allowTf32}, {"--allow-reduced-precision-reduction", &o.allowRpr},
      {"--profile", &o.profile}, {"--benchmark", &o.benchmark},
      {"--skip-bad-images", &o.skipBadImages}};
  const std::pair<const char *, std::string *> texts[] = {
      {"--plan-cache", &o.planCache}, {"--state-digest", &o.stateDigest}, {"--trace", &o.trace},
      {"--dump-graphs", &o.dumpGraphs}, {"--data", &o.data}, {"--checkpoint", &o.checkpoint},
      {"--resume", &o.resume}, {"--executor", &o.executor}, {"--label", &o.label},
      {"--mean", &o.mean}, {"--std", &o.std}, {"--augment", &o.augment}};
  const std::tuple<const char *, long long, long long *> integers[] = {
      {"--autotune-candidates", 0, &o.autotuneCandidates}, {"--warmup", 0, &o.warmup},
      {"--state-digest-every", 1, &o.stateDigestEvery}, {"--gpus", 1, &o.gpus},
      {"--cpu-replicas", 1, &o.cpuReplicas}, {"--epochs", 1, &o.epochs},
      {"--limit-train", 1, &o.limitTrain}, {"--limit-test", 1, &o.limitTest},
      {"--stop-after-epoch", 1, &o.stopAfterEpoch}, {"--loader-threads", 1, &o.loaderThreads}};
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> const char * {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "rn-run: error: %s needs a value\n", arg.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    auto is = [&](const char *name) { return arg == name; };
    char *end = nullptr;
    if (auto b = std::find_if(std::begin(switches), std::end(switches), [&](auto &f) { return is(f.first); });
        b != std::end(switches)) {
      *b->second = true;
    } else if (auto t = std::find_if(std::begin(texts), std::end(texts), [&](auto &f) { return is(f.first); });
               t != std::end(texts)) {
      *t->second = value();
    } else if (auto n = std::find_if(std::begin(integers), std::end(integers),
                                     [&](auto &f) { return is(std::get<0>(f)); });
               n != std::end(integers)) {
      const char *v = value();
      errno = 0;
      *std::get<2>(*n) = std::strtoll(v, &end, 10);
      if (!*v || *end || errno || *std::get<2>(*n) < std::get<1>(*n))
        return fail(arg + " must be an integer >= " + std::to_string(std::get<1>(*n)) +
                    ", got '" + v + "'");
    } else if (is("--no-progress")) {
      o.progress = false;
    } else if (is("--steps")) {
      const char *v = value();
      o.steps = std::strtol(v, &end, 10);
      if (*end || o.steps < 1)
        return fail(std::string("--steps must be a positive integer, got '") + v + "'");
    } else if (is("--lr") || is("--warmup-epochs")) {
      const char *v = value();
      double &out = is("--lr") ? o.lr : o.warmupEpochs;
      out = std::strtod(v, &end);
      if ((!*v && is("--warmup-epochs")) || *end || !(out >= 0))
        return fail(arg + " must be a non-negative number, got '" + v + "'");
    } else if (is("--seed")) {
      const char *v = value();
      o.seed = std::strtoull(v, &end, 10);
      if (*end)
        return fail(std::string("--seed must be an integer, got '") + v + "'");
    } else if (is("--perturb-state")) {
      const char *v = value();
      o.perturbEps = std::strtod(v, &end);
      if (!*v || *end || !std::isfinite(o.perturbEps) || o.perturbEps < 0 || o.perturbEps >= 1)
        return fail(std::string("--perturb-state EPS must be a number in [0, 1), got '") + v + "'");
      const char *seed = value();
      errno = 0;
      o.perturbSeed = std::strtoull(seed, &end, 10);
      if (!*seed || *end || errno || *seed == '-')
        return fail(std::string("--perturb-state SEED must be an integer >= 0, got '") + seed + "'");
    } else if (is("-h") || is("--help")) {
      usage(stdout);
      return -1;
    } else if (is("--version")) {
      std::printf("rn-run %s (RN; GPU executors: %s)\n", RN_VERSION_STRING,
                  builtWithCuda() ? "built" : "not built");
      return -1;
    } else if (!arg.empty() && arg[0] == '-') {
      return fail(unknownOptionMessage(arg, flagsInUsage(kUsage)));
    } else if (o.path.empty()) {
      o.path = arg;
    } else {
      return fail("more than one artifact given ('" + o.path + "', '" + arg + "')");
    }
    if (is("--executor") && o.executor != "cpu" && o.executor != "cuda-eager" &&
        o.executor != "cuda-graph" && o.executor != "auto")
      return fail("--executor must be cpu, cuda-eager, cuda-graph or auto, got '" + o.executor +
                  "'");
  }
  o.autotuneCandidates = std::min<long long>(o.autotuneCandidates, 1 << 20);
  return 0;
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
