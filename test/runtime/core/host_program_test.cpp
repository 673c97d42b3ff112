//===- host_program_test.cpp - The shared walk of the step schedules ------===//
//
// The host-program walk and the streaming Executor interface, through the
// CPU executor (the GPU executors share both): streamed steps give exactly
// the state and losses of one pipelined call, in sequential and
// interleaved mode, and the event mapping of EventBinder holds for every
// wait of the checked-in programs over many steps.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/host_program.h"

#include "../cpu/executor_test_util.h"

#include <gtest/gtest.h>

#include <random>

namespace rn {
namespace {

std::vector<StepInputs> randomSteps(const Executor &ex, int count, int32_t firstStep) {
  Result<std::vector<int64_t>> images = ex.inputShape("train_step", "images");
  Result<std::vector<int64_t>> labels = ex.inputShape("train_step", "labels");
  EXPECT_TRUE(images.ok() && labels.ok());
  int64_t n = 1;
  for (int64_t d : *images)
    n *= d;
  std::mt19937_64 rng(42);
  std::normal_distribution<float> normal;
  std::vector<StepInputs> steps;
  for (int i = 0; i < count; ++i) {
    HostBatch b;
    b.images.resize(size_t(n));
    for (float &x : b.images)
      x = normal(rng);
    b.labels.resize(size_t((*labels)[0]));
    for (int32_t &y : b.labels)
      y = int32_t(rng() % 3);
    steps.push_back(Executor::trainInputs(b, 0.05f, firstStep + i));
  }
  return steps;
}

void expectSameState(const Artifact &artifact, const Executor &a, const Executor &b) {
  for (const StateEntry &s : artifact.program.state) {
    if (!s.slot)
      continue;
    Result<std::vector<float>> x = a.readState(s.name), y = b.readState(s.name);
    ASSERT_TRUE(x.ok() && y.ok()) << s.name;
    EXPECT_EQ(*x, *y) << "state " << s.name;
  }
}

float lossOf(const StepOutputs &out) { return out.at("loss").floats.at(0); }

// Tests that steps submitted in pieces, polled and drained, give the losses
// and the state of the same steps run as one pipelined call.
void streamMatchesPipelined(const char *name, bool interleave) {
  Artifact artifact = test_inputs::load(name);
  CpuExecutor::Options options;
  options.interleave = interleave;
  std::unique_ptr<CpuExecutor> whole = test_inputs::makeExecutor(artifact, options);
  std::unique_ptr<CpuExecutor> streamed = test_inputs::makeExecutor(artifact, options);
  ASSERT_TRUE(whole && streamed);
  std::vector<StepInputs> steps = randomSteps(*whole, 7, 1);

  std::vector<StepOutputs> expected;
  Status st = whole->runPipelined("train", steps, expected);
  ASSERT_TRUE(st.ok()) << st.error().message();

  std::vector<StepOutputs> got;
  for (auto [begin, end] : {std::pair{0, 3}, std::pair{3, 4}, std::pair{4, 7}}) {
    std::vector<StepInputs> piece(steps.begin() + begin, steps.begin() + end);
    st = streamed->submit("train", piece);
    ASSERT_TRUE(st.ok()) << st.error().message();
    st = streamed->poll(got);
    ASSERT_TRUE(st.ok()) << st.error().message();
    // The newest step waits for its successor (it prefetches it).
    EXPECT_EQ(got.size(), size_t(end - 1));
    EXPECT_EQ(streamed->inFlight(), 1u);
  }
  st = streamed->drain(got);
  ASSERT_TRUE(st.ok()) << st.error().message();
  EXPECT_EQ(streamed->inFlight(), 0u);
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_EQ(lossOf(got[i]), lossOf(expected[i])) << "step " << i;
  expectSameState(artifact, *whole, *streamed);
  EXPECT_EQ(streamed->hazards(), 0u);
}

TEST(HostProgram, StreamedStepsMatchOnePipelinedCall) {
  streamMatchesPipelined("mlp.rnx", false);
  streamMatchesPipelined("cbr.rnx", false);
}

TEST(HostProgram, StreamedStepsMatchInterleaved) {
  streamMatchesPipelined("cnn.rnx", true);
}

// Tests that a kind switch while steps are in flight is refused, and that
// runPipelined needs an idle executor.
TEST(HostProgram, StreamingMisuseIsAnError) {
  Artifact artifact = test_inputs::load("mlp.rnx");
  std::unique_ptr<CpuExecutor> ex = test_inputs::makeExecutor(artifact);
  ASSERT_TRUE(ex);
  ASSERT_TRUE(ex->submit("train", randomSteps(*ex, 2, 1)).ok());
  Status st = ex->submit("eval", {});
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message().find("drain first"), std::string::npos)
      << st.error().message();
  std::vector<StepOutputs> out;
  st = ex->runPipelined("train", randomSteps(*ex, 1, 3), out);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message().find("in flight"), std::string::npos);
  ASSERT_TRUE(ex->drain(out).ok());
  EXPECT_EQ(out.size(), 2u);
}

