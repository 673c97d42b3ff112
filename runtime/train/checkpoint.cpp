//===- checkpoint.cpp - Saving and restoring a trainer's state ------------===//

#include "runtime/train/checkpoint.h"

#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <sys/stat.h>
#include <unistd.h>

namespace rn::train {

std::map<std::string, std::string> CheckpointInfo::metadata() const {
  return {
      {"rn.checkpoint", "1"},
      {"model", model},
      {"epoch", std::to_string(epoch)},
      {"step", std::to_string(step)},
      {"steps_per_epoch", std::to_string(stepsPerEpoch)},
      {"batch", std::to_string(batch)},
      {"seed", std::to_string(seed)},
      {"lr", std::to_string(lr)},
      {"epochs", std::to_string(epochs)},
  };
}

Status checkWritable(const std::string &path) {
  struct stat st;
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
    return Error("checkpoint path " + path + " is a directory");
  size_t slash = path.rfind('/');
  std::string dir = slash == std::string::npos ? "." : path.substr(0, slash + 1);
  std::string probe = dir + (dir.back() == '/' ? "" : "/") + ".rn-run-probe-XXXXXX";
  int fd = ::mkstemp(probe.data());
  if (fd < 0)
    return Error("cannot write the checkpoint " + path + ": " + std::strerror(errno));
  ::close(fd);
  ::unlink(probe.c_str());
  return Status::success();
}

Status saveCheckpoint(Trainer &trainer, const std::string &path,
                      const std::map<std::string, std::string> &metadata) {
  Result<NamedValues> state = trainer.stateDict();
  if (!state)
    return state.error();
  std::vector<TensorData> tensors;
  const std::vector<StateInfo> entries = trainer.state();
  // Each entry's role (and its parameter), so that a converter such as
  // rn.to_torch_state_dict never guesses a role from a name prefix.
  nlohmann::json roles = nlohmann::json::array();
  for (const StateInfo &e : entries) {
    nlohmann::json entry = {{"name", e.name}, {"role", e.role}};
    if (!e.of.empty())
      entry["of"] = e.of;
    roles.push_back(std::move(entry));
  }
  std::map<std::string, std::string> withRoles = metadata;
  withRoles[kCheckpointStateKey] = roles.dump();
  for (size_t i = 0; i < entries.size(); ++i) {
    const std::vector<float> &values = (*state)[i].second;
    TensorData t;
    t.name = entries[i].name;
    t.dtype = DType::f32;
    t.shape = entries[i].shape;
    t.data = values.data();
    t.bytes = values.size() * sizeof(float);
    tensors.push_back(t);
  }
  return writeSafetensors(path, tensors, withRoles);
}

std::string Checkpoint::meta(const std::string &key) const {
  auto it = file.metadata.find(key);
  return it == file.metadata.end() ? std::string() : it->second;
}

Result<Checkpoint> readCheckpoint(const std::string &path) {
  Result<Safetensors> file = readSafetensors(path);
  if (!file)
    return file.error();
  Checkpoint checkpoint{path, std::move(*file)};
  if (checkpoint.meta("rn.checkpoint") != "1")
    return Error(path + ": not an rn-run checkpoint (no rn.checkpoint metadata)");
  return checkpoint;
}

Status restoreCheckpoint(Trainer &trainer, const Checkpoint &checkpoint) {
  const std::string &path = checkpoint.path;
  const Safetensors &ck = checkpoint.file;
  const std::vector<StateInfo> entries = trainer.state();
  if (ck.tensors.size() != entries.size())
    return Error(path + ": holds " + std::to_string(ck.tensors.size()) +
                 " tensors, the model has " + std::to_string(entries.size()) +
                 " state entries");
  for (const StateInfo &e : entries) {
    const SafetensorsEntry *t = ck.find(e.name);
    if (!t)
      return Error(path + ": no tensor for state " + e.name);
    if (t->dtype != DType::f32 || t->shape != e.shape)
      return Error(path + ": tensor " + e.name + " is " +
                   std::string(safetensorsDTypeName(t->dtype)) + " " + shapeString(t->shape) +
                   ", expected F32 " + shapeString(e.shape));
    std::string_view bytes = ck.bytesOf(*t);
    std::vector<float> values(bytes.size() / sizeof(float));
    std::memcpy(values.data(), bytes.data(), bytes.size());
    if (Status s = trainer.writeState(e.name, values); !s)
      return s.error().withContext(path + ": state " + e.name);
  }
  return Status::success();
}

Result<int64_t> resumableEpoch(const Checkpoint &checkpoint, const std::string &model,
                               int64_t batch, int64_t stepsPerEpoch, uint64_t seed,
                               std::string *warning) {
  const std::string &path = checkpoint.path;
  if (checkpoint.meta("model") != model)
    return Error(path + ": a checkpoint of model '" + checkpoint.meta("model") +
                 "', the artifact is '" + model + "'");
  // rn.Trainer.save (Python) writes no epoch when it is not told the steps
  // per epoch, and a step past the epoch's end when it saves mid-epoch: a
  // run resumes from those in Python only, where the caller knows where its
  // data stood.
  const std::string step = checkpoint.meta("step"), epochs = checkpoint.meta("epoch"),
                    perEpoch = checkpoint.meta("steps_per_epoch");
  if (epochs.empty() || perEpoch.empty())
    return Error(path + ": saved at step " + step +
                 " without an epoch (rn.Trainer.save without steps_per_epoch); rn-run "
                 "--resume continues only from the end of an epoch");
  // The step at the end of the saved epoch, multiplied with an overflow
  // check: the metadata may hold any number.
  long long epochEnd = 0;
  if (__builtin_mul_overflow(std::strtoll(epochs.c_str(), nullptr, 10),
                             std::strtoll(perEpoch.c_str(), nullptr, 10), &epochEnd))
    return Error(path + ": damaged metadata: epoch " + epochs + " times steps_per_epoch " +
                 perEpoch + " is past the largest step count");
  if (!step.empty() && step != std::to_string(epochEnd))
    return Error(path + ": saved mid-epoch, at step " + step + " (" + epochs + " epochs of " +
                 perEpoch + " steps and part of the next); rn-run --resume continues only " +
                 "from the end of an epoch: save at an epoch boundary, or continue in Python " +
                 "with rn.Trainer.load");
  if (checkpoint.meta("steps_per_epoch") != std::to_string(stepsPerEpoch) ||
      checkpoint.meta("batch") != std::to_string(batch))
    return Error(path + ": saved with batch " + checkpoint.meta("batch") + " and " +
                 checkpoint.meta("steps_per_epoch") + " steps per epoch; this run has batch " +
                 std::to_string(batch) + " and " + std::to_string(stepsPerEpoch) +
                 " (use the same --limit-train and artifact)");
  if (warning && checkpoint.meta("seed") != std::to_string(seed))
    *warning = path + " was saved with --seed " + checkpoint.meta("seed") + ", this run uses " +
               std::to_string(seed) + "; the shuffling differs from an uninterrupted run";
  std::string text = checkpoint.meta("epoch");
  char *end = nullptr;
  long long epoch = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end || epoch < 1)
    return Error(path + ": bad epoch '" + text + "' in the metadata");
  return int64_t(epoch);
}

} // namespace rn::train
