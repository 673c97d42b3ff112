//===- executor.cpp - The batch-level calls shared by every executor ------===//

#include "runtime/core/executor.h"

namespace rn {

Result<std::vector<int64_t>> Executor::inputShape(std::string_view function,
                                                     std::string_view input) const {
  const Function *f = program().findFunction(function);
  if (!f)
    return Error("no function named '" + std::string(function) + "'");
  for (const Binding &b : f->inputs)
    if (b.name == input)
      return f->tensors[b.tensor].shape;
  return Error("function " + f->name + " has no input '" + std::string(input) + "'");
}

Status Executor::trainSteps(const std::vector<HostBatch> &batches,
                               const std::vector<float> &lrs, int32_t firstStep,
                               std::vector<TrainOutputs> &outputs) {
  outputs.clear();
  if (lrs.size() != batches.size())
    return Error("trainSteps: " + std::to_string(batches.size()) + " batches but " +
                 std::to_string(lrs.size()) + " learning rates");
  std::vector<StepInputs> steps(batches.size());
  for (size_t i = 0; i < batches.size(); ++i) {
    int32_t step = firstStep + int32_t(i);
    steps[i].values["images"].floats = batches[i].images;
    steps[i].values["labels"].ints = batches[i].labels;
    steps[i].values["lr"].floats = {lrs[i]};
    steps[i].values["step"].ints = {step};
    steps[i].rngStep = step;
  }
  std::vector<StepOutputs> out;
  Status st = runPipelined("train", steps, out);
  if (!st.ok())
    return st;
  outputs.resize(out.size());
  for (size_t i = 0; i < out.size(); ++i) {
    auto it = out[i].find("loss");
    if (it != out[i].end() && !it->second.floats.empty())
      outputs[i].loss = it->second.floats[0];
  }
  return Status::success();
}

Status Executor::trainStep(const HostBatch &batch, float lr, int32_t step,
                              TrainOutputs &outputs) {
  std::vector<TrainOutputs> out;
  Status st = trainSteps({batch}, {lr}, step, out);
  if (!st.ok())
    return st;
  outputs = out[0];
  return Status::success();
}

Status Executor::evalStep(const HostBatch &batch, EvalOutputs &outputs) {
  std::vector<StepInputs> steps(1);
  steps[0].values["images"].floats = batch.images;
  steps[0].values["labels"].ints = batch.labels;
  // eval_step runs no dropout: its key is irrelevant.
  std::vector<StepOutputs> out;
  Status st = runPipelined("eval", steps, out);
  if (!st.ok())
    return st;
  for (auto &[name, value] : out[0]) {
    if (name == "loss" && !value.floats.empty())
      outputs.loss = value.floats[0];
    else if (name == "correct")
      outputs.correct = !value.ints.empty()     ? value.ints[0]
                        : !value.floats.empty() ? int32_t(value.floats[0])
                                                : 0;
    else if (name == "logits")
      outputs.logits = std::move(value.floats);
  }
  return Status::success();
}

} // namespace rn
