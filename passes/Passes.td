//===- Passes.td - RN compiler passes ----------------------*- tablegen -*-===//

#ifndef RN_PASSES_PASSES_TD
#define RN_PASSES_PASSES_TD

include "mlir/Pass/PassBase.td"

def BuildTraining : Pass<"rn-build-training", "::mlir::ModuleOp"> {
  let summary = "Derive the training step and the evaluation step from the forward model";
  let description = [{
    Turns the model level (parameters, `@forward(images, labels) -> loss`)
    into two functions whose every piece of state is an explicit argument or
    result bound to a symbol with `rn.state`:

    - `@train_step(images, labels, lr, step, state...) -> (loss, new state...)`:
      zero-grad, the forward pass in training mode (batch statistics,
      dropout and stochastic-depth masks), one backward op per forward op
      with gradient accumulation where a value fans out, mixed-precision
      casts, loss scaling, one optimizer update per parameter, BatchNorm
      running statistics, low-precision weight casts and EMA.
    - `@eval_step(images, labels, params...) -> (loss, correct, logits)`:
      inference mode (running statistics, no dropout or stochastic depth).

    The pass holds no list of ops: the ops say how they train, through the
    interfaces of RNInterfaces.td. An op with a training form
    (TrainingFormOpInterface: batch_norm, dropout, stochastic_depth) is
    replaced by it in the training step and by its evaluation form in the
    evaluation step; every other op is cloned into both. The backward pass
    calls each op's gradient rule (GradientOpInterface, RNGradients.cpp),
    last op first; ParameterOperandsOpInterface says which operands are
    weights, biases, normalization parameters or running statistics; ops
    with RN_RandomInTraining get their random streams in forward order.

    State besides the parameters is declared with `rn.state` (gradients,
    optimizer moments, low-precision copies, EMA, loss scale). The learning
    rate and step count are runtime inputs: the host computes the schedule.
    The options are recorded in the module attribute `rn.training`.

    Before:
    ```mlir
    rn.parameter @fc.weight : tensor<10x8xf32> = #rn.init<uniform, 3.5e-01>
    func.func @forward(%x: tensor<4x8xf32>, %y: tensor<4xi32>) -> tensor<f32> {
      %w = rn.param @fc.weight : tensor<10x8xf32>
      %logits = rn.linear %x, %w : (tensor<4x8xf32>, tensor<10x8xf32>) -> tensor<4x10xf32>
      %loss = rn.softmax_cross_entropy %logits, %y label_smoothing 0.0 : ...
      return %loss : tensor<f32>
    }
    ```
    After (`optimizer=sgd momentum=0.9`):
    ```mlir
    rn.state gradient @grad.fc.weight of @fc.weight : tensor<10x8xf32> = #rn.init<zeros>
    rn.state momentum @momentum.fc.weight of @fc.weight : tensor<10x8xf32> = #rn.init<zeros>
    func.func @train_step(%x {rn.input = "images"}, %y {rn.input = "labels"},
        %lr {rn.input = "lr"}, %step {rn.input = "step"},
        %w {rn.state = @fc.weight}, %g {rn.state = @grad.fc.weight},
        %m {rn.state = @momentum.fc.weight}) -> (loss, w', g', m') {
      %g0 = rn.zero %g
      %logits = rn.linear %x, %w
      %loss = rn.softmax_cross_entropy %logits, %y
      %dlogits = rn.softmax_cross_entropy_backward %logits, %y
      %g1 = rn.linear_backward %dlogits, %x, %w, %g0     // first layer: no dX
      %w1, %m1 = rn.sgd_update %w, %g1, %m lr %lr momentum 0.9 ...
      return %loss, %w1, %g1, %m1
    }
    func.func @eval_step(%x, %y, %w) -> (loss, correct, logits)
    ```
  }];
  let options = [
    Option<"forwardFunction", "forward", "std::string", "\"forward\"",
           "name of the forward function">,
    Option<"optimizer", "optimizer", "std::string", "\"sgd\"",
           "sgd, adamw or lars",
           "::llvm::cl::value_desc(\"sgd|adamw|lars\")">,
    Option<"momentum", "momentum", "double", "0.9",
           "SGD/LARS momentum (0 disables the momentum buffer for SGD)">,
    Option<"nesterov", "nesterov", "bool", "false", "Nesterov momentum (SGD)">,
    Option<"weightDecay", "weight-decay", "double", "0.0",
           "L2 weight decay (SGD, LARS) or decoupled decay (AdamW)">,
    Option<"noDecayBnBias", "no-decay-bn-bias", "bool", "false",
           "exclude BatchNorm parameters and biases from weight decay">,
    Option<"beta1", "beta1", "double", "0.9", "AdamW beta1">,
    Option<"beta2", "beta2", "double", "0.999", "AdamW beta2">,
    Option<"adamEpsilon", "adam-eps", "double", "1e-8", "AdamW epsilon">,
    Option<"larsTrust", "lars-trust", "double", "0.001",
           "LARS trust coefficient">,
    Option<"larsEpsilon", "lars-eps", "double", "1e-9", "LARS epsilon">,
    Option<"precision", "precision", "std::string", "\"f32\"",
           "compute precision: f32, or f16/bf16 mixed precision with f32 "
           "master weights", "::llvm::cl::value_desc(\"f32|f16|bf16\")">,
    Option<"lossScaling", "loss-scaling", "std::string", "\"none\"",
           "none, static or dynamic",
           "::llvm::cl::value_desc(\"none|static|dynamic\")">,
    Option<"lossScale", "loss-scale", "double", "65536.0",
           "the static loss scale, or the initial dynamic one">,
    Option<"growthInterval", "growth-interval", "int64_t", "2000",
           "dynamic scaling: clean steps before the scale grows">,
    Option<"growthFactor", "growth-factor", "double", "2.0",
           "dynamic scaling: growth factor">,
    Option<"backoffFactor", "backoff-factor", "double", "0.5",
           "dynamic scaling: factor applied on overflow">,
    Option<"emaDecay", "ema-decay", "double", "0.0",
           "keep an exponential moving average of the weights (0: off)">,
    Option<"dataParallel", "data-parallel", "bool", "false",
           "average the gradients over data-parallel replicas "
           "(rn.all_reduce_mean) before loss scaling and the optimizer">,
  ];
  let statistics = [
    Statistic<"numBackwardOps", "num-backward-ops",
              "backward ops generated">,
    Statistic<"numOptimizerUpdates", "num-optimizer-updates",
              "per-parameter optimizer updates generated">,
    Statistic<"numStateTensors", "num-state-tensors",
              "rn.state declarations added">,
  ];
  let dependentDialects = ["::mlir::rn::RNDialect", "::mlir::func::FuncDialect"];
}


