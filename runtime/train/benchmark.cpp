//===- benchmark.cpp - Milliseconds per training step on random data ------===//

#include "runtime/train/benchmark.h"

#include "runtime/train/executor_factory.h"

#include <algorithm>
#include <cstdio>
#include <random>

namespace rn::train {
namespace {

double secondsSince(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

} // namespace

Result<BenchmarkResult> benchmark(Trainer &trainer, const BenchmarkConfig &config) {
  Executor &ex = trainer.executor();
  RN_RETURN_IF_ERROR(trainer.drain());
  std::mt19937_64 rng(config.seed + 1);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const int64_t batch = trainer.batch();
  const size_t imageCount = size_t(batch * trainer.imageSize());
  const bool bytes = trainer.imageDType() == DType::u8;
  Result<std::shared_ptr<void>> block =
      ex.allocateHostInput(imageCount * (bytes ? 1 : sizeof(float)));
  if (!block)
    return block.error();
  std::shared_ptr<const void> images = *block;
  // Random images: normal floats, or random bytes for a model that
  // normalizes on the device.
  for (size_t k = 0; k < imageCount; ++k)
    if (bytes)
      static_cast<uint8_t *>(block->get())[k] = uint8_t(rng());
    else
      static_cast<float *>(block->get())[k] = normal(rng);
  std::vector<int32_t> labels(static_cast<size_t>(batch));
  for (int32_t &y : labels)
    y = int32_t(rng() % uint64_t(trainer.classes()));

  BenchmarkResult result;
  result.loadSeconds = config.loadSeconds;
  int32_t step = 1;
  double hostSecs = 0; // the timed repetitions' host time, blocked time excluded
  auto run = [&](int64_t count, double &secs) -> Status {
    std::vector<StepInputs> steps;
    steps.reserve(size_t(count));
    for (int64_t i = 0; i < count; ++i)
      steps.push_back(Executor::trainInputs(images, imageCount, labels, float(config.lr),
                                            step + int32_t(i)));
    std::vector<StepOutputs> outs;
    auto start = std::chrono::steady_clock::now();
    double blocked = ex.hostBlockedSeconds();
    ScopedSpan span(trainer.spans(), std::to_string(count) + " steps (submit and drain)");
    Status st = ex.runPipelined("train", std::move(steps), outs);
    secs = secondsSince(start);
    hostSecs += secs - (ex.hostBlockedSeconds() - blocked);
    step += int32_t(count);
    if (st.ok() && !outs.empty()) {
      auto it = outs.back().find("loss");
      if (it != outs.back().end() && !it->second.floats.empty())
        result.loss = it->second.floats[0];
    }
    return st;
  };
  auto sampleMemory = [&] {
    result.peakMemoryBytes = std::max(result.peakMemoryBytes, deviceMemoryInUse(ex));
  };
  double secs = 0;
  if (Status st = run(1, secs); !st)
    return st.error().withContext("first step");
  result.firstStepSeconds = secondsSince(config.processStart);
  sampleMemory();
  if (config.warmup > 1)
    if (Status st = run(config.warmup - 1, secs); !st)
      return st.error().withContext("warmup");
  std::vector<double> ms;
  hostSecs = 0;
  for (int rep = 0; rep < 3; ++rep) {
    if (Status st = run(config.steps, secs); !st)
      return st.error().withContext("benchmark");
    ms.push_back(secs * 1000.0 / double(config.steps));
    sampleMemory();
  }
  std::sort(ms.begin(), ms.end());
  result.msPerStep = ms[1];
  result.hostMsPerStep = hostSecs * 1000.0 / double(3 * config.steps);
  result.convFloorMs = convFloorMs(ex);
  return result;
}

std::string benchmarkJson(Trainer &trainer, const BenchmarkResult &r) {
  const std::string_view executor = trainer.executor().name();
  const int gpus = trainer.group().worldSize;
  char line[1024];
  // Data-parallel: "batch" is one GPU's, "images_per_s" all GPUs' (the
  // ranks step together: every step ends in the all-reduce).
  std::snprintf(line, sizeof line,
                "{\"model\": \"%s\", \"executor\": \"%.*s\", \"batch\": %lld, \"gpus\": %d, "
                "\"ms_per_step\": %.3f, \"images_per_s\": %.0f, \"host_ms_per_step\": %.4f, "
                "\"load_s\": %.3f, \"first_step_s\": %.3f, \"peak_memory_inproc_bytes\": %zu, "
                "\"arena_bytes\": %llu, \"conv_floor_ms\": %.3f, \"loss\": %.6f}",
                trainer.program().model.c_str(), int(executor.size()), executor.data(),
                (long long)trainer.batch(), gpus, r.msPerStep,
                double(trainer.batch()) * double(gpus) * 1000.0 / r.msPerStep, r.hostMsPerStep,
                r.loadSeconds, r.firstStepSeconds, r.peakMemoryBytes,
                (unsigned long long)trainer.program().arena.bytes, r.convFloorMs, r.loss);
  return line;
}

} // namespace rn::train
