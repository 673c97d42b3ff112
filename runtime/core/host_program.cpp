//===- host_program.cpp - The walk of the step schedules ------------------===//
//
// See host_program.h.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/host_program.h"

#include <array>

namespace rn {

namespace {

Variant variantOfStep(int64_t step) { return step % 2 != 0 ? Variant::b : Variant::a; }

/// Records kept per event: waits reach at most two steps back, and a step
/// records an event at most once per variant.
constexpr size_t kRecordHistory = 8;
} // namespace

void HostProgram::stage(uint32_t fn, int64_t step,
                        const std::map<std::string, HostValue> *inputs) {
  actions.push_back({HostAction::Kind::stage, fn, nullptr, Variant::a, step, inputs, nullptr});
}
void HostProgram::launch(uint32_t fn, const Subgraph *sg, Variant variant, int64_t step,
                         StepOutputs *outputs) {
  actions.push_back({HostAction::Kind::launch, fn, sg, variant, step, nullptr, outputs});
}
void HostProgram::wait(uint32_t fn, const Subgraph *sg, Variant variant, int64_t step) {
  actions.push_back({HostAction::Kind::wait, fn, sg, variant, step, nullptr, nullptr});
}
void HostProgram::read(uint32_t fn, Variant variant, int64_t step, StepOutputs *outputs) {
  actions.push_back({HostAction::Kind::read, fn, nullptr, variant, step, nullptr, outputs});
}

Status checkStepInputs(const Function &fn, const std::map<std::string, HostValue> &inputs) {
  for (const auto &[name, value] : inputs) {
    const Binding *binding = nullptr;
    for (const Binding &b : fn.inputs)
      if (b.name == name)
        binding = &b;
    if (!binding)
      return Error("function " + fn.name + " has no input named '" + name + "'");
    const TensorInfo &t = fn.tensors[binding->tensor];
    if (!t.isHost())
      return Error("function " + fn.name + ": input " + name + " is not a host input");
    size_t n = size_t(numel(t.shape));
    const std::string where = "function " + fn.name + ": input " + name;
    // A u8 input takes bytes, any other no bytes: a batch of the wrong kind
    // is named as such, not as a count of zero.
    if (!value.pinned && t.dtype == DType::u8 && value.bytes.empty() && !value.floats.empty())
      return Error(where + " is ui8: it takes uint8 pixels (bytes), which the device "
                           "normalizes, not floats");
    if (!value.pinned && t.dtype != DType::u8 && !value.bytes.empty())
      return Error(where + " is " + std::string(dtypeName(t.dtype)) +
                   ": it takes floats, not uint8 pixels (the model normalizes no images on "
                   "the device)");
    size_t got = value.elements(t.dtype);
    if (got != n)
      return Error(where + " needs " + std::to_string(n) +
                   (t.dtype == DType::i32  ? " int32 values, got "
                    : t.dtype == DType::u8 ? " bytes, got "
                                           : " values, got ") +
                   std::to_string(got));
  }
  return Status::success();
}

Result<uint32_t> pipelinedFunction(const Program &p, std::string_view kind) {
  std::string k(kind);
  const Schedule *prologue = p.findSchedule(k + "_prologue");
  if (!prologue)
    return Error("the artifact has no " + k + "_prologue schedule");
  const Function *fn = p.findFunction(prologue->function);
  if (!fn)
    return Error("schedule " + prologue->name + ": no function " + prologue->function);
  return uint32_t(fn - p.functions.data());
}

Result<PipelineBuilder> PipelineBuilder::create(const Program &p, std::string_view kind,
                                                int64_t firstStep) {
  PipelineBuilder b;
  b.program_ = &p;
  b.kind_ = std::string(kind);
  const std::string &k = b.kind_;
  b.prologue_ = p.findSchedule(k + "_prologue");
  b.even_ = p.findSchedule(k + "_even");
  b.odd_ = p.findSchedule(k + "_odd");
  b.lastEven_ = p.findSchedule(k + "_last_even");
  b.lastOdd_ = p.findSchedule(k + "_last_odd");
  if (!b.prologue_ || !b.lastEven_ || !b.lastOdd_ || !b.even_ || !b.odd_)
    return Error("the artifact has no " + k + "_prologue/" + k + "_even/" + k + "_odd/" + k +
                 "_last_even/" + k + "_last_odd schedules");
  b.function_ = p.findFunction(b.prologue_->function);
  if (!b.function_)
    return Error("no function " + b.prologue_->function);
  for (const Schedule *s : {b.even_, b.odd_, b.lastEven_, b.lastOdd_})
    if (s->function != b.function_->name)
      return Error("schedule " + s->name + " runs function " + s->function + ", not " +
                   b.function_->name);
  b.fn_ = uint32_t(b.function_ - p.functions.data());
  b.nextStep_ = firstStep;
  return b;
}

/// Appends schedule `s` for `step`. The prologue fills the step's own
/// variant; elsewhere a launch on the other variant prefetches the next
/// step, whose inputs the host stages first.
Status PipelineBuilder::schedule(const Schedule &s, PendingStep &step, bool isPrologue,
                                 HostProgram &out) {
  Variant v = variantOfStep(step.step);
  bool staged = false;
  for (const Step &st : s.steps) {
    const Subgraph *sg = function_->findSubgraph(st.subgraph);
    if (!sg)
      return Error("schedule " + s.name + ": no subgraph " + st.subgraph);
    Variant sv = Variant::a;
    if (sg->doubleBuffered)
      sv = isPrologue ? v : st.variant.value_or(Variant::a);
    if (st.kind == Step::Kind::host_wait) {
      out.wait(fn_, sg, sv, step.step);
      continue;
    }
    PendingStep *target = &step;
    if (sg->doubleBuffered && sv != v) {
      size_t next = size_t(step.step + 1 - pending_.front().step);
      if (next >= pending_.size())
        return Error("schedule " + s.name + " prefetches a step after the last");
      target = &pending_[next];
      if (!staged)
        out.stage(fn_, target->step, &target->inputs.values);
      staged = true;
    }
    out.launch(fn_, sg, sv, target->step, &target->outputs);
    target->launches.emplace_back(sg, sv);
  }
  return Status::success();
}

Status PipelineBuilder::submit(std::vector<StepInputs> steps, HostProgram &out) {
  for (const StepInputs &s : steps)
    if (Status st = checkStepInputs(*function_, s.values); !st.ok())
      return st;
  for (StepInputs &s : steps) {
    PendingStep &p = pending_.emplace_back();
    p.fn = fn_;
    p.step = nextStep_++;
    p.inputs = std::move(s);
  }
  // Every unscheduled step with a successor can run its even/odd schedule.
  for (size_t i = 0; i + 1 < pending_.size(); ++i) {
    PendingStep &step = pending_[i];
    if (step.scheduled)
      continue;
    if (!started_) {
      out.stage(fn_, step.step, &step.inputs.values);
      if (Status st = schedule(*prologue_, step, true, out); !st.ok())
        return st;
      started_ = true;
    }
    bool isOdd = variantOfStep(step.step) == Variant::b;
    if (Status st = schedule(isOdd ? *odd_ : *even_, step, false, out); !st.ok())
      return st;
    step.scheduled = true;
  }
  return Status::success();
}

Status PipelineBuilder::drain(HostProgram &out) {
  if (pending_.empty() || pending_.back().scheduled) {
    started_ = false;
    return Status::success();
  }
  PendingStep &step = pending_.back();
  if (!started_) {
    out.stage(fn_, step.step, &step.inputs.values);
    if (Status st = schedule(*prologue_, step, true, out); !st.ok())
      return st;
  }
  bool isOdd = variantOfStep(step.step) == Variant::b;
  const Schedule &last = isOdd ? *lastOdd_ : *lastEven_;
  if (Status st = schedule(last, step, false, out); !st.ok())
    return st;
  // After a final host wait the host reads the step's outputs.
  if (!last.steps.empty() && last.steps.back().kind == Step::Kind::host_wait)
    out.read(fn_, variantOfStep(step.step), step.step, &step.outputs);
  step.scheduled = true;
  started_ = false;
  return Status::success();
}

Result<HostProgram> buildScheduleProgram(const Program &p, std::string_view name,
                                         const std::map<std::string, HostValue> &inputs,
                                         int64_t step, std::optional<Variant> variant) {
  const Schedule *s = p.findSchedule(name);
  if (!s)
    return Error("no schedule named '" + std::string(name) + "'");
  const Function *fn = p.findFunction(s->function);
  if (!fn)
    return Error("schedule " + s->name + ": no function " + s->function);
  uint32_t f = uint32_t(fn - p.functions.data());
  if (Status st = checkStepInputs(*fn, inputs); !st.ok())
    return st.error();
  HostProgram program;
  program.stage(f, step, &inputs);
  for (const Step &st : s->steps) {
    const Subgraph *sg = fn->findSubgraph(st.subgraph);
    if (!sg)
      return Error("schedule " + s->name + ": no subgraph " + st.subgraph);
    Variant v = Variant::a;
    if (sg->doubleBuffered)
      v = variant ? *variant : st.variant.value_or(Variant::a);
    if (st.kind == Step::Kind::host_wait)
      program.wait(f, sg, v, step);
    else
      program.launch(f, sg, v, step, nullptr);
  }
  return program;
}

Status runHostProgram(const HostProgram &program, HostPrimitives &primitives) {
  for (const HostAction &a : program.actions) {
    Status st;
    switch (a.kind) {
    case HostAction::Kind::stage:
      st = primitives.stage(a);
      break;
    case HostAction::Kind::launch:
      st = primitives.launch(a);
      break;
    case HostAction::Kind::wait:
      st = primitives.hostWait(a);
      break;
    case HostAction::Kind::read:
      st = primitives.read(a);
      break;
    }
    if (!st.ok())
      return st;
  }
  return Status::success();
}

//===----------------------------------------------------------------------===//
// EventBinder
//===----------------------------------------------------------------------===//

EventBinder::EventBinder(const Program &program)
    : history_(program.numEvents), lastOnSlot_(program.numEvents, {0, 0}) {}

EventSlot EventBinder::record(const Node &node, const Subgraph &sg, Variant variant,
                              int64_t step) {
  EventSlot slot{node.event, sg.doubleBuffered ? variant : Variant::a};
  RecordInstance r{step, variant, sg.doubleBuffered, ++serial_};
  auto &h = history_[node.event];
  h.push_back(r);
  if (h.size() > kRecordHistory)
    h.erase(h.begin());
  lastOnSlot_[node.event][size_t(slot.slot)] = r.serial;
  return slot;
}

Result<std::vector<EventSlot>> EventBinder::wait(const Node &node, const Subgraph &sg,
                                                 int64_t step,
                                                 std::vector<uint64_t> *boundRecords) {
  std::vector<EventSlot> out;
  const auto &h = history_[node.event];
  if (h.empty())
    return out;
  // The rule of docs/scheduling.md (the CPU executor's interleaving model):
  // between double-buffered subgraphs, the record `distance` steps back;
  // a single-variant wait on a double-buffered producer, the most recent
  // record of each variant; else the most recent record.
  std::vector<const RecordInstance *> bound;
  bool producerDoubled = h.back().doubled;
  if (producerDoubled && sg.doubleBuffered) {
    int64_t target = step - int64_t(node.distance);
    for (auto it = h.rbegin(); it != h.rend(); ++it)
      if (it->step == target) {
        bound.push_back(&*it);
        break;
      }
  } else if (producerDoubled) {
    std::array<bool, 2> seen{};
    for (auto it = h.rbegin(); it != h.rend(); ++it)
      if (!seen[size_t(it->variant)]) {
        seen[size_t(it->variant)] = true;
        bound.push_back(&*it);
      }
  } else {
    bound.push_back(&h.back());
  }
  for (const RecordInstance *r : bound) {
    EventSlot slot{node.event, r->doubled ? r->variant : Variant::a};
    uint64_t latest = lastOnSlot_[node.event][size_t(slot.slot)];
    if (latest != r->serial)
      return Error("event " + std::to_string(node.event) + ": the wait in subgraph " + sg.name +
                   " (step " + std::to_string(step) + ", distance " +
                   std::to_string(node.distance) + ") is bound to the record of step " +
                   std::to_string(r->step) +
                   ", but a later record of the same CUDA event slot was issued before it; "
                   "one CUDA event per event id and variant cannot express this schedule");
    out.push_back(slot);
    if (boundRecords)
      boundRecords->push_back(r->serial);
  }
  return out;
}

} // namespace rn
