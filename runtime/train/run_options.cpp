//===- run_options.cpp - rn-run's flags: the run-time defaults ------------===//
//
// The one place rn-run's flags and their defaults are written; --help,
// the parser and the library's configuration defaults read this table.
//
//===----------------------------------------------------------------------===//

#include "runtime/train/run_options.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace rn::train {

std::vector<Flag> runFlags(RunOptions &o) {
  const std::string training = "training", data = "data", gpu = "GPU",
                    diagnostics = "diagnostics", ranks = "data-parallel";
  auto perturb = [&o](const std::string &flag, const std::vector<std::string> &values) -> Status {
    RN_RETURN_IF_ERROR(numberFlag(o.perturbEps, 0, 1)(flag + " EPS", {values[0]}));
    return unsignedFlag(o.perturbSeed)(flag + " SEED", {values[1]});
  };
  return {
      {"--epochs", training, "N", "1", "epochs", integerFlag(o.epochs, 1)},
      {"--lr", training, "LR", "0.1", "(peak) learning rate", numberFlag(o.lr, 0)},
      {"--warmup-epochs", training, "W", "0",
       "linear warmup epochs (may be fractional), then cosine decay to 0",
       numberFlag(o.warmupEpochs, 0)},
      {"--seed", training, "S", "0", "shuffling, dropout and interleaving seed",
       unsignedFlag(o.seed)},
      {"--checkpoint", training, "PATH", "", "save all state after each epoch (safetensors)",
       textFlag(o.checkpoint)},
      {"--resume", training, "PATH", "", "restore a checkpoint and continue with its next epoch",
       textFlag(o.resume)},
      {"--stop-after-epoch", training, "E", "",
       "stop after epoch E (the schedule still spans --epochs; to resume later from "
       "--checkpoint)",
       integerFlag(o.stopAfterEpoch, 1)},
      {"--no-progress", training, "", "", "no progress lines on stderr", switchFlag(o.noProgress)},

      {"--data", data, "DIR", "",
       "train on the data set in DIR: Fashion-MNIST's IDX files (train-images-idx3-ubyte.gz, "
       "...) or CIFAR-10/100's binary files (data_batch_1.bin ... or train.bin, test.bin); or a "
       "NumPy archive FILE.npz with x_train, y_train, x_test, y_test (uint8 or float32 images, "
       "NHWC or NHW); or an image folder ROOT: ROOT/train/<class>/*.png|jpg|jpeg and "
       "ROOT/val/<class>/... (or test/), classes in sorted order, all images one size unless "
       "--augment rrc-flip resizes them",
       textFlag(o.data)},
      {"--mean", data, "M,...", "",
       "per-channel normalization mean, with --std (default: IDX, Fashion-MNIST's published "
       "one; CIFAR, NPZ and image folders, the training split's, computed and printed)",
       textFlag(o.mean)},
      {"--std", data, "S,...", "", "per-channel normalization standard deviation, with --mean",
       textFlag(o.std)},
      {"--label", data, "fine|coarse", "fine", "CIFAR-100's label",
       textFlag(o.label, {"fine", "coarse"})},
      {"--augment", data, "A", "none",
       "training augmentation, drawn by (seed, epoch, example): none, crop-flip (CIFAR: 4-pixel "
       "zero padding, random crop, horizontal flip) or rrc-flip (ImageNet: random-resized crop "
       "to the model's input size + flip; evaluation resizes and takes the center crop)",
       textFlag(o.augment)},
      {"--loader-threads", data, "N", "",
       "threads that read, decode and augment examples (default: min(8, host threads / "
       "ranks)); batches do not depend on it",
       integerFlag(o.loaderThreads, 1)},
      {"--skip-bad-images", data, "", "",
       "an image that does not decode is skipped (its batch slot takes another example of the "
       "batch) and counted, instead of stopping the run",
       switchFlag(o.skipBadImages)},
      {"--limit-train", data, "K", "", "use only the first K training examples",
       integerFlag(o.limitTrain, 1)},
      {"--limit-test", data, "K", "", "use only the first K test examples",
       integerFlag(o.limitTest, 1)},
      {"--synthetic", data, "", "",
       "train on a fixed synthetic dataset (random images, labels from a random linear teacher)",
       switchFlag(o.synthetic)},
      {"--steps", data, "N", "10", "synthetic or benchmark steps", integerFlag(o.steps, 1)},

      {"--executor", gpu, "E", "auto",
       "cpu (reference kernels), cuda-eager (each node launched on its stream), cuda-graph (each "
       "subgraph captured once as a CUDA graph and replayed) or auto (cuda-graph when a GPU "
       "answers, else cpu); the first line says which",
       textFlag(o.executor, {"cpu", "cuda-eager", "cuda-graph", "auto"})},
      {"--deterministic", gpu, "", "", "deterministic convolution plans and kernels",
       switchFlag(o.deterministic)},
      {"--allow-tf32", gpu, "", "", "TF32 for f32 convolutions and products (off: IEEE f32)",
       switchFlag(o.allowTf32)},
      {"--allow-reduced-precision-reduction", gpu, "", "",
       "convolution plans that reduce in f16/bf16 (the 4-channel image stem may take them "
       "always)",
       switchFlag(o.allowReducedPrecisionReduction)},
      {"--plan-cache", gpu, "FILE", "",
       "keep convolution autotuning results in FILE (default: $XDG_CACHE_HOME/rn/conv-plans.json "
       "or ~/.cache/rn/...; none: time the plans at every load)",
       textFlag(o.planCache)},
      {"--autotune-candidates", gpu, "N", "16",
       "time the first N convolution plans that build, in cuDNN's heuristic order (0: all)",
       integerFlag(o.autotuneCandidates, 0)},

      {"--benchmark", diagnostics, "", "",
       "time training steps on random data: --warmup W steps, then 3 x --steps N; prints one "
       "JSON line: median ms/step, images/s, host ms/step, load time, time to first step, peak "
       "device memory in use",
       switchFlag(o.benchmark)},
      {"--warmup", diagnostics, "W", "10", "--benchmark's untimed steps before the timed ones",
       integerFlag(o.warmup, 0)},
      {"--state-digest", diagnostics, "F", "",
       "after --synthetic training, write a digest of every state entry to F (JSON: L2 norm, 16 "
       "sampled elements and a hash of its bits), to compare executors across machines",
       textFlag(o.stateDigest)},
      {"--state-digest-every", diagnostics, "K", "",
       "with --state-digest: a digest after every K steps ({\"steps\": [{\"step\", \"state\"}, "
       "...]})",
       integerFlag(o.stateDigestEvery, 1)},
      {"--perturb-state", diagnostics, "EPS SEED", "",
       "after initialization, multiply every element of every parameter by (1 + EPS*u), u "
       "uniform in [-1, 1] from SEED (the noise digest of scripts/zoo-digests.sh)",
       perturb},
      {"--interleave", diagnostics, "", "",
       "run the streams interleaved at random and check for hazards (slow; cpu executor)",
       switchFlag(o.interleave)},
      {"--sync-debug", diagnostics, "", "",
       "cuda-eager: synchronize after every node, so that an asynchronous fault names its node; "
       "cuda-graph: after every graph launch",
       switchFlag(o.syncDebug)},
      {"--profile", diagnostics, "", "", "cuda-eager: GPU time per op of the last step (stderr)",
       switchFlag(o.profile)},
      {"--dump-graphs", diagnostics, "DIR", "",
       "cuda-graph: write every captured graph to DIR as Graphviz (one .dot per subgraph and "
       "variant)",
       textFlag(o.dumpGraphs)},
      {"--trace", diagnostics, "FILE", "",
       "GPU executors: a timeline of the training steps (Chrome trace / Perfetto JSON: one track "
       "per program stream, kernels named by node and op, host spans) and the GPU's busy and "
       "idle time over them",
       textFlag(o.trace)},

      {"--gpus", ranks, "N", "",
       "N GPUs of this machine from this one process (a host thread and a stream set per GPU; "
       "the artifact compiled data-parallel, its batch per GPU)",
       integerFlag(o.gpus, 1)},
      {"--cpu-replicas", ranks, "N", "",
       "the same with N CPU executors (the reference of --gpus: gradients averaged in memory; "
       "not with --interleave)",
       integerFlag(o.cpuReplicas, 1)},

      {"-h", "", "", "", "", switchFlag(o.help), true},
      {"--help", "", "", "", "", switchFlag(o.help), true},
      {"--version", "", "", "", "", switchFlag(o.version), true},
  };
}

