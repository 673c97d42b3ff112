//===- conv_launchers_test.cpp - The conv, linear and CBR launchers vs the CPU ===//
//
// The launchers of ops_conv_linear.cpp (conv2d, linear, the CBR ops and
// their backward parts) and those of rn-fuse-bn-prologue (conv_bn_stats and
// the prologue forms of cbr_forward and cbr_backward) run as the executor
// runs a node, against the rn::cpu kernels and compositions, in f32 and
// f16 (the Launchers fixture of conv_test_util.h). Every test skips when no
// CUDA device answers.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/artifact.h"
#include "runtime/core/op_registry.h"
#include "runtime/cuda/check.h"
#include "runtime/cuda/kernels.h"
#include "runtime/cuda/norm_kernels.h"
#include "runtime/cuda/op_launch.h"
#include "conv_test_util.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace rn::cuda {
namespace {

using namespace conv_test;

/// A node with its device tensors, launched through its OpLauncher.
struct NodeRun {
  Node node;
  std::vector<DeviceTensor> operands, results;

  /// Makes the node an `op` node whose operands and results are the ODS
  /// operands and results `operandNames` and `resultNames` (single or
  /// optional ones), in the op table's order as `operands` and `results`
  /// hold them: node.info and node.layout as the loader sets them.
  Status named(const char *op, const std::vector<const char *> &operandNames,
               const std::vector<const char *> &resultNames) {
    node.op = op;
    node.info = findOp(op);
    if (!node.info || !node.info->table)
      return Error(std::string("no op ") + op);
    auto read = [&](bool isResults, const std::vector<const char *> &names,
                    ValueLayout &layout) -> Status {
      json object = json::object();
      for (size_t i = 0; i < names.size(); ++i)
        object[names[i]] = i;
      std::vector<uint64_t> ids;
      Result<ValueLayout> read = readNamedValues(*node.info->table, isResults, object,
                                                 isResults ? "result" : "operand", ids);
      if (!read.ok())
        return Error(std::string(op) + ": " + read.error().message());
      bool inOrder = ids.size() == names.size();
      for (size_t i = 0; i < ids.size() && inOrder; ++i)
        inOrder = ids[i] == i;
      if (!inOrder)
        return Error(std::string(op) + ": the " + (isResults ? "results" : "operands") +
                     " are not named once each in the op table's order");
      layout = std::move(*read);
      return Status::success();
    };
    if (Status s = read(false, operandNames, node.layout.operands); !s.ok())
      return s;
    return read(true, resultNames, node.layout.results);
  }

