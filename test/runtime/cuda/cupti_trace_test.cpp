//===- cupti_trace_test.cpp - CUPTI records, labels and the Chrome trace -===//
//
// CuptiTraceBuild (no GPU needed, runs in CI): buildChromeTrace on made-up
// records: labeled and unlabeled work, the program-stream tracks in order,
// lanes for overlapping work, host spans, the origin.
//
// CuptiTraceGpu (skips without a CUDA device, or where CUPTI cannot be
// used: under compute-sanitizer or another profiler): one scenario shared
// by the tests, as the executors will use the trace. A CuptiTrace is
// created first; a relu and an add (the runtime's own kernels) are
// captured into a graph, each launch under its label, and instantiated;
// then, between start() and stop(): the same two kernels eagerly under
// other labels, a memset, a device-to-device copy, and two replays of the
// graph, each under a launch label. The tests check what each record
// carries: the eager kernels their labels; the graph's kernels the ids of
// the captured nodes (cudaGraphGetNodes + cuptiGetGraphNodeId) and the
// labels active at capture, although CUPTI reports the executable graph's
// node ids (clones); the launch labels; the copies' bytes; host and CUPTI
// clocks agreeing; and the Chrome trace of it all. RN_TRACE_TEST_OUT=FILE
// keeps that trace.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/cupti_check.h"
#include "runtime/cuda/cupti_trace.h"
#include "runtime/cuda/kernels.h"

#include "cuda_test_util.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

