//===- bn_engines_bench_test.cpp - cuDNN's norm engines against ours ------===//
//
// Issue 46's first measurement: cuDNN's runtime-fusion batch-norm graphs
// (the frontend's batchnorm + add + ReLU, the NormAddRelu pattern, and
// dReLU + batchnorm_backward, the DReluForkDNorm one) against RN's BN
// passes at every batch-norm shape of ResNet-50 (batch 256, 224x224) and of
// ResNet-18 on CIFAR (batch 256 and 1024), f16 activations with f32
// statistics and parameters, NHWC. Per shape and pattern one line: RN's
// time, cuDNN's fastest plan (every plan its heuristics and fallback list
// offer is built and timed) with its engine name, and their ratio, or why
// cuDNN has no plan. RN_CUDA_BENCH=1 runs them; no timing is asserted, and
// nothing here checks values (the patterns' results are checked where one
// is adopted). Every test skips when no CUDA device answers.
//
// RN's side is what the step runs today: the forward's Welford statistics
// pass and its apply (+ residual add) + ReLU pass; the backward's
// bnBackward with the mask recomputed from the stored ReLU result (two
// passes over dy and x), and bnAddReluBackward, which also writes the
// shortcut's gradient. cuDNN's forward also updates the running statistics
// in the same graph, which RN does in a [C]-sized kernel of its own (not
// timed here: microseconds).
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/check.h"
#include "runtime/cuda/norm_kernels.h"
#include "conv_test_util.h"