  /// Without `prepare`, launches only (what a captured step replays; the
  /// node must have been prepared by an earlier run).
  Status run(Gpu &gpu, ConvRunner &conv, GemmRunner &gemm, bool prepare = true) {
    const OpLauncher *launcher = findOpLauncher(node.op);
    if (!launcher)
      return Error("no launcher for " + node.op);
    if (node.layout.operands.total() != operands.size() ||
        node.layout.results.total() != results.size())
      return Error(node.op + ": the layout names " +
                   std::to_string(node.layout.operands.total()) + " operands and " +
                   std::to_string(node.layout.results.total()) + " results, the run has " +
                   std::to_string(operands.size()) + " and " + std::to_string(results.size()));
    // As the executor does: prepare, then launch, each part on its stream
    // (one launch of part -1 when the node has no parts).
    int parts = int(node.parts.size());
    for (int part = parts ? 0 : -1; part < std::max(parts, 0) || part == -1; ++part) {
      OpLaunch l{node, part, operands, results, gpu.resources, conv, gemm, 0};
      if (prepare && launcher->prepare) {
        Result<size_t> bytes = launcher->prepare(l);
        if (!bytes.ok())
          return bytes.error();
        if (*bytes > gpu.resources.workspaceBytes)
          return Error("needs more workspace than the stream has");
      }
      if (Status s = launcher->launch(l); !s.ok())
        return s;
      if (part == -1)
        break;
    }
    return Status::success();
  }
};

/// cbr_backward's ten required operands, then `more`.
std::vector<const char *> cbrBackwardOperands(std::initializer_list<const char *> more = {}) {
  std::vector<const char *> names = {"output_grad",   "input",           "filter",
                                     "conv_output",   "gamma",           "batch_mean",
                                     "batch_inv_std", "filter_grad_acc", "gamma_grad_acc",
                                     "beta_grad_acc"};
  names.insert(names.end(), more.begin(), more.end());
  return names;
}
const std::vector<const char *> kCbrBackwardResults = {
    "conv_output_grad", "input_grad", "filter_grad", "gamma_grad", "beta_grad"};
const std::vector<const char *> kCbrForwardResults = {"result", "conv_output", "batch_mean",
                                                      "batch_inv_std"};

TEST_P(Launchers, Conv2dWithBias) {
  RN_SKIP_WITHOUT_CUDA();
  DType dtype = GetParam();
  Gpu gpu;
  auto conv = makeConv();
  auto gemm = makeGemm();
  std::mt19937 rng(23);
  Host x = randomHost({2, 12, 12, 6}, dtype, rng), w = randomHost({10, 3, 3, 6}, dtype, rng),
       b = randomHost({10}, dtype, rng);
  NodeRun r;
  ASSERT_OK(r.named("conv2d", {"input", "filter", "bias"}, {"result"}));
  r.node.attributes = {{"strides", {2, 2}}, {"padding", {1, 1}}};
  r.operands = {gpu.upload(x), gpu.upload(w), gpu.upload(b)};
  r.results = {gpu.empty({2, 6, 6, 10}, dtype)};
  ASSERT_OK(r.run(gpu, *conv, *gemm));
  cpu::Conv2dAttrs attrs;
  attrs.strides = {2, 2};
  attrs.padding = {1, 1};
  Host want({2, 6, 6, 10}, dtype);
  TensorView bias = b.view();
  ASSERT_TRUE(cpu::conv2d(x.view(), w.view(), &bias, attrs, want.view()).ok());
  EXPECT_LE(relativeError(gpu.download(r.results[0]), want.values), tolerance(dtype));
}

TEST_P(Launchers, Conv2dBackwardParts) {
  RN_SKIP_WITHOUT_CUDA();
  DType dtype = GetParam();
  Gpu gpu;
  auto conv = makeConv();
  auto gemm = makeGemm();
  std::mt19937 rng(29);
  Shape xs{2, 10, 10, 8}, ws{12, 3, 3, 8}, ys{2, 10, 10, 12};
  Host dy = randomHost(ys, dtype, rng), x = randomHost(xs, dtype, rng), w = randomHost(ws, dtype, rng);
  Host dwAcc = randomHost(ws, DType::f32, rng), dbAcc = randomHost({12}, DType::f32, rng);
  NodeRun r;
  ASSERT_OK(r.named("conv2d_backward",
                    {"output_grad", "input", "filter", "filter_grad_acc", "bias_grad_acc"},
                    {"input_grad", "filter_grad", "bias_grad"}));
  r.node.attributes = {{"strides", {1, 1}}, {"padding", {1, 1}}};
  r.node.parts = {{"weight_grad", Stream::comp1}, {"bias_grad", Stream::comp1},
                  {"input_grad", Stream::comp1}};
  r.operands = {gpu.upload(dy), gpu.upload(x), gpu.upload(w), gpu.upload(dwAcc), gpu.upload(dbAcc)};
  r.results = {gpu.empty(xs, dtype), gpu.empty(ws, DType::f32), gpu.empty({12}, DType::f32)};
  ASSERT_OK(r.run(gpu, *conv, *gemm));
  cpu::Conv2dAttrs attrs;
  attrs.padding = {1, 1};
  Host dx(xs, dtype), dw(ws, DType::f32), db({12}, DType::f32);
  TensorView dbAccView = dbAcc.view(), dxView = dx.view(), dbView = db.view();
  ASSERT_TRUE(cpu::conv2dBackward(dy.view(), x.view(), w.view(), dwAcc.view(), &dbAccView, attrs,
                                  &dxView, dw.view(), &dbView)
                  .ok());
  EXPECT_LE(relativeError(gpu.download(r.results[0]), dx.values), tolerance(dtype));
  EXPECT_LE(relativeError(gpu.download(r.results[1]), dw.values), dtype == DType::f32 ? 5e-5 : 1e-3);
  EXPECT_LE(relativeError(gpu.download(r.results[2]), db.values), 1e-6);
}

// A stem padded by rn-pad-conv-channels: x and w have 8 channels, the
// filter gradient and its accumulator the parameter's 3 (the first ones).
// The same as the CPU's, which drops the padding's part likewise.
TEST_P(Launchers, Conv2dBackwardIntoTheFirstChannels) {
  RN_SKIP_WITHOUT_CUDA();
  DType dtype = GetParam();
  Gpu gpu;
  auto conv = makeConv();
  auto gemm = makeGemm();
  std::mt19937 rng(37);
  Shape xs{2, 9, 9, 8}, ws{16, 7, 7, 8}, accs{16, 7, 7, 3}, ys{2, 5, 5, 16};
  Host dy = randomHost(ys, dtype, rng), x = randomHost(xs, dtype, rng), w = randomHost(ws, dtype, rng);
  Host dwAcc = randomHost(accs, dtype, rng);
  NodeRun r;
  ASSERT_OK(r.named("conv2d_backward", {"output_grad", "input", "filter", "filter_grad_acc"},
                    {"filter_grad"}));
  r.node.attributes = {{"strides", {2, 2}}, {"padding", {3, 3}}};
  r.node.parts = {{"weight_grad", Stream::comp1}};
  r.operands = {gpu.upload(dy), gpu.upload(x), gpu.upload(w), gpu.upload(dwAcc)};
  r.results = {gpu.empty(accs, dtype)};
  ASSERT_OK(r.run(gpu, *conv, *gemm));
  cpu::Conv2dAttrs attrs;
  attrs.strides = {2, 2};
  attrs.padding = {3, 3};
  Host dw(accs, dtype);
  ASSERT_TRUE(cpu::conv2dBackwardFilter(dy.view(), x.view(), dwAcc.view(), attrs, dw.view()).ok());
  EXPECT_LE(relativeError(gpu.download(r.results[0]), dw.values), dtype == DType::f32 ? 5e-5 : 2e-3);
  // An accumulator with more channels than the filter is an error naming
  // the shapes.
  NodeRun wide = r;
  wide.operands[3] = gpu.upload(randomHost({16, 7, 7, 9}, dtype, rng));
  wide.results = {gpu.empty({16, 7, 7, 9}, dtype)};
  Status s = wide.run(gpu, *conv, *gemm);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message().find("fewer input channels"), std::string::npos)
      << s.error().message();
}

// A residual junction folded into the data gradient (rn-fold-gradient-adds):
// conv2d_backward's input_grad part with an addend (its operand
// input_grad_addend, beside the absent bias accumulator) runs cuDNN's dgrad
// with the add as its epilogue; the same as the CPU's dX + addend.
TEST_P(Launchers, Conv2dBackwardInputGradAddend) {
  RN_SKIP_WITHOUT_CUDA();
  DType dtype = GetParam();
  Gpu gpu;
  auto conv = makeConv();
  auto gemm = makeGemm();
  std::mt19937 rng(41);
  Shape xs{2, 10, 10, 16}, ws{32, 1, 1, 16}, ys{2, 10, 10, 32};
  Host dy = randomHost(ys, dtype, rng), x = randomHost(xs, dtype, rng), w = randomHost(ws, dtype, rng);
  Host dwAcc = randomHost(ws, DType::f32, rng), addend = randomHost(xs, dtype, rng);
  NodeRun r;
  ASSERT_OK(r.named("conv2d_backward",
                    {"output_grad", "input", "filter", "filter_grad_acc", "input_grad_addend"},
                    {"input_grad", "filter_grad"}));
  r.node.attributes = {{"strides", {1, 1}}, {"padding", {0, 0}}};
  r.node.parts = {{"weight_grad", Stream::comp1}, {"input_grad", Stream::comp1}};
  r.operands = {gpu.upload(dy), gpu.upload(x), gpu.upload(w), gpu.upload(dwAcc),
                gpu.upload(addend)};
  r.results = {gpu.empty(xs, dtype), gpu.empty(ws, DType::f32)};
  ASSERT_OK(r.run(gpu, *conv, *gemm));
  cpu::Conv2dAttrs attrs;
  Host dx(xs, dtype);
  TensorView addendView = addend.view();
  ASSERT_TRUE(cpu::conv2dBackwardInput(dy.view(), w.view(), attrs, dx.view(), &addendView).ok());
  EXPECT_LE(relativeError(gpu.download(r.results[0]), dx.values), tolerance(dtype));
}

