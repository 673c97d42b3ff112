//===- rn-run.cpp - Train from an artifact on the CPU ----------------------===//
//
//   rn-run model.rnx --synthetic --steps N [--lr 0.1] [--seed S] [--interleave]
//
// Loads an artifact (docs/artifact.md), initializes its state and runs N
// training steps with the CPU reference executor on a fixed synthetic
// dataset: 8 batches of uniform random images whose labels come from a
// fixed random linear teacher (argmax of W x), so the loss can decrease.
// Prints the loss of every step, then `loss first F last L` and the speed.
//
//===----------------------------------------------------------------------===//

#include "runtime/artifact.h"
#include "runtime/cpu_executor.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace {

void usage(FILE *out) {
  std::fprintf(out,
               "usage: rn-run MODEL.rnx --synthetic --steps N [--lr LR] [--seed S] "
               "[--interleave]\n"
               "  --synthetic   train on a fixed synthetic dataset (random images,\n"
               "                labels from a random linear teacher)\n"
               "  --steps N     training steps (default 10)\n"
               "  --lr LR       learning rate (default 0.1)\n"
               "  --seed S      data, dropout and interleaving seed (default 0)\n"
               "  --interleave  run the streams interleaved at random and check\n"
               "                for hazards (slow)\n");
}

int fail(const std::string &message) {
  std::fprintf(stderr, "rn-run: error: %s\n", message.c_str());
  return 1;
}

/// The class count: the last dimension of the loss's logits.
int64_t classCount(const rn::Function &fn) {
  for (const rn::Subgraph &sg : fn.subgraphs)
    for (const rn::Node &n : sg.nodes)
      if (n.kind == rn::Node::Kind::op && n.op == "softmax_cross_entropy" &&
          !n.operands.empty()) {
        const auto &shape = fn.tensors[n.operands[0]].shape;
        if (!shape.empty())
          return shape.back();
      }
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  std::string path;
  bool synthetic = false, interleave = false;
  long steps = 10;
  double lr = 0.1;
  unsigned long long seed = 0;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&](const char *name) -> const char * {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "rn-run: error: %s needs a value\n", name);
        std::exit(2);
      }
      return argv[++i];
    };
    char *end = nullptr;
    if (arg == "--synthetic") {
      synthetic = true;
    } else if (arg == "--interleave") {
      interleave = true;
    } else if (arg == "--steps") {
      const char *v = value("--steps");
      steps = std::strtol(v, &end, 10);
      if (*end || steps < 1)
        return fail(std::string("--steps must be a positive integer, got '") + v + "'");
    } else if (arg == "--lr") {
      const char *v = value("--lr");
      lr = std::strtod(v, &end);
      if (*end || !(lr >= 0))
        return fail(std::string("--lr must be a non-negative number, got '") + v + "'");
    } else if (arg == "--seed") {
      const char *v = value("--seed");
      seed = std::strtoull(v, &end, 10);
      if (*end)
        return fail(std::string("--seed must be an integer, got '") + v + "'");
    } else if (arg == "-h" || arg == "--help") {
      usage(stdout);
      return 0;
    } else if (!arg.empty() && arg[0] == '-') {
      usage(stderr);
      return fail("unknown option '" + arg + "'");
    } else if (path.empty()) {
      path = arg;
    } else {
      return fail("more than one artifact given ('" + path + "', '" + arg + "')");
    }
  }
  if (path.empty()) {
    usage(stderr);
    return fail("no artifact given");
  }
  if (!synthetic)
    return fail("only --synthetic data is supported so far");

  rn::Result<rn::Artifact> artifact = rn::loadArtifact(path);
  if (!artifact)
    return fail(artifact.error().message());
  rn::CpuExecutor::Options options;
  options.seed = seed;
  options.interleave = interleave;
  auto executor = rn::CpuExecutor::create(*artifact, options);
  if (!executor)
    return fail(executor.error().message());
  rn::CpuExecutor &ex = **executor;
  if (rn::Status s = ex.initialize(); !s)
    return fail(s.error().message());

  const rn::Function *train = artifact->program.findFunction("train_step");
  if (!train)
    return fail(path + ": the artifact has no train_step function");
  auto imageShape = ex.inputShape("train_step", "images");
  auto labelShape = ex.inputShape("train_step", "labels");
  if (!imageShape || !labelShape || imageShape->empty() || labelShape->size() != 1)
    return fail(path + ": train_step needs inputs images [N, ...] and labels [N]");
  int64_t batch = (*imageShape)[0];
  int64_t features = 1;
  for (size_t d = 1; d < imageShape->size(); ++d)
    features *= (*imageShape)[d];
  int64_t classes = classCount(*train);
  if (classes < 1)
    return fail(path + ": cannot find the class count (no softmax_cross_entropy)");

  // The dataset: 8 batches, labels from a fixed random linear teacher.
  const int numBatches = 8;
  std::mt19937_64 rng(seed * 0x9E3779B97F4A7C15ull + 12345);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> teacher(size_t(classes * features));
  for (float &w : teacher)
    w = normal(rng);
  std::vector<rn::HostBatch> data(numBatches);
  for (rn::HostBatch &b : data) {
    b.images.resize(size_t(batch * features));
    for (float &x : b.images)
      x = uniform(rng);
    b.labels.resize(size_t(batch));
    for (int64_t n = 0; n < batch; ++n) {
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
  }

  std::printf("model %s: batch %lld, %lld features, %lld classes, %ld steps, lr %g%s\n",
              artifact->program.model.c_str(), (long long)batch, (long long)features,
              (long long)classes, steps, lr, interleave ? ", interleaved" : "");
  float first = 0, last = 0;
  auto start = std::chrono::steady_clock::now();
  for (long step = 0; step < steps; ++step) {
    rn::TrainOutputs out;
    rn::Status s = ex.trainStep(data[size_t(step % numBatches)], float(lr),
                                int32_t(step + 1), out);
    if (!s)
      return fail("step " + std::to_string(step + 1) + ": " + s.error().message());
    if (step == 0)
      first = out.loss;
    last = out.loss;
    std::printf("step %ld loss %.6f\n", step + 1, out.loss);
    std::fflush(stdout);
  }
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("loss first %.6f last %.6f\n", first, last);
  std::printf("%.2f steps/s (%.3f s for %ld steps)\n", steps / seconds, seconds, steps);
  return 0;
}