def FuseCbr : Pass<"rn-fuse-cbr", "::mlir::ModuleOp"> {
  let summary = "Fuse conv2d + batch norm (+ relu) and their backward into CBR ops";
  let description = [{
    Runs on every function (`@train_step` and `@eval_step` of
    rn-build-training) and rewrites:

    | unfused chain | fused op |
    |---|---|
    | `conv2d` -> `batch_norm_train` (-> `relu`) | `rn.cbr_forward` (`relu`) |
    | (`relu_backward` ->) `batch_norm_backward` -> `conv2d_backward` | `rn.cbr_backward` |
    | `conv2d` -> `batch_norm_inference` (-> `relu`) | `rn.cbr_inference` |
    | `batch_norm_train` -> `add` -> `relu` | `rn.bn_add_relu` |
    | `relu_backward` -> `batch_norm_backward` | `rn.bn_add_relu_backward` |
    | `batch_norm_inference` -> `add` -> `relu` | `rn.bn_add_relu_inference` |

    Forward chains are fused first; a backward chain is fused when it
    differentiates a fused forward op (it reads that op's saved statistics),
    and the first layer's conv2d_backward without an `input_grad` result
    gives a cbr_backward without one. The fused ops return every value the
    rest of the step reads: the conv output and batch statistics (for the
    backward op and `rn.update_running_stats`), the gradient at the conv
    output, the shortcut gradient. A value they do not return (the batch
    norm output before a fused ReLU, the sum of a residual add, a fused ReLU
    gradient, the conv output at inference) must have no other user, else
    the chain is left unfused, or fused without its ReLU, with a remark
    saying why; convolutions with a bias are not fused (the batch norm
    cancels the bias). The fused op takes the place of the last op of the
    chain, or of the first when a result is used in between.

    A batch norm between a conv2d and an add + relu (a ResNet block's last
    batch norm) joins the residual tail by default, leaving a plain conv2d;
    `prefer-residual-tails=false` fuses it with the conv instead
    (cbr_forward without relu), leaving add and relu unfused.

    Before (`@train_step`, one layer):
    ```mlir
    %c = rn.conv2d %x, %w stride [1, 1] pad [1, 1] dilation [1, 1] groups 1
    %n, %mean, %istd = rn.batch_norm_train %c, %gamma, %beta eps 1.0e-05
    %y = rn.relu %n
    ...
    %d = rn.relu_backward %dy, %y
    %dc, %ggamma, %gbeta = rn.batch_norm_backward %d, %c, %gamma, %mean, %istd, %ggamma0, %gbeta0
    %dx, %gw = rn.conv2d_backward %dc, %x, %w, %gw0 stride [1, 1] pad [1, 1]
        dilation [1, 1] groups 1
    %rm, %rv = rn.update_running_stats %m0, %v0, %mean, %istd eps 1.0e-05 ...
    ```
    After:
    ```mlir
    %y, %c, %mean, %istd = rn.cbr_forward %x, %w, %gamma, %beta stride [1, 1]
        pad [1, 1] dilation [1, 1] groups 1 eps 1.0e-05 relu
    ...
    %dc, %dx, %gw, %ggamma, %gbeta = rn.cbr_backward %dy, %x, %w, %c, %gamma,
        %mean, %istd, %gw0, %ggamma0, %gbeta0 relu %y stride [1, 1]
        pad [1, 1] dilation [1, 1] groups 1
    %rm, %rv = rn.update_running_stats %m0, %v0, %mean, %istd eps 1.0e-05 ...
    ```
    A residual tail `%s = rn.add %n, %shortcut; %y = rn.relu %s` becomes
    `%y, %mean, %istd = rn.bn_add_relu %c, %gamma, %beta shortcut %shortcut
    eps ..` and its backward `%dc, %dshortcut, %ggamma, %gbeta =
    rn.bn_add_relu_backward %dy, %y, %c, %gamma, %mean, %istd, %ggamma0,
    %gbeta0`.
  }];
  let options = [
    Option<"enabled", "enable", "bool", "true",
           "fuse (false keeps the unfused ops, the baseline to measure)">,
    Option<"preferResidualTails", "prefer-residual-tails", "bool", "true",
           "a batch norm between a conv2d and an add + relu joins the "
           "residual tail (rn.bn_add_relu) rather than the conv "
           "(rn.cbr_forward without relu)">,
  ];
  let statistics = [
    Statistic<"numFusedForward", "num-fused-forward", "forward CBR ops formed">,
    Statistic<"numFusedBackward", "num-fused-backward", "backward CBR ops formed">,
    Statistic<"numFusedInference", "num-fused-inference",
              "inference CBR ops formed">,
    Statistic<"numResidualTails", "num-residual-tails",
              "bn_add_relu ops formed (forward, backward and inference)">,
    Statistic<"numSkipped", "num-skipped", "candidates left unfused">,
  ];
  let dependentDialects = ["::mlir::rn::RNDialect"];
}

def PadConvChannels : Pass<"rn-pad-conv-channels", "::mlir::ModuleOp"> {
  let summary = "Zero-pad the input channels of convolutions the tensor cores cannot take (the image stems)";
  let description = [{
    cuDNN's fast f16/bf16 kernels want the input channel count to be a
    multiple of 8; with 3 (the RGB stem), it falls back to older, slower
    kernels (docs/scheduling.md, "Measurements behind the passes"). This pass gives such a convolution
    `rn.pad_channels` copies of its input and its filter, widened to the next
    multiple of `channel-multiple` with zero channels, which leave every
    output unchanged and get zero gradient. The filter's parameter, its
    gradient accumulator and the checkpoints keep their shape: the backward
    op accumulates the gradient of the first channels only (its
    `filter_grad_acc` may be narrower than its filter). When the input is
    the f32 batch's f16 cast, the pad converts it directly.

    An ImageNet-style stem (a 7x7 or larger filter at stride 2 over at most
    `image-stem-channels` input channels) is padded to exactly
    `image-stem-channels` (4) instead: cuDNN's image first-layer kernels
    take 4 channels of such a filter and run its forward and filter
    gradient 2.6x faster than the 8-channel plans (docs/benchmarks.md,
    "The ImageNet stem at 4 channels"). The runtime lets that convolution
    take their reduced-precision-reduction plans (ConvRunner's
    reducedPrecisionStem), which the 8-channel stem does not need.

    A convolution qualifies (rn.conv2d, rn.cbr_forward, rn.cbr_inference)
    when its input is f16 or bf16 (f32 programs run no tensor-core kernels),
    it has one group, its input channels are not a multiple of
    `channel-multiple` (or, for an ImageNet-style stem, not
    `image-stem-channels`), its input gets no gradient (the first layer's, whose
    input is the batch: interior layers are left alone silently), and its
    input and filter are read only by it and by its backward op; a stem that
    fails the last two gets a remark saying why. Runs after
    rn-fuse-cbr and before rn-partition, which puts the pads in the first
    layer's subgraph.

    Before (after rn-fuse-cbr, f16):
    ```mlir
    %x = rn.cast %images : tensor<256x224x224x3xf32> -> tensor<256x224x224x3xf16>
    %y, %c, %mean, %istd = rn.cbr_forward %x, %w, %gamma, %beta stride [2, 2] pad [3, 3] ...
    %dc, %grads:3 = rn.cbr_backward %dy, %x, %w, %c, %gamma, %mean, %istd, %gw0, ... :
        (..., tensor<64x7x7x3xf16>, ...) -> (..., tensor<64x7x7x3xf16>, ...)
    ```
    After:
    ```mlir
    %x8 = rn.pad_channels %images : tensor<256x224x224x3xf32> -> tensor<256x224x224x8xf16>
    %w8 = rn.pad_channels %w : tensor<64x7x7x3xf16> -> tensor<64x7x7x8xf16>
    %y, %c, %mean, %istd = rn.cbr_forward %x8, %w8, %gamma, %beta stride [2, 2] pad [3, 3] ...
    %dc, %grads:3 = rn.cbr_backward %dy, %x8, %w8, %c, %gamma, %mean, %istd, %gw0, ... :
        (..., tensor<64x7x7x8xf16>, tensor<64x7x7x3xf16>, ...) -> (..., tensor<64x7x7x3xf16>, ...)
    ```
  }];
  let options = [
    Option<"channelMultiple", "channel-multiple", "int64_t", "8",
           "pad input channels to a multiple of this (0 or 1: leave every "
           "convolution as it is)">,
    Option<"imageStemChannels", "image-stem-channels", "int64_t", "4",
           "pad an ImageNet-style stem (at most this many input channels, a "
           "filter of 7x7 or more, stride 2) to exactly this many instead: "
           "cuDNN's image first-layer kernels take 4 (0: the channel-multiple "
           "rule for every stem)">,
  ];
  let statistics = [
    Statistic<"numPadded", "num-padded", "convolutions given padded channels">,
    Statistic<"numSkipped", "num-skipped",
              "f16/bf16 convolutions with unaligned channels left as they are">,
  ];
  let dependentDialects = ["::mlir::rn::RNDialect"];
}

def FoldGradientAdds : Pass<"rn-fold-gradient-adds", "::mlir::ModuleOp"> {
  let summary = "Fold a residual junction's gradient sum into the data gradient that produces one of its terms";
  let description = [{
    In the backward of a residual block, the gradient at the block's input
    is the sum of two gradients (the main path's data gradient and the
    shortcut's), one `rn.add` of whole activations. When one term
    is the input gradient of an `rn.cbr_backward` or `rn.conv2d_backward`
    that nothing else reads, and the other term is defined before that op,
    this pass gives the backward op the other term as its input gradient's
    addend (`plus`) and removes the add: cuDNN adds it in the data
    gradient's epilogue (`ConvKind::backward_data_add`), which costs less
    than the add it replaces at stride 1. The sum is rounded once
    (the add rounded the data gradient first, then the sum). Runs after
    rn-fuse-cbr and before rn-partition.

    Before:
    ```mlir
    %dc, %g:4 = rn.cbr_backward %dy, %x, %w, ... groups 1 : ...
    %sum = rn.add %shortcut_grad, %g#0 : tensor<256x56x56x256xf16>
    ```
    After:
    ```mlir
    %dc, %g:4 = rn.cbr_backward %dy, %x, %w, ... groups 1 plus %shortcut_grad : ...
    ```
    (`%g#0` takes the place of `%sum`.)

    `max-stride=N` folds only into data gradients of convolutions whose
    strides are at most N (0: any). The default, 1, keeps the adds of
    strided junctions: cuDNN's plans for a strided data gradient with the
    addend cost more than the add they replace, while every stride-1 one
    measured pays (docs/scheduling.md, "Measurements behind the passes").
  }];
  let options = [
    Option<"maxStride", "max-stride", "int64_t", "1",
           "fold only into data gradients whose strides are at most this (0: any)">,
  ];
  let statistics = [
    Statistic<"numFolded", "num-folded", "gradient adds folded into a data gradient">,
    Statistic<"numStrided", "num-strided", "junctions left unfolded: the data gradient's stride is above max-stride">,
  ];
  let dependentDialects = ["::mlir::rn::RNDialect"];
}

def RecomputeReluMask : Pass<"rn-recompute-relu-mask", "::mlir::ModuleOp"> {
  let summary = "Recompute cbr_backward's ReLU mask from the convolution output instead of reading the ReLU result";
  let description = [{
    The backward of a Conv+BN+ReLU reads three activations in each of its
    two passes (the batch norm's reduction and its input gradient): the
    output gradient, the convolution output (for the normalized value) and
    the ReLU result, only for its sign. The sign follows from what the pass
    already reads: the forward's result is positive exactly where
    `(conv_output - batch_mean) * batch_inv_std * gamma + beta`, rounded to
    the activation type, is. This pass gives each `rn.cbr_backward` whose
    ReLU result is the result of the `rn.cbr_forward` that also produced
    its conv_output and statistics (and took its gamma) that forward's
    beta instead (`relu_recompute`): two of the seven activation-sized
    transfers of the backward go (ResNet-50 has 33 CBR backward ops with a
    ReLU). The ReLU result
    may also die earlier. Runs after rn-fuse-cbr and before rn-partition.

    Before:
    ```mlir
    %y, %c, %mean, %inv_std = rn.cbr_forward %x, %w, %gamma, %beta ... relu : ...
    %dc, %g:4 = rn.cbr_backward %dy, %x, %w, %c, %gamma, %mean, %inv_std,
        %gw, %ggamma, %gbeta relu %y stride ... : ...
    ```
    After:
    ```mlir
    %dc, %g:4 = rn.cbr_backward %dy, %x, %w, %c, %gamma, %mean, %inv_std,
        %gw, %ggamma, %gbeta relu_recompute %beta stride ... : ...
    ```
  }];
  let statistics = [
    Statistic<"numRecomputed", "num-recomputed", "cbr_backward ops that recompute their ReLU mask">,
    Statistic<"numKept", "num-kept", "cbr_backward ops that keep reading a ReLU result not of their cbr_forward">,
  ];
  let dependentDialects = ["::mlir::rn::RNDialect"];
}

def FuseBnPrologue : Pass<"rn-fuse-bn-prologue", "::mlir::ModuleOp"> {
  let summary = "Move a CBR's batch norm apply + ReLU into the prologue of the convolutions that read it";
  let description = [{
    A `rn.cbr_forward` with `relu` normalizes and rectifies its
    convolution's output in a pass of its own, writes the result, and the
    next convolutions read it. cuDNN can apply the per-channel scale and
    bias and the ReLU as the next convolution's prologue instead
    (`ConvKind::forward_scale_bias_relu_stats`, and
    `backward_filter_scale_bias_relu` for its filter gradient), so the
    activation is never stored. This pass rewrites, in program order, every
    `rn.cbr_forward` P with `relu` and f16 activations (cuDNN's prologue
    engines take f16 scale and bias) whose ReLU result is read only as

    - the `input` of `rn.cbr_forward` ops R without a prologue and with one
      group (at least one),
    - the `input` of the `rn.cbr_backward` of such an R (same filter and
      convolution attributes, no `input_prologue` yet), and
    - the `relu_output` of P's own `rn.cbr_backward` (same conv_output,
      gamma and statistics),

    into `rn.conv_bn_stats` (the convolution and its statistics, with P's
    own prologue if it has one) and `rn.bn_scale_bias` (the apply's scale
    and bias in f16, right after it). Each R takes P's conv_output with
    `prologue %scale, %bias`, each backward of an R `input_prologue %scale,
    %bias` (its filter gradient reads the prologue's output), and P's
    backward recomputes its mask from P's beta in the prologue's rounding
    (`relu_recompute %beta prologue_mask`; one that rn-recompute-relu-mask
    already gave `relu_recompute %beta` gains `prologue_mask`). Since R is
    visited after P, an R with a prologue may become a conv_bn_stats in
    turn: chains of CBRs compose. Any other reader of the ReLU result (an
    add, a pool, a plain conv2d, a grouped convolution, a function result)
    keeps P as it is, with a remark saying why, as do f32 and bf16 CBRs.
    `@eval_step` has no cbr_forward and is left alone. Runs after
    rn-fold-gradient-adds and before rn-partition.

    Before (f16):
    ```mlir
    %y1, %c1, %m1, %s1 = rn.cbr_forward %x, %w1, %g1, %b1 stride .. relu : ...
    %y2, %c2, %m2, %s2 = rn.cbr_forward %y1, %w2, %g2, %b2 stride .. relu : ...
    ...
    %dc2, %dx2, %gw2, %gg2, %gb2 = rn.cbr_backward %dy2, %y1, %w2, %c2, %g2,
        %m2, %s2, .. relu_recompute %b2 stride .. : ...
    %dc1, %dx1, %gw1, %gg1, %gb1 = rn.cbr_backward %dx2, %x, %w1, %c1, %g1,
        %m1, %s1, .. relu_recompute %b1 stride .. : ...
    ```
    After:
    ```mlir
    %c1, %m1, %s1 = rn.conv_bn_stats %x, %w1 stride .. eps .. : ...
    %scale, %bias = rn.bn_scale_bias %m1, %s1, %g1, %b1
        : (...) -> (tensor<64xf16>, tensor<64xf16>)
    %y2, %c2, %m2, %s2 = rn.cbr_forward %c1, %w2, %g2, %b2
        prologue %scale, %bias stride .. relu : ...
    ...
    %dc2, %dx2, %gw2, %gg2, %gb2 = rn.cbr_backward %dy2, %c1, %w2, %c2, %g2,
        %m2, %s2, .. relu_recompute %b2 input_prologue %scale, %bias stride .. : ...
    %dc1, %dx1, %gw1, %gg1, %gb1 = rn.cbr_backward %dx2, %x, %w1, %c1, %g1,
        %m1, %s1, .. relu_recompute %b1 prologue_mask stride .. : ...
    ```
  }];
  let statistics = [
    Statistic<"numFused", "num-fused",
              "cbr_forward ops rewritten into conv_bn_stats + bn_scale_bias">,
    Statistic<"numReaders", "num-readers",
              "cbr_forward ops given a prologue">,
    Statistic<"numKept", "num-kept",
              "cbr_forward ops with relu kept (a reader that takes no "
              "prologue, or activations other than f16)">,
  ];
  let dependentDialects = ["::mlir::rn::RNDialect"];
}

def Partition : Pass<"rn-partition", "::mlir::ModuleOp"> {
  let summary = "Cut the train and eval steps into subgraphs and write the step schedules";
  let description = [{
    Classifies every op of `@train_step` and `@eval_step` into a named
    subgraph (TRANSFER, ZERO_GRAD, FIRST_LAYER_FWD, DEEP_FWD_BWD,
    FIRST_LAYER_BWD, CAST_GRAD, NAN_CHECK_AND_GRAD_SCALING, OPTIMIZER,
    UPDATE_BN_STATS, CAST_WEIGHTS, EMA_UPDATE; INFERENCE for evaluation),
    reorders each function so its subgraphs are contiguous in launch order,
    and declares each subgraph with its primary stream. Every `rn.input`
    argument becomes a host staging buffer copied by `rn.host_to_device`
    (TRANSFER). Subgraphs that read the copied inputs are `double_buffered`:
    they exist in an A and a B variant. The host-side step schedules are
    written as `rn.step_schedule` ops: a prologue that fills buffer A, even
    and odd steps that compute on A (B) while prefetching the next batch into
    B (A), and last steps that prefetch nothing and end with a host wait.

    Before (after rn-build-training):
    ```mlir
    func.func @train_step(%x: tensor<2x4xf32> {rn.input = "images"}, ...) {
      %g0 = rn.zero %g
      %h = rn.linear %x, %w, %b
      ...
    ```
    After:
    ```mlir
    rn.subgraph @TRANSFER in @train_step on #rn.stream<trans> double_buffered
    rn.subgraph @ZERO_GRAD in @train_step on #rn.stream<update>
    rn.subgraph @FIRST_LAYER_FWD in @train_step on #rn.stream<comp1> double_buffered
    ...
    rn.step_schedule @train_even {
      rn.host_wait @TRANSFER variant a
      rn.launch @TRANSFER variant b
      rn.launch @ZERO_GRAD
      rn.launch @FIRST_LAYER_FWD variant a
      ...
    }
    func.func @train_step(%x: tensor<2x4xf32> {rn.input = "images"}, ...) {
      %xd = rn.host_to_device %x {rn.subgraph = @TRANSFER}
      %g0 = rn.zero %g {rn.subgraph = @ZERO_GRAD}
      %h = rn.linear %xd, %w, %b {rn.subgraph = @FIRST_LAYER_FWD}
      ...
    ```
  }];
  let statistics = [
    Statistic<"numSubgraphs", "num-subgraphs", "subgraphs declared">,
  ];
  let dependentDialects = ["::mlir::rn::RNDialect"];
}

def BucketAllReduce : Pass<"rn-bucket-all-reduce", "::mlir::ModuleOp"> {
  let summary = "Split the data-parallel gradient all-reduce into buckets issued during the backward";
  let description = [{
    With `data-parallel`, rn-build-training averages every f32 gradient over
    the replicas with one `rn.all_reduce_mean` in ALL_REDUCE, which runs
    after the whole backward (and CAST_GRAD): nothing overlaps the
    replicas' communication. This pass cuts that all-reduce into buckets
    as PyTorch DDP does: the gradients the backward finishes in
    DEEP_FWD_BWD, in the order it finishes them (the backward runs from the
    last layer to the first), fill buckets of at least `bucket-bytes` (the
    last one smaller); each bucket becomes an `rn.all_reduce_mean` placed in
    DEEP_FWD_BWD right after the op that finishes its last gradient, with
    the f32 casts of its low-precision gradients moved from CAST_GRAD to
    just before it. Both carry `rn.bucket` (the bucket's index) and run on
    the UPDATE stream, so the compute streams go on with the backward while
    a bucket is reduced; rn-insert-barriers then orders each bucket after
    its producers and the optimizer after every bucket, as for any op.
    The gradients finished later than DEEP_FWD_BWD (the first layer's, in
    FIRST_LAYER_BWD) stay in one all-reduce in ALL_REDUCE; so that ALL_REDUCE
    and CAST_GRAD keep an op each, the last buckets stay there when they
    would not. Runs after rn-partition and before rn-group-elementwise
    (which merges each bucket's casts into one `rn.multi_cast`) and
    rn-plan-memory.

    Before (rn-partition, f16 with dynamic loss scaling):
    ```mlir
    %dx, %dw2:3 = rn.cbr_backward ... {rn.subgraph = @DEEP_FWD_BWD}
    %dx1, %dw1:3 = rn.cbr_backward ... {rn.subgraph = @FIRST_LAYER_BWD}
    %c1 = rn.cast %dw1#0 {rn.subgraph = @CAST_GRAD} : tensor<4x3x3x1xf16> -> tensor<4x3x3x1xf32>
    %c2 = rn.cast %dw2#0 {rn.subgraph = @CAST_GRAD} : tensor<4x3x3x4xf16> -> tensor<4x3x3x4xf32>
    %r:4 = rn.all_reduce_mean %c1, %dw1#1, %c2, %dw2#1 {rn.subgraph = @ALL_REDUCE} : ...
    ```
    After:
    ```mlir
    %dx, %dw2:3 = rn.cbr_backward ... {rn.subgraph = @DEEP_FWD_BWD}
    %c2 = rn.cast %dw2#0 {rn.bucket = 0, rn.subgraph = @DEEP_FWD_BWD} : ...
    %b:2 = rn.all_reduce_mean %c2, %dw2#1 {rn.bucket = 0, rn.subgraph = @DEEP_FWD_BWD} : ...
    %dx1, %dw1:3 = rn.cbr_backward ... {rn.subgraph = @FIRST_LAYER_BWD}
    %c1 = rn.cast %dw1#0 {rn.subgraph = @CAST_GRAD} : ...
    %r:2 = rn.all_reduce_mean %c1, %dw1#1 {rn.subgraph = @ALL_REDUCE} : ...
    ```
    Not done: the buckets' gradients are not made contiguous in the
    memory plan (the runtime reduces a bucket's tensors in one grouped
    call instead of one buffer).
  }];
  let options = [
    Option<"bucketBytes", "bucket-bytes", "int64_t", "26214400",
           "bytes of f32 gradients per bucket (PyTorch DDP's 25 MiB)">,
  ];
  let statistics = [
    Statistic<"numBuckets", "num-buckets", "all-reduce buckets placed in DEEP_FWD_BWD">,
    Statistic<"numBucketedGradients", "num-bucketed-gradients",
              "gradients reduced in a bucket during the backward">,
  ];
  let dependentDialects = ["::mlir::rn::RNDialect"];
}

def GroupElementwise : Pass<"rn-group-elementwise", "::mlir::ModuleOp"> {
  let summary = "Merge the per-tensor gradient zeroing, unscaling, casts and weight EMAs of each subgraph into multi-tensor ops";
  let description = [{
    rn-build-training emits one `rn.zero` per gradient accumulator (in
    ZERO_GRAD) and, with loss scaling, one `rn.unscale` per gradient (in
    NAN_CHECK_AND_GRAD_SCALING): ResNet-50 has 161 of each, and with f16
    55 `rn.cast` of the gradients to their f32 masters (CAST_GRAD) and 55 of
    the weights to their f16 copies (CAST_WEIGHTS), every one a launch or
    graph node of a few microseconds, most on tensors of a few hundred
    elements. This pass replaces them with `rn.multi_zero`,
    `rn.multi_unscale` and `rn.multi_cast`, one op (and one launch) per
    group, computing bit for bit what the per-tensor ops compute; with
    `ema-decay`, the `rn.ema_update` of every weight (EMA_UPDATE) becomes
    one `rn.multi_ema_update` per decay. They are compiler ops with
    their own operands and results, so the barrier pass orders them like
    any op: the runtime never merges work across nodes.

    Two ops join a group when they are the same op in the same subgraph,
    with the same element types (a cast: from and to), (unscale) the same
    scale value, (EMA) the same decay and (the casts of rn-bucket-all-reduce)
    the same `rn.bucket`. A group is placed where its first member was; a
    member joins only if its operands are defined there and the tensor it
    updates in place is not read between there and the member (the
    accumulators are state, the gradients come from earlier subgraphs, and
    the overflow check reads the gradients before the unscales), and its
    users follow it, so the move keeps every def before its uses. Runs after rn-partition and before
    rn-plan-memory, like rn-group-updates. Groups of fewer than
    `min-tensors` stay per-tensor ops.

    What it costs: an op that waited for one tensor's zeroing, unscaling
    or cast now waits for its group's (the next step's first layer for all
    the weights' casts). Both groups are one short memory-bound
    kernel (or a memset) of a subgraph that runs before its readers start
    anyway (ZERO_GRAD before the backward's accumulations, unscaling before
    the optimizer, which also waits for the overflow check over all
    gradients).

    Before (rn-partition, f16 with dynamic loss scaling):
    ```mlir
    %z1 = rn.zero %gw1 {rn.subgraph = @ZERO_GRAD} : tensor<64x3x3x3xf32>
    %z2 = rn.zero %gb1 {rn.subgraph = @ZERO_GRAD} : tensor<64xf32>
    %u1 = rn.unscale %c1, %scale {rn.subgraph = @NAN_CHECK_AND_GRAD_SCALING} : ...
    %u2 = rn.unscale %c2, %scale {rn.subgraph = @NAN_CHECK_AND_GRAD_SCALING} : ...
    ```
    After:
    ```mlir
    %z:2 = rn.multi_zero %gw1, %gb1 {rn.subgraph = @ZERO_GRAD} : (...) -> (...)
    %u:2 = rn.multi_unscale grads(%c1, %c2) scale %scale
        {rn.subgraph = @NAN_CHECK_AND_GRAD_SCALING} : (...) -> (...)
    ```
  }];
  let options = [
    Option<"minTensors", "min-tensors", "int64_t", "2",
           "smaller groups stay per-tensor ops">,
    Option<"report", "report", "bool", "false",
           "emit a remark per function with the group counts">,
  ];
  let statistics = [
    Statistic<"numGroupedOps", "num-grouped-ops",
              "rn.zero, rn.unscale, rn.cast and rn.ema_update ops merged into multi-tensor ops">,
    Statistic<"numGroups", "num-groups",
              "rn.multi_zero, rn.multi_unscale, rn.multi_cast and rn.multi_ema_update ops created">,
  ];
  let dependentDialects = ["::mlir::rn::RNDialect"];
}

def GroupUpdates : Pass<"rn-group-updates", "::mlir::ModuleOp"> {
  let summary = "Merge the per-parameter SGD, AdamW and LARS updates into multi-tensor updates, grouped by the subgraph that reads each parameter next";
  let description = [{
    rn-build-training emits one `rn.sgd_update` (`rn.adamw_update`,
    `rn.lars_update`) per parameter, and each is a kernel launch of a few
    microseconds (ResNet-50: 161; LARS: two each). This pass replaces them
    with `rn.multi_sgd_update` (`rn.multi_adamw_update`,
    `rn.multi_lars_update`) ops, each one launch over many tensors (LARS:
    two, its per-tensor norms and then the update), computing bit for bit
    what the per-parameter ops compute. It is a
    compiler op with its own operands and results, so the barrier pass
    orders it like any op: the runtime never merges work across nodes.

    Runs after rn-partition (the grouping reads the subgraphs) and before
    rn-plan-memory (the new op gets its slots through InPlaceOpInterface,
    its stream from the policy). Two updates join one group when they are
    the same op in the same subgraph, have equal attributes (momentum,
    weight decay, Nesterov; betas, epsilon; trust coefficient), the same
    lr, step and skip_if values, the same element type, and the same **first reader**: the earliest subgraph, in launch order, that
    reads the parameter in the next step (an op of the step reading the
    parameter's state argument, or that of its low-precision copy, the
    `rn.state low_precision_weight of` it). Groups are issued in the order
    of their first readers (a stable reorder of the independent updates),
    at the place of the subgraph's first update.

    What this keeps: rn-insert-barriers records an event after each op of
    OPTIMIZER that a later launch waits for. Per parameter, the next step's
    FIRST_LAYER_FWD waits only for the first layer's updates, which come
    first, and can start while the deeper layers' updates still run. With
    groups by first reader, the first layer's parameters form the first
    group, and FIRST_LAYER_FWD waits for that group alone; DEEP_FWD_BWD's
    group follows. Nothing that waited on one update waits on a later one.
    With f16 weights both read the low-precision copies cast in
    CAST_WEIGHTS, which already follows all of OPTIMIZER on the update
    stream; the groups are split the same way, which costs one launch.

    A group is cut after `max-tensors` tensors or before it would exceed
    `max-elements` elements (0: no limit); groups of fewer than
    `min-tensors` stay per-parameter ops. EMA updates are left to
    rn-group-elementwise. `report` emits the counts as a
    remark per function (pass statistics need an LLVM built with
    assertions).

    Before (rn-partition, momentum 0.9, Nesterov, weight decay 5e-4; the
    first layer's conv is read by FIRST_LAYER_FWD, the rest by DEEP_FWD_BWD):
    ```mlir
    %w1, %m1 = rn.sgd_update %conv1, %gc1, %mc1 lr %lr momentum 9.000000e-01
        weight_decay 5.000000e-04 nesterov {rn.subgraph = @OPTIMIZER}
    %w2, %m2 = rn.sgd_update %conv2, %gc2, %mc2 lr %lr ... {rn.subgraph = @OPTIMIZER}
    %w3, %m3 = rn.sgd_update %fc, %gfc, %mfc lr %lr ... {rn.subgraph = @OPTIMIZER}
    ```
    After:
    ```mlir
    %w1, %m1 = rn.sgd_update %conv1, %gc1, %mc1 lr %lr ...   // a group of one
    %p:2, %m:2 = rn.multi_sgd_update params(%conv2, %fc) grads(%gc2, %gfc)
        momentum_buffers(%mc2, %mfc) lr %lr momentum 9.000000e-01
        weight_decay 5.000000e-04 nesterov {rn.subgraph = @OPTIMIZER}
    ```
  }];
  let options = [
    Option<"maxTensors", "max-tensors", "int64_t", "0",
           "at most this many tensors per group (0: no limit)">,
    Option<"maxElements", "max-elements", "int64_t", "0",
           "at most this many elements per group (0: no limit; a larger "
           "tensor makes a group of its own)">,
    Option<"minTensors", "min-tensors", "int64_t", "2",
           "smaller groups stay per-parameter updates">,
    Option<"report", "report", "bool", "false",
           "emit a remark per function with the group counts (pass "
           "statistics need an LLVM built with assertions)">,
  ];
  let statistics = [
    Statistic<"numGroupedUpdates", "num-grouped-updates",
              "per-parameter updates merged into multi-tensor updates">,
    Statistic<"numGroups", "num-groups",
              "rn.multi_sgd_update, rn.multi_adamw_update and "
              "rn.multi_lars_update ops created">,
    Statistic<"numUngroupedUpdates", "num-ungrouped-updates",
              "optimizer updates left per parameter (groups below "
              "min-tensors, operands defined too late)">,
  ];
  let dependentDialects = ["::mlir::rn::RNDialect"];
}

def PlanMemory : Pass<"rn-plan-memory", "::mlir::ModuleOp"> {
  let summary = "Give every value a slot in a typed region of one device arena";
  let description = [{
    Plans the device memory of the step functions (every function with
    `rn.state` or `rn.input` arguments, in module order) so that captured
    CUDA graphs never allocate. Every device value gets a slot
    `#rn.slot<region, offset, bytes>`: op results in `rn.slots` (one per
    result), function arguments in the argument attribute `rn.slot`. A
    module-level `rn.memory_plan` lists the regions of the arena, back to
    back in enum order, every offset `alignment`-aligned; empty regions are
    left out.

    Values that an op updates in place (`InPlaceOpInterface`) share their
    operand's slot; the operand must not be read after the update. Where a
    value lives:

    - state (`rn.state = @S` on an argument or a returned result, followed
      back through in-place chains): S's slot, one per symbol, shared by all
      functions. Trainable `rn.parameter` -> `weights`, buffers ->
      `bn_statistics`; `rn.state` roles gradient/master_gradient ->
      `gradients`, momentum/adam_m/adam_v -> `optimizer_state`,
      low_precision_weight -> `weights_low_precision`, ema -> `ema`,
      loss_scale/loss_scale_good_steps -> `scalars`;
    - per-step inputs (the `rn.input` argument, or its `rn.host_to_device`
      copy after rn-partition): batches in `inputs_a` (mirrored in
      `inputs_b` for double buffering), rank-0 inputs (lr, step) in
      `scalars`; one slot per input name, shared by all functions. An
      argument read only by `rn.host_to_device` is a host staging buffer and
      gets no slot;
    - rank-0 `rn.output` results (loss, correct): their own `scalars` slot;
    - everything else (logits included, live to the end): `activations`,
      reused by liveness over the function order with best fit. Functions
      never run at once, so they share the region.

    Workspaces: `workspace-mib` MiB for each compute stream, 1 MiB for the
    update stream, none for the transfer stream.

    Before (after `rn-build-training`, abridged):
    ```mlir
    func.func @train_step(%x: tensor<4x8xf32> {rn.input = "images"}, ...,
        %w: tensor<10x8xf32> {rn.state = @fc.weight},
        %g: tensor<10x8xf32> {rn.state = @grad.fc.weight},
        %m: tensor<10x8xf32> {rn.state = @momentum.fc.weight}) -> (...) {
      %g0 = rn.zero %g : tensor<10x8xf32>
      %h, %mean, %inv_std = rn.batch_norm_train %x, %gamma, %beta ...
      %r = rn.relu %h : tensor<4x8xf32>
      %logits = rn.linear %r, %w : ... -> tensor<4x10xf32>
      ...
      %g1 = rn.linear_backward %dlogits, %r, %w, %g0 : ...
      %w1, %m1 = rn.sgd_update %w, %g1, %m lr %lr ...
      return %loss, ..., %w1, %g1, %m1 : ...
    }
    ```
    After (`workspace-mib=1`; test/passes/plan-memory.mlir):
    ```mlir
    rn.memory_plan arena 4200448 alignment 256 regions [
        #rn.extent<weights, 0, 1024>, #rn.extent<gradients, 1024, 512>, ...,
        #rn.extent<activations, 4864, 1280>, ...]
    func.func @train_step(
        %x: tensor<4x8xf32> {rn.input = "images",
                             rn.slot = #rn.slot<inputs_a, 0, 128>}, ...,
        %w: tensor<10x8xf32> {rn.slot = #rn.slot<weights, 512, 320>,
                              rn.state = @fc.weight}, ...) -> (...) {
      %g0 = rn.zero %g {rn.slots = [#rn.slot<gradients, 0, 320>]} : ...
      %h, %mean, %inv_std = rn.batch_norm_train %x, %gamma, %beta ...
          {rn.slots = [#rn.slot<activations, 0, 128>,
                       #rn.slot<activations, 256, 32>,
                       #rn.slot<activations, 512, 32>]} : ...
      %r = rn.relu %h {rn.slots = [#rn.slot<activations, 768, 128>]} : ...
      // %h is dead: the logits take its offset.
      %logits = rn.linear %r, %w {rn.slots = [#rn.slot<activations, 0, 160>]} : ...
      ...
      %g1 = rn.linear_backward ... {rn.slots = [#rn.slot<gradients, 0, 320>]} : ...
      %w1, %m1 = rn.sgd_update %w, %g1, %m lr %lr ...
          {rn.slots = [#rn.slot<weights, 512, 320>,
                       #rn.slot<optimizer_state, 0, 320>]} : ...
    }
    ```
    Errors: a value without a static size, an in-place update whose operand
    is read afterwards, an in-place chain that would need two homes (two
    state slots, or state and input), a new value written into a state slot
    whose old value is still read, state updated in place but not returned,
    a host staging buffer read directly, and a module that already has a
    memory plan.
  }];
  let options = [
    Option<"reuse", "reuse", "bool", "true",
           "reuse activation slots by liveness over the step schedule">,
    Option<"alignment", "alignment", "int64_t", "256",
           "byte alignment of every slot and region">,
    Option<"workspaceMiB", "workspace-mib", "int64_t", "64",
           "workspace per compute stream, in MiB">,
    Option<"printSummary", "summary", "bool", "false",
           "report the region sizes and activation bytes as a remark (pass "
           "statistics are compiled out of release builds of LLVM)">,
  ];
  let statistics = [
    Statistic<"totalBytes", "total-bytes", "arena size">,
    Statistic<"activationBytes", "activation-bytes", "activation region size">,
    Statistic<"activationBytesWithoutReuse", "activation-bytes-without-reuse",
              "activation bytes if no slot were reused">,
    Statistic<"weightBytes", "weight-bytes", "weights region size">,
    Statistic<"lowPrecisionWeightBytes", "low-precision-weight-bytes",
              "weights_low_precision region size">,
    Statistic<"gradientBytes", "gradient-bytes", "gradients region size">,
    Statistic<"optimizerStateBytes", "optimizer-state-bytes",
              "optimizer_state region size">,
    Statistic<"bnStatisticsBytes", "bn-statistics-bytes",
              "bn_statistics region size">,
    Statistic<"emaBytes", "ema-bytes", "ema region size">,
    Statistic<"inputBytes", "input-bytes", "inputs_a plus inputs_b">,
    Statistic<"scalarBytes", "scalar-bytes", "scalars region size">,
    Statistic<"workspaceBytes", "workspace-bytes", "all workspace regions">,
    Statistic<"numSlots", "num-slots", "device values given a slot">,
  ];
  let dependentDialects = ["::mlir::rn::RNDialect"];
}

def AssignStreams : Pass<"rn-assign-streams", "::mlir::ModuleOp"> {
  let summary = "Give every op its representative stream from the static policy";
  let description = [{
    Applies the static policy (each op's RN_OnStream in its ODS, the fork
    roles' streams in passes/StreamPolicy.cpp): host
    copies on `trans`; convolution, fully connected layers and the loss on
    `comp1`; BatchNorm, pooling, dropout, stochastic depth and accuracy on
    `comp2`; elementwise ops on `comp3`; zero-grad, loss scaling, casts of
    gradients and weights, optimizers, running statistics and EMA on
    `update`. Each op gets its representative stream; forking ops
    (ForkingOpInterface: conv/linear/CBR backward) also get one stream per
    part: dW on comp1, dB and the BatchNorm part on comp2, dX on comp3, and
    are represented by dX (by dW in the first layer, which has no dX).
    `single-stream` puts
    every op and subgraph on comp1; `policy` overrides entries.

    Before: `%d:3 = rn.linear_backward %dy, %x, %w, %gw, %gb {rn.subgraph = @DEEP_FWD_BWD}`
    After:
    ```mlir
    %d:3 = rn.linear_backward %dy, %x, %w, %gw, %gb {
        rn.stream = #rn.stream<comp3>,
        rn.stream_map = {bias_grad = #rn.stream<comp2>, input_grad = #rn.stream<comp3>,
                         weight_grad = #rn.stream<comp1>},
        rn.subgraph = @DEEP_FWD_BWD}
    ```
  }];
  let options = [
    Option<"singleStream", "single-stream", "bool", "false",
           "put everything on comp1 (the baseline to measure against)">,
    Option<"policy", "policy", "std::string", "\"\"",
           "overrides of the policy table: 'op=stream,...', e.g. 'relu=comp2'">,
  ];
  let statistics = [
    Statistic<"numOps", "num-ops", "ops given a stream">,
    Statistic<"numForkingOps", "num-forking-ops", "ops split across streams">,
  ];
  let dependentDialects = ["::mlir::rn::RNDialect"];
}

def InsertBarriers : Pass<"rn-insert-barriers", "::mlir::ModuleOp"> {
  let summary = "Insert precise point-to-point event barriers for every cross-stream hazard";
  let description = [{
    Builds the happens-before model of each step (passes/ScheduleModel.h:
    three unrolled steps, A/B inputs, graph launch order, fork/join) and, for
    every hazard on a slot (read after write, write after read, write after
    write: slot reuse and in-place updates create the latter two) between
    units on different streams or subgraphs that nothing orders yet, records
    an event after the producer on its stream and waits for it before the
    consumer on the consumer's stream. Hazards are visited in issue order,
    so a wait implied by earlier ones is never added. Between two
    double-buffered subgraphs a wait carries its step `distance`. Parts of
    one forking op are ordered through `rn.part_waits` on the op. Finally
    every subgraph with several streams gets explicit fork events at entry
    and join events at exit. `report` emits the counts as remarks (pass
    statistics need an LLVM built with assertions).

    Before:
    ```mlir
    %r = rn.relu %h {rn.stream = #rn.stream<comp3>, rn.subgraph = @DEEP_FWD_BWD}
    %l = rn.linear %r, %w {rn.stream = #rn.stream<comp1>, rn.subgraph = @DEEP_FWD_BWD}
    ```
    After:
    ```mlir
    rn.event_record fork 12 on #rn.stream<comp1> {rn.subgraph = @DEEP_FWD_BWD}
    rn.event_wait fork 12 on #rn.stream<comp3> {rn.subgraph = @DEEP_FWD_BWD}
    %r = rn.relu %h {rn.stream = #rn.stream<comp3>, ...}
    rn.event_record internal 1 on #rn.stream<comp3> {rn.subgraph = @DEEP_FWD_BWD}
    rn.event_wait internal 1 on #rn.stream<comp1> {rn.subgraph = @DEEP_FWD_BWD}
    %l = rn.linear %r, %w {rn.stream = #rn.stream<comp1>, ...}
    ...
    rn.event_record join 13 on #rn.stream<comp3> {rn.subgraph = @DEEP_FWD_BWD}
    rn.event_wait join 13 on #rn.stream<comp1> {rn.subgraph = @DEEP_FWD_BWD}
    ```
  }];
  let options = [
    Option<"report", "report", "bool", "false",
           "emit a remark per function with the wait counts (pass statistics "
           "need an LLVM built with assertions)">,
  ];
  let statistics = [
    Statistic<"numCrossStreamWaits", "num-cross-stream-waits",
              "event waits inserted (internal and external)">,
    Statistic<"numNaiveWaits", "num-naive-waits",
              "waits a barrier-per-op baseline would insert (each op waits "
              "for every other stream the step uses)">,
    Statistic<"numUnelidedWaits", "num-unelided-waits",
              "waits one per unordered hazard would need, without transitive "
              "elision">,
    Statistic<"numForkJoinEvents", "num-fork-join-events",
              "fork and join events at subgraph entry and exit">,
  ];
  let dependentDialects = ["::mlir::rn::RNDialect"];
}

def VerifySchedule : Pass<"rn-verify-schedule", "::mlir::ModuleOp"> {
  let summary = "Prove every cross-stream hazard is ordered by events";
  let description = [{
    Rebuilds the happens-before model from the explicit events only and
    proves every cross-stream hazard on a slot is ordered. Reports each
    unordered pair as an error at the later op naming both ops, the slot,
    the streams and the hazard kind; a secondary stream not forked from its
    subgraph's primary or not joined back (capture would fail); waits on
    events nothing records. Waits that order nothing new are remarks. The
    IR is not changed.

    ```
    step.mlir:12:10: error: missing barrier: 'rn.tanh' on comp1 reads an
      unplanned value that 'rn.relu' on comp3 writes, and no event orders
      them (read after write)
    step.mlir:10:10: note: the earlier access
    ```
  }];
  let statistics = [
    Statistic<"numHazards", "num-hazards", "cross-stream hazards checked">,
    Statistic<"numRedundantWaits", "num-redundant-waits",
              "waits that order nothing new">,
  ];
  let dependentDialects = ["::mlir::rn::RNDialect"];
}

def PrintSchedule : Pass<"rn-print-schedule", "::mlir::ModuleOp"> {
  let summary = "Print the schedule: per subgraph and stream, ops with their events (text or Graphviz)";
  let description = [{
    A readable dump of a scheduled module (after rn-assign-streams, best
    after rn-insert-barriers): for each step function, each subgraph in
    launch order with its primary stream and variants, and per stream the
    ops in issue order with the events they record and wait for, plus the
    step schedules. `format=dot` writes Graphviz instead: one cluster per
    subgraph, ops coloured by stream (trans grey, comp1 blue, comp2 green,
    comp3 orange, update red), data edges solid, event edges dashed. The IR
    is not changed.

    ```sh
    rn-opt step.mlir --rn-print-schedule -o /dev/null
    rn-opt step.mlir --rn-print-schedule="format=dot output=step.dot" -o /dev/null
    dot -Tsvg step.dot -o step.svg
    ```
  }];
  let options = [
    Option<"format", "format", "std::string", "\"text\"", "text or dot">,
    Option<"output", "output", "std::string", "\"-\"",
           "file to write ('-': standard error)">,
  ];
}

#endif // RN_PASSES_PASSES_TD