TEST_P(Launchers, LinearWithAndWithoutBias) {
  RN_SKIP_WITHOUT_CUDA();
  DType dtype = GetParam();
  Gpu gpu;
  auto conv = makeConv();
  auto gemm = makeGemm();
  std::mt19937 rng(31);
  Host x = randomHost({24, 40}, dtype, rng), w = randomHost({10, 40}, dtype, rng),
       b = randomHost({10}, dtype, rng);
  for (bool withBias : {false, true}) {
    NodeRun r;
    std::vector<const char *> names = {"input", "weight"};
    if (withBias)
      names.push_back("bias");
    ASSERT_OK(r.named("linear", names, {"result"}));
    r.operands = {gpu.upload(x), gpu.upload(w)};
    if (withBias)
      r.operands.push_back(gpu.upload(b));
    r.results = {gpu.empty({24, 10}, dtype)};
    ASSERT_OK(r.run(gpu, *conv, *gemm));
    Host want({24, 10}, dtype);
    TensorView bias = b.view();
    ASSERT_TRUE(cpu::linear(x.view(), w.view(), withBias ? &bias : nullptr, want.view()).ok());
    EXPECT_LE(relativeError(gpu.download(r.results[0]), want.values), tolerance(dtype))
        << (withBias ? "with bias" : "without bias");
  }
}

TEST_P(Launchers, LinearBackwardParts) {
  RN_SKIP_WITHOUT_CUDA();
  DType dtype = GetParam();
  Gpu gpu;
  auto conv = makeConv();
  auto gemm = makeGemm();
  std::mt19937 rng(37);
  Host dy = randomHost({24, 10}, dtype, rng), x = randomHost({24, 40}, dtype, rng),
       w = randomHost({10, 40}, dtype, rng);
  Host dwAcc = randomHost({10, 40}, DType::f32, rng), dbAcc = randomHost({10}, DType::f32, rng);
  for (bool withBias : {false, true}) {
    NodeRun r;
    if (withBias)
      ASSERT_OK(r.named("linear_backward",
                        {"output_grad", "input", "weight", "weight_grad_acc", "bias_grad_acc"},
                        {"input_grad", "weight_grad", "bias_grad"}));
    else
      ASSERT_OK(r.named("linear_backward", {"output_grad", "input", "weight", "weight_grad_acc"},
                        {"input_grad", "weight_grad"}));
    r.node.parts = {{"weight_grad", Stream::comp1}, {"input_grad", Stream::comp1}};
    if (withBias)
      r.node.parts.insert(r.node.parts.begin() + 1, Part{"bias_grad", Stream::comp1});
    r.operands = {gpu.upload(dy), gpu.upload(x), gpu.upload(w), gpu.upload(dwAcc)};
    r.results = {gpu.empty({24, 40}, dtype), gpu.empty({10, 40}, DType::f32)};
    if (withBias) {
      r.operands.push_back(gpu.upload(dbAcc));
      r.results.push_back(gpu.empty({10}, DType::f32));
    }
    ASSERT_OK(r.run(gpu, *conv, *gemm));
    Host dx({24, 40}, dtype), dw({10, 40}, DType::f32), db({10}, DType::f32);
    TensorView dbAccView = dbAcc.view(), dxView = dx.view(), dbView = db.view();
    ASSERT_TRUE(cpu::linearBackward(dy.view(), x.view(), w.view(), dwAcc.view(),
                                    withBias ? &dbAccView : nullptr, &dxView, dw.view(),
                                    withBias ? &dbView : nullptr)
                    .ok());
    EXPECT_LE(relativeError(gpu.download(r.results[0]), dx.values), tolerance(dtype));
    EXPECT_LE(relativeError(gpu.download(r.results[1]), dw.values),
              dtype == DType::f32 ? 5e-5 : 1e-3);
    if (withBias) {
      EXPECT_LE(relativeError(gpu.download(r.results[2]), db.values), 1e-6);
    }
  }
}

