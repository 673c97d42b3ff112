//===- rn-run.cpp - Train from an artifact on the CPU ----------------------===//
//
//   rn-run model.rnx --synthetic --steps N [--lr 0.1] [--seed S] [--interleave]
//   rn-run model.rnx --data DIR [--epochs N] [--lr LR] [--warmup-epochs W]
//          [--limit-train K] [--limit-test K] [--seed S]
//          [--checkpoint PATH] [--resume PATH] [--no-progress]
//
// Loads an artifact (docs/artifact.md), initializes its state and trains it
// with the CPU reference executor (docs/rn-run.md).
//
// --synthetic: a fixed synthetic dataset, 8 batches of uniform random images
// whose labels come from a fixed random linear teacher (argmax of W x), so
// the loss can decrease. Prints the loss of every step, then `loss first F
// last L` and the speed.
//
// --data: Fashion-MNIST (or MNIST) IDX files (runtime/data/idx_dataset.h). Each
// epoch shuffles the training set with a permutation that depends only on
// (seed, epoch), trains on the full batches (the incomplete last one is
// dropped) with linear warmup then cosine decay to 0 of the learning rate,
// evaluates on the whole test set (a last incomplete batch is padded and
// scored from its logits) and prints a summary; with
// --checkpoint, all state is saved after each epoch, and --resume continues
// from the epoch after a checkpoint's, reproducing an uninterrupted run.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/artifact.h"
#include "runtime/core/host_input_pool.h"
#include "runtime/core/process_group.h"
#include "runtime/cpu/replica_group.h"
#include "runtime/cpu/cpu_executor.h"
#if RN_HAVE_CUDA
#include "runtime/cuda/communicator.h"
#include "runtime/cuda/device_context.h"
#include "runtime/cuda/eager_executor.h"
#include "runtime/cuda/graph_executor.h"
#include "runtime/cuda/timeline.h"
#endif
#include "runtime/cpu/cpu_kernels.h"
#include "runtime/data/idx_dataset.h"
#include "runtime/core/safetensors.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <future>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include <cerrno>
#include <cstdarg>
#include <thread>
#include <sys/stat.h>
#include <unistd.h>

