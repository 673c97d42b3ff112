//===- capture_bindings_test.cpp - Event bindings of captured graphs ------===//
//
// The bindings the cuda-graph executor bakes into its graphs, derived from
// the checked-in programs: waits on records of the same launch become graph
// edges, waits on other launches' records event nodes, and schedules a
// fixed binding cannot express are rejected with the node named.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/capture_bindings.h"

#include "../cpu/executor_test_util.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace rn {
namespace {

/// Whether `sg` records `event` in a node before `node`.
bool recordedBefore(const Subgraph &sg, uint32_t event, size_t node) {
  for (size_t j = 0; j < node; ++j)
    if (sg.nodes[j].kind == Node::Kind::event_record && sg.nodes[j].event == event)
      return true;
  return false;
}

/// Whether any subgraph of `f` other than `sg` records `event`.
bool recordedElsewhere(const Function &f, const Subgraph &sg, uint32_t event) {
  for (const Subgraph &other : f.subgraphs)
    if (&other != &sg)
      for (const Node &n : other.nodes)
        if (n.kind == Node::Kind::event_record && n.event == event)
          return true;
  return false;
}

// Tests, on every checked-in program, that a wait at distance 0 on a record
// earlier in its own subgraph is a graph edge, that a wait on events only
// other subgraphs record is an event node on the record's slot, and that
// some records are marked for other launches.
TEST(CaptureBindings, EdgesInsideLaunchesEventNodesAcross) {
  for (const char *name :
       {"mlp.rnx", "cnn.rnx", "cbr.rnx", "dropout.rnx", "stochastic_depth.rnx"}) {
    SCOPED_TRACE(name);
    Artifact artifact = test_inputs::load(name);
    Result<CaptureBindings> b = CaptureBindings::analyze(artifact.program);
    ASSERT_TRUE(b.ok()) << b.error().message();
    EXPECT_GT(b->internalWaits(), 0u);
    EXPECT_GT(b->externalWaits(), 0u);
    EXPECT_GT(b->externalRecords(), 0u);
    for (const Function &f : artifact.program.functions)
      for (const Subgraph &sg : f.subgraphs)
        for (Variant v : {Variant::a, Variant::b})
          for (size_t i = 0; i < sg.nodes.size() && (v == Variant::a || sg.doubleBuffered);
               ++i) {
            const Node &n = sg.nodes[i];
            if (n.kind != Node::Kind::event_wait)
              continue;
            const NodeBinding &nb = b->at(sg, v, i);
            SCOPED_TRACE(sg.name + " node " + std::to_string(i));
            if (n.distance == 0 && recordedBefore(sg, n.event, i)) {
              ASSERT_EQ(nb.waits.size(), 1u);
              EXPECT_TRUE(nb.waits[0].internal);
              EXPECT_EQ(nb.waits[0].slot.event, n.event);
            } else if (!recordedBefore(sg, n.event, sg.nodes.size()) &&
                       recordedElsewhere(f, sg, n.event)) {
              EXPECT_FALSE(nb.waits.empty());
              for (const BoundWait &w : nb.waits)
                EXPECT_FALSE(w.internal);
            }
          }
  }
}

// Tests that the two variants of a double-buffered consumer of the prefetch
// wait on different slots of TRANSFER's record: A on A, B on B.
TEST(CaptureBindings, VariantsWaitOnTheirOwnSlot) {
  Artifact artifact = test_inputs::load("mlp.rnx");
  Result<CaptureBindings> b = CaptureBindings::analyze(artifact.program);
  ASSERT_TRUE(b.ok()) << b.error().message();
  const Function *f = artifact.program.findFunction("train_step");
  ASSERT_NE(f, nullptr);
  const Subgraph *transfer = f->findSubgraph("TRANSFER");
  const Subgraph *first = f->findSubgraph("FIRST_LAYER_FWD");
  ASSERT_TRUE(transfer && first && transfer->doubleBuffered && first->doubleBuffered);
  size_t checked = 0;
  for (size_t i = 0; i < first->nodes.size(); ++i) {
    const Node &n = first->nodes[i];
    if (n.kind != Node::Kind::event_wait || !recordedElsewhere(*f, *first, n.event) ||
        recordedBefore(*first, n.event, first->nodes.size()))
      continue;
    bool fromTransfer = false;
    for (const Node &r : transfer->nodes)
      fromTransfer |= r.kind == Node::Kind::event_record && r.event == n.event;
    if (!fromTransfer)
      continue;
    for (Variant v : {Variant::a, Variant::b}) {
      const NodeBinding &nb = b->at(*first, v, i);
      ASSERT_EQ(nb.waits.size(), 1u);
      EXPECT_EQ(nb.waits[0].slot.slot, v);
    }
    ++checked;
  }
  EXPECT_GT(checked, 0u);
}

// Tests that a schedule whose wait binds to a record that a later node of
// the same launch issues again is rejected, naming the event: TRANSFER
// waits on an event with distance 2; when TRANSFER itself records it (and
// nothing else does), a graph would hold an external wait and an external
// record of one event, whose order at launch CUDA does not define.
TEST(CaptureBindings, RejectsAWaitRecordedAgainInItsLaunch) {
  Artifact artifact = test_inputs::load("mlp.rnx");
  Subgraph *transfer = nullptr;
  for (Function &fn : artifact.program.functions)
    for (Subgraph &sg : fn.subgraphs)
      if (fn.name == "train_step" && sg.name == "TRANSFER")
        transfer = &sg;
  ASSERT_NE(transfer, nullptr);
  const Node wait = transfer->nodes.front();
  ASSERT_EQ(wait.kind, Node::Kind::event_wait);
  ASSERT_EQ(wait.distance, 2u);
  for (Function &fn : artifact.program.functions)
    for (Subgraph &sg : fn.subgraphs)
      sg.nodes.erase(std::remove_if(sg.nodes.begin(), sg.nodes.end(),
                                    [&](const Node &n) {
                                      return n.kind != Node::Kind::op && n.event == wait.event;
                                    }),
                     sg.nodes.end());
  Node record;
  record.kind = Node::Kind::event_record;
  record.event = wait.event;
  record.stream = wait.stream;
  transfer->nodes.insert(transfer->nodes.begin(), wait);
  transfer->nodes.push_back(record);
  Result<CaptureBindings> b = CaptureBindings::analyze(artifact.program);
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.error().message().find("event " + std::to_string(wait.event)), std::string::npos)
      << b.error().message();
  EXPECT_NE(b.error().message().find("records it again"), std::string::npos)
      << b.error().message();
}

} // namespace
} // namespace rn