TEST_P(Launchers, CbrForwardBackwardInference) {
  RN_SKIP_WITHOUT_CUDA();
  DType dtype = GetParam();
  double tol = tolerance(dtype, /*normalized=*/true);
  Gpu gpu;
  auto conv = makeConv();
  auto gemm = makeGemm();
  std::mt19937 rng(41);
  Shape xs{4, 12, 12, 16}, ws{32, 3, 3, 16}, ys{4, 6, 6, 32};
  Host x = randomHost(xs, dtype, rng), w = randomHost(ws, dtype, rng);
  Host gamma = randomHost({32}, DType::f32, rng, 0.5f, 1.5f), beta = randomHost({32}, DType::f32, rng);
  json attrs = {{"strides", {2, 2}}, {"padding", {1, 1}}, {"epsilon", 1e-5}, {"relu", true}};
  cpu::Conv2dAttrs cattrs;
  cattrs.strides = {2, 2};
  cattrs.padding = {1, 1};

  // Forward.
  Host y(ys, dtype), convOut(ys, dtype), mean({32}, DType::f32), invStd({32}, DType::f32);
  ASSERT_TRUE(cpu::cbrForward(x.view(), w.view(), gamma.view(), beta.view(), cattrs, 1e-5, true,
                              y.view(), convOut.view(), mean.view(), invStd.view())
                  .ok());
  NodeRun f;
  ASSERT_OK(f.named("cbr_forward", {"input", "filter", "gamma", "beta"}, kCbrForwardResults));
  f.node.attributes = attrs;
  f.operands = {gpu.upload(x), gpu.upload(w), gpu.upload(gamma), gpu.upload(beta)};
  f.results = {gpu.empty(ys, dtype), gpu.empty(ys, dtype), gpu.empty({32}, DType::f32),
               gpu.empty({32}, DType::f32)};
  ASSERT_OK(f.run(gpu, *conv, *gemm));
  EXPECT_LE(relativeError(gpu.download(f.results[1]), convOut.values), tolerance(dtype));
  EXPECT_LE(relativeError(gpu.download(f.results[2]), mean.values), tol);
  EXPECT_LE(relativeError(gpu.download(f.results[3]), invStd.values), tol);
  EXPECT_LE(relativeError(gpu.download(f.results[0]), y.values), tol);

  // The same forward with the statistics from a conv + genstats graph
  // (ConvRunner::Options::Genstats::always) where cuDNN builds one, else by the
  // default path: the same results within the tolerance either way.
  {
    ConvRunner::Options genstatsOptions;
    genstatsOptions.genstats = ConvRunner::Options::Genstats::always;
    Result<std::unique_ptr<ConvRunner>> genstatsConv = ConvRunner::create(genstatsOptions);
    ASSERT_TRUE(genstatsConv.ok()) << genstatsConv.error().message();
    NodeRun g;
    g.node = f.node;
    g.operands = f.operands;
    g.results = {gpu.empty(ys, dtype), gpu.empty(ys, dtype), gpu.empty({32}, DType::f32),
                 gpu.empty({32}, DType::f32)};
    ASSERT_OK(g.run(gpu, **genstatsConv, *gemm));
    std::printf("cbr_forward with Genstats::always: %zu genstats graphs built\n",
                (*genstatsConv)->genstatsGraphs());
    EXPECT_LE(relativeError(gpu.download(g.results[1]), convOut.values), tolerance(dtype));
    EXPECT_LE(relativeError(gpu.download(g.results[2]), mean.values), tol);
    EXPECT_LE(relativeError(gpu.download(g.results[3]), invStd.values), tol);
    EXPECT_LE(relativeError(gpu.download(g.results[0]), y.values), tol);
  }

  // Genstats::faster (the default) with autotuning: the statistics path
  // is measured at load and chosen for the call (one choice), the results
  // are the CPU's either way, and a second runner on the same cache file
  // takes the same path without measuring again. With autotuning off by
  // the environment nothing is measured or written, so there is no choice
  // to check.
  if (ConvRunner::autotuneForbiddenByEnvironment()) {
    std::printf("cbr_forward %s with Genstats::faster: not measured (RN_CONV_AUTOTUNE=0)\n",
                dtypeName(dtype).data());
  } else {
    const std::string cache = (std::filesystem::temp_directory_path() /
                               ("rn-genstats-choice-" + std::to_string(::getpid()) + "-" +
                                std::string(dtypeName(dtype)) + ".json"))
                                  .string();
    std::remove(cache.c_str());
    bool chosen[2] = {false, false};
    for (int load = 0; load < 2; ++load) {
      auto measured = makeConv(/*autotune=*/true, /*deterministic=*/false, cache);
      ASSERT_TRUE(measured);
      NodeRun g;
      g.node = f.node;
      g.operands = f.operands;
      g.results = {gpu.empty(ys, dtype), gpu.empty(ys, dtype), gpu.empty({32}, DType::f32),
                   gpu.empty({32}, DType::f32)};
      ASSERT_OK(g.run(gpu, *measured, *gemm));
      // One choice where cuDNN built the genstats graph (f16), none where it
      // did not (f32: the statistics pass, nothing to choose).
      EXPECT_EQ(measured->statsChoices(), measured->genstatsGraphs() > 0 ? 1u : 0u);
      chosen[load] = measured->genstatsChoices() == 1;
      EXPECT_LE(relativeError(gpu.download(g.results[2]), mean.values), tol);
      EXPECT_LE(relativeError(gpu.download(g.results[3]), invStd.values), tol);
      EXPECT_LE(relativeError(gpu.download(g.results[0]), y.values), tol);
    }
    EXPECT_EQ(chosen[0], chosen[1]);
    std::ifstream in(cache);
    const json cached = json::parse(in);
    size_t choices = 0;
    for (const auto &[key, value] : cached.items())
      if (key.find(" | statistics") != std::string::npos) {
        ++choices;
        EXPECT_EQ(value.at("genstats").get<bool>(), chosen[0]) << key;
        EXPECT_GT(value.at("plain_ms").get<double>(), 0.0) << key;
      }
    // f32 has no genstats graph: nothing to choose, nothing remembered.
    EXPECT_LE(choices, 1u);
    std::printf("cbr_forward %s with Genstats::faster: %s\n", dtypeName(dtype).data(),
                choices ? (chosen[0] ? "genstats chosen" : "statistics pass chosen")
                        : "no genstats graph");
    std::remove(cache.c_str());
  }

  // Backward, from the CPU's forward values, with the ReLU result.
  Host dy = randomHost(ys, dtype, rng), dwAcc = randomHost(ws, DType::f32, rng);
  Host dgAcc = randomHost({32}, DType::f32, rng), dbAcc = randomHost({32}, DType::f32, rng);
  Host convGrad(ys, dtype), dx(xs, dtype), dw(ws, DType::f32), dg({32}, DType::f32),
      db({32}, DType::f32);
  TensorView relu = y.view(), dxView = dx.view();
  ASSERT_TRUE(cpu::cbrBackward(dy.view(), x.view(), w.view(), convOut.view(), gamma.view(),
                               mean.view(), invStd.view(), dwAcc.view(), dgAcc.view(),
                               dbAcc.view(), &relu, cattrs, convGrad.view(), &dxView, dw.view(),
                               dg.view(), db.view())
                  .ok());
  NodeRun b;
  ASSERT_OK(b.named("cbr_backward", cbrBackwardOperands({"relu_output"}), kCbrBackwardResults));
  b.node.attributes = attrs;
  b.node.parts = {{"bn_grad", Stream::comp1}, {"weight_grad", Stream::comp1},
                  {"input_grad", Stream::comp1}};
  b.operands = {gpu.upload(dy),     gpu.upload(x),     gpu.upload(w),     gpu.upload(convOut),
                gpu.upload(gamma),  gpu.upload(mean),  gpu.upload(invStd), gpu.upload(dwAcc),
                gpu.upload(dgAcc),  gpu.upload(dbAcc), gpu.upload(y)};
  // The backward's results, empty, and their check against the CPU's.
  auto backwardResults = [&] {
    return std::vector<DeviceTensor>{gpu.empty(ys, dtype), gpu.empty(xs, dtype),
                                     gpu.empty(ws, DType::f32), gpu.empty({32}, DType::f32),
                                     gpu.empty({32}, DType::f32)};
  };
  auto expectBackward = [&](const std::vector<DeviceTensor> &results) {
    EXPECT_LE(relativeError(gpu.download(results[0]), convGrad.values), tol);
    EXPECT_LE(relativeError(gpu.download(results[1]), dx.values), tol);
    EXPECT_LE(relativeError(gpu.download(results[2]), dw.values), tol);
    EXPECT_LE(relativeError(gpu.download(results[3]), dg.values), tol);
    EXPECT_LE(relativeError(gpu.download(results[4]), db.values), tol);
  };
  b.results = backwardResults();
  ASSERT_OK(b.run(gpu, *conv, *gemm));
  expectBackward(b.results);

  // The same with the mask recomputed from the convolution output and beta
  // (relu_recompute): the CPU forward normalized in double, so only values
  // within rounding of zero may be masked differently.
  NodeRun recomputed;
  recomputed.node = b.node;
  ASSERT_OK(
      recomputed.named("cbr_backward", cbrBackwardOperands({"relu_beta"}), kCbrBackwardResults));
  recomputed.operands = b.operands;
  recomputed.operands[10] = gpu.upload(beta);
  recomputed.results = backwardResults();
  ASSERT_OK(recomputed.run(gpu, *conv, *gemm));
  expectBackward(recomputed.results);

  // Inference, with running statistics.
  Host rm = randomHost({32}, DType::f32, rng), rv = randomHost({32}, DType::f32, rng, 0.5f, 2.0f);
  Host yi(ys, dtype);
  ASSERT_TRUE(cpu::cbrInference(x.view(), w.view(), gamma.view(), beta.view(), rm.view(),
                                rv.view(), cattrs, 1e-5, true, yi.view())
                  .ok());
  NodeRun inf;
  ASSERT_OK(inf.named("cbr_inference",
                      {"input", "filter", "gamma", "beta", "running_mean", "running_var"},
                      {"result"}));
  inf.node.attributes = attrs;
  inf.operands = {gpu.upload(x),    gpu.upload(w),  gpu.upload(gamma),
                  gpu.upload(beta), gpu.upload(rm), gpu.upload(rv)};
  inf.results = {gpu.empty(ys, dtype)};
  ASSERT_OK(inf.run(gpu, *conv, *gemm));
  EXPECT_LE(relativeError(gpu.download(inf.results[0]), yi.values), tol);
}

