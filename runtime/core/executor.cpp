//===- executor.cpp - The batch-level calls shared by every executor ------===//

#include "runtime/core/executor.h"

#include <algorithm>
#include <iterator>
#include <new>

namespace rn {

namespace {

/// The tensor of `function`'s host input `input`, or an error naming what
/// is missing.
Result<const TensorInfo *> inputTensor(const Program &program, std::string_view function,
                                       std::string_view input) {
  const Function *f = program.findFunction(function);
  if (!f)
    return Error("no function named '" + std::string(function) + "'");
  for (const Binding &b : f->inputs)
    if (b.name == input)
      return &f->tensors[b.tensor];
  return Error("function " + f->name + " has no input '" + std::string(input) + "'");
}

} // namespace

Result<std::vector<int64_t>> Executor::inputShape(std::string_view function,
                                                     std::string_view input) const {
  Result<const TensorInfo *> t = inputTensor(program(), function, input);
  if (!t)
    return t.error();
  return (*t)->shape;
}

Result<DType> Executor::inputDType(std::string_view function, std::string_view input) const {
  Result<const TensorInfo *> t = inputTensor(program(), function, input);
  if (!t)
    return t.error();
  return (*t)->dtype;
}

int64_t Executor::stepCounter(uint32_t function) const {
  return function < stepCounter_.size() ? stepCounter_[function] : 0;
}

size_t Executor::inFlight() const {
  return ready_.size() + (pipeline_ ? pipeline_->pending().size() : 0);
}

Status Executor::submit(std::string_view kind, std::vector<StepInputs> steps) {
  if (pipeline_ && pipeline_->kind() != kind)
    return Error("submit(" + std::string(kind) + ") while " + pipeline_->kind() +
                 " steps are in flight: drain first");
  if (!pipeline_) {
    Result<uint32_t> f = pipelinedFunction(program(), kind);
    if (!f.ok())
      return f.error();
    Result<PipelineBuilder> b = PipelineBuilder::create(program(), kind, stepCounter(*f));
    if (!b.ok())
      return b.error();
    pipeline_.emplace(std::move(*b));
  }
  // Submit in pieces that fit the executor's output slots, waiting for the
  // oldest steps where needed (their outputs wait in ready_ for poll).
  size_t limit = std::max<size_t>(maxStepsInFlight(), 2);
  size_t next = 0;
  while (next < steps.size()) {
    std::deque<PendingStep> &pending = pipeline_->pending();
    while (pending.size() + 1 > limit) {
      if (Status st = waitStep(pending.front()); !st.ok())
        return st;
      if (Status st = collectFront(ready_); !st.ok())
        return st;
    }
    size_t count = std::min(steps.size() - next, limit - pending.size());
    std::vector<StepInputs> piece(std::make_move_iterator(steps.begin() + long(next)),
                                  std::make_move_iterator(steps.begin() + long(next + count)));
    next += count;
    HostProgram program;
    if (Status st = pipeline_->submit(std::move(piece), program); !st.ok())
      return st;
    if (Status st = issue(program); !st.ok())
      return st;
  }
  return Status::success();
}

Status Executor::collectFront(std::vector<StepOutputs> &finished) {
  std::deque<PendingStep> &pending = pipeline_->pending();
  PendingStep &step = pending.front();
  if (Status st = collect(step); !st.ok())
    return st;
  finished.push_back(std::move(step.outputs));
  pending.pop_front();
  return Status::success();
}

Status Executor::poll(std::vector<StepOutputs> &finished) {
  for (StepOutputs &o : ready_)
    finished.push_back(std::move(o));
  ready_.clear();
  if (!pipeline_)
    return Status::success();
  std::deque<PendingStep> &pending = pipeline_->pending();
  while (!pending.empty() && pending.front().scheduled) {
    Result<bool> done = stepComplete(pending.front());
    if (!done.ok())
      return done.error();
    if (!*done)
      break;
    if (Status st = collectFront(finished); !st.ok())
      return st;
  }
  return Status::success();
}

Status Executor::drain(std::vector<StepOutputs> &finished) {
  for (StepOutputs &o : ready_)
    finished.push_back(std::move(o));
  ready_.clear();
  if (!pipeline_)
    return Status::success();
  HostProgram actions;
  Status st = pipeline_->drain(actions);
  if (st.ok())
    st = issue(actions);
  if (st.ok())
    st = synchronize();
  while (st.ok() && !pipeline_->pending().empty())
    st = collectFront(finished);
  uint32_t f = pipeline_->function();
  if (stepCounter_.size() < program().functions.size())
    stepCounter_.resize(program().functions.size(), 0);
  stepCounter_[f] = pipeline_->nextStep();
  pipeline_.reset();
  return st;
}

Status Executor::runPipelined(std::string_view kind, std::vector<StepInputs> steps,
                              std::vector<StepOutputs> &outputs) {
  outputs.clear();
  if (steps.empty())
    return Status::success();
  if (inFlight() != 0)
    return Error("runPipelined while " + std::to_string(inFlight()) +
                 " steps are in flight: drain first");
  if (steps.size() > maxStepsInFlight())
    return Error(std::string(name()) + ": " + std::to_string(steps.size()) +
                 " steps in one runPipelined call; at most " +
                 std::to_string(maxStepsInFlight()));
  Result<uint32_t> f = pipelinedFunction(program(), kind);
  if (!f.ok())
    return f.error();
  Result<PipelineBuilder> b = PipelineBuilder::create(program(), kind, stepCounter(*f));
  if (!b.ok())
    return b.error();
  pipeline_.emplace(std::move(*b));
  // One host program for all the steps, so that the CPU executor's
  // interleaved mode sees them as one concurrent execution.
  HostProgram program;
  Status st = pipeline_->submit(std::move(steps), program);
  if (st.ok())
    st = pipeline_->drain(program);
  if (st.ok())
    st = issue(program);
  if (!st.ok()) {
    pipeline_.reset();
    return st;
  }
  return drain(outputs);
}

Result<std::shared_ptr<void>> Executor::allocateHostInput(size_t bytes) {
  // 64-byte aligned like the GPU's page-locked blocks are (at least).
  void *p = ::operator new[](std::max<size_t>(bytes, 1), std::align_val_t(64), std::nothrow);
  if (!p)
    return Error("cannot allocate " + std::to_string(bytes) + " bytes of host input memory");
  return std::shared_ptr<void>(p, [](void *q) { ::operator delete[](q, std::align_val_t(64)); });
}

Result<std::shared_ptr<void>> Executor::allocateDeviceInput(size_t) {
  return Error("the " + std::string(name()) + " executor has no device memory for inputs");
}

StepInputs Executor::trainInputs(std::shared_ptr<const void> images, size_t imageCount,
                                 const std::vector<int32_t> &labels, float lr, int32_t step,
                                 bool imagesOnDevice) {
  StepInputs in;
  HostValue &x = in.values["images"];
  x.pinned = std::move(images);
  x.pinnedElements = imageCount;
  x.onDevice = imagesOnDevice;
  in.values["labels"].ints = labels;
  in.values["lr"].floats = {lr};
  in.values["step"].ints = {step};
  return in;
}

namespace {

/// The batch's images as the host value of an images input: its pixels
/// when it holds them (a ui8 input), else its floats.
HostValue imagesOf(const HostBatch &batch) {
  HostValue value;
  if (!batch.pixels.empty())
    value.bytes = batch.pixels;
  else
    value.floats = batch.images;
  return value;
}

} // namespace

StepInputs Executor::trainInputs(const HostBatch &batch, float lr, int32_t step) {
  StepInputs in;
  in.values["images"] = imagesOf(batch);
  in.values["labels"].ints = batch.labels;
  in.values["lr"].floats = {lr};
  in.values["step"].ints = {step};
  return in;
}

Status Executor::trainSteps(const std::vector<HostBatch> &batches,
                               const std::vector<float> &lrs, int32_t firstStep,
                               std::vector<TrainOutputs> &outputs) {
  outputs.clear();
  if (lrs.size() != batches.size())
    return Error("trainSteps: " + std::to_string(batches.size()) + " batches but " +
                 std::to_string(lrs.size()) + " learning rates");
  std::vector<StepInputs> steps(batches.size());
  for (size_t i = 0; i < batches.size(); ++i)
    steps[i] = trainInputs(batches[i], lrs[i], firstStep + int32_t(i));
  std::vector<StepOutputs> out;
  Status st = runPipelined("train", std::move(steps), out);
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
  steps[0].values["images"] = imagesOf(batch);
  steps[0].values["labels"].ints = batch.labels;
  // eval_step runs no dropout: its key is irrelevant.
  std::vector<StepOutputs> out;
  Status st = runPipelined("eval", std::move(steps), out);
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
