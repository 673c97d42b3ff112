//===- StreamPolicy.cpp - Static op -> stream policy ----------------------===//

#include "passes/StreamPolicy.h"

#include "llvm/ADT/StringSwitch.h"

using namespace mlir;
using namespace mlir::rn;

namespace {
struct PolicyEntry {
  llvm::StringLiteral name;
  StreamKind stream;
};
} // namespace

// The policy of docs/design.md (from its source article). TRANS: host->device copies.
// COMP_1: GEMM-heavy work (convolution, fully connected, the loss, dW).
// COMP_2: reductions (BatchNorm, pooling, dropout and stochastic depth, dB,
// accuracy).
// COMP_3: elementwise work and dX. UPDATE: zero-grad, loss scaling,
// optimizers, casts of gradients and weights, EMA, running statistics and
// the gradient all-reduce of data-parallel training.
static constexpr PolicyEntry kPolicy[] = {
    // Transfer.
    {"host_to_device", StreamKind::trans},
    // GEMM-heavy forward work and the loss.
    {"conv2d", StreamKind::comp1},
    {"linear", StreamKind::comp1},
    {"cbr_forward", StreamKind::comp1},
    {"cbr_inference", StreamKind::comp1},
    {"conv_bn_stats", StreamKind::comp1},
    // Tiny, but read by the next convolution's prologue: on its stream.
    {"bn_scale_bias", StreamKind::comp1},
    {"softmax_cross_entropy", StreamKind::comp1},
    {"softmax_cross_entropy_backward", StreamKind::comp1},
    // Reductions.
    {"batch_norm", StreamKind::comp2},
    {"batch_norm_train", StreamKind::comp2},
    {"batch_norm_inference", StreamKind::comp2},
    {"batch_norm_backward", StreamKind::comp2},
    {"bn_add_relu", StreamKind::comp2},
    {"bn_add_relu_inference", StreamKind::comp2},
    {"bn_add_relu_backward", StreamKind::comp2},
    {"max_pool2d", StreamKind::comp2},
    {"max_pool2d_backward", StreamKind::comp2},
    {"avg_pool2d", StreamKind::comp2},
    {"avg_pool2d_backward", StreamKind::comp2},
    {"adaptive_avg_pool2d", StreamKind::comp2},
    {"adaptive_avg_pool2d_backward", StreamKind::comp2},
    {"global_avg_pool", StreamKind::comp2},
    {"global_avg_pool_backward", StreamKind::comp2},
    {"dropout", StreamKind::comp2},
    {"dropout_train", StreamKind::comp2},
    {"dropout_backward", StreamKind::comp2},
    {"stochastic_depth", StreamKind::comp2},
    {"stochastic_depth_train", StreamKind::comp2},
    {"stochastic_depth_backward", StreamKind::comp2},
    {"count_correct", StreamKind::comp2},
    // The scale gradient sums over H and W, as global_avg_pool does.
    {"channel_mul_backward", StreamKind::comp2},
    // Elementwise work.
    {"relu", StreamKind::comp3},
    {"relu_backward", StreamKind::comp3},
    {"tanh", StreamKind::comp3},
    {"tanh_backward", StreamKind::comp3},
    {"silu", StreamKind::comp3},
    {"silu_backward", StreamKind::comp3},
    {"sigmoid", StreamKind::comp3},
    {"sigmoid_backward", StreamKind::comp3},
    {"hardtanh", StreamKind::comp3},
    {"hardtanh_backward", StreamKind::comp3},
    {"hardswish", StreamKind::comp3},
    {"hardswish_backward", StreamKind::comp3},
    {"hardsigmoid", StreamKind::comp3},
    {"hardsigmoid_backward", StreamKind::comp3},
    {"add", StreamKind::comp3},
    {"channel_mul", StreamKind::comp3},
    {"flatten", StreamKind::comp3},
    {"reshape", StreamKind::comp3},
    {"cast", StreamKind::comp3},
    {"pad_channels", StreamKind::comp3},
    {"normalize_images", StreamKind::comp3},
    {"multi_cast", StreamKind::comp3},
    // Training logistics.
    {"zero", StreamKind::update},
    {"multi_zero", StreamKind::update},
    {"check_finite", StreamKind::update},
    {"unscale", StreamKind::update},
    {"multi_unscale", StreamKind::update},
    {"update_loss_scale", StreamKind::update},
    {"sgd_update", StreamKind::update},
    {"multi_sgd_update", StreamKind::update},
    {"adamw_update", StreamKind::update},
    {"multi_adamw_update", StreamKind::update},
    {"lars_update", StreamKind::update},
    {"multi_lars_update", StreamKind::update},
    {"ema_update", StreamKind::update},
    {"multi_ema_update", StreamKind::update},
    {"update_running_stats", StreamKind::update},
    {"all_reduce_mean", StreamKind::update},
    // Parts of forking ops (conv/linear/CBR backward).
    {"weight_grad", StreamKind::comp1},
    {"bias_grad", StreamKind::comp2},
    {"bn_grad", StreamKind::comp2},
    {"input_grad", StreamKind::comp3},
};

StreamKind mlir::rn::getPrimaryStream(StringRef subgraph) {
  using namespace subgraphs;
  if (subgraph == kTransfer)
    return StreamKind::trans;
  if (subgraph == kFirstLayerFwd || subgraph == kDeepFwdBwd ||
      subgraph == kFirstLayerBwd || subgraph == kInference)
    return StreamKind::comp1;
  return StreamKind::update;
}

StreamPolicy::StreamPolicy() {
  for (const PolicyEntry &entry : kPolicy)
    table[entry.name] = entry.stream;
}

LogicalResult StreamPolicy::applyOverrides(StringRef overrides,
                                           std::string &errorMessage) {
  SmallVector<StringRef> entries;
  overrides.split(entries, ',', /*MaxSplit=*/-1, /*KeepEmpty=*/false);
  for (StringRef entry : entries) {
    auto [name, streamName] = entry.trim().split('=');
    name = name.trim();
    std::optional<StreamKind> stream = symbolizeStreamKind(streamName.trim());
    if (!stream) {
      errorMessage = ("policy entry '" + entry.trim() +
                      "' needs name=stream with stream one of trans, comp1, "
                      "comp2, comp3, update")
                         .str();
      return failure();
    }
    if (!table.count(name)) {
      errorMessage = ("policy entry '" + entry.trim() +
                      "' names no op or fork role of the table")
                         .str();
      return failure();
    }
    table[name] = *stream;
  }
  return success();
}

std::optional<StreamKind> StreamPolicy::getStream(Operation *op,
                                                  StringRef subgraph) const {
  if (isa<CastOp, MultiCastOp>(op) &&
      (subgraph == subgraphs::kCastGrad || subgraph == subgraphs::kCastWeights ||
       op->hasAttr(kBucketAttr)))
    return StreamKind::update;
  if (auto forking = dyn_cast<ForkingOpInterface>(op)) {
    SmallVector<ForkPart> parts = forking.getForkParts();
    // Consumers of dX wait on dX; without dX (the first layer), on dW.
    for (StringRef role : {"input_grad", "weight_grad"})
      for (const ForkPart &part : parts)
        if (part.role == role)
          return getRoleStream(role);
  }
  auto it = table.find(op->getName().stripDialect());
  if (it == table.end())
    return std::nullopt;
  return it->second;
}

std::optional<StreamKind> StreamPolicy::getRoleStream(StringRef role) const {
  auto it = table.find(role);
  if (it == table.end())
    return std::nullopt;
  return it->second;
}