INSTANTIATE_TEST_SUITE_P(, Launchers, ::testing::Values(DType::f32, DType::f16),
                         [](const auto &info) { return std::string(dtypeName(info.param)); });

//===----------------------------------------------------------------------===//
// The launchers of rn-fuse-bn-prologue: conv_bn_stats and the prologue
// forms of cbr_forward and cbr_backward, against the CPU's compositions
// (cpu_fused.cpp), with the CBR launcher test's bounds. The genstats sums
// are float atomics (not bitwise); the masks are bit for bit the CPU's
// (NormKernelsTest.CbrPrologueMaskMatchesCpuMask).
//===----------------------------------------------------------------------===//

/// A convolution node's attributes for `p`, with the BN's epsilon.
json convNodeAttrs(const ConvParams &p) {
  return {{"strides", {p.strides[0], p.strides[1]}},
          {"padding", {p.padding[0], p.padding[1]}},
          {"dilation", {p.dilation[0], p.dilation[1]}},
          {"groups", p.groups},
          {"epsilon", 1e-5}};
}

bool mentions(const Status &s, const char *text) {
  return !s.ok() && s.error().message().find(text) != std::string::npos;
}

/// Captures the launches of `r` (prepared by an earlier run) into a CUDA
/// graph, as the cuda-graph executor captures a step, and replays it
/// twice, after filling the results with NaN so that stale values cannot
/// pass.
Status replayedInAGraph(NodeRun &r, Gpu &gpu, ConvRunner &conv, GemmRunner &gemm) {
  cudaStream_t stream = gpu.resources.stream;
  for (const DeviceTensor &t : r.results)
    if (cudaMemsetAsync(t.data, 0xff, size_t(t.numel()) * elementSize(t.dtype), stream) !=
        cudaSuccess)
      return Error("cudaMemsetAsync failed");
  cudaGraph_t graph = nullptr;
  if (cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal) != cudaSuccess)
    return Error("cudaStreamBeginCapture failed");
  Status launched = r.run(gpu, conv, gemm, /*prepare=*/false);
  cudaError_t e = cudaStreamEndCapture(stream, &graph);
  if (!launched.ok() || e != cudaSuccess) {
    if (graph)
      cudaGraphDestroy(graph);
    return launched.ok() ? Error(std::string("capture: ") + cudaGetErrorString(e)) : launched;
  }
  cudaGraphExec_t exec = nullptr;
  e = cudaGraphInstantiate(&exec, graph, 0);
  for (int replay = 0; replay < 2 && e == cudaSuccess; ++replay)
    e = cudaGraphLaunch(exec, stream);
  if (e == cudaSuccess)
    e = cudaStreamSynchronize(stream);
  if (exec)
    cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  if (e != cudaSuccess)
    return Error(std::string("replay: ") + cudaGetErrorString(e));
  return Status::success();
}