namespace rn::cuda {
namespace {

using json = nlohmann::json;
using testing::DeviceArray;
using testing::TestStream;

//===----------------------------------------------------------------------===//
// buildChromeTrace without a GPU
//===----------------------------------------------------------------------===//

ActivityRecord kernel(std::string name, uint64_t start, uint64_t end, uint32_t stream,
                      std::optional<uint64_t> label) {
  ActivityRecord r;
  r.kind = ActivityKind::kernel;
  r.name = std::move(name);
  r.startNs = start;
  r.endNs = end;
  r.streamId = stream;
  r.label = label;
  r.launchLabel = label;
  return r;
}

/// Labels 1xx go to COMP_1, 2xx to COMP_2, ...; "node N op".
std::optional<TraceLabel> byHundreds(const ActivityRecord &r) {
  if (!r.label)
    return std::nullopt;
  static const char *tracks[] = {"TRANS", "COMP_1", "COMP_2", "COMP_3", "UPDATE"};
  uint64_t stream = *r.label / 100;
  if (stream >= 5)
    return TraceLabel{"node " + std::to_string(*r.label), "EXTRA", {{"label", *r.label}}};
  return TraceLabel{"node " + std::to_string(*r.label % 100), tracks[stream],
                    {{"node", *r.label % 100}}};
}

std::map<int, std::string> threadNames(const json &trace, int pid) {
  std::map<int, std::string> names;
  for (const json &e : trace.at("traceEvents"))
    if (e.at("ph") == "M" && e.at("name") == "thread_name" && e.at("pid") == pid)
      names[e.at("tid").get<int>()] = e.at("args").at("name").get<std::string>();
  return names;
}

int tidOf(const std::map<int, std::string> &names, const std::string &name) {
  for (auto &[tid, n] : names)
    if (n == name)
      return tid;
  return -1;
}

std::vector<json> completeEvents(const json &trace, const std::string &name) {
  std::vector<json> out;
  for (const json &e : trace.at("traceEvents"))
    if (e.at("ph") == "X" && e.at("name") == name)
      out.push_back(e);
  return out;
}

TEST(CuptiTraceBuild, LabeledWorkOnProgramStreamTracks) {
  std::vector<ActivityRecord> records = {
      kernel("_Z4relu", 10'000, 12'000, 7, 103),
      kernel("_Z3add", 13'000, 15'500, 7, 305),
      kernel("_Z7library", 16'000, 17'000, 9, std::nullopt),
  };
  records[0].graphId = 4;
  records[0].graphNodeId = 77;
  records[0].capturedNodeId = 66;
  ActivityRecord::KernelLaunch launch;
  launch.grid[0] = 4, launch.grid[1] = 1024, launch.grid[2] = 1;
  launch.block[0] = 16, launch.block[1] = 16, launch.block[2] = 1;
  launch.registersPerThread = 56;
  launch.staticSharedBytes = 8192;
  launch.dynamicSharedBytes = 1024;
  launch.localBytesPerThread = 0;
  records[0].launch = launch;
  ActivityRecord copy;
  copy.kind = ActivityKind::memcpy;
  copy.name = "memcpy HtoD";
  copy.startNs = 9'000;
  copy.endNs = 9'500;
  copy.bytes = 4096;
  copy.label = 1;
  records.push_back(copy);
  std::vector<HostSpan> host = {{"main", "step 0", 8'000, 20'000, {{"step", 0}}}};

  json trace = buildChromeTrace(records, byHundreds, host).toJson();

  // Two processes; the five program streams named in order, even empty.
  auto gpu = threadNames(trace, kGpuPid);
  ASSERT_GE(gpu.size(), 6u);
  EXPECT_EQ(gpu[0], "TRANS");
  EXPECT_EQ(gpu[1], "COMP_1");
  EXPECT_EQ(gpu[2], "COMP_2");
  EXPECT_EQ(gpu[3], "COMP_3");
  EXPECT_EQ(gpu[4], "UPDATE");
  EXPECT_EQ(gpu[5], "CUDA stream 9"); // unlabeled work, under its CUDA stream
  auto host_ = threadNames(trace, kHostPid);
  EXPECT_NE(tidOf(host_, "main"), -1);

  auto relu = completeEvents(trace, "node 3");
  ASSERT_EQ(relu.size(), 1u);
  EXPECT_EQ(relu[0].at("pid"), kGpuPid);
  EXPECT_EQ(relu[0].at("tid"), tidOf(gpu, "COMP_1"));
  EXPECT_EQ(relu[0].at("cat"), "kernel");
  // Origin: the earliest record or span (the host span at 8 us).
  EXPECT_DOUBLE_EQ(relu[0].at("ts").get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(relu[0].at("dur").get<double>(), 2.0);
  const json &args = relu[0].at("args");
  EXPECT_EQ(args.at("node"), 3);
  EXPECT_EQ(args.at("cupti name"), "_Z4relu");
  EXPECT_EQ(args.at("graph node"), 66);
  EXPECT_EQ(args.at("exec graph node"), 77);
  EXPECT_EQ(args.at("cuda stream"), 7);
  // The launch configuration, for the kernels that have one.
  EXPECT_EQ(args.at("grid"), json::array({4, 1024, 1}));
  EXPECT_EQ(args.at("block"), json::array({16, 16, 1}));
  EXPECT_EQ(args.at("registers per thread"), 56);
  EXPECT_EQ(args.at("shared bytes"), 9216);
  EXPECT_EQ(args.at("local bytes per thread"), 0);

  auto add = completeEvents(trace, "node 5");
  ASSERT_EQ(add.size(), 1u);
  EXPECT_EQ(add[0].at("tid"), tidOf(gpu, "COMP_3"));
  EXPECT_FALSE(add[0].at("args").contains("registers per thread"));
  auto copyEvents = completeEvents(trace, "node 1");
  ASSERT_EQ(copyEvents.size(), 1u);
  EXPECT_EQ(copyEvents[0].at("tid"), tidOf(gpu, "TRANS"));
  EXPECT_EQ(copyEvents[0].at("cat"), "memcpy");
  EXPECT_EQ(copyEvents[0].at("args").at("bytes"), 4096);
  auto library = completeEvents(trace, "_Z7library");
  ASSERT_EQ(library.size(), 1u);
  EXPECT_EQ(library[0].at("tid"), tidOf(gpu, "CUDA stream 9"));
  auto step = completeEvents(trace, "step 0");
  ASSERT_EQ(step.size(), 1u);
  EXPECT_EQ(step[0].at("pid"), kHostPid);
  EXPECT_EQ(step[0].at("tid"), tidOf(host_, "main"));
  EXPECT_DOUBLE_EQ(step[0].at("ts").get<double>(), 0.0);
  EXPECT_DOUBLE_EQ(step[0].at("dur").get<double>(), 12.0);
  EXPECT_EQ(step[0].at("args").at("step"), 0);
}

TEST(CuptiTraceBuild, OverlappingWorkGoesToExtraLanesNestedWorkStays) {
  std::vector<ActivityRecord> records = {
      kernel("a", 1'000, 5'000, 1, 101), // COMP_1
      kernel("b", 3'000, 7'000, 2, 102), // overlaps a without nesting: lane 2
      kernel("c", 5'000, 6'000, 1, 103), // after a: lane 1 again
  };
  std::vector<HostSpan> host = {{"main", "step", 0, 10'000, nullptr},
                                {"main", "submit", 1'000, 2'000, nullptr}}; // nested
  TraceOptions options;
  options.originNs = 0;
  json trace = buildChromeTrace(records, byHundreds, host, options).toJson();
  auto gpu = threadNames(trace, kGpuPid);
  int lane1 = tidOf(gpu, "COMP_1"), lane2 = tidOf(gpu, "COMP_1 (2)");
  ASSERT_NE(lane1, -1);
  ASSERT_NE(lane2, -1);
  EXPECT_EQ(completeEvents(trace, "node 1")[0].at("tid"), lane1);
  EXPECT_EQ(completeEvents(trace, "node 2")[0].at("tid"), lane2);
  EXPECT_EQ(completeEvents(trace, "node 3")[0].at("tid"), lane1);
  auto host_ = threadNames(trace, kHostPid);
  EXPECT_EQ(host_.size(), 1u); // the nested span stays on "main"
  EXPECT_EQ(completeEvents(trace, "submit")[0].at("tid"), tidOf(host_, "main"));
  // The explicit origin.
  EXPECT_DOUBLE_EQ(completeEvents(trace, "node 1")[0].at("ts").get<double>(), 1.0);
}

TEST(CuptiTraceBuild, OptionsDropUnlabeledWorkAndShowApiCalls) {
  ActivityRecord api;
  api.kind = ActivityKind::runtimeApi;
  api.name = "cudaLaunchKernel_v7000";
  api.startNs = 100;
  api.endNs = 200;
  api.threadId = 42;
  ActivityRecord wait;
  wait.kind = ActivityKind::synchronization;
  wait.name = "event synchronize";
  wait.startNs = 300;
  wait.endNs = 900;
  wait.threadId = 42;
  std::vector<ActivityRecord> records = {kernel("lib", 150, 250, 3, std::nullopt), api, wait};

  json defaults = buildChromeTrace(records, byHundreds, {}).toJson();
  EXPECT_EQ(completeEvents(defaults, "lib").size(), 1u);
  EXPECT_TRUE(completeEvents(defaults, "cudaLaunchKernel_v7000").empty());
  ASSERT_EQ(completeEvents(defaults, "event synchronize").size(), 1u);
  EXPECT_NE(tidOf(threadNames(defaults, kHostPid), "waits, thread 42"), -1);

  TraceOptions options;
  options.unlabeledGpuWork = false;
  options.apiCalls = true;
  options.hostWaits = false;
  options.gpuTracks = {"COMP_1"};
  json trace = buildChromeTrace(records, byHundreds, {}, options).toJson();
  EXPECT_TRUE(completeEvents(trace, "lib").empty());
  EXPECT_TRUE(completeEvents(trace, "event synchronize").empty());
  auto calls = completeEvents(trace, "cudaLaunchKernel_v7000");
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].at("pid"), kHostPid);
  EXPECT_EQ(calls[0].at("tid"), tidOf(threadNames(trace, kHostPid), "CUDA API, thread 42"));
  EXPECT_EQ(threadNames(trace, kGpuPid).size(), 1u);
}

TEST(CuptiTraceBuild, RecordsWithoutTimesAreLeftOut) {
  std::vector<ActivityRecord> records = {kernel("untimed", 0, 0, 1, 101)};
  json trace = buildChromeTrace(records, byHundreds, {}).toJson();
  EXPECT_TRUE(completeEvents(trace, "node 1").empty());
}

//===----------------------------------------------------------------------===//
// The GPU scenario
//===----------------------------------------------------------------------===//

constexpr uint64_t kGraphRelu = 11, kGraphAdd = 12; // labels at capture
constexpr uint64_t kEagerRelu = 21, kEagerAdd = 22; // labels of the eager launches
constexpr uint64_t kReplay0 = 31, kReplay1 = 32;    // labels around cudaGraphLaunch
constexpr int64_t kElements = 1 << 16;

struct Scenario {
  std::string skip;  ///< why the GPU tests skip
  std::string error; ///< why the scenario failed
  std::vector<ActivityRecord> records;
  uint64_t capturedRelu = 0, capturedAdd = 0; ///< cuptiGetGraphNodeId of the captured nodes
  uint32_t graphId = 0, graphExecId = 0;
  uint64_t hostStartNs = 0, hostEndNs = 0; ///< steady_clock around start..stop, on CUPTI's clock
  int64_t clockDifferenceNs = 0;           ///< toCuptiNs(steady now) - now()
  uint64_t dropped = 0;
};

struct GraphHolder {
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  ~GraphHolder() {
    if (exec)
      cudaGraphExecDestroy(exec);
    if (graph)
      cudaGraphDestroy(graph);
  }
};

#define SCENARIO_CUDA(call)                                                              \
  do {                                                                                   \
    cudaError_t e_ = (call);                                                             \
    if (e_ != cudaSuccess) {                                                             \
      s.error = std::string(#call) + ": " + cudaGetErrorString(e_);                      \
      return s;                                                                          \
    }                                                                                    \
  } while (0)
#define SCENARIO_OK(expr)                                                                \
  do {                                                                                   \
    ::rn::Status st_ = (expr);                                                           \
    if (!st_.ok()) {                                                                     \
      s.error = std::string(#expr) + ": " + st_.error().message();                       \
      return s;                                                                          \
    }                                                                                    \
  } while (0)

Scenario runScenario() {
  Scenario s;
  if (!testing::cudaAvailable()) {
    cudaGetLastError();
    s.skip = "no CUDA device";
    return s;
  }
  Result<std::unique_ptr<CuptiTrace>> created = CuptiTrace::create();
  if (!created.ok()) {
    (cuptiUnavailable(created.error()) ? s.skip : s.error) = created.error().message();
    return s;
  }
  CuptiTrace &trace = **created;

  TestStream stream;
  if (!stream.get()) {
    s.error = "cudaStreamCreateWithFlags failed";
    return s;
  }
  std::vector<float> values(kElements);
  for (int64_t i = 0; i < kElements; ++i)
    values[size_t(i)] = float(i % 17) - 8.0f;
  DeviceArray x = testing::upload(values, {kElements}, DType::f32);
  DeviceArray y = testing::allocate({kElements}, DType::f32);
  DeviceArray z = testing::allocate({kElements}, DType::f32);
  if (!x.buffer.data() || !y.buffer.data() || !z.buffer.data()) {
    s.error = "cudaMalloc failed";
    return s;
  }
  const size_t bytes = size_t(kElements) * sizeof(float);
  // Warm-up (module loading) before anything is traced.
  SCENARIO_OK(unary(UnaryOp::relu, x.view, y.view, stream.get()));
  SCENARIO_OK(binary(BinaryOp::add, x.view, y.view, z.view, stream.get()));
  SCENARIO_CUDA(stream.sync());

  // Capture and instantiate while the trace exists but is not started, as
  // the cuda-graph executor does at load.
  GraphHolder g;
  SCENARIO_CUDA(cudaStreamBeginCapture(stream.get(), cudaStreamCaptureModeThreadLocal));
  Status captured = trace.pushLabel(kGraphRelu);
  if (captured.ok())
    captured = unary(UnaryOp::relu, x.view, y.view, stream.get());
  if (captured.ok())
    captured = trace.popLabel();
  if (captured.ok())
    captured = trace.pushLabel(kGraphAdd);
  if (captured.ok())
    captured = binary(BinaryOp::add, x.view, y.view, z.view, stream.get());
  if (captured.ok())
    captured = trace.popLabel();
  SCENARIO_CUDA(cudaStreamEndCapture(stream.get(), &g.graph));
  SCENARIO_OK(captured);
  size_t count = 0, roots = 0;
  SCENARIO_CUDA(cudaGraphGetNodes(g.graph, nullptr, &count));
  SCENARIO_CUDA(cudaGraphGetRootNodes(g.graph, nullptr, &roots));
  if (count != 2 || roots != 1) {
    s.error = "the captured graph has " + std::to_string(count) + " nodes and " +
              std::to_string(roots) + " roots, not 2 and 1";
    return s;
  }
  std::vector<cudaGraphNode_t> nodes(count);
  cudaGraphNode_t root = nullptr;
  SCENARIO_CUDA(cudaGraphGetNodes(g.graph, nodes.data(), &count));
  SCENARIO_CUDA(cudaGraphGetRootNodes(g.graph, &root, &roots));
  cudaGraphNode_t second = nodes[0] == root ? nodes[1] : nodes[0];
  for (cudaGraphNode_t node : nodes) {
    cudaGraphNodeType type;
    SCENARIO_CUDA(cudaGraphNodeGetType(node, &type));
    if (type != cudaGraphNodeTypeKernel) {
      s.error = "a captured node is not a kernel node";
      return s;
    }
  }
  Result<uint64_t> reluId = CuptiTrace::graphNodeId(root);
  Result<uint64_t> addId = CuptiTrace::graphNodeId(second);
  SCENARIO_OK(reluId.ok() ? Status::success() : Status(reluId.error()));
  SCENARIO_OK(addId.ok() ? Status::success() : Status(addId.error()));
  s.capturedRelu = *reluId;
  s.capturedAdd = *addId;
  SCENARIO_CUDA(cudaGraphInstantiate(&g.exec, g.graph, 0));
  Result<uint32_t> graphId = CuptiTrace::graphId(g.graph);
  Result<uint32_t> execId = CuptiTrace::graphExecId(g.exec);
  s.graphId = graphId.ok() ? *graphId : 0;
  s.graphExecId = execId.ok() ? *execId : 0;

  auto hostStart = std::chrono::steady_clock::now();
  SCENARIO_OK(trace.start());
  SCENARIO_OK(trace.pushLabel(kEagerRelu));
  SCENARIO_OK(unary(UnaryOp::relu, x.view, y.view, stream.get()));
  SCENARIO_OK(trace.popLabel());
  SCENARIO_OK(trace.pushLabel(kEagerAdd));
  SCENARIO_OK(binary(BinaryOp::add, x.view, y.view, z.view, stream.get()));
  SCENARIO_OK(trace.popLabel());
  SCENARIO_CUDA(cudaMemsetAsync(z.view.data, 0, bytes, stream.get()));
  SCENARIO_CUDA(cudaMemcpyAsync(y.view.data, x.view.data, bytes, cudaMemcpyDeviceToDevice,
                                stream.get()));
  for (uint64_t label : {kReplay0, kReplay1}) {
    SCENARIO_OK(trace.pushLabel(label));
    SCENARIO_CUDA(cudaGraphLaunch(g.exec, stream.get()));
    SCENARIO_OK(trace.popLabel());
  }
  SCENARIO_CUDA(stream.sync());
  auto hostEnd = std::chrono::steady_clock::now();
  SCENARIO_OK(trace.stop());
  s.hostStartNs = trace.toCuptiNs(hostStart);
  s.hostEndNs = trace.toCuptiNs(hostEnd);
  uint64_t cuptiNow = CuptiTrace::now();
  uint64_t steadyNow = trace.toCuptiNs(std::chrono::steady_clock::now());
  s.clockDifferenceNs = int64_t(steadyNow) - int64_t(cuptiNow);
  s.dropped = trace.droppedRecords();
  s.records = trace.takeRecords();
  return s;
}

class CuptiTraceGpu : public ::testing::Test {
protected:
  static void SetUpTestSuite() {
    scenario_ = new Scenario(runScenario());
    // CUPTI refused this process (compute-sanitizer, a profiler): a skip.
    if (!scenario_->error.empty() && cuptiUnavailable(Error(scenario_->error)))
      std::swap(scenario_->skip, scenario_->error);
  }
  static void TearDownTestSuite() {
    delete scenario_;
    scenario_ = nullptr;
  }
  void SetUp() override {
    if (!scenario_->skip.empty())
      GTEST_SKIP() << scenario_->skip;
    ASSERT_TRUE(scenario_->error.empty()) << scenario_->error;
  }
  static const Scenario &s() { return *scenario_; }

  static std::vector<ActivityRecord> kernels(bool fromGraph) {
    std::vector<ActivityRecord> out;
    for (const ActivityRecord &r : s().records)
      if (r.kind == ActivityKind::kernel && (r.graphNodeId != 0) == fromGraph)
        out.push_back(r);
    std::sort(out.begin(), out.end(),
              [](const ActivityRecord &a, const ActivityRecord &b) { return a.startNs < b.startNs; });
    return out;
  }
  static std::vector<ActivityRecord> labeled(uint64_t label) {
    std::vector<ActivityRecord> out;
    for (const ActivityRecord &r : s().records)
      if (r.kind == ActivityKind::kernel && r.label == label)
        out.push_back(r);
    return out;
  }

  static Scenario *scenario_;
};
Scenario *CuptiTraceGpu::scenario_ = nullptr;

TEST_F(CuptiTraceGpu, EagerKernelsCarryTheirLabels) {
  auto relu = labeled(kEagerRelu);
  auto add = labeled(kEagerAdd);
  ASSERT_EQ(relu.size(), 1u);
  ASSERT_EQ(add.size(), 1u);
  for (const ActivityRecord *r : {&relu[0], &add[0]}) {
    EXPECT_EQ(r->graphNodeId, 0u);
    EXPECT_EQ(r->capturedNodeId, 0u);
    EXPECT_EQ(r->graphId, 0u);
    EXPECT_EQ(r->launchLabel.value_or(0), r->label.value_or(1));
    EXPECT_FALSE(r->name.empty());
    EXPECT_GT(r->endNs, r->startNs);
    // Every kernel record carries its launch: some threads, some registers.
    ASSERT_TRUE(r->launch.has_value());
    EXPECT_GT(r->launch->block[0] * r->launch->block[1] * r->launch->block[2], 0u);
    EXPECT_GT(r->launch->grid[0] * r->launch->grid[1] * r->launch->grid[2], 0u);
    EXPECT_GT(r->launch->registersPerThread, 0u);
  }
  EXPECT_NE(relu[0].name, add[0].name);
  // One stream, in order.
  EXPECT_EQ(relu[0].streamId, add[0].streamId);
  EXPECT_LE(relu[0].endNs, add[0].startNs);
  // Nothing else ran eagerly under a label.
  for (const ActivityRecord &r : kernels(false))
    EXPECT_TRUE(r.label == kEagerRelu || r.label == kEagerAdd) << r.name;
}

TEST_F(CuptiTraceGpu, GraphKernelsMapToTheCapturedNodesAndTheirLabels) {
  auto graph = kernels(true);
  ASSERT_EQ(graph.size(), 4u) << "two replays of two kernels";
  EXPECT_NE(s().capturedRelu, s().capturedAdd);
  std::map<uint64_t, int> perNode;
  for (const ActivityRecord &r : graph) {
    ++perNode[r.capturedNodeId];
    if (r.capturedNodeId == s().capturedRelu)
      EXPECT_EQ(r.label.value_or(0), kGraphRelu) << "captured relu node " << r.capturedNodeId;
    else if (r.capturedNodeId == s().capturedAdd)
      EXPECT_EQ(r.label.value_or(0), kGraphAdd) << "captured add node " << r.capturedNodeId;
    else
      ADD_FAILURE() << "graph kernel " << r.name << " (exec node " << r.graphNodeId
                    << ") maps to node " << r.capturedNodeId << ", not a captured one ("
                    << s().capturedRelu << ", " << s().capturedAdd << ")";
  }
  EXPECT_EQ(perNode[s().capturedRelu], 2);
  EXPECT_EQ(perNode[s().capturedAdd], 2);
  // The same kernels as the eager launches of the same calls.
  auto eagerRelu = labeled(kEagerRelu), eagerAdd = labeled(kEagerAdd);
  ASSERT_EQ(eagerRelu.size(), 1u);
  ASSERT_EQ(eagerAdd.size(), 1u);
  for (const ActivityRecord &r : graph)
    EXPECT_EQ(r.name, r.capturedNodeId == s().capturedRelu ? eagerRelu[0].name : eagerAdd[0].name);
  // Each replay: relu, then add (the captured dependency); replays in order.
  EXPECT_EQ(graph[0].capturedNodeId, s().capturedRelu);
  EXPECT_EQ(graph[1].capturedNodeId, s().capturedAdd);
  EXPECT_EQ(graph[2].capturedNodeId, s().capturedRelu);
  EXPECT_EQ(graph[3].capturedNodeId, s().capturedAdd);
  for (size_t i = 1; i < graph.size(); ++i)
    EXPECT_LE(graph[i - 1].endNs, graph[i].startNs);
  // After the eager work on the same stream.
  EXPECT_LE(eagerAdd[0].endNs, graph[0].startNs);
}

TEST_F(CuptiTraceGpu, GraphNodeIdsAreTheExecutableGraphsClones) {
  // What the executor author needs to know: CUPTI's graphNodeId is not the
  // captured node's id; capturedNodeId is (see cupti_trace.h).
  auto graph = kernels(true);
  ASSERT_FALSE(graph.empty());
  for (const ActivityRecord &r : graph) {
    std::cout << "[ info     ] graph kernel: exec node " << r.graphNodeId << " -> captured node "
              << r.capturedNodeId << ", graphId " << r.graphId << "\n";
    EXPECT_NE(r.graphNodeId, r.capturedNodeId)
        << "CUPTI reported the captured node's id itself: the clone mapping is not needed";
  }
}

TEST_F(CuptiTraceGpu, GraphKernelsCarryTheGraphLaunchLabel) {
  auto graph = kernels(true);
  ASSERT_EQ(graph.size(), 4u);
  EXPECT_EQ(graph[0].launchLabel.value_or(0), kReplay0);
  EXPECT_EQ(graph[1].launchLabel.value_or(0), kReplay0);
  EXPECT_EQ(graph[2].launchLabel.value_or(0), kReplay1);
  EXPECT_EQ(graph[3].launchLabel.value_or(0), kReplay1);
  EXPECT_EQ(graph[0].correlationId, graph[1].correlationId);
  EXPECT_NE(graph[1].correlationId, graph[2].correlationId);
}

TEST_F(CuptiTraceGpu, GraphIdIsTheExecutableGraphsOrTheGraphs) {
  auto graph = kernels(true);
  ASSERT_FALSE(graph.empty());
  std::cout << "[ info     ] record graphId " << graph[0].graphId << ", cuptiGetGraphId "
            << s().graphId << ", cuptiGetGraphExecId " << s().graphExecId << "\n";
  for (const ActivityRecord &r : graph) {
    EXPECT_NE(r.graphId, 0u);
    EXPECT_TRUE(r.graphId == s().graphExecId || r.graphId == s().graphId) << r.graphId;
  }
}

TEST_F(CuptiTraceGpu, CopiesAndMemsetsAreRecorded) {
  const uint64_t bytes = uint64_t(kElements) * sizeof(float);
  int memsets = 0, copies = 0;
  for (const ActivityRecord &r : s().records) {
    if (r.kind == ActivityKind::memset && r.bytes == bytes)
      ++memsets;
    if (r.kind == ActivityKind::memcpy && r.bytes == bytes) {
      ++copies;
      EXPECT_EQ(r.name, "memcpy DtoD");
    }
  }
  EXPECT_EQ(memsets, 1);
  EXPECT_EQ(copies, 1);
  EXPECT_EQ(s().dropped, 0u);
}

TEST_F(CuptiTraceGpu, HostClockMapsOntoCuptis) {
  EXPECT_LT(std::abs(s().clockDifferenceNs), 1'000'000) << "steady_clock vs cuptiGetTimestamp";
  // Every GPU record lies within the host's start..stop window, give or
  // take CUPTI's conversion of GPU times (2 ms).
  const int64_t slack = 2'000'000;
  int gpuRecords = 0;
  for (const ActivityRecord &r : s().records) {
    if (!onGpu(r.kind))
      continue;
    ++gpuRecords;
    EXPECT_GE(int64_t(r.startNs), int64_t(s().hostStartNs) - slack) << r.name;
    EXPECT_LE(int64_t(r.endNs), int64_t(s().hostEndNs) + slack) << r.name;
  }
  EXPECT_GE(gpuRecords, 8);
}

TEST_F(CuptiTraceGpu, TraceHasTheProgramStreamAndHostTracks) {
  Labeler labeler = [](const ActivityRecord &r) -> std::optional<TraceLabel> {
    if (!r.label)
      return std::nullopt;
    switch (*r.label) {
    case kGraphRelu: return TraceLabel{"0 relu", "COMP_1", {{"node", 0}}};
    case kGraphAdd: return TraceLabel{"1 add", "COMP_2", {{"node", 1}}};
    case kEagerRelu: return TraceLabel{"eager relu", "COMP_3", {}};
    case kEagerAdd: return TraceLabel{"eager add", "COMP_3", {}};
    default: return std::nullopt;
    }
  };
  std::vector<HostSpan> host = {{"main", "traced work", s().hostStartNs, s().hostEndNs, nullptr}};
  trace::ChromeTrace built = buildChromeTrace(s().records, labeler, host);
  const char *keep = std::getenv("RN_TRACE_TEST_OUT");
  std::string path = keep && *keep ? keep : "/tmp/rn-cupti-trace-" + std::to_string(getpid()) + ".json";
  Status written = built.write(path);
  ASSERT_TRUE(written.ok()) << written.error().message();
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  json trace = json::parse(text.str());
  if (!(keep && *keep))
    std::remove(path.c_str());

  auto gpu = threadNames(trace, kGpuPid);
  for (const char *stream : {"TRANS", "COMP_1", "COMP_2", "COMP_3", "UPDATE"})
    EXPECT_NE(tidOf(gpu, stream), -1) << stream;
  auto hostTracks = threadNames(trace, kHostPid);
  int mainTid = tidOf(hostTracks, "main");
  EXPECT_NE(mainTid, -1);

  auto expectOn = [&](const std::string &name, const std::string &track, size_t n) {
    auto events = completeEvents(trace, name);
    ASSERT_EQ(events.size(), n) << name;
    for (const json &e : events) {
      EXPECT_EQ(e.at("pid"), kGpuPid) << name;
      EXPECT_EQ(e.at("tid"), tidOf(gpu, track)) << name;
      EXPECT_EQ(e.at("cat"), "kernel") << name;
      EXPECT_GT(e.at("dur").get<double>(), 0.0) << name;
    }
  };
  expectOn("0 relu", "COMP_1", 2);
  expectOn("1 add", "COMP_2", 2);
  expectOn("eager relu", "COMP_3", 1);
  expectOn("eager add", "COMP_3", 1);
  EXPECT_EQ(completeEvents(trace, "0 relu")[0].at("args").at("graph node"), s().capturedRelu);

  // The host span contains the GPU work, up to the clocks' slack.
  auto span = completeEvents(trace, "traced work");
  ASSERT_EQ(span.size(), 1u);
  EXPECT_EQ(span[0].at("pid"), kHostPid);
  EXPECT_EQ(span[0].at("tid"), mainTid);
  double from = span[0].at("ts").get<double>() - 2000.0;
  double to = from + 2000.0 + span[0].at("dur").get<double>() + 2000.0;
  for (const char *name : {"0 relu", "1 add", "eager relu", "eager add"})
    for (const json &e : completeEvents(trace, name)) {
      EXPECT_GE(e.at("ts").get<double>(), from) << name;
      EXPECT_LE(e.at("ts").get<double>() + e.at("dur").get<double>(), to) << name;
    }
  // The copies, unlabeled, on their CUDA stream's track.
  EXPECT_EQ(completeEvents(trace, "memcpy DtoD").size(), 1u);
  EXPECT_EQ(completeEvents(trace, "memset").size(), 1u);
}

TEST_F(CuptiTraceGpu, OneTracePerProcessAndLabelsBalance) {
  Result<std::unique_ptr<CuptiTrace>> first = CuptiTrace::create();
  ASSERT_TRUE(first.ok()) << first.error().message();
  Result<std::unique_ptr<CuptiTrace>> second = CuptiTrace::create();
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.error().message().find("exists already"), std::string::npos);
  Status pop = (*first)->popLabel();
  ASSERT_FALSE(pop.ok());
  EXPECT_NE(pop.error().message().find("no label"), std::string::npos);
  Status stop = (*first)->stop();
  EXPECT_FALSE(stop.ok());
  RN_ASSERT_STATUS_OK((*first)->start());
  EXPECT_FALSE((*first)->start().ok());
  RN_ASSERT_STATUS_OK((*first)->stop());
  first = Error("released");
  // Released: another may be made.
  Result<std::unique_ptr<CuptiTrace>> third = CuptiTrace::create();
  EXPECT_TRUE(third.ok()) << third.error().message();
}

} // namespace
} // namespace rn::cuda