// Tests the host inputs of a uint8 model: its images are bytes (a count of
// bytes, pinned blocks counted in elements), floats are refused with what
// the input takes, and a float model refuses bytes.
TEST(HostProgram, Uint8ImagesTakeBytes) {
  Artifact bytes = test_inputs::load("cbr-u8.rnx");
  const Function *train = bytes.program.findFunction("train_step");
  ASSERT_NE(train, nullptr);
  std::map<std::string, HostValue> inputs;
  inputs["images"].bytes.assign(4 * 6 * 6, 7);
  Status st = checkStepInputs(*train, inputs);
  EXPECT_TRUE(st.ok()) << st.error().message();
  inputs["images"].bytes.pop_back();
  st = checkStepInputs(*train, inputs);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().message(), "function train_step: input images needs 144 bytes, got 143");
  inputs["images"] = HostValue();
  inputs["images"].pinned = std::make_shared<std::vector<uint8_t>>(144);
  inputs["images"].pinnedElements = 144;
  EXPECT_TRUE(checkStepInputs(*train, inputs).ok());
  inputs["images"] = HostValue();
  inputs["images"].floats.assign(144, 0.5f);
  st = checkStepInputs(*train, inputs);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().message(),
            "function train_step: input images is ui8: it takes uint8 pixels (bytes), which the "
            "device normalizes, not floats");

  Artifact floats = test_inputs::load("cbr.rnx");
  inputs["images"] = HostValue();
  inputs["images"].bytes.assign(144, 7);
  st = checkStepInputs(*floats.program.findFunction("train_step"), inputs);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().message(),
            "function train_step: input images is f32: it takes floats, not uint8 pixels (the "
            "model normalizes no images on the device)");
}

// Tests that one CUDA event per (event id, slot) expresses every wait of the
// checked-in programs: the binder reports no wait bound to another record
// than the program's rule names, over 9 streamed steps and an evaluation.
TEST(HostProgram, EventMappingHoldsForCheckedInPrograms) {
  for (const char *name : {"mlp.rnx", "cbr.rnx", "cnn.rnx"}) {
    SCOPED_TRACE(name);
    Artifact artifact = test_inputs::load(name);
    Result<PipelineBuilder> builder = PipelineBuilder::create(artifact.program, "train", 0);
    ASSERT_TRUE(builder.ok()) << builder.error().message();
    std::unique_ptr<CpuExecutor> ex = test_inputs::makeExecutor(artifact);
    ASSERT_TRUE(ex);
    HostProgram program;
    ASSERT_TRUE(builder->submit(randomSteps(*ex, 9, 1), program).ok());
    ASSERT_TRUE(builder->drain(program).ok());
    EventBinder binder(artifact.program);
    size_t waits = 0, bound = 0;
    for (const HostAction &a : program.actions) {
      if (a.kind != HostAction::Kind::launch)
        continue;
      for (const Node &n : a.sg->nodes) {
        if (n.kind == Node::Kind::event_record) {
          binder.record(n, *a.sg, a.variant, a.step);
        } else if (n.kind == Node::Kind::event_wait) {
          Result<std::vector<EventSlot>> slots = binder.wait(n, *a.sg, a.step);
          ASSERT_TRUE(slots.ok()) << slots.error().message();
          ++waits;
          bound += slots->size();
          for (EventSlot e : *slots)
            EXPECT_EQ(e.event, n.event);
        }
      }
    }
    EXPECT_GT(waits, 0u);
    EXPECT_GT(bound, 0u);
  }
}

// Tests that a wait whose record was overwritten on its CUDA event slot by
// a later record is reported (a schedule the mapping cannot express).
TEST(HostProgram, EventBinderReportsAnOverwrittenSlot) {
  Program p;
  p.numEvents = 1;
  Subgraph producer, consumer;
  producer.name = "P";
  producer.doubleBuffered = true;
  consumer.name = "C";
  consumer.doubleBuffered = true;
  Node record;
  record.kind = Node::Kind::event_record;
  Node wait;
  wait.kind = Node::Kind::event_wait;
  wait.distance = 2;
  EventBinder binder(p);
  binder.record(record, producer, Variant::a, 0);
  binder.record(record, producer, Variant::a, 2); // same slot as step 0
  Result<std::vector<EventSlot>> slots = binder.wait(wait, consumer, 2);
  ASSERT_FALSE(slots.ok()) << "bound to step 0's record, overwritten by step 2's";
  EXPECT_NE(slots.error().message().find("cannot express"), std::string::npos)
      << slots.error().message();
  wait.distance = 0;
  slots = binder.wait(wait, consumer, 2);
  ASSERT_TRUE(slots.ok());
  ASSERT_EQ(slots->size(), 1u);
  EXPECT_EQ(slots->front().slot, Variant::a);
}

} // namespace
} // namespace rn