/// The prologue's per-channel scale and bias (what rn.bn_scale_bias would
/// give the next convolution), random in the ranges of a BN's.
struct PrologueParams {
  Host scale, bias;
};
PrologueParams randomPrologue(int64_t channels, DType dtype, std::mt19937 &rng) {
  return {randomHost({channels}, dtype, rng, 0.5f, 1.5f),
          randomHost({channels}, dtype, rng, -0.5f, 0.5f)};
}

// conv_bn_stats through its launcher against cpu::convBnStats at
// kFusionShapes: without a prologue (conv + the Welford pass, and conv +
// genstats with a runner that tries it) and with one
// (forward_scale_bias_relu_stats, bnFinalizeStats of its sums), the latter
// also captured into a CUDA graph and replayed twice (its sums start from
// zero on every replay). The prologue takes f16 only: with f32 operands it
// is the launcher's "needs f16 prologue" error. A prologue graph cuDNN
// cannot plan (here an f32 filter) fails prepare with an error that names
// the op and says to compile without fuse-bn-prologue.
TEST_P(Launchers, ConvBnStatsWithAndWithoutPrologue) {
  RN_SKIP_WITHOUT_CUDA();
  const DType dtype = GetParam();
  const double tol = tolerance(dtype, /*normalized=*/true);
  Gpu gpu;
  auto conv = makeConv();
  auto gemm = makeGemm();
  ConvRunner::Options genstatsOptions;
  genstatsOptions.genstats = ConvRunner::Options::Genstats::always;
  Result<std::unique_ptr<ConvRunner>> genstats = ConvRunner::create(genstatsOptions);
  ASSERT_TRUE(genstats.ok()) << genstats.error().message();
  std::mt19937 rng(43);
  for (const FusionShape &f : kFusionShapes) {
    const cpu::Conv2dAttrs attrs = attrsOf(f.params);
    Shape ys;
    ASSERT_TRUE(cpu::conv2dOutputShape(f.x, f.w, attrs, ys).ok());
    const int64_t channels = f.w[0];
    Host x = randomHost(f.x, dtype, rng), w = randomHost(f.w, dtype, rng);
    PrologueParams p = randomPrologue(f.x[3], dtype, rng);
    const char *variants[] = {"conv + Welford", "conv + genstats runner", "prologue"};
    for (int variant = 0; variant < 3; ++variant) {
      const bool prologue = variant == 2;
      ConvRunner &runner = variant == 1 ? **genstats : *conv;
      const std::string what = std::string(variants[variant]) + " x" +
                               detail::shapeString(f.x) + " w" + detail::shapeString(f.w);
      SCOPED_TRACE(what);
      NodeRun r;
      std::vector<const char *> names = {"input", "filter"};
      if (prologue)
        names.insert(names.end(), {"prologue_scale", "prologue_bias"});
      ASSERT_OK(r.named("conv_bn_stats", names, {"conv_output", "batch_mean", "batch_inv_std"}));
      r.node.attributes = convNodeAttrs(f.params);
      r.operands = {gpu.upload(x), gpu.upload(w)};
      if (prologue) {
        r.operands.push_back(gpu.upload(p.scale));
        r.operands.push_back(gpu.upload(p.bias));
      }
      r.results = {gpu.empty(ys, dtype), gpu.empty({channels}, DType::f32),
                   gpu.empty({channels}, DType::f32)};
      Status s = r.run(gpu, runner, *gemm);
      if (prologue && dtype != DType::f16) {
        EXPECT_TRUE(mentions(s, "conv_bn_stats: needs f16 prologue"))
            << (s.ok() ? "ran" : s.error().message());
        continue;
      }
      if (prologue && mentions(s, "without fuse-bn-prologue"))
        GTEST_SKIP() << "no plan for the prologue graph: " << s.error().message();
      ASSERT_OK(s);
      Host convOut(ys, dtype), mean({channels}, DType::f32), invStd({channels}, DType::f32);
      TensorView scale = p.scale.view(), bias = p.bias.view();
      ASSERT_TRUE(cpu::convBnStats(x.view(), w.view(), prologue ? &scale : nullptr,
                                   prologue ? &bias : nullptr, attrs, 1e-5, convOut.view(),
                                   mean.view(), invStd.view())
                      .ok());
      auto expectTheCpus = [&](const char *how) {
        const double eConv = relativeError(gpu.download(r.results[0]), convOut.values);
        const double eMean = relativeError(gpu.download(r.results[1]), mean.values);
        const double eInvStd = relativeError(gpu.download(r.results[2]), invStd.values);
        std::printf("conv_bn_stats %s %s %s: conv_output %.1e, batch_mean %.1e, "
                    "batch_inv_std %.1e\n",
                    what.c_str(), std::string(dtypeName(dtype)).c_str(), how, eConv, eMean,
                    eInvStd);
        EXPECT_LE(eConv, tolerance(dtype)) << how;
        EXPECT_LE(eMean, tol) << how;
        EXPECT_LE(eInvStd, tol) << how;
      };
      expectTheCpus("launched");
      if (prologue) {
        ASSERT_OK(replayedInAGraph(r, gpu, runner, *gemm));
        expectTheCpus("replayed in a graph");
      }
    }
    if (dtype != DType::f16)
      continue;
    NodeRun unplanned;
    ASSERT_OK(unplanned.named("conv_bn_stats", {"input", "filter", "prologue_scale", "prologue_bias"},
                              {"conv_output", "batch_mean", "batch_inv_std"}));
    unplanned.node.attributes = convNodeAttrs(f.params);
    unplanned.operands = {gpu.upload(x), gpu.upload(randomHost(f.w, DType::f32, rng)),
                          gpu.upload(p.scale), gpu.upload(p.bias)};
    unplanned.results = {gpu.empty(ys, dtype), gpu.empty({channels}, DType::f32),
                         gpu.empty({channels}, DType::f32)};
    Status s = unplanned.run(gpu, *conv, *gemm);
    if (s.ok())
      std::printf("conv_bn_stats: cuDNN planned the prologue graph with an f32 filter too\n");
    else
      EXPECT_TRUE(mentions(s, "conv_bn_stats") &&
                  mentions(s, "compile the artifact without fuse-bn-prologue"))
          << s.error().message();
  }
}

