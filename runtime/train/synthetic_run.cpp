//===- synthetic_run.cpp - Training on the fixed synthetic dataset --------===//

#include "runtime/train/synthetic_run.h"

#include "runtime/train/data_source.h"
#include "runtime/train/state_digest.h"

#include <algorithm>
#include <chrono>

namespace rn::train {

Result<SyntheticRunResult> trainSynthetic(Trainer &trainer, const SyntheticRunConfig &config,
                                          const std::function<void(int64_t, float)> &onLoss) {
  constexpr int64_t kBatches = 8, kStepsPerGroup = 8;
  const ProcessGroup &group = trainer.group();
  const int64_t batch = trainer.batch(), globalBatch = batch * group.worldSize;
  const BatchShard shard = shardOfGlobalBatch(group, batch);
  std::vector<int64_t> exampleShape(trainer.imageShape().begin() + 1, trainer.imageShape().end());
  Result<MemoryDataSource> data =
      syntheticTeacherData(config.seed, kBatches * globalBatch, exampleShape, trainer.classes());
  if (!data)
    return data.error();
  SyntheticRunResult result;
  auto start = std::chrono::steady_clock::now();
  for (int64_t step0 = 0, count = 0; step0 < config.steps; step0 += count) {
    count = std::min(kStepsPerGroup, config.steps - step0);
    if (config.digestEvery > 0) // groups end where a digest is read
      count = std::min(count, config.digestEvery - step0 % config.digestEvery);
    const std::string steps =
        "steps " + std::to_string(step0 + 1) + "-" + std::to_string(step0 + count);
    std::vector<HostBatch> batches(static_cast<size_t>(count));
    std::vector<int64_t> indices(static_cast<size_t>(batch));
    for (int64_t i = 0; i < count; ++i) {
      for (int64_t k = 0; k < batch; ++k)
        indices[size_t(k)] = (step0 + i) % kBatches * globalBatch + shard.begin + k;
      HostBatch &b = batches[size_t(i)];
      b.images.resize(size_t(batch * trainer.imageSize()));
      b.labels.resize(size_t(batch));
      RN_RETURN_IF_ERROR(data->fillBatch(indices.data(), batch, b.images.data(), b.labels.data()));
      if (trainer.imageDType() == DType::u8) {
        // A model that normalizes on the device takes bytes: the images'
        // [-1, 1) spread over 0 to 255.
        b.pixels.resize(b.images.size());
        for (size_t k = 0; k < b.images.size(); ++k)
          b.pixels[k] = uint8_t(std::clamp((b.images[k] + 1.0f) * 128.0f, 0.0f, 255.0f));
        b.images.clear();
      }
    }
    Status st = trainer.runSteps(batches, std::vector<float>(size_t(count), float(config.lr)));
    std::vector<double> losses;
    for (const StepLoss &loss : trainer.takeLosses())
      losses.push_back(loss.loss);
    if (st.ok()) // the global batch's loss: the ranks' mean (equal shards)
      st = trainer.sumOverRanks(losses);
    if (!st)
      return st.error().withContext(steps);
    for (int64_t i = 0; i < count; ++i) {
      float loss = float(losses[size_t(i)] / double(group.worldSize));
      if (step0 + i == 0)
        result.firstLoss = loss;
      result.lastLoss = loss;
      if (onLoss)
        onLoss(step0 + i + 1, loss);
    }
    int64_t done = step0 + count;
    if (config.digestEvery > 0 && (done % config.digestEvery == 0 || done == config.steps)) {
      Result<nlohmann::json> digest = stateDigest(trainer.executor());
      if (!digest)
        return digest.error().withContext("state after step " + std::to_string(done));
      result.digests.push_back({{"step", done}, {"state", std::move(*digest)}});
    }
  }
  result.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

} // namespace rn::train
