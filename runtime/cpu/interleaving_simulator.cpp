//===- interleaving_simulator.cpp - Randomized interleavings, hazard checks -===//
//
// See interleaving_simulator.h for the happens-before model.
//
//===----------------------------------------------------------------------===//

#include "runtime/cpu/interleaving_simulator.h"

#include <algorithm>
#include <array>
#include <deque>
#include <limits>
#include <map>
#include <optional>
#include <random>

namespace rn::cpu {

namespace {

/// Reads of one word kept by the hazard detector (pairwise unordered).
constexpr size_t kReaders = 4;
/// Records kept per event (waits reach at most two steps back).
constexpr size_t kRecordHistory = 16;

/// A vector clock over the simulation's threads (missing entries are 0).
using VClock = std::vector<uint32_t>;
uint32_t clockAt(const VClock &vc, uint32_t thread) {
  return thread < vc.size() ? vc[thread] : 0;
}
void merge(VClock &into, const VClock &from) {
  if (into.size() < from.size())
    into.resize(from.size(), 0);
  for (size_t i = 0; i < from.size(); ++i)
    into[i] = std::max(into[i], from[i]);
}

/// One access of the hazard detector: the accessing thread, its clock and
/// the site (index into State::sites; 0: none). Packed: the shadow holds
/// five per word.
#pragma pack(push, 2)
struct Epoch {
  uint32_t clock = 0;
  uint32_t site = 0;
  uint16_t thread = 0;
};
#pragma pack(pop)
static_assert(sizeof(Epoch) == 10);

/// Per-word access record (FastTrack-like): the last write and the reads
/// since, pruned to those no later read is ordered after.
struct Shadow {
  Epoch write;
  std::array<Epoch, kReaders> reads{};
};
static_assert(sizeof(Shadow) == 50);

/// Who made an access, for hazard messages.
struct Site {
  enum class Kind : uint8_t { none, device, stage, read };
  Kind kind = Kind::none;
  uint32_t launch = 0; ///< device: launch id
  uint32_t index = 0;  ///< device: node index; host: input/output binding
  int32_t part = -1;   ///< device: part of a forking op
  uint32_t fn = 0;     ///< host: function index
  int64_t step = 0;    ///< host: step
};

/// One issued event record.
struct RecordInstance {
  uint32_t launch = 0;
  int64_t step = 0;
  Variant variant = Variant::a;
  bool doubled = false; ///< recorded by a double-buffered subgraph
  bool executed = false;
  VClock clock; ///< the recording stream's clock, once executed
};

/// A thread of the simulation: the host (0) or a stream of a launch.
struct SimThread {
  VClock clock;
  bool busy = false;
};

/// A launch being simulated.
struct LaunchSim {
  uint32_t id = 0;
  uint32_t fn = 0;
  const Subgraph *sg = nullptr;
  Variant variant = Variant::a;
  int64_t step = 0;
  StepOutputs *outputs = nullptr;
  const SubgraphWork *items = nullptr;
  std::shared_ptr<LaunchSim> previous; ///< on the same primary stream
  VClock issueClock;                   ///< the host's clock when issued
  bool started = false, done = false;
  std::array<std::deque<uint32_t>, kStreams> queues;
  std::vector<std::vector<std::shared_ptr<RecordInstance>>> sources; ///< per wait item
  std::vector<std::shared_ptr<RecordInstance>> records;              ///< per record item
  std::vector<std::optional<VClock>> partDone;                        ///< per part item
  std::array<uint16_t, kStreams> thread{};
  std::array<bool, kStreams> forked{}, used{};
  size_t remaining = 0;
  VClock endClock;
};

/// Host waits and launches of a double-buffered subgraph are told apart by
/// variant.
std::pair<const Subgraph *, int> launchKey(const Subgraph *sg, Variant variant) {
  return {sg, sg->doubleBuffered ? int(variant) : -1};
}

} // namespace

std::string describeItem(const Program &p, const LaunchInfo &l, uint32_t node, int32_t part) {
  const Node &n = l.sg->nodes[node];
  std::string s = "function " + p.functions[l.fn].name + ", subgraph " + l.sg->name + " (";
  if (l.sg->doubleBuffered)
    s += std::string("variant ") + (l.variant == Variant::a ? "a" : "b") + ", ";
  s += "step " + std::to_string(l.step) + "), node " + std::to_string(node);
  if (n.kind == Node::Kind::op)
    s += " (" + n.op + (part >= 0 ? ", part " + n.parts[size_t(part)].role : "") + ")";
  Stream stream = part >= 0 ? n.parts[size_t(part)].stream : n.stream;
  return s + " on stream " + std::string(streamName(stream));
}

/// What persists across runs: the shadow words, the simulation's threads,
/// the event records and the hazards found.
struct InterleavingSimulator::State {
  const Program &program;
  std::mt19937_64 rng;
  std::vector<Shadow> shadow; ///< arena words, workspaces, host buffers
  std::vector<SimThread> threads;
  std::vector<Site> sites;
  std::vector<LaunchInfo> launches;
  std::vector<std::deque<std::shared_ptr<RecordInstance>>> eventHistory;
  std::map<std::pair<const Subgraph *, int>, std::shared_ptr<LaunchSim>> latestLaunch;
  std::array<std::shared_ptr<LaunchSim>, kStreams> lastOnPrimary;
  std::string firstHazard;
  uint64_t hazards = 0;

