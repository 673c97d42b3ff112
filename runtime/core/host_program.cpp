//===- host_program.cpp - The walk of the step schedules ------------------===//
//
// See host_program.h.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/host_program.h"

#include <array>

namespace rn {

namespace {
int64_t numel(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

Variant variantOfStep(int64_t step) { return step % 2 != 0 ? Variant::b : Variant::a; }

/// Records kept per event: waits reach at most two steps back, and a step
/// records an event at most once per variant.
constexpr size_t kRecordHistory = 8;
} // namespace

void HostProgram::stage(uint32_t fn, int64_t step,
                        const std::map<std::string, HostValue> *inputs) {
  actions.push_back({HostAction::Kind::stage, fn, nullptr, Variant::a, step, 0, inputs, nullptr});
}
void HostProgram::launch(uint32_t fn, const Subgraph *sg, Variant variant, int64_t step,
                         int32_t rngStep, StepOutputs *outputs) {
  actions.push_back({HostAction::Kind::launch, fn, sg, variant, step, rngStep, nullptr, outputs});
}
void HostProgram::wait(uint32_t fn, const Subgraph *sg, Variant variant, int64_t step) {
  actions.push_back({HostAction::Kind::wait, fn, sg, variant, step, 0, nullptr, nullptr});
}
void HostProgram::read(uint32_t fn, Variant variant, int64_t step, StepOutputs *outputs) {
  actions.push_back({HostAction::Kind::read, fn, nullptr, variant, step, 0, nullptr, outputs});
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
    bool ints = t.dtype == DType::i32;
    size_t got = ints ? value.ints.size() : value.floats.size();
    if (got != n)
      return Error("function " + fn.name + ": input " + name + " needs " + std::to_string(n) +
                   (ints ? " int32 values, got " : " values, got ") + std::to_string(got));
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

Result<HostProgram> buildPipelinedProgram(const Program &p, std::string_view kind,
                                          const std::vector<StepInputs> &steps,
                                          int64_t firstStep, std::vector<StepOutputs> &outputs) {
  HostProgram program;
  if (steps.empty())
    return program;
  std::string k(kind);
  const Schedule *prologue = p.findSchedule(k + "_prologue");
  const Schedule *even = p.findSchedule(k + "_even"), *odd = p.findSchedule(k + "_odd");
  const Schedule *lastEven = p.findSchedule(k + "_last_even");
  const Schedule *lastOdd = p.findSchedule(k + "_last_odd");
  if (!prologue || !lastEven || !lastOdd || (steps.size() > 1 && (!even || !odd)))
    return Error("the artifact has no " + k + "_prologue/" + k + "_even/" + k + "_odd/" + k +
                 "_last_even/" + k + "_last_odd schedules");
  const Function *fn = p.findFunction(prologue->function);
  if (!fn)
    return Error("no function " + prologue->function);
  for (const Schedule *s : {even, odd, lastEven, lastOdd})
    if (s && s->function != fn->name)
      return Error("schedule " + s->name + " runs function " + s->function + ", not " +
                   fn->name);
  if (outputs.size() != steps.size())
    return Error("buildPipelinedProgram: " + std::to_string(steps.size()) + " steps but " +
                 std::to_string(outputs.size()) + " output entries");
  uint32_t f = uint32_t(fn - p.functions.data());
  for (const StepInputs &s : steps)
    if (Status st = checkStepInputs(*fn, s.values); !st.ok())
      return st.error();

  program.stage(f, firstStep, &steps[0].values);
  // Adds schedule `s` for step `firstStep + i`. The prologue fills the
  // step's own variant; elsewhere a launch on the other variant prefetches
  // step i + 1, whose inputs the host stages first.
  auto add = [&](const Schedule &s, size_t i, bool isPrologue) -> Status {
    int64_t step = firstStep + int64_t(i);
    Variant v = variantOfStep(step);
    bool staged = false;
    for (const Step &st : s.steps) {
      const Subgraph *sg = fn->findSubgraph(st.subgraph);
      if (!sg)
        return Error("schedule " + s.name + ": no subgraph " + st.subgraph);
      Variant sv = Variant::a;
      if (sg->doubleBuffered)
        sv = isPrologue ? v : st.variant.value_or(Variant::a);
      if (st.kind == Step::Kind::host_wait) {
        program.wait(f, sg, sv, step);
        continue;
      }
      size_t target = i;
      if (sg->doubleBuffered && sv != v) {
        target = i + 1;
        if (target >= steps.size())
          return Error("schedule " + s.name + " prefetches a step after the last");
        if (!staged)
          program.stage(f, step + 1, &steps[target].values);
        staged = true;
      }
      program.launch(f, sg, sv, firstStep + int64_t(target), steps[target].rngStep,
                     &outputs[target]);
    }
    return Status::success();
  };
  if (Status st = add(*prologue, 0, true); !st.ok())
    return st.error();
  for (size_t i = 0; i < steps.size(); ++i) {
    bool isOdd = variantOfStep(firstStep + int64_t(i)) == Variant::b;
    bool last = i + 1 == steps.size();
    const Schedule *s = last ? (isOdd ? lastOdd : lastEven) : (isOdd ? odd : even);
    if (Status st = add(*s, i, false); !st.ok())
      return st.error();
    // After a final host wait the host reads the step's outputs.
    if (!s->steps.empty() && s->steps.back().kind == Step::Kind::host_wait)
      program.read(f, variantOfStep(firstStep + int64_t(i)), firstStep + int64_t(i),
                   &outputs[i]);
  }
  return program;
}

Result<HostProgram> buildScheduleProgram(const Program &p, std::string_view name,
                                         const std::map<std::string, HostValue> &inputs,
                                         int64_t step, int32_t rngStep,
                                         std::optional<Variant> variant) {
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
      program.launch(f, sg, v, step, rngStep, nullptr);
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

void EventBinder::clear() {
  for (auto &h : history_)
    h.clear();
  for (auto &s : lastOnSlot_)
    s = {0, 0};
}

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
                                                 Variant variant, int64_t step) {
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
  }
  return out;
}

} // namespace rn
