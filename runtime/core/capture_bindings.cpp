//===- capture_bindings.cpp - Event bindings fixed per captured graph -----===//
//
// See capture_bindings.h.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/capture_bindings.h"

#include <algorithm>
#include <functional>
#include <map>

namespace rn {

namespace {

size_t variantIndex(Variant v) { return v == Variant::a ? 0 : 1; }

bool sameSlot(EventSlot a, EventSlot b) { return a.event == b.event && a.slot == b.slot; }

/// Where a record was issued: its launch (in issue order) and node.
struct RecordSite {
  uint64_t launch = 0;
  const Subgraph *sg = nullptr;
  Variant variant = Variant::a;
  size_t node = 0;
};

std::string describe(const Subgraph &sg, Variant variant, size_t node) {
  std::string s = "subgraph " + sg.name;
  if (sg.doubleBuffered)
    s += std::string(" (variant ") + (variant == Variant::a ? "a" : "b") + ")";
  return s + ", node " + std::to_string(node);
}

/// The host programs rn-run produces: runs of train steps with eval runs
/// between them, each run ending in a drain, starting at even and odd steps.
Result<std::vector<HostProgram>> simulatedPrograms(const Program &program, int64_t stepsPerRun) {
  std::vector<std::string> kinds;
  for (const char *kind : {"train", "eval"})
    if (pipelinedFunction(program, kind).ok())
      kinds.push_back(kind);
  std::vector<HostProgram> programs;
  std::map<std::string, int64_t> next;
  for (int run = 0; run < 3; ++run)
    for (const std::string &kind : kinds) {
      Result<PipelineBuilder> builder = PipelineBuilder::create(program, kind, next[kind]);
      if (!builder.ok())
        return builder.error();
      // Alternate the run length so that runs start at even and odd steps.
      int64_t steps = stepsPerRun - (run % 2);
      HostProgram hp;
      if (Status st = builder->submit(std::vector<StepInputs>(size_t(steps)), hp); !st.ok())
        return st.error();
      if (Status st = builder->drain(hp); !st.ok())
        return st.error();
      next[kind] += steps;
      programs.push_back(std::move(hp));
    }
  return programs;
}

/// Walks every launch's event nodes through an EventBinder in issue order;
/// `onWait(sg, variant, node, bound waits, binder)` sees each wait's binding,
/// `onExternal(record site)` each record bound from another launch.
Status walk(const Program &program, const std::vector<HostProgram> &programs,
            const std::function<Status(const Subgraph &, Variant, size_t,
                                       const std::vector<BoundWait> &, const EventBinder &)>
                &onWait,
            const std::function<void(const RecordSite &)> &onExternal) {
  EventBinder binder(program);
  std::unordered_map<uint64_t, RecordSite> sites;
  uint64_t launch = 0;
  for (const HostProgram &hp : programs)
    for (const HostAction &a : hp.actions) {
      if (a.kind != HostAction::Kind::launch)
        continue;
      ++launch;
      for (size_t i = 0; i < a.sg->nodes.size(); ++i) {
        const Node &n = a.sg->nodes[i];
        if (n.kind == Node::Kind::event_record) {
          binder.record(n, *a.sg, a.variant, a.step);
          sites[binder.lastRecordSerial()] = {launch, a.sg, a.variant, i};
        } else if (n.kind == Node::Kind::event_wait) {
          std::vector<uint64_t> serials;
          Result<std::vector<EventSlot>> slots = binder.wait(n, *a.sg, a.step, &serials);
          if (!slots.ok())
            return slots.error().withContext(describe(*a.sg, a.variant, i));
          std::vector<BoundWait> bound;
          for (size_t k = 0; k < slots->size(); ++k) {
            const RecordSite &site = sites.at(serials[k]);
            bool internal = site.launch == launch;
            bound.push_back({(*slots)[k], internal});
            if (!internal)
              onExternal(site);
          }
          if (Status st = onWait(*a.sg, a.variant, i, bound, binder); !st.ok())
            return st;
        }
      }
    }
  return Status::success();
}

} // namespace

Result<CaptureBindings> CaptureBindings::analyze(const Program &program, int64_t stepsPerRun) {
  Result<std::vector<HostProgram>> programs = simulatedPrograms(program, stepsPerRun);
  if (!programs.ok())
    return programs.error().withContext("capture bindings");

  CaptureBindings out;
  for (const Function &f : program.functions)
    for (const Subgraph &sg : f.subgraphs)
      for (auto &byVariant : out.nodes_[&sg])
        byVariant.resize(sg.nodes.size());
  auto binding = [&](const Subgraph &sg, Variant v, size_t node) -> NodeBinding & {
    return out.nodes_.at(&sg)[variantIndex(v)][node];
  };

  // Pass 1: the union of every launch's binding per wait; records that
  // another launch waits on.
  Status first = walk(
      program, *programs,
      [&](const Subgraph &sg, Variant v, size_t node, const std::vector<BoundWait> &bound,
          const EventBinder &) -> Status {
        auto &plan = binding(sg, v, node).waits;
        for (const BoundWait &b : bound) {
          auto it = std::find_if(plan.begin(), plan.end(),
                                 [&](const BoundWait &p) { return sameSlot(p.slot, b.slot); });
          if (it == plan.end()) {
            plan.push_back(b);
          } else if (it->internal != b.internal) {
            return Error(describe(sg, v, node) + ": the wait on event " +
                         std::to_string(b.slot.event) +
                         " binds to a record inside its launch at one step and outside it at "
                         "another; a captured graph cannot express both");
          }
        }
        return Status::success();
      },
      [&](const RecordSite &site) { binding(*site.sg, site.variant, site.node).externalRecord = true; });
  if (!first.ok())
    return first.error().withContext("capture bindings");

  // Pass 2: at every launch, each slot of the fixed binding that this
  // launch's rule does not name must be one never recorded yet (a no-op
  // wait), and internal waits must always be bound.
  Status second = walk(
      program, *programs,
      [&](const Subgraph &sg, Variant v, size_t node, const std::vector<BoundWait> &bound,
          const EventBinder &binder) -> Status {
        for (const BoundWait &p : binding(sg, v, node).waits) {
          bool named = std::any_of(bound.begin(), bound.end(),
                                   [&](const BoundWait &b) { return sameSlot(b.slot, p.slot); });
          if (named)
            continue;
          if (p.internal || binder.everRecorded(p.slot))
            return Error(describe(sg, v, node) + ": the wait on event " +
                         std::to_string(p.slot.event) +
                         " binds to different records at different steps; a captured graph "
                         "fixes one binding");
        }
        return Status::success();
      },
      [](const RecordSite &) {});
  if (!second.ok())
    return second.error().withContext("capture bindings");

  // An external wait and a later external record of the same slot in one
  // graph: the order in which a graph launch resolves them is not defined.
  for (auto &[sg, variants] : out.nodes_)
    for (size_t v = 0; v < 2; ++v) {
      auto &nodes = variants[v];
      for (size_t i = 0; i < nodes.size(); ++i) {
        for (const BoundWait &w : nodes[i].waits) {
          if (w.internal)
            continue;
          for (size_t j = i + 1; j < nodes.size(); ++j) {
            const Node &r = sg->nodes[j];
            EventSlot slot{r.event, sg->doubleBuffered ? Variant(v) : Variant::a};
            if (r.kind == Node::Kind::event_record && nodes[j].externalRecord &&
                sameSlot(slot, w.slot))
              return Error("capture bindings: " + describe(*sg, Variant(v), i) +
                           " waits on event " + std::to_string(w.slot.event) +
                           " recorded outside its launch, and node " + std::to_string(j) +
                           " of the same launch records it again");
          }
        }
        for (const BoundWait &w : nodes[i].waits)
          ++(w.internal ? out.internalWaits_ : out.externalWaits_);
        if (nodes[i].externalRecord)
          ++out.externalRecords_;
      }
    }
  return out;
}

const NodeBinding &CaptureBindings::at(const Subgraph &sg, Variant variant, size_t node) const {
  return nodes_.at(&sg)[variantIndex(variant)][node];
}

} // namespace rn