  explicit State(const Program &p) : program(p) {}

  uint32_t newSite(const Site &site) {
    sites.push_back(site);
    return uint32_t(sites.size() - 1);
  }

  std::string describe(const Program &p, uint32_t site) const {
    const Site &s = sites[site];
    switch (s.kind) {
    case Site::Kind::device:
      return describeItem(p, launches[s.launch], s.index, s.part);
    case Site::Kind::stage:
      return "the host's write of the staging buffer of input '" +
             p.functions[s.fn].inputs[s.index].name + "' of function " + p.functions[s.fn].name +
             " (step " + std::to_string(s.step) + ")";
    case Site::Kind::read:
      return "the host's read of output '" + p.functions[s.fn].outputs[s.index].name +
             "' of function " + p.functions[s.fn].name + " (step " + std::to_string(s.step) + ")";
    case Site::Kind::none:
      break;
    }
    return "nothing";
  }
};

InterleavingSimulator::InterleavingSimulator(const Program &program, size_t shadowWords,
                                             uint64_t seed)
    : state_(std::make_unique<State>(program)) {
  State &sim = *state_;
  sim.rng.seed(seed);
  sim.shadow.assign(shadowWords, Shadow());
  sim.threads.resize(1); // the host
  sim.threads[0].busy = true;
  sim.threads[0].clock.assign(1, 0);
  sim.sites.resize(1); // site 0: none
  sim.eventHistory.resize(program.numEvents);
}

InterleavingSimulator::~InterleavingSimulator() = default;

uint64_t InterleavingSimulator::hazards() const { return state_->hazards; }

Status InterleavingSimulator::run(const HostProgram &program, SimulatedExecutor &executor) {
  const Program &p = state_->program;
  State &sim = *state_;
  using Kind = HostAction::Kind;
  constexpr uint16_t kHost = 0;

  // Calls do not overlap: the device is idle, every earlier access is
  // ordered before the host.
  {
    VClock all;
    for (const SimThread &t : sim.threads)
      merge(all, t.clock);
    sim.threads[kHost].clock = all;
  }
  sim.firstHazard.clear();

  std::vector<std::shared_ptr<LaunchSim>> active; // issued, not complete

  // A hazard on tensor `tensor`, or on the workspace of stream `workspace`
  // when that is not negative.
  auto report = [&](const char *kind, uint32_t tensor, int workspace, uint32_t site,
                    uint32_t other) {
    ++sim.hazards;
    if (!sim.firstHazard.empty())
      return;
    std::string on = workspace >= 0
                         ? "workspace_" + std::string(streamName(Stream(workspace)))
                         : "tensor " + std::to_string(tensor);
    sim.firstHazard = std::string("hazard (") + kind + ") on " + on + ": " +
                     sim.describe(p, site) + " is not ordered after " + sim.describe(p, other);
  };
  // Checks (and records) an access of `thread` at `clock` to the shadow
  // words [begin, begin + count) of tensor `t` (or of the workspace of
  // stream `workspace`, when not negative).
  auto checkWords = [&](int64_t begin, int64_t count, uint32_t t, int workspace, bool write,
                        uint16_t thread, const VClock &vc, uint32_t clock, uint32_t site) {
    const uint32_t *known = vc.data();
    size_t threads = vc.size();
    // Whether `e` happens-before this access (its own thread: always).
    auto ordered = [&](const Epoch &e) {
      return e.thread == thread || (e.thread < threads && known[e.thread] >= e.clock);
    };
    const Epoch self{clock, site, thread};
    Shadow *sh = sim.shadow.data() + begin;
    for (int64_t w = 0; w < count; ++w, ++sh) {
      if (sh->write.site && !ordered(sh->write))
        report(write ? "write after write" : "read after write", t, workspace, site,
               sh->write.site);
      if (write) {
        for (Epoch &r : sh->reads)
          if (r.site) {
            if (!ordered(r))
              report("write after read", t, workspace, site, r.site);
            r = Epoch{};
          }
        sh->write = self;
      } else {
        // Keep the reads this one is not ordered after (a later write must
        // be ordered after them too); the others are implied by this one.
        Epoch *slot = nullptr;
        for (Epoch &r : sh->reads) {
          if (r.site) {
            if (!ordered(r))
              continue;
            r = Epoch{};
          }
          if (!slot)
            slot = &r;
        }
        if (!slot) // more unordered readers than kept: forget one
          slot = &sh->reads[0];
        *slot = self;
      }
    }
  };
  auto check = [&](uint32_t fn, uint32_t t, Variant variant, bool write, uint16_t thread,
                   const VClock &vc, uint32_t clock, uint32_t site) {
    auto [begin, count] = executor.shadowRange(fn, t, variant);
    if (begin >= 0)
      checkWords(begin, count, t, -1, write, thread, vc, clock, site);
  };

  // Binds a wait to its records (docs/scheduling.md, the happens-before
  // model): the record `distance` steps back between double-buffered
  // subgraphs, else the most recent one (of each variant).
  auto bind = [&](const Node &wait, const LaunchSim &l) {
    std::vector<std::shared_ptr<RecordInstance>> out;
    const auto &history = sim.eventHistory[wait.event];
    if (history.empty())
      return out;
    bool producerDoubled = history.back()->doubled;
    if (producerDoubled && l.sg->doubleBuffered) {
      int64_t target = l.step - int64_t(wait.distance);
      for (auto it = history.rbegin(); it != history.rend(); ++it)
        if ((*it)->step == target) {
          out.push_back(*it);
          break;
        }
    } else if (producerDoubled) {
      std::array<bool, 2> seen{};
      for (auto it = history.rbegin(); it != history.rend(); ++it)
        if (!seen[size_t((*it)->variant)]) {
          seen[size_t((*it)->variant)] = true;
          out.push_back(*it);
        }
    } else {
      out.push_back(history.back());
    }
    return out;
  };

  auto issue = [&](const HostAction &a) {
    auto l = std::make_shared<LaunchSim>();
    l->id = uint32_t(sim.launches.size());
    sim.launches.push_back({a.fn, a.sg, a.variant, a.step});
    l->fn = a.fn;
    l->sg = a.sg;
    l->variant = a.variant;
    l->step = a.step;
    l->outputs = a.outputs;
    l->items = &executor.work(*a.sg);
    l->issueClock = sim.threads[kHost].clock;
    auto &last = sim.lastOnPrimary[size_t(a.sg->primary)];
    l->previous = last;
    last = l;
    sim.latestLaunch[launchKey(a.sg, a.variant)] = l;
    const std::vector<WorkItem> &items = l->items->items;
    l->sources.resize(items.size());
    l->records.resize(items.size());
    l->partDone.resize(items.size());
    l->remaining = items.size();
    for (uint32_t k = 0; k < items.size(); ++k) {
      const Node &n = a.sg->nodes[items[k].node];
      if (n.kind == Node::Kind::event_record) {
        auto record = std::make_shared<RecordInstance>();
        record->launch = l->id;
        record->step = a.step;
        record->variant = a.variant;
        record->doubled = a.sg->doubleBuffered;
        auto &history = sim.eventHistory[n.event];
        history.push_back(record);
        if (history.size() > kRecordHistory)
          history.pop_front();
        l->records[k] = std::move(record);
      } else if (n.kind == Node::Kind::event_wait) {
        l->sources[k] = bind(n, *l);
      }
      l->queues[size_t(items[k].stream)].push_back(k);
    }
    active.push_back(std::move(l));
  };

  // The streams a launch uses: its primary and those of its items.
  auto streamsOf = [&](const LaunchSim &l) {
    std::array<bool, kStreams> has{};
    has[size_t(l.sg->primary)] = true;
    for (const WorkItem &it : l.items->items)
      has[size_t(it.stream)] = true;
    return has;
  };

  // A launch starts once the previous launch on its primary stream has
  // completed; each stream it uses gets a thread.
  auto start = [&](LaunchSim &l) -> Status {
    VClock begin = l.issueClock;
    if (l.previous) {
      merge(begin, l.previous->endClock);
      l.previous.reset();
    }
    std::array<bool, kStreams> needs = streamsOf(l);
    for (size_t s = 0; s < kStreams; ++s) {
      if (!needs[s])
        continue;
      // Reuse a free thread whose whole past this launch is ordered after.
      size_t u = 1;
      for (; u < sim.threads.size(); ++u)
        if (!sim.threads[u].busy &&
            clockAt(begin, uint32_t(u)) >= clockAt(sim.threads[u].clock, uint32_t(u)))
          break;
      if (u == sim.threads.size()) {
        if (u > std::numeric_limits<uint16_t>::max())
          return Error("interleaving: too many concurrent streams");
        sim.threads.emplace_back();
      }
      SimThread &t = sim.threads[u];
      t.busy = true;
      t.clock = begin;
      if (t.clock.size() <= u)
        t.clock.resize(u + 1, 0);
      l.thread[s] = uint16_t(u);
      l.used[s] = false;
    }
    l.forked[size_t(l.sg->primary)] = true;
    l.started = true;
    return Status::success();
  };

  // The launch completes: every node ran; its streams must be joined back.
  auto finish = [&](LaunchSim &l) -> Status {
    std::array<bool, kStreams> has = streamsOf(l);
    size_t primary = size_t(l.sg->primary);
    const VClock &pc = sim.threads[l.thread[primary]].clock;
    std::string error;
    for (size_t s = 0; s < kStreams; ++s) {
      if (!has[s])
        continue;
      uint16_t u = l.thread[s];
      merge(l.endClock, sim.threads[u].clock);
      if (error.empty() && s != primary && l.used[s] &&
          clockAt(pc, u) < clockAt(sim.threads[u].clock, u))
        error = "capture error: function " + p.functions[l.fn].name + ", subgraph " +
                l.sg->name + ": stream " + std::string(streamName(Stream(s))) +
                " is not joined back to the primary stream " +
                std::string(streamName(l.sg->primary));
    }
    for (size_t s = 0; s < kStreams; ++s)
      if (has[s])
        sim.threads[l.thread[s]].busy = false;
    l.done = true;
    l.sources.clear();
    l.records.clear();
    l.partDone.clear();
    if (!error.empty())
      return Error(error);
    return Status::success();
  };

  auto ready = [&](const LaunchSim &l, uint32_t k) {
    const WorkItem &it = l.items->items[k];
    const Node &n = l.sg->nodes[it.node];
    if (n.kind == Node::Kind::event_wait) {
      for (const auto &source : l.sources[k])
        if (!source->executed)
          return false;
      return true;
    }
    if (it.part >= 0)
      for (auto [earlier, later] : n.partWaits)
        if (later == uint32_t(it.part) &&
            !l.partDone[l.items->firstItem[it.node] + earlier])
          return false;
    return true;
  };

  // Runs the head of stream `s` of launch `l`.
  auto runItem = [&](LaunchSim &l, size_t s) -> Status {
    uint32_t k = l.queues[s].front();
    l.queues[s].pop_front();
    const WorkItem &it = l.items->items[k];
    const Node &n = l.sg->nodes[it.node];
    uint16_t u = l.thread[s];
    VClock &vc = sim.threads[u].clock;
    uint32_t clock = ++vc[u];
    l.used[s] = true;
    if (n.kind == Node::Kind::event_wait)
      for (const auto &source : l.sources[k])
        if (source->launch == l.id)
          l.forked[s] = true;
    if (!l.forked[s])
      return Error("capture error: " +
                   describeItem(p, sim.launches[l.id], it.node, it.part) +
                   " runs before the stream is forked from the primary stream " +
                   std::string(streamName(l.sg->primary)));
    if (n.kind == Node::Kind::event_record) {
      l.records[k]->clock = vc;
      l.records[k]->executed = true;
    } else if (n.kind == Node::Kind::event_wait) {
      for (const auto &source : l.sources[k])
        merge(vc, source->clock);
    } else {
      if (it.part >= 0)
        for (auto [earlier, later] : n.partWaits)
          if (later == uint32_t(it.part))
            merge(vc, *l.partDone[l.items->firstItem[it.node] + earlier]);
      Site site;
      site.kind = Site::Kind::device;
      site.launch = l.id;
      site.index = it.node;
      site.part = it.part;
      uint32_t siteId = sim.newSite(site);
      for (uint32_t t : it.access.reads)
        check(l.fn, t, l.variant, false, u, vc, clock, siteId);
      for (uint32_t t : it.access.writes)
        check(l.fn, t, l.variant, true, u, vc, clock, siteId);
      if (it.access.workspace >= 0)
        checkWords(it.access.workspace, 1, 0, int(it.stream), true, u, vc, clock, siteId);
      if (Status ran = executor.runItem(sim.launches[l.id], it, l.outputs); !ran.ok())
        return ran;
      if (it.part >= 0)
        l.partDone[k] = vc;
    }
    if (--l.remaining == 0)
      return finish(l);
    return Status::success();
  };

  auto hostReady = [&](const HostAction &a) {
    if (a.kind != Kind::wait)
      return true;
    auto it = sim.latestLaunch.find(launchKey(a.sg, a.variant));
    return it == sim.latestLaunch.end() || it->second->done;
  };
  auto runHost = [&](const HostAction &a) -> Status {
    const Function &fn = p.functions[a.fn];
    VClock &hc = sim.threads[kHost].clock;
    uint32_t clock = ++hc[kHost];
    switch (a.kind) {
    case Kind::stage:
      for (size_t b = 0; b < fn.inputs.size(); ++b) {
        if (!a.inputs->count(fn.inputs[b].name))
          continue;
        Site site;
        site.kind = Site::Kind::stage;
        site.index = uint32_t(b);
        site.fn = a.fn;
        site.step = a.step;
        check(a.fn, fn.inputs[b].tensor, a.variant, true, kHost, hc, clock, sim.newSite(site));
      }
      return executor.stage(a);
    case Kind::launch:
      issue(a);
      return Status::success();
    case Kind::wait: {
      auto it = sim.latestLaunch.find(launchKey(a.sg, a.variant));
      if (it != sim.latestLaunch.end())
        merge(hc, it->second->endClock);
      return Status::success();
    }
    case Kind::read:
      for (size_t o = 0; o < fn.outputs.size(); ++o) {
        Site site;
        site.kind = Site::Kind::read;
        site.index = uint32_t(o);
        site.fn = a.fn;
        site.step = a.step;
        check(a.fn, fn.outputs[o].tensor, a.variant, false, kHost, hc, clock,
              sim.newSite(site));
        executor.readOutput(a, o);
      }
      return Status::success();
    }
    return Status::success();
  };

  // On an error the call ends: pending launches are dropped (the next call
  // starts from an idle device again).
  auto abandon = [&](Error error) -> Status {
    for (auto &l : active) {
      if (l->started && !l->done) {
        std::array<bool, kStreams> has = streamsOf(*l);
        for (size_t s = 0; s < kStreams; ++s)
          if (has[s]) {
            merge(l->endClock, sim.threads[l->thread[s]].clock);
            sim.threads[l->thread[s]].busy = false;
          }
      }
      l->done = true;
      l->previous.reset();
      l->sources.clear();
      l->records.clear();
    }
    for (auto &history : sim.eventHistory)
      for (auto &record : history)
        record->executed = true;
    sim.firstHazard.clear();
    return error;
  };

  const std::vector<HostAction> &actions = program.actions;
  size_t next = 0; // the host's next action
  struct Candidate {
    LaunchSim *launch; // null: the host
    size_t stream;
  };
  std::vector<Candidate> candidates;
  while (true) {
    for (auto &l : active)
      if (!l->started && (!l->previous || l->previous->done)) {
        Status st = start(*l);
        if (st.ok() && l->remaining == 0) // an empty subgraph
          st = finish(*l);
        if (!st.ok())
          return abandon(st.error());
      }
    active.erase(std::remove_if(active.begin(), active.end(),
                                [](const auto &l) { return l->done; }),
                 active.end());
    candidates.clear();
    if (next < actions.size() && hostReady(actions[next]))
      candidates.push_back({nullptr, 0});
    for (auto &l : active)
      if (l->started && !l->done)
        for (size_t s = 0; s < kStreams; ++s)
          if (!l->queues[s].empty() && ready(*l, l->queues[s].front()))
            candidates.push_back({l.get(), s});
    if (candidates.empty()) {
      if (next == actions.size() && active.empty())
        break;
      std::string heads;
      if (next < actions.size())
        heads += "; the host waits for subgraph " + actions[next].sg->name;
      for (auto &l : active) {
        if (!l->started) {
          heads += "; subgraph " + l->sg->name + " waits for the previous launch on stream " +
                   std::string(streamName(l->sg->primary));
          continue;
        }
        for (size_t s = 0; s < kStreams; ++s)
          if (!l->queues[s].empty()) {
            const WorkItem &it = l->items->items[l->queues[s].front()];
            heads += "; waiting: " + describeItem(p, sim.launches[l->id], it.node, it.part);
          }
      }
      return abandon(Error("deadlock, nothing can proceed" + heads));
    }
    const Candidate &c = candidates[size_t(sim.rng() % candidates.size())];
    Status st = c.launch ? runItem(*c.launch, c.stream) : runHost(actions[next++]);
    if (!st.ok())
      return abandon(st.error());
  }
  if (!sim.firstHazard.empty()) {
    Error error(std::move(sim.firstHazard));
    sim.firstHazard.clear();
    return error;
  }
  return Status::success();
}

} // namespace rn::cpu