namespace {

#if RN_HAVE_CUDA
/// --trace: the run's timeline, while one is recorded.
rn::cuda::Timeline *traceTimeline = nullptr;
/// This rank's NCCL communicator in a data-parallel run (WORLD_SIZE set, or
/// this thread's rank with --gpus), else null.
thread_local rn::cuda::Communicator *communicator = nullptr;
using SharedNcclId = ncclUniqueId;
#else
struct SharedNcclId {};
#endif

/// --cpu-replicas: this thread's replica group and rank, else null.
thread_local rn::cpu::ReplicaGroup *cpuReplicas = nullptr;
thread_local int cpuReplicaRank = 0;

/// The ranks of one process (--gpus N: one NCCL id for every GPU's
/// communicator; --cpu-replicas N: one in-memory group of CPU replicas).
struct InProcessRanks {
  const SharedNcclId *ncclId = nullptr;
  rn::cpu::ReplicaGroup *cpu = nullptr;
};

/// With --gpus or --cpu-replicas, the ranks but rank 0 print nothing on
/// stdout (one report for the process); errors still go to stderr from
/// every rank.
thread_local bool quietRank = false;

__attribute__((format(printf, 1, 2))) void report(const char *format, ...) {
  if (quietRank)
    return;
  va_list args;
  va_start(args, format);
  std::vprintf(format, args);
  va_end(args);
}

/// Sums `values` over the data-parallel ranks (unchanged with one rank).
rn::Status sumOverRanks(std::vector<double> &values) {
  if (cpuReplicas)
    return cpuReplicas->allReduceSum(cpuReplicaRank, values);
#if RN_HAVE_CUDA
  if (communicator && communicator->group().distributed())
    return communicator->allReduceSumHost(values);
#endif
  (void)values;
  return rn::Status::success();
}

/// A span of host work on the timeline's "main" track (--trace).
class HostSpan {
public:
  explicit HostSpan(std::string name, const char *track = "main")
      : name_(std::move(name)), track_(track), begin_(std::chrono::steady_clock::now()) {}
  ~HostSpan() {
#if RN_HAVE_CUDA
    if (traceTimeline)
      traceTimeline->hostSpan(track_, std::move(name_), begin_, std::chrono::steady_clock::now());
#endif
  }
  HostSpan(const HostSpan &) = delete;
  HostSpan &operator=(const HostSpan &) = delete;

private:
  std::string name_;
  const char *track_;
  std::chrono::steady_clock::time_point begin_;
};

void usage(FILE *out) {
  std::fprintf(
      out,
      "usage: rn-run MODEL.rnx --synthetic --steps N [--lr LR] [--seed S] [--interleave]\n"
      "       rn-run MODEL.rnx --data DIR [--epochs N] [--lr LR] [--warmup-epochs W]\n"
      "              [--limit-train K] [--limit-test K] [--seed S]\n"
      "              [--checkpoint PATH] [--resume PATH] [--stop-after-epoch E]\n"
      "              [--no-progress]\n"
      "  common: [--executor cpu|cuda-eager|cuda-graph|auto] [--sync-debug] [--deterministic]\n"
      "          [--allow-tf32] [--allow-reduced-precision-reduction] [--plan-cache FILE]\n"
      "          [--autotune-candidates N] [--perturb-state EPS SEED]\n"
      "  --synthetic        train on a fixed synthetic dataset (random images,\n"
      "                     labels from a random linear teacher)\n"
      "  --steps N          synthetic training steps (default 10)\n"
      "  --data DIR         train on the IDX files of Fashion-MNIST in DIR\n"
      "                     (train-images-idx3-ubyte.gz, ..., t10k-labels-idx1-ubyte.gz)\n"
      "  --epochs N         epochs (default 1)\n"
      "  --lr LR            (peak) learning rate (default 0.1)\n"
      "  --warmup-epochs W  linear warmup epochs, then cosine decay to 0 (default 0)\n"
      "  --limit-train K    use only the first K training examples\n"
      "  --limit-test K     use only the first K test examples\n"
      "  --seed S           shuffling, dropout and interleaving seed (default 0)\n"
      "  --checkpoint PATH  save all state after each epoch (safetensors)\n"
      "  --resume PATH      restore a checkpoint and continue with its next epoch\n"
      "  --stop-after-epoch E  stop after epoch E (the schedule still spans\n"
      "                     --epochs; to resume later from --checkpoint)\n"
      "  --no-progress      no progress lines on stderr\n"
      "  --profile          cuda-eager: GPU time per op of the last step (stderr)\n"
      "  --state-digest F   after --synthetic training, write a digest of every state\n"
      "                     entry to F (JSON: L2 norm, 16 sampled elements), to\n"
      "                     compare executors across machines (and a hash of\n"
      "                     each entry's bits, for bit-identical comparisons)\n"
      "  --state-digest-every K  with --state-digest: a digest after every K\n"
      "                     steps ({\"steps\": [{\"step\", \"state\"}, ...]})\n"
      "  --perturb-state EPS SEED  after initialization, multiply every element of\n"
      "                     every parameter by (1 + EPS*u), u uniform in [-1, 1]\n"
      "                     from SEED: how much an ulp-scale change moves the\n"
      "                     result (the noise digest of scripts/zoo-digests.sh)\n"
      "  --benchmark        time training steps on random data: --warmup W steps\n"
      "                     (default 10), then 3 x --steps N; prints one JSON line:\n"
      "                     median ms/step, images/s, host ms/step, load time,\n"
      "                     time to first step, peak device memory in use\n"
      "  --interleave       run the streams interleaved at random and check\n"
      "                     for hazards (slow; cpu executor)\n"
      "  --executor E       cpu (reference kernels), cuda-eager (each node launched\n"
      "                     on its stream), cuda-graph (each subgraph captured once\n"
      "                     as a CUDA graph and replayed) or auto (default:\n"
      "                     cuda-graph when a GPU answers, else cpu); the first\n"
      "                     line says which\n"
      "  --sync-debug       cuda-eager: synchronize after every node, so that an\n"
      "                     asynchronous fault names its node; cuda-graph: after\n"
      "                     every graph launch\n"
      "  --dump-graphs DIR  cuda-graph: write every captured graph to DIR as\n"
      "                     Graphviz (one .dot per subgraph and variant)\n"
      "  --trace FILE       GPU executors: a timeline of the training steps\n"
      "                     (Chrome trace / Perfetto JSON: one track per program\n"
      "                     stream, kernels named by node and op, host spans) and\n"
      "                     the GPU's busy and idle time over them\n"
      "  --deterministic    deterministic convolution plans and kernels\n"
      "  --allow-tf32       TF32 for f32 convolutions and products (default IEEE f32)\n"
      "  --allow-reduced-precision-reduction  convolution plans that reduce in f16/bf16\n"
      "  --plan-cache FILE  keep convolution autotuning results in FILE (default:\n"
      "                     $XDG_CACHE_HOME/rn/conv-plans.json or ~/.cache/rn/...;\n"
      "                     none: time the plans at every load)\n"
      "  --autotune-candidates N  time the first N convolution plans that build,\n"
      "                     in cuDNN's heuristic order (default 16; 0: all)\n"
      "  --gpus N           data-parallel on N GPUs of this machine from this one\n"
      "                     process (a host thread and a stream set per GPU; the\n"
      "                     artifact compiled data-parallel, its batch per GPU)\n"
      "  --cpu-replicas N   the same with N CPU executors (the reference of --gpus:\n"
      "                     gradients averaged in memory; not with --interleave)\n"
      "data-parallel (one process per GPU, as torchrun starts them): RANK, WORLD_SIZE,\n"
      "  LOCAL_RANK (the GPU), MASTER_ADDR and MASTER_PORT (rank 0's NCCL bootstrap) in\n"
      "  the environment; the artifact compiled with data-parallel=true; each rank\n"
      "  trains its share of every global batch (the artifact's batch per rank) and\n"
      "  the gradients are averaged by NCCL inside the step. RN_DIST_TIMEOUT_S\n"
      "  (default 120) bounds every wait for a peer: a missing or dead rank ends\n"
      "  every other rank with an error.\n");
}

int fail(const std::string &message) {
  std::fprintf(stderr, "rn-run: error: %s\n", message.c_str());
  return 1;
}

/// The loss node of `fn` (its first softmax_cross_entropy), or null.
const rn::Node *lossNode(const rn::Function &fn) {
  for (const rn::Subgraph &sg : fn.subgraphs)
    for (const rn::Node &n : sg.nodes)
      if (n.kind == rn::Node::Kind::op && n.op == "softmax_cross_entropy")
        return &n;
  return nullptr;
}

/// The class count: the last dimension of the loss's logits.
int64_t classCount(const rn::Function &fn) {
  const rn::Node *loss = lossNode(fn);
  if (!loss || loss->operands.empty())
    return 0;
  const auto &shape = fn.tensors[loss->operands[0]].shape;
  return shape.empty() ? 0 : shape.back();
}

/// The label smoothing of `fn`'s loss (0 when it has none).
double labelSmoothing(const rn::Function &fn) {
  const rn::Node *loss = lossNode(fn);
  return loss ? loss->attributes.value("label_smoothing", 0.0) : 0;
}

struct Options {
  std::string path;
  /// RANK / WORLD_SIZE / ...: rank 0 of 1 unless launched data-parallel.
  rn::ProcessGroup group;
  /// --gpus N: this process drives N GPUs data-parallel, a thread each.
  long long gpus = 0;
  /// --cpu-replicas N: N CPU executors data-parallel, a thread each.
  long long cpuReplicas = 0;
  bool synthetic = false, interleave = false, progress = true;
  long steps = 10;
  double lr = 0.1;
  unsigned long long seed = 0;
  std::string data, checkpoint, resume;
  long epochs = 1;
  double warmupEpochs = 0;
  long long limitTrain = 0, limitTest = 0;
  long long stopAfterEpoch = 0;
  std::string executor = "auto"; ///< cpu, cuda-eager or auto
  bool syncDebug = false;
  bool deterministic = false;
  bool allowTf32 = false;
  bool allowReducedPrecisionReduction = false;
  /// Convolution autotuning results; empty: the default under the user's
  /// cache folder; "none": not kept.
  std::string planCache;
  long autotuneCandidates = 16; ///< plans timed per convolution; 0: all
  bool benchmark = false;
  bool profile = false;
  std::string dumpGraphs; ///< cuda-graph: Graphviz of every captured graph
  std::string trace;      ///< GPU executors: the timeline's JSON
  std::string stateDigest;
  /// --state-digest-every: digests after every K steps instead of the end.
  long stateDigestEvery = 0;
  long warmup = 10;
  /// --perturb-state: relative size and seed of the parameter perturbation
  /// (0: none).
  double perturbEps = 0;
  unsigned long long perturbSeed = 0;
};

/// Training steps per Executor::submit call in --data runs (the steps stream
/// through the prefetching schedules across calls) and per trainSteps call
/// in --synthetic runs (each group runs prologue, even/odd, last, so that
/// --interleave checks those schedules; the executor idles between groups).
constexpr int64_t kStepsPerGroup = 8;

double seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

//===----------------------------------------------------------------------===//
// Synthetic data
//===----------------------------------------------------------------------===//

/// Where convolution autotuning results are kept across runs: `flag` when
/// given ("none": nowhere), else $XDG_CACHE_HOME/rn/conv-plans.json or
/// ~/.cache/rn/conv-plans.json (entries are keyed by GPU, cuDNN version and
/// call, so one file serves every model). Empty when no folder can be made.
std::string planCachePath(const std::string &flag) {
  if (flag == "none")
    return "";
  if (!flag.empty())
    return flag;
  std::string base;
  if (const char *xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
    base = xdg;
  else if (const char *home = std::getenv("HOME"); home && *home)
    base = std::string(home) + "/.cache";
  else
    return "";
  ::mkdir(base.c_str(), 0755);
  std::string dir = base + "/rn";
  if ((::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) || ::access(dir.c_str(), W_OK) != 0)
    return ""; // a read-only home: time the plans at every load
  return dir + "/conv-plans.json";
}

/// --benchmark: ms per training step on random data (labels uniform), the
/// method of the PyTorch reference: `warmup` steps, then three repetitions of
/// `steps` steps, each one runPipelined call (the next batch's copy overlaps
/// the current step), timed on the host around the call, which returns when
/// the last step's outputs are on the host; the median is reported. Prints
/// one JSON line.
/// `processStart` and `loadSecs` (artifact load, executor creation with its
/// autotuning and capture, initialization) give the JSON's time to first
/// step: process start to the end of the first training step.
int runBenchmark(const Options &o, const rn::Artifact &artifact, rn::Executor &ex,
                 int64_t batch, int64_t features, int64_t classes,
                 std::chrono::steady_clock::time_point processStart, double loadSecs) {
  std::mt19937_64 rng(o.seed + 1);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  // One batch in a block of host input memory (page-locked on a GPU) that
  // every step copies to the device from, as the peers' benchmarks copy one
  // pinned batch per step (bench/README.md): the host prepares nothing per
  // step, and no step copies its batch on the host.
  size_t imageCount = size_t(batch * features);
  rn::Result<std::shared_ptr<void>> block = ex.allocateHostInput(imageCount * sizeof(float));
  if (!block)
    return fail(block.error().message());
  std::shared_ptr<const void> images = *block;
  float *pixels = static_cast<float *>(block->get());
  for (size_t k = 0; k < imageCount; ++k)
    pixels[k] = normal(rng);
  std::vector<int32_t> labels(static_cast<size_t>(batch));
  for (int32_t &y : labels)
    y = int32_t(rng() % uint64_t(classes));
  int32_t step = 1;
  double hostSecs = 0; // the timed repetitions' host time, blocked time excluded
  auto run = [&](long count, double &secs, float &loss) -> rn::Status {
    std::vector<rn::StepInputs> steps;
    steps.reserve(size_t(count));
    for (long i = 0; i < count; ++i)
      steps.push_back(
          rn::Executor::trainInputs(images, imageCount, labels, float(o.lr), step + int32_t(i)));
    std::vector<rn::StepOutputs> outs;
    auto start = std::chrono::steady_clock::now();
    double blocked = ex.hostBlockedSeconds();
    HostSpan span(std::to_string(count) + " steps (submit and drain)");
    rn::Status st = ex.runPipelined("train", std::move(steps), outs);
    secs = seconds(start);
    hostSecs += secs - (ex.hostBlockedSeconds() - blocked);
    step += int32_t(count);
    if (st.ok() && !outs.empty()) {
      auto it = outs.back().find("loss");
      if (it != outs.back().end() && !it->second.floats.empty())
        loss = it->second.floats[0];
    }
    return st;
  };
  // The device's memory in use (cudaMemGetInfo's total - free) after the
  // first step and after every timed window; its maximum is reported, as
  // bench/torch_step.py does with torch.cuda.mem_get_info().
  size_t peakMemory = 0;
  auto sampleMemory = [&] {
#if RN_HAVE_CUDA
    if (ex.name() != "cpu")
      if (rn::Result<size_t> used = rn::cuda::deviceMemoryInUse(); used)
        peakMemory = std::max(peakMemory, *used);
#endif
  };
  double secs = 0;
  float loss = 0;
  if (rn::Status st = run(1, secs, loss); !st)
    return fail("first step: " + st.error().message());
  double firstStepSecs = seconds(processStart);
  sampleMemory();
  if (o.warmup > 1)
    if (rn::Status st = run(o.warmup - 1, secs, loss); !st)
      return fail("warmup: " + st.error().message());
  std::vector<double> ms;
  hostSecs = 0;
  for (int rep = 0; rep < 3; ++rep) {
    if (rn::Status st = run(o.steps, secs, loss); !st)
      return fail("benchmark: " + st.error().message());
    ms.push_back(secs * 1000.0 / double(o.steps));
    sampleMemory();
  }
  std::sort(ms.begin(), ms.end());
  double convFloorMs = -1; // unknown (the CPU executor, or plans not timed)
#if RN_HAVE_CUDA
  if (auto *device = dynamic_cast<const rn::cuda::DeviceExecutor *>(&ex))
    convFloorMs = device->convFloorMs();
#endif
  // Data-parallel: "batch" is one GPU's, "images_per_s" all GPUs' (the
  // ranks step together: every step ends in the all-reduce).
  report("{\"model\": \"%s\", \"executor\": \"%.*s\", \"batch\": %lld, \"gpus\": %d, "
              "\"ms_per_step\": %.3f, \"images_per_s\": %.0f, \"host_ms_per_step\": %.4f, "
              "\"load_s\": %.3f, \"first_step_s\": %.3f, \"peak_memory_inproc_bytes\": %zu, "
              "\"arena_bytes\": %llu, \"conv_floor_ms\": %.3f, \"loss\": %.6f}\n",
              artifact.program.model.c_str(), int(ex.name().size()), ex.name().data(),
              (long long)batch, o.group.worldSize, ms[1],
              double(batch) * double(o.group.worldSize) * 1000.0 / ms[1],
              hostSecs * 1000.0 / double(3 * o.steps), loadSecs, firstStepSecs, peakMemory,
              (unsigned long long)artifact.program.arena.bytes, convFloorMs, loss);
  return 0;
}

/// Per state entry its L2 norm (in double), 16 elements at evenly spaced
/// indices and a 64-bit FNV-1a hash of all its values' f32 bit patterns, so
/// that two executors' states can be compared where the full state is too
/// big to carry: within a tolerance by norm and samples, bit for bit by the
/// hash (scripts/compare-digests.py).
rn::Result<nlohmann::json> stateDigest(const rn::Executor &ex) {
  nlohmann::json digest = nlohmann::json::object();
  for (const rn::StateEntry &e : ex.program().state) {
    if (!e.slot)
      continue;
    rn::Result<std::vector<float>> v = ex.readState(e.name);
    if (!v)
      return v.error();
    double sum = 0;
    uint64_t hash = 0xcbf29ce484222325ull;
    for (float x : *v) {
      sum += double(x) * double(x);
      uint32_t bits;
      std::memcpy(&bits, &x, sizeof bits);
      for (int byte = 0; byte < 4; ++byte) {
        hash ^= (bits >> (8 * byte)) & 0xffu;
        hash *= 0x100000001b3ull;
      }
    }
    nlohmann::json samples = nlohmann::json::array();
    size_t n = v->size();
    for (size_t k = 0; k < 16 && n > 0; ++k) {
      size_t i = (k * (n - 1)) / 15;
      float x = (*v)[i];
      samples.push_back(std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(std::to_string(x)));
    }
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llx", (unsigned long long)hash);
    digest[e.name] = {{"role", e.role},        {"dtype", std::string(rn::dtypeName(e.dtype))},
                      {"elements", n},         {"norm", std::sqrt(sum)},
                      {"samples", samples},    {"hash", hex}};
  }
  return digest;
}

rn::Status writeJson(const std::string &path, const nlohmann::json &value) {
  FILE *f = std::fopen(path.c_str(), "w");
  if (!f)
    return rn::Error("cannot write " + path);
  std::string text = value.dump(1);
  bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  ok = std::fclose(f) == 0 && ok;
  if (!ok)
    return rn::Error("cannot write " + path);
  return rn::Status::success();
}

/// --perturb-state: multiplies every element of every parameter (role
/// "parameter") by (1 + eps * u), u uniform in [-1, 1] from one generator
/// seeded with `seed`, drawn in state order, so that a run is reproducible
/// and the same on every executor. The product is rounded to the entry's
/// dtype (writeState); an eps far below that dtype's ulp changes nothing.
/// Models the f32 rounding differences of another summation order at the
/// start of training, to measure how much the step amplifies them.
rn::Status perturbState(rn::Executor &ex, double eps, unsigned long long seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  for (const rn::StateEntry &e : ex.program().state) {
    if (!e.slot || e.role != "parameter")
      continue;
    rn::Result<std::vector<float>> v = ex.readState(e.name);
    if (!v)
      return v.error();
    for (float &x : *v)
      x = float(double(x) * (1.0 + eps * uniform(rng)));
    if (rn::Status s = ex.writeState(e.name, *v); !s)
      return s;
  }
  return rn::Status::success();
}

int runSynthetic(const Options &o, const rn::Artifact &artifact, rn::Executor &ex,
                 int64_t batch, int64_t features, int64_t classes) {
  // The dataset: 8 batches, labels from a fixed random linear teacher.
  // Data-parallel: 8 global batches of batch x ranks examples, drawn the
  // same on every rank, each rank training its shard; with one rank of
  // batch 2B and two of batch B the global batches are the same examples.
  const int numBatches = 8;
  const int64_t globalBatch = batch * o.group.worldSize;
  const rn::BatchShard shard = rn::shardOfGlobalBatch(o.group, batch);
  std::mt19937_64 rng(o.seed * 0x9E3779B97F4A7C15ull + 12345);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> teacher(size_t(classes * features));
  for (float &w : teacher)
    w = normal(rng);
  std::vector<rn::HostBatch> data(numBatches);
  for (rn::HostBatch &b : data) {
    b.images.resize(size_t(globalBatch * features));
    for (float &x : b.images)
      x = uniform(rng);
    b.labels.resize(size_t(globalBatch));
    for (int64_t n = 0; n < globalBatch; ++n) {
      int32_t best = 0;
      double bestScore = -1e300;
      for (int64_t c = 0; c < classes; ++c) {
        double score = 0;
        for (int64_t f = 0; f < features; ++f)
          score += double(teacher[size_t(c * features + f)]) *
                   b.images[size_t(n * features + f)];
        if (score > bestScore) {
          bestScore = score;
          best = int32_t(c);
        }
      }
      b.labels[size_t(n)] = best;
    }
    if (globalBatch != batch) {
      b.images = std::vector<float>(b.images.begin() + shard.begin * features,
                                    b.images.begin() + (shard.begin + shard.count) * features);
      b.labels = std::vector<int32_t>(b.labels.begin() + shard.begin,
                                      b.labels.begin() + shard.begin + shard.count);
    }
  }

  report("model %s: batch %lld, %lld features, %lld classes, %ld steps, lr %g%s\n",
              artifact.program.model.c_str(), (long long)batch, (long long)features,
              (long long)classes, o.steps, o.lr, o.interleave ? ", interleaved" : "");
  float first = 0, last = 0;
  auto start = std::chrono::steady_clock::now();
  // --state-digest-every K: groups end at multiples of K, and the state is
  // read there (the executor is idle between trainSteps calls).
  nlohmann::json perStep = nlohmann::json::array();
  long count = 0;
  for (long step0 = 0; step0 < o.steps; step0 += count) {
    count = std::min<long>(kStepsPerGroup, o.steps - step0);
    if (o.stateDigestEvery > 0)
      count = std::min<long>(count, o.stateDigestEvery - step0 % o.stateDigestEvery);
    std::vector<rn::HostBatch> batches;
    for (long step = step0; step < step0 + count; ++step)
      batches.push_back(data[size_t(step % numBatches)]);
    std::vector<rn::TrainOutputs> outs;
    HostSpan span("train steps " + std::to_string(step0 + 1) + "-" +
                  std::to_string(step0 + count));
    rn::Status s = ex.trainSteps(batches, std::vector<float>(size_t(count), float(o.lr)),
                                 int32_t(step0 + 1), outs);
    if (!s)
      return fail("steps " + std::to_string(step0 + 1) + "-" +
                  std::to_string(step0 + count) + ": " + s.error().message());
    // The loss of the global batch: the ranks' mean (equal shards).
    std::vector<double> losses;
    for (const rn::TrainOutputs &out : outs)
      losses.push_back(out.loss);
    if (rn::Status st = sumOverRanks(losses); !st)
      return fail("steps " + std::to_string(step0 + 1) + "-" + std::to_string(step0 + count) +
                  ": " + st.error().message());
    for (long i = 0; i < count; ++i) {
      float loss = float(losses[size_t(i)] / double(o.group.worldSize));
      if (step0 + i == 0)
        first = loss;
      last = loss;
      report("step %ld loss %.6f\n", step0 + i + 1, loss);
    }
    std::fflush(stdout);
    long done = step0 + count;
    if (o.stateDigestEvery > 0 && (done % o.stateDigestEvery == 0 || done == o.steps)) {
      rn::Result<nlohmann::json> digest = stateDigest(ex);
      if (!digest)
        return fail("state after step " + std::to_string(done) + ": " +
                    digest.error().message());
      perStep.push_back({{"step", done}, {"state", std::move(*digest)}});
    }
  }
  double secs = seconds(start);
  report("loss first %.6f last %.6f\n", first, last);
  report("%.2f steps/s (%.3f s for %ld steps)\n", o.steps / secs, secs, o.steps);
  // Every rank holds the same state: rank 0 writes the digest.
  if (!o.stateDigest.empty() && o.group.rank == 0) {
    nlohmann::json value;
    if (o.stateDigestEvery > 0) {
      value = {{"steps", std::move(perStep)}};
    } else {
      rn::Result<nlohmann::json> digest = stateDigest(ex);
      if (!digest)
        return fail(digest.error().message());
      value = std::move(*digest);
    }
    if (rn::Status st = writeJson(o.stateDigest, value); !st)
      return fail(st.error().message());
    report("state digest written to %s\n", o.stateDigest.c_str());
  }
  return 0;
}

//===----------------------------------------------------------------------===//
// IDX data
//===----------------------------------------------------------------------===//

/// The learning rate of 0-based global step `step` of `total`: linear warmup
/// over `warmup` steps to `peak`, then cosine decay to 0 at step `total`.
double scheduledLr(double peak, int64_t step, int64_t warmup, int64_t total) {
  if (step < warmup)
    return peak * double(step + 1) / double(warmup);
  int64_t decay = total - warmup;
  if (decay <= 0)
    return peak;
  const double pi = 3.14159265358979323846;
  return peak * 0.5 * (1 + std::cos(pi * double(step - warmup) / double(decay)));
}

/// The order of the training examples in `epoch` (0-based): a function of
/// (seed, epoch) only, so a resumed run shuffles as an uninterrupted one.
std::vector<int64_t> shuffledOrder(int64_t count, uint64_t seed, int64_t epoch) {
  std::vector<int64_t> order(static_cast<size_t>(count));
  std::iota(order.begin(), order.end(), 0);
  std::seed_seq seq{uint32_t(seed), uint32_t(seed >> 32), uint32_t(epoch),
                    uint32_t(uint64_t(epoch) >> 32), 0x52u /* 'R' */};
  std::mt19937_64 rng(seq);
  for (int64_t i = count - 1; i > 0; --i) {
    // Multiply-shift into [0, i], independent of the library's distributions.
    uint64_t j = uint64_t((unsigned __int128)rng() * uint64_t(i + 1) >> 64);
    std::swap(order[size_t(i)], order[size_t(j)]);
  }
  return order;
}

/// Examples `indices` normalized into `images` (batch x imageSize floats)
/// and their labels into `labels`.
void fillBatch(const rn::IdxDataset &d, const int64_t *indices, int64_t batch, float *images,
               std::vector<int32_t> &labels) {
  int64_t size = d.imageSize();
  labels.resize(size_t(batch));
  for (int64_t n = 0; n < batch; ++n) {
    rn::normalizeImage(d, indices[n], images + n * size);
    labels[size_t(n)] = int32_t(d.labels[size_t(indices[n])]);
  }
}

void fillBatch(const rn::IdxDataset &d, const int64_t *indices, int64_t batch,
               rn::HostBatch &out) {
  out.images.resize(size_t(batch * d.imageSize()));
  fillBatch(d, indices, batch, out.images.data(), out.labels);
}

/// Test loss and top-1 over the whole test set. The program's batch is
/// fixed, so a last incomplete batch is padded with copies of the test set's
/// first examples and its loss and correct count are taken from the logits
/// of its real rows only (with the loss op's own kernel and smoothing).
struct TestResult {
  double loss = 0; ///< mean over the evaluated examples
  int64_t correct = 0;
  int64_t evaluated = 0;
};

/// Data-parallel: the ranks' BN running statistics differ (each rank's come
/// from its own shards), so before an evaluation or a checkpoint they are
/// averaged over the ranks, in place (the role of DDP's broadcast of
/// buffers). Every f32 "buffer" state entry is averaged; the executor is
/// idle (its steps drained).
rn::Status averageBuffersOverRanks(rn::Executor &ex) {
  if (cpuReplicas) {
    for (const rn::StateEntry &e : ex.program().state) {
      if (!e.slot || e.role != "buffer" || e.dtype != rn::DType::f32)
        continue;
      rn::Result<std::vector<float>> values = ex.readState(e.name);
      if (!values)
        return values.error();
      RN_RETURN_IF_ERROR(
          cpuReplicas->allReduceMean(cpuReplicaRank, {{values->data(), values->size()}}));
      RN_RETURN_IF_ERROR(ex.writeState(e.name, *values));
    }
    return rn::Status::success();
  }
#if RN_HAVE_CUDA
  if (!communicator || !communicator->group().distributed())
    return rn::Status::success();
  auto *device = dynamic_cast<const rn::cuda::DeviceExecutor *>(&ex);
  if (!device)
    return rn::Error("averaging the BN statistics over the ranks needs a GPU executor");
  const rn::cuda::DeviceContext &ctx = device->deviceProgram().context();
  std::vector<rn::cuda::Communicator::Buffer> buffers;
  for (const rn::StateEntry &e : ex.program().state) {
    if (!e.slot || e.role != "buffer" || e.dtype != rn::DType::f32)
      continue;
    auto *p = static_cast<float *>(ctx.address(*e.slot, rn::Variant::a));
    buffers.push_back({p, p, size_t(rn::numel(e.shape))});
  }
  if (buffers.empty())
    return rn::Status::success();
  return communicator->allReduceMeanNow(buffers);
#else
  (void)ex;
  return rn::Status::success();
#endif
}

/// Data-parallel: rank r evaluates the test batches b with b % ranks == r
/// and the sums (loss, correct, examples) are added over the ranks.
rn::Result<TestResult> evaluateTestSet(rn::Executor &ex, const rn::IdxDataset &test,
                                       int64_t batch, int64_t classes, double smoothing,
                                       const rn::ProcessGroup &group) {
  if (rn::Status st = averageBuffersOverRanks(ex); !st)
    return st.error().withContext("before the evaluation");
  TestResult r;
  double lossSum = 0; // sum over examples
  rn::HostBatch hb;
  std::vector<int64_t> indices(static_cast<size_t>(batch));
  for (int64_t first = int64_t(group.rank) * batch; first < test.count;
       first += batch * group.worldSize) {
    int64_t rows = std::min(batch, test.count - first);
    for (int64_t i = 0; i < batch; ++i)
      indices[size_t(i)] = i < rows ? first + i : (i - rows) % test.count;
    fillBatch(test, indices.data(), batch, hb);
    rn::EvalOutputs out;
    if (rn::Status st = ex.evalStep(hb, out); !st)
      return rn::Error("evaluation batch " + std::to_string(first / batch + 1) + ": " +
                       st.error().message());
    if (rows == batch) {
      lossSum += double(out.loss) * double(batch);
      r.correct += out.correct;
      r.evaluated += batch;
      continue;
    }
    if (out.logits.size() != size_t(batch * classes))
      break; // the program returns no logits: the partial batch is skipped
    rn::cpu::TensorView logits{out.logits.data(), {rows, classes}, rn::DType::f32};
    rn::cpu::LabelView labels{hb.labels.data(), {rows}};
    float loss = 0;
    int32_t correct = 0;
    rn::cpu::KernelStatus ls = rn::cpu::softmaxCrossEntropy(logits, labels, smoothing, loss);
    rn::cpu::KernelStatus cs = rn::cpu::countCorrect(logits, labels, correct);
    if (!ls.ok() || !cs.ok())
      return rn::Error("evaluation of the last " + std::to_string(rows) +
                       " examples: " + (ls.ok() ? cs.error : ls.error));
    lossSum += double(loss) * double(rows);
    r.correct += correct;
    r.evaluated += rows;
  }
  std::vector<double> sums = {lossSum, double(r.correct), double(r.evaluated)};
  if (rn::Status st = sumOverRanks(sums); !st)
    return st.error().withContext("adding the ranks' evaluations");
  lossSum = sums[0];
  r.correct = int64_t(sums[1]);
  r.evaluated = int64_t(sums[2]);
  r.loss = r.evaluated ? lossSum / double(r.evaluated) : 0;
  return r;
}

std::string formatDuration(double s) {
  char buf[32];
  long t = long(s + 0.5);
  if (t >= 3600)
    std::snprintf(buf, sizeof buf, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
  else
    std::snprintf(buf, sizeof buf, "%ld:%02ld", t / 60, t % 60);
  return buf;
}

/// Fails early if `path` cannot be written: a directory, or a file in a
/// directory where no temporary file can be created (writeSafetensors
/// writes one there and renames it).
rn::Status checkWritable(const std::string &path) {
  struct stat st;
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
    return rn::Error("checkpoint path " + path + " is a directory");
  size_t slash = path.rfind('/');
  std::string dir = slash == std::string::npos ? "." : path.substr(0, slash + 1);
  std::string probe = dir + (dir.back() == '/' ? "" : "/") + ".rn-run-probe-XXXXXX";
  int fd = ::mkstemp(probe.data());
  if (fd < 0)
    return rn::Error("cannot write the checkpoint " + path + ": " + std::strerror(errno));
  ::close(fd);
  ::unlink(probe.c_str());
  return rn::Status::success();
}

rn::Status saveCheckpoint(const std::string &path, rn::Executor &ex,
                          const std::map<std::string, std::string> &metadata) {
  const rn::Program &p = ex.program();
  std::vector<std::vector<float>> values;
  values.reserve(p.state.size());
  std::vector<rn::TensorData> tensors;
  for (const rn::StateEntry &e : p.state) {
    rn::Result<std::vector<float>> v = ex.readState(e.name);
    if (!v)
      return v.error().withContext("state " + e.name);
    values.push_back(std::move(*v));
    rn::TensorData t;
    t.name = e.name;
    t.dtype = rn::DType::f32;
    t.shape = e.shape;
    t.data = values.back().data();
    t.bytes = values.back().size() * sizeof(float);
    tensors.push_back(t);
  }
  return rn::writeSafetensors(path, tensors, metadata);
}

/// Restores every state entry from checkpoint `ck` (already read).
rn::Status restoreCheckpoint(const std::string &path, const rn::Safetensors &ck,
                             rn::Executor &ex) {
  const rn::Program &p = ex.program();
  if (ck.tensors.size() != p.state.size())
    return rn::Error(path + ": holds " + std::to_string(ck.tensors.size()) +
                     " tensors, the model has " + std::to_string(p.state.size()) +
                     " state entries");
  for (const rn::StateEntry &e : p.state) {
    const rn::SafetensorsEntry *t = ck.find(e.name);
    if (!t)
      return rn::Error(path + ": no tensor for state " + e.name);
    if (t->dtype != rn::DType::f32 || t->shape != e.shape)
      return rn::Error(path + ": tensor " + e.name + " is " +
                       std::string(rn::safetensorsDTypeName(t->dtype)) + " " +
                       rn::shapeString(t->shape) + ", expected F32 " +
                       rn::shapeString(e.shape));
    std::string_view bytes = ck.bytesOf(*t);
    std::vector<float> values(bytes.size() / sizeof(float));
    std::memcpy(values.data(), bytes.data(), bytes.size());
    if (rn::Status s = ex.writeState(e.name, values); !s)
      return s.error().withContext(path + ": state " + e.name);
  }
  return rn::Status::success();
}

int runData(const Options &o, const rn::Artifact &artifact, rn::Executor &ex,
            const std::vector<int64_t> &imageShape, int64_t classes) {
  const rn::Program &program = artifact.program;
  int64_t batch = imageShape[0];
  if (batch < 1)
    return fail(o.path + ": the images input has batch size " + std::to_string(batch));

  // Check the checkpoint path before any work.
  if (!o.checkpoint.empty())
    if (rn::Status s = checkWritable(o.checkpoint); !s)
      return fail(s.error().message());

  auto loadStart = std::chrono::steady_clock::now();
  rn::Result<rn::IdxSplits> splits = rn::loadIdxSplits(o.data, o.limitTrain, o.limitTest);
  if (!splits)
    return fail(splits.error().message());
  const rn::IdxDataset &train = splits->train, &test = splits->test;
  std::vector<int64_t> want = {batch, train.rows, train.cols, 1};
  if (imageShape != want)
    return fail(o.path + ": the model's images input is " + rn::shapeString(imageShape) +
                ", but the data in " + o.data + " needs " + rn::shapeString(want) +
                " (NHWC, " + std::to_string(train.rows) + "x" +
                std::to_string(train.cols) + " grayscale)");
  auto evalShape = ex.inputShape("eval_step", "images");
  if (!evalShape)
    return fail(o.path + ": the artifact has no eval_step images input: " +
                evalShape.error().message());
  if (*evalShape != imageShape)
    return fail(o.path + ": eval_step's images input " + rn::shapeString(*evalShape) +
                " differs from train_step's " + rn::shapeString(imageShape));
  for (const rn::IdxDataset *d : {&train, &test})
    for (int64_t i = 0; i < d->count; ++i)
      if (int64_t(d->labels[size_t(i)]) >= classes)
        return fail(o.data + ": label " + std::to_string(d->labels[size_t(i)]) +
                    " of example " + std::to_string(i) + " is out of range for " +
                    std::to_string(classes) + " classes");
  // Data-parallel: every rank walks the same shuffled order, one global
  // batch (batch x ranks) per step, and trains its shard of it.
  const int64_t globalBatch = batch * o.group.worldSize;
  const rn::BatchShard shard = rn::shardOfGlobalBatch(o.group, batch);
  int64_t stepsPerEpoch = train.count / globalBatch;
  const double smoothing = labelSmoothing(*program.findFunction("eval_step"));
  if (stepsPerEpoch < 1)
    return fail("the training set has " + std::to_string(train.count) +
                " examples, fewer than one batch of " + std::to_string(globalBatch));
  int64_t totalSteps = stepsPerEpoch * o.epochs;
  int64_t warmupSteps = std::llround(o.warmupEpochs * double(stepsPerEpoch));
  if (warmupSteps > totalSteps)
    warmupSteps = totalSteps;

  int64_t firstEpoch = 0;
  if (!o.resume.empty()) {
    rn::Result<rn::Safetensors> ck = rn::readSafetensors(o.resume);
    if (!ck)
      return fail(ck.error().message());
    auto meta = [&](const char *key) -> std::string {
      auto it = ck->metadata.find(key);
      return it == ck->metadata.end() ? std::string() : it->second;
    };
    if (meta("rn.checkpoint") != "1")
      return fail(o.resume + ": not an rn-run checkpoint (no rn.checkpoint metadata)");
    if (meta("model") != program.model)
      return fail(o.resume + ": a checkpoint of model '" + meta("model") +
                  "', the artifact is '" + program.model + "'");
    if (meta("steps_per_epoch") != std::to_string(stepsPerEpoch) ||
        meta("batch") != std::to_string(batch))
      return fail(o.resume + ": saved with batch " + meta("batch") + " and " +
                  meta("steps_per_epoch") + " steps per epoch; this run has batch " +
                  std::to_string(batch) + " and " + std::to_string(stepsPerEpoch) +
                  " (use the same --limit-train and artifact)");
    if (meta("seed") != std::to_string(o.seed))
      std::fprintf(stderr,
                   "rn-run: warning: %s was saved with --seed %s, this run uses %llu; "
                   "the shuffling differs from an uninterrupted run\n",
                   o.resume.c_str(), meta("seed").c_str(), o.seed);
    char *end = nullptr;
    std::string e = meta("epoch");
    firstEpoch = std::strtol(e.c_str(), &end, 10);
    if (e.empty() || *end || firstEpoch < 1)
      return fail(o.resume + ": bad epoch '" + e + "' in the metadata");
    if (rn::Status s = restoreCheckpoint(o.resume, *ck, ex); !s)
      return fail(s.error().message());
    if (firstEpoch >= o.epochs) {
      report("resumed from %s after epoch %lld of %ld: nothing left to train\n",
                  o.resume.c_str(), (long long)firstEpoch, o.epochs);
      return 0;
    }
  }

  if (o.group.distributed())
    report("data-parallel: %s, batch %lld per rank, global batch %lld\n",
                o.group.describe().c_str(), (long long)batch, (long long)globalBatch);
  report("model %s: batch %lld, %lld classes; train %lld examples (%lld steps/epoch), "
              "test %lld examples; %ld epochs, lr %g, warmup %g epochs, cosine decay\n",
              program.model.c_str(), (long long)batch, (long long)classes,
              (long long)train.count, (long long)stepsPerEpoch, (long long)test.count,
              o.epochs, o.lr, o.warmupEpochs);
  report("data loaded in %.2f s\n", seconds(loadStart));
  if (firstEpoch > 0)
    report("resumed from %s after epoch %lld\n", o.resume.c_str(),
                (long long)firstEpoch);
  std::fflush(stdout);

  bool tty = o.progress && ::isatty(2);
  auto clearProgress = [&] {
    if (tty)
      std::fprintf(stderr, "\r\033[K");
  };
  auto runStart = std::chrono::steady_clock::now();
  int64_t stepsDone = 0; // in this run, for the ETA
  rn::HostInputPool imagePool(ex, size_t(batch * train.imageSize()) * sizeof(float));
  for (int64_t epoch = firstEpoch; epoch < o.epochs; ++epoch) {
    std::vector<int64_t> order = shuffledOrder(train.count, o.seed, epoch);
    auto epochStart = std::chrono::steady_clock::now();
    auto lastReport = epochStart;
    double lossSum = 0;
    double lr = 0;
    // Steps stream: groups are submitted as they are prepared and losses
    // collected as steps finish, so a GPU stays busy while the host prepares
    // the next group; the epoch ends with a drain.
    int64_t collected = 0; // steps of this epoch whose loss came back
    std::vector<rn::StepOutputs> finished;
    auto consume = [&]() -> int {
      for (rn::StepOutputs &out : finished) {
        auto it = out.find("loss");
        float loss = it != out.end() && !it->second.floats.empty() ? it->second.floats[0] : NAN;
        if (!std::isfinite(loss)) {
          clearProgress();
          fail("epoch " + std::to_string(epoch + 1) + ", step " +
               std::to_string(collected + 1) + ": the loss is " + std::to_string(loss) +
               " (try a lower --lr)");
          return 1;
        }
        lossSum += loss;
        ++collected;
        ++stepsDone;
      }
      finished.clear();
      return 0;
    };
    // A loader thread prepares the next group of batches (gather, normalize,
    // labels, learning rates) while this thread submits the current one and
    // the device runs it.
    // The images go straight into blocks of imagePool (page-locked on a
    // GPU), which the steps copy to the device from: no host copy of a
    // batch after it is prepared.
    struct Group {
      std::vector<rn::StepInputs> steps;
      double lastLr = 0;
      std::string error;
    };
    auto prepare = [&](int64_t s0) {
      int64_t count = std::min(kStepsPerGroup, stepsPerEpoch - s0);
      int64_t global0 = epoch * stepsPerEpoch + s0;
      HostSpan span("prepare " + std::to_string(count) + " batches", "loader");
      Group g;
      g.steps.resize(size_t(count));
      std::vector<int32_t> labels;
      for (int64_t i = 0; i < count; ++i) {
        g.lastLr = scheduledLr(o.lr, global0 + i, warmupSteps, totalSteps);
        rn::Result<std::shared_ptr<void>> block = imagePool.acquire();
        if (!block) {
          g.error = block.error().message();
          return g;
        }
        fillBatch(train, order.data() + (s0 + i) * globalBatch + shard.begin, batch,
                  static_cast<float *>(block->get()), labels);
        g.steps[size_t(i)] =
            rn::Executor::trainInputs(*block, size_t(batch * train.imageSize()), labels,
                                      float(g.lastLr), int32_t(global0 + i + 1));
      }
      return g;
    };
    std::future<Group> next = std::async(std::launch::async, prepare, int64_t(0));
    for (int64_t s0 = 0; s0 < stepsPerEpoch; s0 += kStepsPerGroup) {
      int64_t count = std::min(kStepsPerGroup, stepsPerEpoch - s0);
      int64_t global0 = epoch * stepsPerEpoch + s0;
      Group group = next.get();
      if (!group.error.empty()) {
        clearProgress();
        return fail("epoch " + std::to_string(epoch + 1) + ": " + group.error);
      }
      if (s0 + kStepsPerGroup < stepsPerEpoch)
        next = std::async(std::launch::async, prepare, s0 + kStepsPerGroup);
      std::vector<rn::StepInputs> steps = std::move(group.steps);
      lr = group.lastLr;
      rn::Status st;
      {
        HostSpan span("submit steps " + std::to_string(global0 + 1) + "-" +
                      std::to_string(global0 + count));
        st = ex.submit("train", std::move(steps));
      }
      if (st.ok()) {
        HostSpan span(s0 + count < stepsPerEpoch ? "poll" : "drain");
        st = s0 + count < stepsPerEpoch ? ex.poll(finished) : ex.drain(finished);
      }
      if (!st) {
        clearProgress();
        return fail("epoch " + std::to_string(epoch + 1) + ", steps " +
                    std::to_string(s0 + 1) + "-" + std::to_string(s0 + count) + ": " +
                    st.error().message());
      }
      if (consume() != 0)
        return 1;
      int64_t s = collected - 1; // the last step done
      auto now = std::chrono::steady_clock::now();
      if (o.progress && collected > 0 &&
          (std::chrono::duration<double>(now - lastReport).count() >= 1.0 ||
           (tty && s + 1 == stepsPerEpoch))) {
        lastReport = now;
        double elapsed = seconds(runStart);
        double rate = double(stepsDone) / elapsed;
        int64_t left = (o.epochs - epoch - 1) * stepsPerEpoch + (stepsPerEpoch - s - 1);
        std::fprintf(stderr,
                     "%sepoch %lld/%ld step %lld/%lld loss %.4f lr %.4g %.2f batches/s "
                     "%.0f images/s ETA %s%s",
                     tty ? "\r\033[K" : "", (long long)epoch + 1, o.epochs,
                     (long long)s + 1, (long long)stepsPerEpoch, lossSum / double(s + 1), lr,
                     rate, rate * double(globalBatch),
                     formatDuration(double(left) / rate).c_str(), tty ? "" : "\n");
        std::fflush(stderr);
      }
    }
    double trainSecs = seconds(epochStart);
    clearProgress();
    {
      // The ranks' mean loss (each rank's loss is over its own shard).
      std::vector<double> sums = {lossSum};
      if (rn::Status st = sumOverRanks(sums); !st)
        return fail("epoch " + std::to_string(epoch + 1) + ": " + st.error().message());
      lossSum = sums[0] / double(o.group.worldSize);
    }
    report("epoch %lld/%ld train loss %.6f (%lld steps, lr %.6g at the last step)\n",
                (long long)epoch + 1, o.epochs, lossSum / double(stepsPerEpoch),
                (long long)stepsPerEpoch, lr);
    std::fflush(stdout);

    auto evalStart = std::chrono::steady_clock::now();
    rn::Result<TestResult> tr = evaluateTestSet(ex, test, batch, classes, smoothing, o.group);
    if (!tr)
      return fail("epoch " + std::to_string(epoch + 1) + ", " + tr.error().message());
    if (tr->evaluated == test.count)
      report("epoch %lld/%ld test loss %.6f accuracy %.2f%% (%lld examples)\n",
                  (long long)epoch + 1, o.epochs, tr->loss,
                  100.0 * double(tr->correct) / double(tr->evaluated),
                  (long long)tr->evaluated);
    else if (tr->evaluated > 0)
      report("epoch %lld/%ld test loss %.6f accuracy %.2f%% (%lld of %lld examples: "
                  "the program returns no logits, so the last incomplete batch is "
                  "skipped)\n",
                  (long long)epoch + 1, o.epochs, tr->loss,
                  100.0 * double(tr->correct) / double(tr->evaluated),
                  (long long)tr->evaluated, (long long)test.count);
    else
      report("epoch %lld/%ld test: not evaluated (%lld examples, fewer than a batch, "
                  "and the program returns no logits)\n",
                  (long long)epoch + 1, o.epochs, (long long)test.count);
    double evalSecs = seconds(evalStart);
    report("epoch %lld/%ld time %.2f s train (%.2f batches/s, %.0f images/s), "
                "%.2f s test\n",
                (long long)epoch + 1, o.epochs, trainSecs, double(stepsPerEpoch) / trainSecs,
                double(stepsPerEpoch * globalBatch) / trainSecs, evalSecs);
    std::fflush(stdout);

    // Every rank holds the same state: rank 0 writes the checkpoint.
    if (!o.checkpoint.empty() && o.group.rank == 0) {
      std::map<std::string, std::string> meta = {
          {"rn.checkpoint", "1"},
          {"model", program.model},
          {"epoch", std::to_string(epoch + 1)},
          {"step", std::to_string((epoch + 1) * stepsPerEpoch)},
          {"steps_per_epoch", std::to_string(stepsPerEpoch)},
          {"batch", std::to_string(batch)},
          {"seed", std::to_string(o.seed)},
          {"lr", std::to_string(o.lr)},
          {"epochs", std::to_string(o.epochs)},
      };
      if (rn::Status s = saveCheckpoint(o.checkpoint, ex, meta); !s)
        return fail("saving the checkpoint: " + s.error().message());
      report("epoch %lld/%ld checkpoint %s\n", (long long)epoch + 1, o.epochs,
                  o.checkpoint.c_str());
      std::fflush(stdout);
    }
    if (o.stopAfterEpoch > 0 && epoch + 1 == o.stopAfterEpoch && epoch + 1 < o.epochs) {
      report("stopped after epoch %lld (--stop-after-epoch)\n", (long long)epoch + 1);
      return 0;
    }
  }
  report("done: %lld epochs in %.2f s\n", (long long)(o.epochs - firstEpoch),
              seconds(runStart));
  return 0;
}

int runRank(Options o, const rn::Artifact &artifact, const std::string &kind,
            std::chrono::steady_clock::time_point processStart,
            std::chrono::steady_clock::time_point loadStart, const InProcessRanks *ranks);

/// --gpus N / --cpu-replicas N: rank r in a host thread of its own, each
/// with its executor. GPU ranks: rank r on GPU r (streams, graphs captured
/// thread-locally) with its NCCL communicator, all from one
/// ncclGetUniqueId. CPU replicas: one in-memory ReplicaGroup, the
/// reference. Rank 0 reports; the exit code is the worst rank's.
int runThreadedRanks(const Options &o, const rn::Artifact &artifact, const std::string &kind,
                     std::chrono::steady_clock::time_point processStart,
                     std::chrono::steady_clock::time_point loadStart) {
  const bool cpuRun = o.cpuReplicas > 0;
  const long long count = cpuRun ? o.cpuReplicas : o.gpus;
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
  InProcessRanks shared;
  std::unique_ptr<rn::cpu::ReplicaGroup> group;
#if RN_HAVE_CUDA
  ncclUniqueId id{};
#endif
  if (cpuRun) {
    group = std::make_unique<rn::cpu::ReplicaGroup>(int(count));
    shared.cpu = group.get();
  } else {
#if RN_HAVE_CUDA
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || count > devices)
      return fail("--gpus " + std::to_string(count) + ": this machine has " +
                  std::to_string(devices) + " GPU(s)");
    rn::Result<ncclUniqueId> made = rn::cuda::Communicator::newUniqueId();
    if (!made)
      return fail("--gpus: " + made.error().message());
    id = *made;
    shared.ncclId = &id;
#else
    return fail("--gpus " + std::to_string(count) + ": this rn-run was built without CUDA");
#endif
  }
  std::vector<int> rcs(size_t(count), 1);
  std::vector<std::thread> ranks;
  for (int r = 0; r < int(count); ++r)
    ranks.emplace_back([&, r] {
      Options mine = o;
      mine.group.rank = r;
      mine.group.worldSize = int(count);
      mine.group.localRank = r;
      mine.group.timeoutSeconds = environment->timeoutSeconds;
      quietRank = r != 0;
      rcs[size_t(r)] = runRank(mine, artifact, kind, processStart, loadStart, &shared);
      // A failed replica must not leave the others waiting for it.
      if (rcs[size_t(r)] != 0 && group)
        group->abort(r);
    });
  for (std::thread &t : ranks)
    t.join();
  return *std::max_element(rcs.begin(), rcs.end());
}

/// Everything after the artifact is loaded, for one rank: the process
/// group (from the environment, or the caller's thread in --gpus mode with
/// `sharedId`), the communicator, the executor, then training.
int runRank(Options o, const rn::Artifact &artifact, const std::string &kind,
            std::chrono::steady_clock::time_point processStart,
            std::chrono::steady_clock::time_point loadStart, const InProcessRanks *ranks) {
  const SharedNcclId *sharedId = ranks ? ranks->ncclId : nullptr;
  // Data-parallel when launched with WORLD_SIZE (torchrun's variables), even
  // with one rank: that one rank then averages through NCCL too.
  if (!ranks) {
    rn::Result<rn::ProcessGroup> group = rn::processGroupFromEnvironment();
    if (!group)
      return fail(group.error().message());
    o.group = *group;
  }
  const bool launchedDataParallel = ranks || std::getenv("WORLD_SIZE") != nullptr;
  rn::cpu::ReplicaGroup *replicas = ranks ? ranks->cpu : nullptr;
  cpuReplicas = replicas;
  cpuReplicaRank = o.group.rank;
  if (launchedDataParallel) {
    bool hasAllReduce = false;
    for (const rn::Function &f : artifact.program.functions)
      for (const rn::Subgraph &sg : f.subgraphs)
        for (const rn::Node &n : sg.nodes)
          hasAllReduce |= n.kind == rn::Node::Kind::op && n.op == "all_reduce_mean";
    if (o.group.distributed() && !hasAllReduce)
      return fail(o.group.describe() + ": " + o.path +
                  " was not compiled data-parallel (no all_reduce_mean): compile it with "
                  "--pipeline \"data-parallel=true ...\"");
    if (kind == "cpu" && o.group.distributed() && !replicas)
      return fail(o.group.describe() + ": data-parallel training needs a GPU executor "
                  "(the CPU executor runs one replica; --cpu-replicas N runs N in one process)");
    if (o.group.rank != 0)
      o.progress = false; // rank 0 reports progress
  }
  report("rn-run: executor %s%s%s\n", kind.c_str(), o.executor == "auto" ? " (auto)" : "",
              launchedDataParallel ? (", data-parallel " + o.group.describe()).c_str() : "");
  std::fflush(stdout);
#if RN_HAVE_CUDA
  // Before the executor, destroyed after it (its steps use the communicator).
  std::unique_ptr<rn::cuda::Communicator> comm;
#endif
  std::unique_ptr<rn::Executor> executor;
#if RN_HAVE_CUDA
  // Destroyed before the executor, whose teardown waits for its streams.
  struct AbortOnError {
    // A failing rank aborts its communicator so that nothing waits on it
    // in teardown; its peers end at their own deadlines.
    int rc = 1;
    ~AbortOnError() {
      if (rc != 0 && communicator)
        communicator->abort();
      communicator = nullptr;
    }
  } abortOnError;
  if (launchedDataParallel && kind != "cpu") {
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || o.group.localRank >= devices)
      return fail(o.group.describe() + ": LOCAL_RANK=" + std::to_string(o.group.localRank) +
                  " but this machine has " + std::to_string(devices) + " GPU(s)");
    if (cudaSetDevice(o.group.localRank) != cudaSuccess)
      return fail(o.group.describe() + ": cannot select GPU " +
                  std::to_string(o.group.localRank));
    auto start = std::chrono::steady_clock::now();
    rn::Result<std::unique_ptr<rn::cuda::Communicator>> c =
        sharedId ? rn::cuda::Communicator::create(o.group, *sharedId)
                 : rn::cuda::Communicator::create(o.group);
    if (!c)
      return fail(c.error().message());
    comm = std::move(*c);
    communicator = comm.get();
    rn::Result<uint64_t> digest = rn::startupDigest(o.path, o.seed);
    if (!digest)
      return fail(digest.error().message());
    if (rn::Status st = comm->checkSameOnEveryRank(*digest, "artifact digest (its bytes and --seed)");
        !st)
      return fail(st.error().message());
    if (o.progress)
      report("NCCL communicator: %s on GPU %d, %s, ready in %.2f s; artifact digest "
                  "%016llx on every rank\n",
                  o.group.describe().c_str(), o.group.localRank,
                  sharedId                ? "one process, a thread per GPU"
                  : o.group.distributed() ? ("bootstrap " + o.group.rendezvous).c_str()
                                          : "one rank",
                  seconds(start), (unsigned long long)*digest);
  }
#endif
  if (kind == "cpu") {
    rn::CpuExecutor::Options options;
    options.seed = rn::dropoutSeedOfRank(o.seed, o.group.rank);
    options.interleave = o.interleave;
    options.replicas = replicas;
    options.replicaRank = o.group.rank;
    auto cpu = rn::CpuExecutor::create(artifact, options);
    if (!cpu)
      return fail(cpu.error().message());
    executor = std::move(*cpu);
  }
#if RN_HAVE_CUDA
  std::unique_ptr<rn::cuda::Timeline> timeline;
  if (!o.trace.empty()) {
    // Before the executor: the timeline follows graph nodes from their capture.
    auto t = rn::cuda::Timeline::create(artifact.program);
    if (!t)
      return fail(t.error().message());
    timeline = std::move(*t);
  }
  if (kind != "cpu") {
    rn::cuda::GraphExecutor::Options options;
    options.trace = timeline ? timeline->trace() : nullptr;
    options.seed = o.seed;
    options.syncDebug = o.syncDebug;
    options.deterministic = o.deterministic;
    options.allowTf32 = o.allowTf32;
    options.allowReducedPrecisionReduction = o.allowReducedPrecisionReduction;
    options.planCacheFile = planCachePath(o.planCache);
    options.autotuneCandidates = int(o.autotuneCandidates);
    options.profile = o.profile;
    options.dumpGraphsDir = o.dumpGraphs;
    options.communicator = comm.get();
    // Independent dropout masks per rank (rank 0: the run's own).
    options.seed = rn::dropoutSeedOfRank(o.seed, o.group.rank);
    options.device = o.group.localRank;
    // Either executor: its load summary, then it runs the steps.
    auto adopt = [&](auto created) -> bool {
      if (!created) {
        fail(created.error().message());
        return false;
      }
      if (o.progress)
        report("%s\n", (*created)->loadSummary().c_str());
      executor = std::move(*created);
      return true;
    };
    if (!(kind == "cuda-eager" ? adopt(rn::cuda::EagerExecutor::create(artifact, options))
                               : adopt(rn::cuda::GraphExecutor::create(artifact, options))))
      return 1;
  }
#endif
  rn::Executor &ex = *executor;
  if (rn::Status s = ex.initialize(); !s)
    return fail(s.error().message());
  double loadSecs = seconds(loadStart);
  if (o.perturbEps > 0) {
    if (rn::Status s = perturbState(ex, o.perturbEps, o.perturbSeed); !s)
      return fail("--perturb-state: " + s.error().message());
    report("parameters perturbed by a relative %g (seed %llu)\n", o.perturbEps,
                o.perturbSeed);
  }

  const rn::Function *train = artifact.program.findFunction("train_step");
  if (!train)
    return fail(o.path + ": the artifact has no train_step function");
  auto imageShape = ex.inputShape("train_step", "images");
  auto labelShape = ex.inputShape("train_step", "labels");
  if (!imageShape || !labelShape || imageShape->empty() || labelShape->size() != 1)
    return fail(o.path + ": train_step needs inputs images [N, ...] and labels [N]");
  int64_t batch = (*imageShape)[0];
  int64_t features = 1;
  for (size_t d = 1; d < imageShape->size(); ++d)
    features *= (*imageShape)[d];
  int64_t classes = classCount(*train);
  if (classes < 1)
    return fail(o.path + ": cannot find the class count (no softmax_cross_entropy)");

#if RN_HAVE_CUDA
  if (timeline) {
    if (rn::Status s = timeline->start(); !s)
      return fail(s.error().message());
    traceTimeline = timeline.get();
  }
  // Writes the timeline after the run (its steps drained) and says what the
  // GPU did over it.
  auto finishTrace = [&](int rc) -> int {
    if (!timeline || rc != 0)
      return rc;
    traceTimeline = nullptr;
    rn::Result<rn::cuda::Timeline::Summary> s = timeline->write(o.trace);
    if (!s)
      return fail(s.error().message());
    report("trace %s: %zu GPU records (%zu not from program nodes), GPU busy %.3f of "
                "%.3f ms (%.1f%%), %llu records dropped\n",
                o.trace.c_str(), s->gpuRecords, s->unlabeled, s->busyMs, s->windowMs,
                s->windowMs > 0 ? 100.0 * s->busyMs / s->windowMs : 0.0,
                (unsigned long long)s->dropped);
    return 0;
  };
#else
  auto finishTrace = [](int rc) { return rc; };
#endif

  int rc = 0;
#if RN_HAVE_CUDA
  // Success disarms the abort (the communicator is destroyed cleanly).
  struct Disarm {
    AbortOnError &guard;
    int &rc;
    ~Disarm() { guard.rc = rc; }
  } disarm{abortOnError, rc};
#endif
  if (o.benchmark) {
    rc = finishTrace(runBenchmark(o, artifact, ex, batch, features, classes, processStart, loadSecs));
#if RN_HAVE_CUDA
    if (rc == 0 && o.profile)
      if (auto *eager = dynamic_cast<rn::cuda::EagerExecutor *>(&ex)) {
        rn::Result<std::string> report = eager->profileReport();
        if (!report)
          return fail(report.error().message());
        std::fprintf(stderr, "%s", report->c_str());
      }
#endif
    return rc;
  }
  rc = o.synthetic ? finishTrace(runSynthetic(o, artifact, ex, batch, features, classes))
                   : finishTrace(runData(o, artifact, ex, *imageShape, classes));
  return rc;
}

} // namespace