// cbr_forward with a prologue (6 operands) through its launcher against
// cpu::cbrForward's prologue form at kFusionShapes: the convolution of the
// previous layer's BN apply + ReLU (forward_scale_bias_relu_stats), the
// statistics from its genstats sums, then the apply with the ReLU; also
// replayed in a CUDA graph. f32 operands are the "needs f16 prologue"
// error; half a prologue (prologue_scale without prologue_bias) never
// reaches a launcher: the loader's registry refuses it.
TEST_P(Launchers, CbrForwardWithPrologue) {
  RN_SKIP_WITHOUT_CUDA();
  const DType dtype = GetParam();
  const double tol = tolerance(dtype, /*normalized=*/true);
  Gpu gpu;
  auto conv = makeConv();
  auto gemm = makeGemm();
  std::mt19937 rng(47);
  for (const FusionShape &f : kFusionShapes) {
    SCOPED_TRACE("x" + detail::shapeString(f.x) + " w" + detail::shapeString(f.w));
    const cpu::Conv2dAttrs attrs = attrsOf(f.params);
    Shape ys;
    ASSERT_TRUE(cpu::conv2dOutputShape(f.x, f.w, attrs, ys).ok());
    const int64_t channels = f.w[0];
    Host x = randomHost(f.x, dtype, rng), w = randomHost(f.w, dtype, rng);
    Host gamma = randomHost({channels}, DType::f32, rng, 0.5f, 1.5f);
    Host beta = randomHost({channels}, DType::f32, rng);
    PrologueParams p = randomPrologue(f.x[3], dtype, rng);
    NodeRun r;
    ASSERT_OK(r.named("cbr_forward",
                      {"input", "filter", "gamma", "beta", "prologue_scale", "prologue_bias"},
                      kCbrForwardResults));
    r.node.attributes = convNodeAttrs(f.params);
    r.node.attributes["relu"] = true;
    r.operands = {gpu.upload(x),    gpu.upload(w),       gpu.upload(gamma),
                  gpu.upload(beta), gpu.upload(p.scale), gpu.upload(p.bias)};
    r.results = {gpu.empty(ys, dtype), gpu.empty(ys, dtype), gpu.empty({channels}, DType::f32),
                 gpu.empty({channels}, DType::f32)};
    NodeRun half = r;
    half.operands.pop_back();
    ASSERT_OK(half.named("cbr_forward", {"input", "filter", "gamma", "beta", "prologue_scale"},
                         kCbrForwardResults));
    Status h = half.node.info->verify({half.node.layout, half.node.attributes});
    EXPECT_TRUE(
        mentions(h, "operand \"prologue_scale\" is present without operand \"prologue_bias\""))
        << (h.ok() ? "verified" : h.error().message());
    Status s = r.run(gpu, *conv, *gemm);
    if (dtype != DType::f16) {
      EXPECT_TRUE(mentions(s, "cbr_forward: needs f16 prologue"))
          << (s.ok() ? "ran" : s.error().message());
      continue;
    }
    if (mentions(s, "without fuse-bn-prologue"))
      GTEST_SKIP() << "no plan for the prologue graph: " << s.error().message();
    ASSERT_OK(s);
    Host y(ys, dtype), convOut(ys, dtype), mean({channels}, DType::f32),
        invStd({channels}, DType::f32);
    TensorView scale = p.scale.view(), bias = p.bias.view();
    ASSERT_TRUE(cpu::cbrForward(x.view(), w.view(), gamma.view(), beta.view(), &scale, &bias,
                                attrs, 1e-5, true, y.view(), convOut.view(), mean.view(),
                                invStd.view())
                    .ok());
    for (const char *how : {"launched", "replayed in a graph"}) {
      if (std::string(how) != "launched")
        ASSERT_OK(replayedInAGraph(r, gpu, *conv, *gemm));
      const double eConv = relativeError(gpu.download(r.results[1]), convOut.values);
      const double eMean = relativeError(gpu.download(r.results[2]), mean.values);
      const double eInvStd = relativeError(gpu.download(r.results[3]), invStd.values);
      const double eY = relativeError(gpu.download(r.results[0]), y.values);
      std::printf("cbr_forward with a prologue x%s w%s %s: result %.1e, conv_output %.1e, "
                  "batch_mean %.1e, batch_inv_std %.1e\n",
                  detail::shapeString(f.x).c_str(), detail::shapeString(f.w).c_str(), how, eY,
                  eConv, eMean, eInvStd);
      EXPECT_LE(eConv, tolerance(dtype)) << how;
      EXPECT_LE(eMean, tol) << how;
      EXPECT_LE(eInvStd, tol) << how;
      EXPECT_LE(eY, tol) << how;
    }
  }
}

