//===- checkpoint.h - Saving and restoring a trainer's state ----*- C++ -*-===//
//
// A checkpoint is a safetensors file (runtime/core/safetensors.h) holding
// every state entry of the program (parameters, buffers, gradients,
// optimizer moments, ...) by its state name, as F32 in the entry's shape
// (i32 state as exact floats), plus string metadata that says where the run
// stood (docs/rn-run.md, "Checkpoints"). It is written to a temporary file
// in the same directory, flushed and renamed over the target, so an
// interrupted write leaves the previous checkpoint intact.
//
//===----------------------------------------------------------------------===//

#ifndef RN_RUNTIME_TRAIN_CHECKPOINT_H
#define RN_RUNTIME_TRAIN_CHECKPOINT_H

#include "runtime/core/safetensors.h"
#include "runtime/core/status.h"
#include "runtime/train/trainer.h"

#include <cstdint>
#include <map>
#include <string>

namespace rn::train {

/// Where a training run stood when it saved, and its shape: the metadata
/// rn-run writes (values as strings in the file).
struct CheckpointInfo {
  std::string model;          ///< the artifact's model name
  int64_t epoch = 0;          ///< epochs completed
  int64_t step = 0;           ///< training steps completed
  int64_t stepsPerEpoch = 0;
  int64_t batch = 0;          ///< one rank's
  uint64_t seed = 0;          ///< the shuffling seed
  double lr = 0;              ///< informational
  int64_t epochs = 0;         ///< informational

  /// "rn.checkpoint": "1" and the fields above.
  std::map<std::string, std::string> metadata() const;
};

/// Fails early if `path` cannot be written: a directory, or a file in a
/// directory where no temporary file can be created (the write creates one
/// there and renames it).
Status checkWritable(const std::string &path);

/// The checkpoint metadata key holding a JSON array of every entry's name,
/// role and, for per-parameter state, the parameter it belongs to
/// (`{"name": "grad.fc.weight", "role": "gradient", "of": "fc.weight"}`).
inline constexpr const char *kCheckpointStateKey = "rn.state";

/// Writes every state entry of `trainer` (drained first), `metadata` and
/// the entries' roles (kCheckpointStateKey) to `path` atomically: a temporary file in the same directory, flushed,
/// then renamed over `path`.
Status saveCheckpoint(Trainer &trainer, const std::string &path,
                      const std::map<std::string, std::string> &metadata);

/// A checkpoint read back: its file and metadata.
struct Checkpoint {
  std::string path;
  Safetensors file;

  /// A metadata value, or the empty string.
  std::string meta(const std::string &key) const;
};

/// Reads `path`; fails unless it is a safetensors file with the
/// rn.checkpoint metadata.
Result<Checkpoint> readCheckpoint(const std::string &path);

/// Writes every state entry from `checkpoint` into `trainer`; fails, naming
/// the entry, when one is missing or of another shape, or when the file
/// holds other tensors.
Status restoreCheckpoint(Trainer &trainer, const Checkpoint &checkpoint);

/// The epochs `checkpoint` completed, after checking that it belongs to
/// this run: the same model, batch and steps per epoch. A different seed is
/// allowed (the shuffling then differs) and described in `*warning`.
Result<int64_t> resumableEpoch(const Checkpoint &checkpoint, const std::string &model,
                               int64_t batch, int64_t stepsPerEpoch, uint64_t seed,
                               std::string *warning);

} // namespace rn::train

#endif // RN_RUNTIME_TRAIN_CHECKPOINT_H