int main(int argc, char **argv) {
  const auto processStart = std::chrono::steady_clock::now();
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&](const char *name) -> const char * {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "rn-run: error: %s needs a value\n", name);
        std::exit(2);
      }
      return argv[++i];
    };
    auto integer = [&](const char *name, long long min, long long &out) -> bool {
      const char *v = value(name);
      char *end = nullptr;
      errno = 0;
      out = std::strtoll(v, &end, 10);
      if (!*v || *end || errno || out < min) {
        fail(std::string(name) + " must be an integer >= " + std::to_string(min) +
             ", got '" + v + "'");
        return false;
      }
      return true;
    };
    char *end = nullptr;
    long long n = 0;
    if (arg == "--synthetic") {
      o.synthetic = true;
    } else if (arg == "--interleave") {
      o.interleave = true;
    } else if (arg == "--executor") {
      o.executor = value("--executor");
      if (o.executor != "cpu" && o.executor != "cuda-eager" && o.executor != "cuda-graph" &&
          o.executor != "auto")
        return fail("--executor must be cpu, cuda-eager, cuda-graph or auto, got '" +
                    o.executor + "'");
    } else if (arg == "--sync-debug") {
      o.syncDebug = true;
    } else if (arg == "--deterministic") {
      o.deterministic = true;
    } else if (arg == "--allow-tf32") {
      o.allowTf32 = true;
    } else if (arg == "--allow-reduced-precision-reduction") {
      o.allowReducedPrecisionReduction = true;
    } else if (arg == "--plan-cache") {
      o.planCache = value("--plan-cache");
    } else if (arg == "--autotune-candidates") {
      if (!integer("--autotune-candidates", 0, n))
        return 1;
      o.autotuneCandidates = long(std::min<long long>(n, 1 << 20));
    } else if (arg == "--state-digest") {
      o.stateDigest = value("--state-digest");
    } else if (arg == "--state-digest-every") {
      if (!integer("--state-digest-every", 1, n))
        return 1;
      o.stateDigestEvery = long(n);
    } else if (arg == "--perturb-state") {
      const char *v = value("--perturb-state");
      o.perturbEps = std::strtod(v, &end);
      if (!*v || *end || !std::isfinite(o.perturbEps) || o.perturbEps < 0 || o.perturbEps >= 1)
        return fail(std::string("--perturb-state EPS must be a number in [0, 1), got '") + v +
                    "'");
      const char *seed = value("--perturb-state");
      errno = 0;
      o.perturbSeed = std::strtoull(seed, &end, 10);
      if (!*seed || *end || errno || *seed == '-')
        return fail(std::string("--perturb-state SEED must be an integer >= 0, got '") + seed +
                    "'");
    } else if (arg == "--gpus") {
      if (!integer("--gpus", 1, o.gpus))
        return 1;
    } else if (arg == "--cpu-replicas") {
      if (!integer("--cpu-replicas", 1, o.cpuReplicas))
        return 1;
    } else if (arg == "--trace") {
      o.trace = value("--trace");
    } else if (arg == "--dump-graphs") {
      o.dumpGraphs = value("--dump-graphs");
    } else if (arg == "--profile") {
      o.profile = true;
    } else if (arg == "--benchmark") {
      o.benchmark = true;
    } else if (arg == "--warmup") {
      if (!integer("--warmup", 0, n))
        return 1;
      o.warmup = long(n);
    } else if (arg == "--no-progress") {
      o.progress = false;
    } else if (arg == "--steps") {
      const char *v = value("--steps");
      o.steps = std::strtol(v, &end, 10);
      if (*end || o.steps < 1)
        return fail(std::string("--steps must be a positive integer, got '") + v + "'");
    } else if (arg == "--epochs") {
      if (!integer("--epochs", 1, n))
        return 1;
      o.epochs = long(n);
    } else if (arg == "--limit-train") {
      if (!integer("--limit-train", 1, o.limitTrain))
        return 1;
    } else if (arg == "--stop-after-epoch") {
      if (!integer("--stop-after-epoch", 1, o.stopAfterEpoch))
        return 1;
    } else if (arg == "--limit-test") {
      if (!integer("--limit-test", 1, o.limitTest))
        return 1;
    } else if (arg == "--lr") {
      const char *v = value("--lr");
      o.lr = std::strtod(v, &end);
      if (*end || !(o.lr >= 0))
        return fail(std::string("--lr must be a non-negative number, got '") + v + "'");
    } else if (arg == "--warmup-epochs") {
      const char *v = value("--warmup-epochs");
      o.warmupEpochs = std::strtod(v, &end);
      if (!*v || *end || !(o.warmupEpochs >= 0))
        return fail(std::string("--warmup-epochs must be a non-negative number, got '") +
                    v + "'");
    } else if (arg == "--seed") {
      const char *v = value("--seed");
      o.seed = std::strtoull(v, &end, 10);
      if (*end)
        return fail(std::string("--seed must be an integer, got '") + v + "'");
    } else if (arg == "--data") {
      o.data = value("--data");
    } else if (arg == "--checkpoint") {
      o.checkpoint = value("--checkpoint");
    } else if (arg == "--resume") {
      o.resume = value("--resume");
    } else if (arg == "-h" || arg == "--help") {
      usage(stdout);
      return 0;
    } else if (!arg.empty() && arg[0] == '-') {
      usage(stderr);
      return fail("unknown option '" + arg + "'");
    } else if (o.path.empty()) {
      o.path = arg;
    } else {
      return fail("more than one artifact given ('" + o.path + "', '" + arg + "')");
    }
  }
  if (o.path.empty()) {
    usage(stderr);
    return fail("no artifact given");
  }
  if (o.benchmark)
    o.synthetic = true;
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

  auto loadStart = std::chrono::steady_clock::now();
  rn::Result<rn::Artifact> artifact = rn::loadArtifact(o.path);
  if (!artifact)
    return fail(artifact.error().message());
  // --executor auto: the GPU when a driver and device answer, else the CPU.
  std::string kind = o.executor;
#if RN_HAVE_CUDA
  rn::Status gpu = rn::cuda::deviceAvailable();
  if (kind == "auto")
    kind = gpu.ok() ? "cuda-graph" : "cpu";
  if (kind != "cpu" && !gpu.ok())
    return fail("--executor " + kind + ": " + gpu.error().message());
#else
  if (kind == "auto")
    kind = "cpu";
  if (kind != "cpu")
    return fail("--executor " + kind + ": this rn-run was built without CUDA (RN_ENABLE_CUDA)");
#endif
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