// cbr_backward's rn-fuse-bn-prologue forms through its launcher, part by
// part, against cpu::cbrBackward with the same options, at kFusionShapes,
// from the CPU forward's values (of a prologue-carrying cbr_forward):
// prologue_mask (relu_recompute's mask in the prologue's rounding: the
// activation it masks was never stored), input_prologue (the filter
// gradient at the prologue's activation of x, backward_filter_scale_bias_relu,
// with the ReLU result as the mask), and both with an input gradient
// addend (a middle layer of a fused chain: 14 operands, the addend last).
// input_prologue takes f16 only (f32: the "needs f16 prologue" error of
// the weight_grad part); prologue_mask runs for either dtype.
TEST_P(Launchers, CbrBackwardPrologueForms) {
  RN_SKIP_WITHOUT_CUDA();
  const DType dtype = GetParam();
  const double tol = tolerance(dtype, /*normalized=*/true);
  Gpu gpu;
  auto conv = makeConv();
  auto gemm = makeGemm();
  std::mt19937 rng(53);
  for (const FusionShape &f : kFusionShapes) {
    const cpu::Conv2dAttrs attrs = attrsOf(f.params);
    Shape ys;
    ASSERT_TRUE(cpu::conv2dOutputShape(f.x, f.w, attrs, ys).ok());
    const int64_t channels = f.w[0];
    const Shape cs{channels};
    Host x = randomHost(f.x, dtype, rng), w = randomHost(f.w, dtype, rng);
    Host gamma = randomHost(cs, DType::f32, rng, -1.5f, 1.5f);
    Host beta = randomHost(cs, DType::f32, rng, -0.1f, 0.1f);
    PrologueParams p = randomPrologue(f.x[3], dtype, rng);
    TensorView scale = p.scale.view(), bias = p.bias.view();
    Host y(ys, dtype), convOut(ys, dtype), mean(cs, DType::f32), invStd(cs, DType::f32);
    ASSERT_TRUE(cpu::cbrForward(x.view(), w.view(), gamma.view(), beta.view(), &scale, &bias,
                                attrs, 1e-5, true, y.view(), convOut.view(), mean.view(),
                                invStd.view())
                    .ok());
    Host dy = randomHost(ys, dtype, rng), dwAcc = randomHost(f.w, DType::f32, rng);
    Host dgAcc = randomHost(cs, DType::f32, rng), dbAcc = randomHost(cs, DType::f32, rng);
    Host addend = randomHost(f.x, dtype, rng);
    struct Form {
      const char *name;
      bool prologueMask, inputPrologue, addend;
    };
    for (const Form &form : {Form{"prologue_mask", true, false, false},
                             Form{"input_prologue", false, true, false},
                             Form{"prologue_mask + input_prologue + addend", true, true, true}}) {
      const std::string what = std::string(form.name) + " x" + detail::shapeString(f.x) + " w" +
                               detail::shapeString(f.w);
      SCOPED_TRACE(what);
      NodeRun b;
      // relu_output (without prologue_mask) or relu_beta, the input
      // prologue's pair, the addend.
      std::vector<const char *> operandNames =
          cbrBackwardOperands({form.prologueMask ? "relu_beta" : "relu_output"});
      if (form.inputPrologue)
        operandNames.insert(operandNames.end(), {"input_scale", "input_bias"});
      if (form.addend)
        operandNames.push_back("input_grad_addend");
      ASSERT_OK(b.named("cbr_backward", operandNames, kCbrBackwardResults));
      b.node.attributes = convNodeAttrs(f.params);
      if (form.prologueMask)
        b.node.attributes["prologue_mask"] = true;
      b.node.parts = {{"bn_grad", Stream::comp1}, {"weight_grad", Stream::comp1},
                      {"input_grad", Stream::comp1}};
      b.operands = {gpu.upload(dy),    gpu.upload(x),      gpu.upload(w),
                    gpu.upload(convOut), gpu.upload(gamma), gpu.upload(mean),
                    gpu.upload(invStd), gpu.upload(dwAcc), gpu.upload(dgAcc),
                    gpu.upload(dbAcc), gpu.upload(form.prologueMask ? beta : y)};
      if (form.inputPrologue) {
        b.operands.push_back(gpu.upload(p.scale));
        b.operands.push_back(gpu.upload(p.bias));
      }
      if (form.addend)
        b.operands.push_back(gpu.upload(addend));
      b.results = {gpu.empty(ys, dtype), gpu.empty(f.x, dtype), gpu.empty(f.w, DType::f32),
                   gpu.empty(cs, DType::f32), gpu.empty(cs, DType::f32)};
      Status s = b.run(gpu, *conv, *gemm);
      if (form.inputPrologue && dtype != DType::f16) {
        EXPECT_TRUE(mentions(s, "cbr_backward: needs f16 prologue"))
            << (s.ok() ? "ran" : s.error().message());
        continue;
      }
      ASSERT_OK(s);
      cpu::CbrBackwardOptions options;
      TensorView relu = y.view(), reluBeta = beta.view(), addendView = addend.view();
      options.reluOutput = form.prologueMask ? nullptr : &relu;
      options.reluBeta = form.prologueMask ? &reluBeta : nullptr;
      options.prologueMask = form.prologueMask;
      options.inputScale = form.inputPrologue ? &scale : nullptr;
      options.inputBias = form.inputPrologue ? &bias : nullptr;
      options.inputGradAddend = form.addend ? &addendView : nullptr;
      Host convGrad(ys, dtype), dx(f.x, dtype), dw(f.w, DType::f32), dg(cs, DType::f32),
          db(cs, DType::f32);
      TensorView dxView = dx.view();
      ASSERT_TRUE(cpu::cbrBackward(dy.view(), x.view(), w.view(), convOut.view(), gamma.view(),
                                   mean.view(), invStd.view(), dwAcc.view(), dgAcc.view(),
                                   dbAcc.view(), options, attrs, convGrad.view(), &dxView,
                                   dw.view(), dg.view(), db.view())
                      .ok());
      const Host *want[] = {&convGrad, &dx, &dw, &dg, &db};
      const char *names[] = {"conv_output_grad", "input_grad", "filter_grad", "gamma_grad",
                             "beta_grad"};
      std::string line;
      for (size_t i = 0; i < 5; ++i) {
        const double e = relativeError(gpu.download(b.results[i]), want[i]->values);
        EXPECT_LE(e, tol) << names[i];
        char text[64];
        std::snprintf(text, sizeof text, "%s%s %.1e", i ? ", " : "", names[i], e);
        line += text;
      }
      std::printf("cbr_backward %s %s: %s\n", what.c_str(), std::string(dtypeName(dtype)).c_str(),
                  line.c_str());
    }
  }
}

} // namespace
} // namespace rn::cuda