#include <cudnn_frontend.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace rn::cuda {
namespace {

using namespace conv_test;
namespace fe = cudnn_frontend;
using FeTensor = std::shared_ptr<fe::graph::Tensor_attributes>;

/// A batch norm's input [batch, hw, hw, channels].
struct BnShape {
  int64_t batch, hw, channels;
};

/// ResNet-50's batch-norm inputs at batch 256 (the stem's, then each
/// stage's narrow and wide ones), and ResNet-18's on CIFAR at 256 and 1024.
std::vector<BnShape> bnShapes() {
  std::vector<BnShape> shapes = {{256, 112, 64},  {256, 56, 64},   {256, 56, 256},
                                 {256, 28, 128},  {256, 28, 512},  {256, 14, 256},
                                 {256, 14, 1024}, {256, 7, 512},   {256, 7, 2048}};
  for (int64_t batch : {256, 1024})
    for (BnShape s : {BnShape{0, 32, 64}, BnShape{0, 16, 128}, BnShape{0, 8, 256},
                      BnShape{0, 4, 512}}) {
      s.batch = batch;
      shapes.push_back(s);
    }
  return shapes;
}

std::string shapeName(const BnShape &s) {
  char text[64];
  std::snprintf(text, sizeof text, "[%lld,%lld,%lld,%lld]", (long long)s.batch, (long long)s.hw,
                (long long)s.hw, (long long)s.channels);
  return text;
}

/// An NHWC activation of the graph (dimensions in cuDNN's NCHW order).
FeTensor activation(fe::graph::Graph &graph, const char *name, const BnShape &s,
                    fe::DataType_t type = fe::DataType_t::HALF) {
  const int64_t c = s.channels, hw = s.hw;
  return graph.tensor(fe::graph::Tensor_attributes()
                          .set_name(name)
                          .set_dim({s.batch, c, hw, hw})
                          .set_stride({c * hw * hw, 1, c * hw, c})
                          .set_data_type(type));
}

/// A per-channel f32 vector [1, C, 1, 1].
FeTensor channelVector(fe::graph::Graph &graph, const char *name, int64_t c) {
  return graph.tensor(fe::graph::Tensor_attributes()
                          .set_name(name)
                          .set_dim({1, c, 1, 1})
                          .set_stride({c, 1, c, c})
                          .set_data_type(fe::DataType_t::FLOAT));
}

/// The fastest plan of a built graph, or why there is none.
struct PlanTime {
  double ms = -1;
  std::string engine; ///< its name, or the failure
};

/// Builds every plan cuDNN offers for `graph` (heuristics A, then the
/// fallback list) and times each on `gpu`'s stream with the tensors of
/// `pack` (device pointers).
PlanTime fastestPlan(fe::graph::Graph &graph,
                     std::unordered_map<FeTensor, void *> &pack, Gpu &gpu) {
  PlanTime best;
  auto failed = [&best](const char *step, fe::error_t e) {
    best.engine = std::string(step) + ": " + e.get_message().substr(0, 160);
    return best;
  };
  cudnnHandle_t handle = gpu.resources.cudnn;
  if (auto e = graph.validate(); e.is_bad())
    return failed("validate", e);
  if (auto e = graph.build_operation_graph(handle); e.is_bad())
    return failed("build_operation_graph", e);
  if (auto e = graph.create_execution_plans({fe::HeurMode_t::A, fe::HeurMode_t::FALLBACK});
      e.is_bad())
    return failed("create_execution_plans", e);
  if (auto e = graph.check_support(); e.is_bad())
    return failed("check_support", e);
  if (auto e = graph.build_plans(fe::BuildPlanPolicy_t::ALL); e.is_bad())
    return failed("build_plans", e);
  for (int64_t plan = 0; plan < graph.get_execution_plan_count(); ++plan) {
    int64_t workspaceBytes = 0;
    if (graph.get_workspace_size_plan_at_index(plan, workspaceBytes).is_bad())
      continue;
    void *workspace = gpu.allocate(size_t(std::max<int64_t>(workspaceBytes, 1)));
    const double ms = streamMs(gpu.resources.stream, [&]() -> Status {
      if (graph.execute_plan_at_index(handle, pack, workspace, plan).is_bad())
        return Error("cuDNN plan failed");
      return Status::success();
    });
    std::string name;
    if (ms >= 0 && (best.ms < 0 || ms < best.ms) &&
        graph.get_plan_name_at_index(plan, name).is_good()) {
      best.ms = ms;
      best.engine = name;
    }
  }
  if (best.ms < 0 && best.engine.empty())
    best.engine = "no plan ran";
  return best;
}

/// "0.123 ms (x0.91, ENGINE)", or "no plan (WHY)".
std::string cudnnText(double oursMs, const PlanTime &t) {
  if (t.ms < 0)
    return "no plan (" + t.engine + ")";
  return timeText(t.ms) + ratioText(oursMs, t.ms) + " [" + t.engine + "]";
}

/// The forward: RN's statistics pass + apply (+ add) + ReLU against
/// cuDNN's batchnorm (+ add) + ReLU, with the running statistics.
TEST(BnEngines, ForwardTimes) {
  RN_SKIP_WITHOUT_CUDA();
  if (!std::getenv("RN_CUDA_BENCH"))
    GTEST_SKIP() << "set RN_CUDA_BENCH=1 to measure";
  for (const BnShape &shape : bnShapes()) {
    Gpu gpu;
    const Shape xs{shape.batch, shape.hw, shape.hw, shape.channels};
    const int64_t c = shape.channels;
    const DType t = DType::f16;
    DeviceTensor x = gpu.upload(Host(xs, t, 0.5f)), shortcut = gpu.upload(Host(xs, t, 0.25f));
    DeviceTensor y = gpu.empty(xs, t);
    DeviceTensor weight = gpu.upload(Host({c}, DType::f32, 1.f));
    DeviceTensor bias = gpu.upload(Host({c}, DType::f32, 0.1f));
    DeviceTensor mean = gpu.empty({c}, DType::f32), invStd = gpu.empty({c}, DType::f32);
    DeviceTensor runningMean = gpu.upload(Host({c}, DType::f32, 0.f));
    DeviceTensor runningVar = gpu.upload(Host({c}, DType::f32, 1.f));
    DeviceTensor nextMean = gpu.empty({c}, DType::f32), nextVar = gpu.empty({c}, DType::f32);
    const size_t statsBytes = bnStatsWorkspaceBytes(xs);
    void *statsWorkspace = gpu.allocate(statsBytes);
    cudaStream_t stream = gpu.resources.stream;

    double oursMs[2];
    for (int withAdd = 0; withAdd < 2; ++withAdd)
      oursMs[withAdd] = streamMs(stream, [&]() -> Status {
        RN_RETURN_IF_ERROR(
            bnBatchStats(x, 1e-5, mean, invStd, stream, statsWorkspace, statsBytes));
        return withAdd ? bnApplyAddRelu(x, weight, bias, mean, invStd, shortcut, y, stream)
                       : bnApply(x, weight, bias, mean, invStd, /*relu=*/true, y, stream);
      });

    PlanTime cudnn[2];
    for (int withAdd = 0; withAdd < 2; ++withAdd) {
      fe::graph::Graph graph;
      graph.set_io_data_type(fe::DataType_t::HALF)
          .set_intermediate_data_type(fe::DataType_t::FLOAT)
          .set_compute_data_type(fe::DataType_t::FLOAT);
      FeTensor X = activation(graph, "x", shape);
      FeTensor scale = channelVector(graph, "scale", c), beta = channelVector(graph, "bias", c);
      FeTensor prevMean = channelVector(graph, "prev_running_mean", c);
      FeTensor prevVar = channelVector(graph, "prev_running_var", c);
      FeTensor epsilon = graph.tensor(1e-5f), momentum = graph.tensor(0.1f);
      auto options = fe::graph::Batchnorm_attributes().set_epsilon(epsilon).set_previous_running_stats(
          prevMean, prevVar, momentum);
      auto [normalized, savedMean, savedInvVar, runMean, runVar] =
          graph.batchnorm(X, scale, beta, options);
      savedMean->set_output(true).set_data_type(fe::DataType_t::FLOAT);
      savedInvVar->set_output(true).set_data_type(fe::DataType_t::FLOAT);
      runMean->set_output(true).set_data_type(fe::DataType_t::FLOAT);
      runVar->set_output(true).set_data_type(fe::DataType_t::FLOAT);
      FeTensor preRelu = normalized, A;
      if (withAdd) {
        A = activation(graph, "shortcut", shape);
        preRelu = graph.pointwise(
            normalized, A, fe::graph::Pointwise_attributes().set_mode(fe::PointwiseMode_t::ADD));
      }
      FeTensor Y = graph.pointwise(
          preRelu, fe::graph::Pointwise_attributes().set_mode(fe::PointwiseMode_t::RELU_FWD));
      Y->set_output(true).set_data_type(fe::DataType_t::HALF);
      std::unordered_map<FeTensor, void *> pack = {
          {X, x.data},           {scale, weight.data},   {beta, bias.data},
          {prevMean, runningMean.data}, {prevVar, runningVar.data},
          {savedMean, mean.data}, {savedInvVar, invStd.data},
          {runMean, nextMean.data}, {runVar, nextVar.data}, {Y, y.data}};
      if (withAdd)
        pack[A] = shortcut.data;
      cudnn[withAdd] = fastestPlan(graph, pack, gpu);
    }
    std::printf("%s forward: BN + ReLU: RN %s, cuDNN %s; BN + add + ReLU: RN %s, cuDNN %s\n",
                shapeName(shape).c_str(), timeText(oursMs[0]).c_str(),
                cudnnText(oursMs[0], cudnn[0]).c_str(), timeText(oursMs[1]).c_str(),
                cudnnText(oursMs[1], cudnn[1]).c_str());
  }
}

/// The backward: RN's bnBackward with the mask from the ReLU result (and
/// bnAddReluBackward, which also writes the shortcut's gradient) against
/// cuDNN's dReLU + batchnorm_backward, its mask given as the ReLU result
/// (RELU_BWD) or as a boolean mask (MUL), and with the masked gradient
/// also written (the shortcut's, the add-ReLU pattern).
TEST(BnEngines, BackwardTimes) {
  RN_SKIP_WITHOUT_CUDA();
  if (!std::getenv("RN_CUDA_BENCH"))
    GTEST_SKIP() << "set RN_CUDA_BENCH=1 to measure";
  for (const BnShape &shape : bnShapes()) {
    Gpu gpu;
    const Shape xs{shape.batch, shape.hw, shape.hw, shape.channels};
    const int64_t c = shape.channels;
    const DType t = DType::f16;
    DeviceTensor x = gpu.upload(Host(xs, t, 0.5f)), dy = gpu.upload(Host(xs, t, 0.01f));
    DeviceTensor reluResult = gpu.upload(Host(xs, t, 0.75f));
    DeviceTensor dx = gpu.empty(xs, t), shortcutGrad = gpu.empty(xs, t);
    // A boolean mask of one byte per element: more than cuDNN's packed
    // BOOLEAN needs, whichever layout an engine reads.
    void *mask = gpu.allocate(size_t(numel(xs)));
    DeviceTensor weight = gpu.upload(Host({c}, DType::f32, 1.f));
    DeviceTensor mean = gpu.upload(Host({c}, DType::f32, 0.25f));
    DeviceTensor invStd = gpu.upload(Host({c}, DType::f32, 2.f));
    DeviceTensor weightGrad = gpu.upload(Host({c}, DType::f32, 0.f));
    DeviceTensor biasGrad = gpu.upload(Host({c}, DType::f32, 0.f));
    const size_t backwardBytes = bnBackwardWorkspaceBytes(xs);
    void *workspace = gpu.allocate(backwardBytes);
    cudaStream_t stream = gpu.resources.stream;

    const double oursMs = streamMs(stream, [&] {
      return bnBackward(dy, &reluResult, nullptr, x, weight, mean, invStd, weightGrad, biasGrad,
                        dx, weightGrad, biasGrad, stream, workspace, backwardBytes);
    });
    const double oursAddMs = streamMs(stream, [&] {
      return bnAddReluBackward(dy, reluResult, x, weight, mean, invStd, weightGrad, biasGrad, dx,
                               shortcutGrad, weightGrad, biasGrad, stream, workspace,
                               backwardBytes);
    });

    enum Variant { reluBackward, booleanMask, withShortcut };
    PlanTime cudnn[3];
    for (Variant variant : {reluBackward, booleanMask, withShortcut}) {
      fe::graph::Graph graph;
      graph.set_io_data_type(fe::DataType_t::HALF)
          .set_intermediate_data_type(fe::DataType_t::FLOAT)
          .set_compute_data_type(fe::DataType_t::FLOAT);
      FeTensor DY = activation(graph, "dy", shape), X = activation(graph, "x", shape);
      FeTensor scale = channelVector(graph, "scale", c);
      FeTensor savedMean = channelVector(graph, "mean", c);
      FeTensor savedInvVar = channelVector(graph, "inv_variance", c);
      FeTensor M = variant == booleanMask
                       ? activation(graph, "mask", shape, fe::DataType_t::BOOLEAN)
                       : activation(graph, "relu_result", shape);
      FeTensor masked =
          variant == booleanMask
              ? graph.pointwise(DY, M,
                                fe::graph::Pointwise_attributes().set_mode(fe::PointwiseMode_t::MUL))
              : graph.pointwise(DY, M,
                                fe::graph::Pointwise_attributes().set_mode(
                                    fe::PointwiseMode_t::RELU_BWD));
      masked->set_output(variant == withShortcut).set_data_type(fe::DataType_t::HALF);
      auto options = fe::graph::Batchnorm_backward_attributes().set_saved_mean_and_inv_variance(
          savedMean, savedInvVar);
      auto [DX, dScale, dBias] = graph.batchnorm_backward(masked, X, scale, options);
      DX->set_output(true).set_data_type(fe::DataType_t::HALF);
      dScale->set_output(true).set_data_type(fe::DataType_t::FLOAT);
      dBias->set_output(true).set_data_type(fe::DataType_t::FLOAT);
      std::unordered_map<FeTensor, void *> pack = {
          {DY, dy.data},         {X, x.data},
          {scale, weight.data},  {savedMean, mean.data},
          {savedInvVar, invStd.data}, {M, variant == booleanMask ? mask : reluResult.data},
          {DX, dx.data},         {dScale, weightGrad.data},
          {dBias, biasGrad.data}};
      if (variant == withShortcut)
        pack[masked] = shortcutGrad.data;
      cudnn[variant] = fastestPlan(graph, pack, gpu);
    }
    std::printf("%s backward: dReLU + dBN: RN %s, cuDNN from the ReLU result %s, from a "
                "boolean mask %s; writing the shortcut's gradient too: RN %s, cuDNN %s\n",
                shapeName(shape).c_str(), timeText(oursMs).c_str(),
                cudnnText(oursMs, cudnn[reluBackward]).c_str(),
                cudnnText(oursMs, cudnn[booleanMask]).c_str(), timeText(oursAddMs).c_str(),
                cudnnText(oursAddMs, cudnn[withShortcut]).c_str());
  }
}

} // namespace
} // namespace rn::cuda