const RunOptions &runDefaults() {
  static const RunOptions defaults = [] {
    RunOptions o;
    if (Status s = applyFlagDefaults(runFlags(o)); !s) {
      std::fprintf(stderr, "rn-run: %s\n", s.error().message().c_str());
      std::abort();
    }
    return o;
  }();
  return defaults;
}

std::string runUsage() {
  RunOptions scratch;
  return flagUsage(
      runFlags(scratch),
      "usage: rn-run MODEL.rnx --data DIR [--epochs N] [--lr LR] [options]\n"
      "       rn-run MODEL.rnx --synthetic --steps N [--lr LR] [options]\n"
      "       rn-run MODEL.rnx --benchmark [--steps N] [--warmup W] [options]\n"
      "       rn-run --version\n"
      "MODEL.rnx is an artifact from rn-compile (docs/rn-run.md).\n",
      "  One process per GPU, as torchrun starts them: RANK, WORLD_SIZE, LOCAL_RANK\n"
      "  (the GPU), MASTER_ADDR and MASTER_PORT (rank 0's NCCL bootstrap) in the\n"
      "  environment; each rank trains its share of every global batch and NCCL\n"
      "  averages the gradients inside the step. RN_DIST_TIMEOUT_S (default 120)\n"
      "  bounds every wait for a peer: a missing or dead rank ends every other rank\n"
      "  with an error.\n");
}

Status parseRunOptions(int argc, const char *const *argv, RunOptions &options,
                       ParsedFlags &parsed) {
  std::vector<Flag> flags = runFlags(options);
  RN_RETURN_IF_ERROR(applyFlagDefaults(flags));
  RN_RETURN_IF_ERROR(parseFlags(argc, argv, flags, parsed));
  if (parsed.positional.size() > 1)
    return Error("more than one artifact given ('" + parsed.positional[0] + "', '" +
                 parsed.positional[1] + "')");
  if (!parsed.positional.empty())
    options.path = parsed.positional[0];
  options.autotuneCandidates = std::min<int64_t>(options.autotuneCandidates, 1 << 20);
  return Status::success();
}

} // namespace rn::train
