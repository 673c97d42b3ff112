//===- RNTrainingOps.td - Training-level ops of the rn dialect -*- tablegen -*-===//
//
// What rn-build-training produces: training-mode forward variants, one
// backward op per forward op, loss scaling, mixed-precision casts, optimizer
// updates, zero-grad, BatchNorm running statistics and EMA. Every op is a
// pure function of its operands (state updates return the new value), so
// each can be checked against finite differences of its forward op.
//
// Ops that update state name the operand they update in their description
// ("updates `param`"); the memory planner places such a result in its
// operand's slot.
//
//===----------------------------------------------------------------------===//

#ifndef RN_DIALECT_RN_TRAINING_OPS_TD
#define RN_DIALECT_RN_TRAINING_OPS_TD

include "dialects/rn/RNBase.td"
include "dialects/rn/RNInterfaces.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def RN_ScalarI32Tensor : 0DTensorOf<[I32]>;
def RN_ScalarI1Tensor : 0DTensorOf<[I1]>;
def RN_StateTensor : RankedTensorOf<[F32, F16, BF16, I32]>;

//===----------------------------------------------------------------------===//
// State declarations
//===----------------------------------------------------------------------===//

def RN_RoleGradient : I32EnumAttrCase<"gradient", 0>;
def RN_RoleMasterGradient : I32EnumAttrCase<"master_gradient", 1>;
def RN_RoleMomentum : I32EnumAttrCase<"momentum", 2>;
def RN_RoleAdamFirstMoment : I32EnumAttrCase<"adam_m", 3>;
def RN_RoleAdamSecondMoment : I32EnumAttrCase<"adam_v", 4>;
def RN_RoleLowPrecisionWeight : I32EnumAttrCase<"low_precision_weight", 5>;
def RN_RoleEma : I32EnumAttrCase<"ema", 6>;
def RN_RoleLossScale : I32EnumAttrCase<"loss_scale", 7>;
def RN_RoleLossScaleGoodSteps : I32EnumAttrCase<"loss_scale_good_steps", 8>;

def RN_StateRole : I32EnumAttr<"StateRole", "what a piece of training state holds",
    [RN_RoleGradient, RN_RoleMasterGradient, RN_RoleMomentum,
     RN_RoleAdamFirstMoment, RN_RoleAdamSecondMoment,
     RN_RoleLowPrecisionWeight, RN_RoleEma, RN_RoleLossScale,
     RN_RoleLossScaleGoodSteps]> {
  let cppNamespace = "::mlir::rn";
}

def RN_StateOp : RN_Op<"state", [
    Symbol, HasParent<"::mlir::ModuleOp">,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "declares training state derived from the model";
  let description = [{
    Persistent tensors the training step needs besides the model's
    parameters: gradients, optimizer moments, low-precision weight copies,
    EMA weights and the loss scale. Per-parameter state names its parameter
    with `of` and has the parameter's shape; the role tells the memory
    planner which region it belongs to.

    ```mlir
    rn.state gradient @grad.fc.weight of @fc.weight : tensor<10x512xf16> = #rn.init<zeros>
    rn.state loss_scale @loss_scale : tensor<f32> = #rn.init<constant, 6.553600e+04>
    ```
  }];
  let arguments = (ins
    RN_StateRole:$role,
    SymbolNameAttr:$sym_name,
    OptionalAttr<FlatSymbolRefAttr>:$of,
    TypeAttrOf<AnyType>:$type,
    RN_InitAttr:$init);
  let assemblyFormat = [{
    $role $sym_name (`of` $of^)? `:` $type `=` qualified($init) attr-dict
  }];
  let extraClassDeclaration = [{
    ::mlir::RankedTensorType getTensorType() {
      return ::llvm::cast<::mlir::RankedTensorType>(getType());
    }
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Mixed precision and reshaping
//===----------------------------------------------------------------------===//

def RN_CastOp : RN_Op<"cast", [
    RN_OnStream<"comp3">, RN_ArtifactOp, Pure, SameOperandsAndResultShape]> {
  let summary = "converts a tensor to another float type (round to nearest even)";
  let arguments = (ins RN_FloatTensor:$input);
  let results = (outs RN_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def RN_PadChannelsOp : RN_Op<"pad_channels", [
    RN_OnStream<"comp3">, RN_ArtifactOp, Pure, AttrSizedOperandSegments]> {
  let summary = "widens the last (channel) dimension with zeros, converting the element type";
  let description = [{
    `result[..., c]` is `input[..., c]` converted to the result's element
    type (round to nearest even) for `c` below the input's channel count,
    and zero above it. Every other dimension is kept. `rn-pad-conv-channels`
    uses it to give a convolution with few input channels (the 3-channel
    image stems) a channel count the tensor-core kernels take, for both its
    input and its filter; the zero channels change no output and get no
    gradient.

    With `normalize %mean, %std` the input is a batch of uint8 NHWC images
    and each kept channel is normalized first, as `rn.normalize_images`
    computes it, `(float(x) / 255 - mean[c]) * (1 / std[c])` in f32, then
    rounded once: one pass reads the bytes and writes the stem's padded
    input.

    ```mlir
    %x8 = rn.pad_channels %images : tensor<256x224x224x3xf32> -> tensor<256x224x224x8xf16>
    %n8 = rn.pad_channels %bytes normalize %mean, %std
        : tensor<256x224x224x3xui8>, tensor<3xf32>, tensor<3xf32> -> tensor<256x224x224x8xf16>
    ```
  }];
  let arguments = (ins
    RankedTensorOf<[F32, F16, BF16, UI8]>:$input,
    Optional<RankedTensorOf<[F32]>>:$mean,
    Optional<RankedTensorOf<[F32]>>:$std);
  let results = (outs RN_FloatTensor:$result);
  let assemblyFormat = [{
    $input (`normalize` $mean^ `,` $std)? attr-dict `:` type($input)
    (`,` type($mean)^ `,` type($std))? `->` type($result)
  }];
  let hasVerifier = 1;
}

def RN_ReshapeOp : RN_Op<"reshape", [
    RN_OnStream<"comp3">, RN_ArtifactOp, Pure]> {
  let summary = "reinterprets a tensor with another shape of the same size";
  let description = [{
    The backward of `rn.flatten`: the data does not move.
  }];
  let arguments = (ins RN_FloatTensor:$input);
  let results = (outs RN_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Training-mode forward variants
//===----------------------------------------------------------------------===//

def RN_BatchNormTrainOp : RN_Op<"batch_norm_train", [
    DeclareOpInterfaceMethods<RN_GradientOpInterface>,
    RN_OnStream<"comp2">, RN_ArtifactOp, Pure]> {
  let summary = "batch normalization with batch statistics, saving them";
  let description = [{
    Normalizes with the batch mean and variance and returns them (as mean
    and 1 / sqrt(var + eps), in f32) for the backward op and the running
    statistics update. `weight` and `bias` may be f32 with an f16/bf16 input.
  }];
  let arguments = (ins
    RN_FloatTensor:$input,
    RN_FloatTensor:$weight,
    RN_FloatTensor:$bias,
    F64Attr:$epsilon);
  let results = (outs
    RN_FloatTensor:$result,
    RankedTensorOf<[F32]>:$batch_mean,
    RankedTensorOf<[F32]>:$batch_inv_std);
  let assemblyFormat = [{
    $input `,` $weight `,` $bias `eps` $epsilon attr-dict
    `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def RN_BatchNormInferenceOp : RN_Op<"batch_norm_inference", [
    RN_OnStream<"comp2">, RN_ArtifactOp, Pure]> {
  let summary = "batch normalization with the running statistics";
  let arguments = (ins
    RN_FloatTensor:$input,
    RN_FloatTensor:$weight,
    RN_FloatTensor:$bias,
    RN_FloatTensor:$running_mean,
    RN_FloatTensor:$running_var,
    F64Attr:$epsilon);
  let results = (outs RN_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight `,` $bias `,` $running_mean `,` $running_var
    `eps` $epsilon attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def RN_UpdateRunningStatsOp : RN_Op<"update_running_stats", [
    RN_OnStream<"update">, RN_ArtifactOp, DeclareOpInterfaceMethods<RN_InPlaceOpInterface>,
    Pure]> {
  let summary = "folds batch statistics into the running statistics";
  let description = [{
    Updates `running_mean` and `running_var` (PyTorch's convention):
    new = (1 - momentum) * old + momentum * batch, with the batch variance
    made unbiased by count / (count - 1), count = N * H * W.
  }];
  let arguments = (ins
    RN_FloatTensor:$running_mean,
    RN_FloatTensor:$running_var,
    RankedTensorOf<[F32]>:$batch_mean,
    RankedTensorOf<[F32]>:$batch_inv_std,
    F64Attr:$epsilon,
    F64Attr:$momentum,
    I64Attr:$count);
  let results = (outs RN_FloatTensor:$new_running_mean,
                      RN_FloatTensor:$new_running_var);
  let assemblyFormat = [{
    $running_mean `,` $running_var `,` $batch_mean `,` $batch_inv_std
    `eps` $epsilon `momentum` $momentum `count` $count attr-dict
    `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def RN_DropoutTrainOp : RN_Op<"dropout_train", [
    DeclareOpInterfaceMethods<RN_GradientOpInterface>,
    RN_OnStream<"comp2">, RN_ArtifactOp,
    MemoryEffects<[MemRead<RN_RandomGenerator>, MemWrite<RN_RandomGenerator>]>]> {
  let summary = "inverted dropout that returns its mask for the backward op";
  let description = [{
    `mask` holds 0 or 1 / (1 - p) per element; `result` = input * mask.

    Element i drops when (word(i) >> 8) < ceil(p * 2^24), word(i) being
    the i-th Philox4x32-10 word of this op's random stream, keyed by the
    run's seed, `step` and `index` of `count` (see Note [Random streams] in
    runtime/cpu/cpu_kernels.h).
  }];
  let arguments = (ins
    RN_FloatTensor:$input,
    RN_ScalarI32Tensor:$step,
    F64Attr:$p,
    I64Attr:$index,
    I64Attr:$count);
  let results = (outs RN_FloatTensor:$result, RN_FloatTensor:$mask);
  let assemblyFormat = [{
    $input `step` $step `p` $p `index` $index `of` $count attr-dict
    `:` type($input) `,` type($step) `->` type(results)
  }];
  let hasVerifier = 1;
}

def RN_StochasticDepthTrainOp : RN_Op<"stochastic_depth_train", [
    DeclareOpInterfaceMethods<RN_GradientOpInterface>,
    RN_OnStream<"comp2">, RN_ArtifactOp,
    MemoryEffects<[MemRead<RN_RandomGenerator>, MemWrite<RN_RandomGenerator>]>]> {
  let summary = "stochastic depth that returns its per-sample mask for the backward op";
  let description = [{
    `mask` is tensor<N x f32>: 0 for a dropped sample, 1 / (1 - p) (as f32)
    for a kept one; `result[n, ...]` = input[n, ...] * mask[n]. p = 1
    drops every sample.

    Sample n drops when (word(n) >> 8) < ceil(p * 2^24), word(n) being the
    word element n of an `rn.dropout_train` with the same `step`, `index`
    and `count` would draw (see Note [Random streams] in
    runtime/cpu/cpu_kernels.h).

    ```mlir
    %y, %mask = rn.stochastic_depth_train %x step %step p 2.000000e-01 index 0 of 3
        : tensor<8x14x14x96xf16>, tensor<i32> -> tensor<8x14x14x96xf16>, tensor<8xf32>
    ```
  }];
  let arguments = (ins
    RN_FloatTensor:$input,
    RN_ScalarI32Tensor:$step,
    F64Attr:$p,
    I64Attr:$index,
    I64Attr:$count);
  let results = (outs RN_FloatTensor:$result, RankedTensorOf<[F32]>:$mask);
  let assemblyFormat = [{
    $input `step` $step `p` $p `index` $index `of` $count attr-dict
    `:` type($input) `,` type($step) `->` type(results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Backward ops
//===----------------------------------------------------------------------===//

class RN_ElementwiseBackwardOp<string mnemonic, string saved, string what,
                               string stream = "comp3">
    : RN_Op<mnemonic, [RN_OnStream<stream>, RN_ArtifactOp, Pure,
                       SameOperandsAndResultType]> {
  let summary = what;
  let arguments = (ins RN_FloatTensor:$output_grad, RN_FloatTensor:$saved);
  let results = (outs RN_FloatTensor:$input_grad);
  let assemblyFormat = "$output_grad `,` $saved attr-dict `:` type($input_grad)";
  let description = "`saved` is the forward op's " # saved # ".";
}

def RN_ReluBackwardOp : RN_ElementwiseBackwardOp<"relu_backward", "result",
    "dx = dy where y > 0, else 0">;
def RN_TanhBackwardOp : RN_ElementwiseBackwardOp<"tanh_backward", "result",
    "dx = dy * (1 - y^2)">;
def RN_SiluBackwardOp : RN_ElementwiseBackwardOp<"silu_backward", "input",
    "dx = dy * s * (1 + x * (1 - s)), s = sigmoid(x)">;
// A reduction-stream op as its forward form is (dropout's mask is drawn there).
def RN_DropoutBackwardOp : RN_ElementwiseBackwardOp<"dropout_backward", "mask",
    "dx = dy * mask", "comp2">;
def RN_SigmoidBackwardOp : RN_ElementwiseBackwardOp<"sigmoid_backward", "result",
    "dx = dy * y * (1 - y)">;
def RN_GeluBackwardOp : RN_Op<"gelu_backward", [
    RN_OnStream<"comp3">, RN_ArtifactOp, Pure, SameOperandsAndResultType]> {
  let summary = "dx = dy * gelu'(x), in the form of the forward rn.gelu";
  let description = "`saved` is the forward op's input.";
  let arguments = (ins RN_FloatTensor:$output_grad, RN_FloatTensor:$saved,
                       RN_GeluApproximation:$approximate);
  let results = (outs RN_FloatTensor:$input_grad);
  let assemblyFormat = [{
    $output_grad `,` $saved `approximate` $approximate attr-dict `:` type($input_grad)
  }];
}
def RN_HardswishBackwardOp : RN_ElementwiseBackwardOp<"hardswish_backward", "input",
    "dx = 0 for x < -3, dy for x > 3, dy * (2x + 3) / 6 in between"> {
  let description = [{
    `saved` is the forward op's input. PyTorch's convention at the kinks:
    x = -3 gives -dy / 2 and x = 3 gives 3 dy / 2 (the middle piece is
    closed); a NaN input gives NaN.
  }];
}
def RN_HardsigmoidBackwardOp : RN_ElementwiseBackwardOp<"hardsigmoid_backward", "input",
    "dx = dy / 6 for -3 < x < 3, else 0"> {
  let description = [{
    `saved` is the forward op's input. As PyTorch, the gradient is 0 at the
    kinks (the open interval).
  }];
}

def RN_StochasticDepthBackwardOp : RN_Op<"stochastic_depth_backward", [
    RN_OnStream<"comp2">, RN_ArtifactOp, Pure,
    AllTypesMatch<["output_grad", "input_grad"]>]> {
  let summary = "dx[n, ...] = dy[n, ...] * mask[n]";
  let description = [{
    `mask` is the forward op's (`rn.stochastic_depth_train`): one f32 scale
    per sample, tensor<N x f32>. A dropped sample gets a zero gradient, a
    kept one its output gradient times 1 / (1 - p).

    ```mlir
    %dx = rn.stochastic_depth_backward %dy, %mask : tensor<8x14x14x96xf16>, tensor<8xf32>
    ```
  }];
  let arguments = (ins RN_FloatTensor:$output_grad, RankedTensorOf<[F32]>:$mask);
  let results = (outs RN_FloatTensor:$input_grad);
  let assemblyFormat = [{
    $output_grad `,` $mask attr-dict `:` type($output_grad) `,` type($mask)
  }];
  let hasVerifier = 1;
}

def RN_HardtanhBackwardOp : RN_Op<"hardtanh_backward", [
    RN_OnStream<"comp3">, RN_ArtifactOp, Pure, SameOperandsAndResultType]> {
  let summary = "dx = dy where min_val < y < max_val, else 0";
  let description = [{
    `saved` is the forward op's result y (which the next layer keeps
    anyway, unlike the input). The gradient passes where y lies strictly
    inside the bounds, the bounds taken as f32 and rounded to y's type: a
    clipped element equals its bound and gets 0, as in PyTorch, whose test
    on the input (min_val < x < max_val) this is whenever the bounds are
    representable in y's type (ReLU6's 0 and 6 and Hardtanh's -1 and 1 are
    in f32, f16 and bf16). A NaN gets 0.
  }];
  let arguments = (ins
    RN_FloatTensor:$output_grad,
    RN_FloatTensor:$saved,
    F64Attr:$min_val,
    F64Attr:$max_val);
  let results = (outs RN_FloatTensor:$input_grad);
  let assemblyFormat = [{
    $output_grad `,` $saved `min` $min_val `max` $max_val attr-dict `:` type($input_grad)
  }];
  let hasVerifier = 1;
}

def RN_ChannelMulBackwardOp : RN_Op<"channel_mul_backward", [
    RN_OnStream<"comp2">, RN_ArtifactOp, Pure,
    AllTypesMatch<["output_grad", "input", "input_grad"]>,
    AllTypesMatch<["scale", "scale_grad"]>]> {
  let summary = "gradients of rn.channel_mul: dx = dy * s, ds = sum over H, W of dy * x";
  let description = [{
    `input` and `scale` are the forward op's operands, `output_grad` has the
    input's type. `input_grad[n, h, w, c] = output_grad[n, h, w, c] *
    scale[n, 0, 0, c]`; `scale_grad[n, 0, 0, c]` is the sum over h and w of
    `output_grad * input`, accumulated in double (a wide type whatever the
    operands' types) and rounded once.

    ```mlir
    %dx, %ds = rn.channel_mul_backward %dy, %x, %s : tensor<8x14x14x96xf16>, tensor<8x1x1x96xf16>
    ```
  }];
  let arguments = (ins
    RN_FloatTensor:$output_grad,
    RN_FloatTensor:$input,
    RN_FloatTensor:$scale);
  let results = (outs RN_FloatTensor:$input_grad, RN_FloatTensor:$scale_grad);
  let assemblyFormat = [{
    $output_grad `,` $input `,` $scale attr-dict `:` type($input) `,` type($scale)
  }];
  let hasVerifier = 1;
}

def RN_Conv2dBackwardOp : RN_Op<"conv2d_backward", [RN_ArtifactOp, DeclareOpInterfaceMethods<RN_ForkingOpInterface>, DeclareOpInterfaceMethods<RN_InPlaceOpInterface>, AttrSizedOperandSegments, AttrSizedResultSegments, Pure]> {
  let summary = "gradients of a convolution: dX, dW and dB";
  let description = [{
    Results: the input gradient `input_grad` (optional: the first layer,
    whose input is the batch, has none), the filter gradient `filter_grad`
    and, when a bias accumulator is given, the bias gradient `bias_grad`.
    The result types say which are present: the input gradient's comes first
    when there is one. Weight gradients are accumulated: the results are
    `filter_grad_acc + dW` and `bias_grad_acc + dB`, which updates the
    accumulators (zeroed at the start of the step) and sums the
    contributions of a parameter used twice. A filter whose input channels
    `rn-pad-conv-channels` padded with zeros keeps its parameter's
    accumulator: `filter_grad_acc` may then have fewer input channels than
    `filter` (groups 1), and gets the gradient of the first ones. With
    `plus %addend` (only with an input gradient) the input gradient is
    `dX + addend`, rounded once (`rn-fold-gradient-adds`: a residual
    junction's gradient sum as the data gradient's epilogue).

    ```mlir
    %dx, %gw = rn.conv2d_backward %dy, %x, %w, %gw0 stride [1, 1] pad [1, 1]
        dilation [1, 1] groups 1 : (...) -> (dx, gw)
    ```
  }];
  let arguments = (ins
    RN_FloatTensor:$output_grad,
    RN_FloatTensor:$input,
    RN_FloatTensor:$filter,
    RN_FloatTensor:$filter_grad_acc,
    Optional<RN_FloatTensor>:$bias_grad_acc,
    Optional<RN_FloatTensor>:$input_grad_addend,
    DenseI64ArrayAttr:$strides,
    DenseI64ArrayAttr:$padding,
    DenseI64ArrayAttr:$dilation,
    I64Attr:$groups);
  let results = (outs
    Optional<RN_FloatTensor>:$input_grad,
    RN_FloatTensor:$filter_grad,
    Optional<RN_FloatTensor>:$bias_grad);
  let assemblyFormat = [{
    $output_grad `,` $input `,` $filter `,` $filter_grad_acc (`,` $bias_grad_acc^)?
    `stride` $strides `pad` $padding `dilation` $dilation `groups` $groups
    (`plus` $input_grad_addend^)?
    attr-dict `:` `(` type(operands) `)` `->`
    custom<WeightGradientTypes>(type($input_grad), type($filter_grad),
                                type($bias_grad), ref($bias_grad_acc))
  }];
  let hasVerifier = 1;
}

def RN_LinearBackwardOp : RN_Op<"linear_backward", [RN_ArtifactOp, DeclareOpInterfaceMethods<RN_ForkingOpInterface>, DeclareOpInterfaceMethods<RN_InPlaceOpInterface>, AttrSizedResultSegments, Pure]> {
  let summary = "gradients of a fully connected layer: dX, dW and dB";
  let description = [{
    Results as for `rn.conv2d_backward`: the optional input gradient
    `input_grad`, `weight_grad` (`weight_grad_acc + dW`) and, with a bias
    accumulator, `bias_grad` (`bias_grad_acc + dB`).
  }];
  let arguments = (ins
    RN_FloatTensor:$output_grad,
    RN_FloatTensor:$input,
    RN_FloatTensor:$weight,
    RN_FloatTensor:$weight_grad_acc,
    Optional<RN_FloatTensor>:$bias_grad_acc);
  let results = (outs
    Optional<RN_FloatTensor>:$input_grad,
    RN_FloatTensor:$weight_grad,
    Optional<RN_FloatTensor>:$bias_grad);
  let assemblyFormat = [{
    $output_grad `,` $input `,` $weight `,` $weight_grad_acc (`,` $bias_grad_acc^)?
    attr-dict `:` `(` type(operands) `)` `->`
    custom<WeightGradientTypes>(type($input_grad), type($weight_grad),
                                type($bias_grad), ref($bias_grad_acc))
  }];
  let hasVerifier = 1;
}

def RN_BatchNormBackwardOp : RN_Op<"batch_norm_backward", [
    RN_OnStream<"comp2">, RN_ArtifactOp, DeclareOpInterfaceMethods<RN_InPlaceOpInterface>, Pure]> {
  let summary = "gradients of training-mode batch normalization";
  let description = [{
    Uses the batch statistics saved by `rn.batch_norm_train`. Results: the
    input gradient, `weight_grad_acc + dgamma` and `bias_grad_acc + dbeta`.
  }];
  let arguments = (ins
    RN_FloatTensor:$output_grad,
    RN_FloatTensor:$input,
    RN_FloatTensor:$weight,
    RankedTensorOf<[F32]>:$batch_mean,
    RankedTensorOf<[F32]>:$batch_inv_std,
    RN_FloatTensor:$weight_grad_acc,
    RN_FloatTensor:$bias_grad_acc);
  let results = (outs RN_FloatTensor:$input_grad, RN_FloatTensor:$weight_grad,
                      RN_FloatTensor:$bias_grad);
  let assemblyFormat = [{
    $output_grad `,` $input `,` $weight `,` $batch_mean `,` $batch_inv_std `,`
    $weight_grad_acc `,` $bias_grad_acc attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def RN_LayerNormBackwardOp : RN_Op<"layer_norm_backward", [
    RN_OnStream<"comp2">, RN_ArtifactOp, DeclareOpInterfaceMethods<RN_InPlaceOpInterface>, Pure]> {
  let summary = "gradients of rn.layer_norm";
  let description = [{
    Recomputes each row's mean and rstd = 1 / sqrt(var + eps) from the input
    (a row is C values, read once for the statistics and the gradients), so
    the forward op saves nothing. With xhat = (x - mean) * rstd and
    g = dy * weight: dx = rstd * (g - mean_c(g) - xhat * mean_c(g * xhat));
    results `weight_grad_acc + sum over rows of dy * xhat` and
    `bias_grad_acc + sum over rows of dy`.

    ```mlir
    %dx, %dw, %db = rn.layer_norm_backward %dy, %x, %gamma, %gacc, %bacc eps 1.000000e-06
        : (tensor<8x14x14x96xf16>, tensor<8x14x14x96xf16>, tensor<96xf32>, tensor<96xf32>, tensor<96xf32>)
        -> (tensor<8x14x14x96xf16>, tensor<96xf32>, tensor<96xf32>)
    ```
  }];
  let arguments = (ins
    RN_FloatTensor:$output_grad,
    RN_FloatTensor:$input,
    RN_FloatTensor:$weight,
    RN_FloatTensor:$weight_grad_acc,
    RN_FloatTensor:$bias_grad_acc,
    F64Attr:$epsilon);
  let results = (outs RN_FloatTensor:$input_grad, RN_FloatTensor:$weight_grad,
                      RN_FloatTensor:$bias_grad);
  let assemblyFormat = [{
    $output_grad `,` $input `,` $weight `,` $weight_grad_acc `,` $bias_grad_acc
    `eps` $epsilon attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def RN_ChannelScaleBackwardOp : RN_Op<"channel_scale_backward", [
    RN_OnStream<"comp2">, RN_ArtifactOp, DeclareOpInterfaceMethods<RN_InPlaceOpInterface>, Pure,
    AllTypesMatch<["output_grad", "input", "input_grad"]>,
    AllTypesMatch<["scale", "scale_grad_acc", "scale_grad"]>]> {
  let summary = "gradients of rn.channel_scale: dx = dy * s, ds = acc + sum of dy * x";
  let description = [{
    `input` and `scale` are the forward op's operands. `input_grad[..., c] =
    output_grad[..., c] * scale[c]`; `scale_grad[c] = scale_grad_acc[c] +`
    the sum over all rows of `output_grad * input`, accumulated in a wide
    type and rounded once.

    ```mlir
    %dx, %ds = rn.channel_scale_backward %dy, %x, %gamma, %acc : tensor<8x14x14x96xf32>, tensor<96xf32>
    ```
  }];
  let arguments = (ins
    RN_FloatTensor:$output_grad,
    RN_FloatTensor:$input,
    RN_FloatTensor:$scale,
    RN_FloatTensor:$scale_grad_acc);
  let results = (outs RN_FloatTensor:$input_grad, RN_FloatTensor:$scale_grad);
  let assemblyFormat = [{
    $output_grad `,` $input `,` $scale `,` $scale_grad_acc attr-dict `:` type($input) `,` type($scale)
  }];
  let hasVerifier = 1;
}

def RN_MaxPool2dBackwardOp : RN_Op<"max_pool2d_backward", [
    RN_OnStream<"comp2">, RN_ArtifactOp, Pure]> {
  let summary = "routes each output gradient to the max of its window";
  let description = [{
    Ties go to the first maximum in row-major window order, as in PyTorch.
  }];
  let arguments = (ins
    RN_FloatTensor:$output_grad,
    RN_FloatTensor:$input,
    DenseI64ArrayAttr:$kernel,
    DenseI64ArrayAttr:$strides,
    DenseI64ArrayAttr:$padding,
    UnitAttr:$ceil_mode);
  let results = (outs RN_FloatTensor:$input_grad);
  let assemblyFormat = [{
    $output_grad `,` $input `kernel` $kernel `stride` $strides `pad` $padding
    (`ceil_mode` $ceil_mode^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def RN_AvgPool2dBackwardOp : RN_Op<"avg_pool2d_backward", [
    RN_OnStream<"comp2">, RN_ArtifactOp, Pure]> {
  let summary = "spreads each output gradient evenly over its window";
  let description = [{
    Each input position of a window gets the window's output gradient over
    rn.avg_pool2d's divisor (`ceil_mode`, `exclude_pad` as there).
  }];
  let arguments = (ins
    RN_FloatTensor:$output_grad,
    DenseI64ArrayAttr:$kernel,
    DenseI64ArrayAttr:$strides,
    DenseI64ArrayAttr:$padding,
    UnitAttr:$ceil_mode,
    UnitAttr:$exclude_pad);
  let results = (outs RN_FloatTensor:$input_grad);
  let assemblyFormat = [{
    $output_grad `kernel` $kernel `stride` $strides `pad` $padding
    (`ceil_mode` $ceil_mode^)? (`exclude_pad` $exclude_pad^)? attr-dict
    `:` type($output_grad) `->` type($input_grad)
  }];
  let hasVerifier = 1;
}

def RN_AdaptiveAvgPool2dBackwardOp : RN_Op<"adaptive_avg_pool2d_backward", [
    RN_OnStream<"comp2">, RN_ArtifactOp, Pure]> {
  let summary = "spreads each output gradient evenly over its adaptive window";
  let description = [{
    The windows of rn.adaptive_avg_pool2d for the input type `input_grad`
    and the output type `output_grad`: each input element gets the sum,
    over the windows that hold it, of dy / (the window's element count).
  }];
  let arguments = (ins RN_FloatTensor:$output_grad);
  let results = (outs RN_FloatTensor:$input_grad);
  let assemblyFormat = "$output_grad attr-dict `:` type($output_grad) `->` type($input_grad)";
  let hasVerifier = 1;
}

def RN_GlobalAvgPoolBackwardOp : RN_Op<"global_avg_pool_backward", [
    RN_OnStream<"comp2">, RN_ArtifactOp, Pure]> {
  let summary = "spreads [N, 1, 1, C] gradients over [N, H, W, C]";
  let arguments = (ins RN_FloatTensor:$output_grad);
  let results = (outs RN_FloatTensor:$input_grad);
  let assemblyFormat = "$output_grad attr-dict `:` type($output_grad) `->` type($input_grad)";
  let hasVerifier = 1;
}

def RN_SoftmaxCrossEntropyBackwardOp : RN_Op<"softmax_cross_entropy_backward", [
    RN_OnStream<"comp1">, RN_ArtifactOp, Pure]> {
  let summary = "gradient of the mean loss with respect to the logits";
  let description = [{
    (softmax(logits) - target) * scale / N, with the smoothed target of the
    forward op. `scale` is the loss scale (1 when absent): scaling the seed
    gradient scales every gradient of the step.
  }];
  let arguments = (ins
    RN_FloatTensor:$logits,
    RN_LabelTensor:$labels,
    Optional<RN_ScalarF32Tensor>:$scale,
    F64Attr:$label_smoothing);
  let results = (outs RN_FloatTensor:$logits_grad);
  let assemblyFormat = [{
    $logits `,` $labels (`scale` $scale^)? `label_smoothing` $label_smoothing
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Zero-grad, loss scaling
//===----------------------------------------------------------------------===//

def RN_ZeroOp : RN_Op<"zero", [
    RN_OnStream<"update">, RN_ArtifactOp, DeclareOpInterfaceMethods<RN_InPlaceOpInterface>,
    Pure, SameOperandsAndResultType]> {
  let summary = "zeroes a gradient accumulator (updates `input`)";
  let arguments = (ins RN_FloatTensor:$input);
  let results = (outs RN_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
}

def RN_MultiZeroOp : RN_Op<"multi_zero", [
    RN_OnStream<"update">, RN_ArtifactOp, DeclareOpInterfaceMethods<RN_InPlaceOpInterface>,
    Pure]> {
  let summary = "zeroes several gradient accumulators in one op (updates each input)";
  let description = [{
    The `rn.zero` of every accumulator of a group, one op: result `i` is
    input `i` zeroed, in place. `rn-group-elementwise` creates it from the
    zeroes of one subgraph; the GPU runs it as one memset per run of
    adjacent slots (the gradients are planned back to back).

    ```mlir
    %z:2 = rn.multi_zero %gw, %gb
        : (tensor<64x3x3x3xf32>, tensor<64xf32>) -> (tensor<64x3x3x3xf32>, tensor<64xf32>)
    ```
  }];
  let arguments = (ins Variadic<RN_FloatTensor>:$inputs);
  let results = (outs Variadic<RN_FloatTensor>:$results);
  let assemblyFormat = "$inputs attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def RN_MultiUnscaleOp : RN_Op<"multi_unscale", [
    RN_OnStream<"update">, RN_ArtifactOp, DeclareOpInterfaceMethods<RN_InPlaceOpInterface>,
    Pure]> {
  let summary = "divides several gradients by the loss scale in one op (updates each grad)";
  let description = [{
    The `rn.unscale` of every gradient of a group by one scale, one op:
    result `i` is `grads[i]` divided by `scale` element for element with
    the per-tensor op's formula, in place. Every gradient has one element
    type (one kernel per group). `rn-group-elementwise` creates it.

    ```mlir
    %g:2 = rn.multi_unscale grads(%gw, %gb) scale %s
        : (tensor<64x3x3x3xf32>, tensor<64xf32>, tensor<f32>) -> (tensor<64x3x3x3xf32>, tensor<64xf32>)
    ```
  }];
  let arguments = (ins Variadic<RN_FloatTensor>:$grads, RN_ScalarF32Tensor:$scale);
  let results = (outs Variadic<RN_FloatTensor>:$results);
  let assemblyFormat = [{
    `grads` `(` $grads `)` `scale` $scale attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def RN_MultiCastOp : RN_Op<"multi_cast", [
    RN_OnStream<"comp3">, RN_ArtifactOp, Pure]> {
  let summary = "converts several tensors to another float type in one op";
  let description = [{
    The `rn.cast` of every tensor of a group, one op: result `i` is input
    `i` converted to the results' element type (round to nearest even).
    The inputs share one element type and the results another (one kernel
    per group). `rn-group-elementwise` creates it from the casts of one
    subgraph (the gradients' casts to the f32 masters, the weights' casts
    to their low-precision copies).

    ```mlir
    %c:2 = rn.multi_cast %gw, %gb
        : (tensor<64x3x3x3xf16>, tensor<64xf16>) -> (tensor<64x3x3x3xf32>, tensor<64xf32>)
    ```
  }];
  let arguments = (ins Variadic<RN_FloatTensor>:$inputs);
  let results = (outs Variadic<RN_FloatTensor>:$results);
  let assemblyFormat = "$inputs attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def RN_CheckFiniteOp : RN_Op<"check_finite", [
    RN_OnStream<"update">, RN_ArtifactOp, Pure]> {
  let summary = "true when any element of any input is Inf or NaN";
  let arguments = (ins Variadic<RN_FloatTensor>:$inputs);
  let results = (outs RN_ScalarI1Tensor:$found_non_finite);
  let assemblyFormat = "$inputs attr-dict `:` type($inputs) `->` type($found_non_finite)";
  let hasVerifier = 1;
}

def RN_UnscaleOp : RN_Op<"unscale", [
    RN_OnStream<"update">, RN_ArtifactOp, DeclareOpInterfaceMethods<RN_InPlaceOpInterface>,
    Pure]> {
  let summary = "divides a gradient by the loss scale (updates `grad`)";
  let arguments = (ins RN_FloatTensor:$grad, RN_ScalarF32Tensor:$scale);
  let results = (outs RN_FloatTensor:$result);
  let assemblyFormat = "$grad `,` $scale attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def RN_UpdateLossScaleOp : RN_Op<"update_loss_scale", [
    RN_OnStream<"update">, RN_ArtifactOp, DeclareOpInterfaceMethods<RN_InPlaceOpInterface>,
    Pure]> {
  let summary = "dynamic loss scaling: back off on overflow, grow when clean";
  let description = [{
    Updates `scale` and `good_steps`: on a non-finite gradient the scale is
    multiplied by `backoff` and the count reset; otherwise the count grows
    and, once it reaches `growth_interval`, the scale is multiplied by
    `growth` and the count reset.
  }];
  let arguments = (ins
    RN_ScalarF32Tensor:$scale,
    RN_ScalarI32Tensor:$good_steps,
    RN_ScalarI1Tensor:$found_non_finite,
    F64Attr:$growth,
    F64Attr:$backoff,
    I64Attr:$growth_interval);
  let results = (outs RN_ScalarF32Tensor:$new_scale,
                      RN_ScalarI32Tensor:$new_good_steps);
  let assemblyFormat = [{
    $scale `,` $good_steps `,` $found_non_finite `growth` $growth `backoff` $backoff
    `interval` $growth_interval attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Data parallelism
//===----------------------------------------------------------------------===//

// The replicas' gradients: an all-reduce must neither be merged nor dropped.
def RN_Collective : Resource<"::mlir::rn::CollectiveResource">;

def RN_AllReduceMeanOp : RN_Op<"all_reduce_mean", [
    RN_OnStream<"update">, RN_ArtifactOp,
    DeclareOpInterfaceMethods<RN_InPlaceOpInterface>,
    MemoryEffects<[MemRead<RN_Collective>, MemWrite<RN_Collective>]>]> {
  let summary = "averages tensors over the data-parallel replicas (updates each input)";
  let description = [{
    Data-parallel training: every replica computes gradients on its share of
    the batch; this op replaces each input with the mean of that tensor over
    all replicas (an NCCL all-reduce on the UPDATE stream, one call for all
    inputs). With one replica it is the identity.

    ```mlir
    %g:2 = rn.all_reduce_mean %a, %b
        : (tensor<64x3x3x3xf32>, tensor<64xf32>) -> (tensor<64x3x3x3xf32>, tensor<64xf32>)
    ```
  }];
  let arguments = (ins Variadic<RN_FloatTensor>:$inputs);
  let results = (outs Variadic<RN_FloatTensor>:$results);
  let assemblyFormat = "$inputs attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Optimizers, EMA, evaluation
//===----------------------------------------------------------------------===//

def RN_SgdUpdateOp : RN_Op<"sgd_update", [
    RN_OnStream<"update">, RN_ArtifactOp, DeclareOpInterfaceMethods<RN_InPlaceOpInterface>,
    Pure, AttrSizedOperandSegments]> {
  let summary = "SGD with momentum, Nesterov and weight decay (updates `param`, `momentum_buffer`)";
  let description = [{
    PyTorch's torch.optim.SGD (dampening 0): g = grad + weight_decay * param;
    buf = momentum * buf + g; step = nesterov ? g + momentum * buf : buf;
    param -= lr * step. The momentum buffer is present exactly when momentum
    is non-zero. With `skip_if` true (a non-finite gradient under dynamic
    loss scaling) nothing changes.
  }];
  let arguments = (ins
    RN_FloatTensor:$param,
    RN_FloatTensor:$grad,
    Optional<RN_FloatTensor>:$momentum_buffer,
    RN_ScalarF32Tensor:$lr,
    Optional<RN_ScalarI1Tensor>:$skip_if,
    F64Attr:$momentum,
    F64Attr:$weight_decay,
    UnitAttr:$nesterov);
  let results = (outs RN_FloatTensor:$new_param,
                      Optional<RN_FloatTensor>:$new_momentum_buffer);
  let assemblyFormat = [{
    $param `,` $grad (`,` $momentum_buffer^)? `lr` $lr (`skip_if` $skip_if^)?
    `momentum` $momentum `weight_decay` $weight_decay (`nesterov` $nesterov^)?
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def RN_MultiSgdUpdateOp : RN_Op<"multi_sgd_update", [
    RN_OnStream<"update">, RN_ArtifactOp, DeclareOpInterfaceMethods<RN_InPlaceOpInterface>,
    Pure, AttrSizedOperandSegments]> {
  let summary = "SGD of several parameters in one op (updates each `params`, `momentum_buffers` entry)";
  let description = [{
    The `rn.sgd_update` of every parameter of a group, one op: element for
    element the same formula, in the same order, so the state it leaves is
    bit for bit the state the per-parameter updates leave. Tensor `i` of the
    group is (`params[i]`, `grads[i]`, `momentum_buffers[i]`), each triple of
    one type, and `new_params[i]`, `new_momentum_buffers[i]` are its new
    values (in place: the memory planner gives each its operand's slot).
    The momentum buffers are present exactly when momentum is non-zero. One
    learning rate, one `skip_if` and one set of attributes for the whole
    group; every tensor has the same element type (one kernel per group).
    The results are the new params, then the new momentum buffers, in
    group order. `rn-group-updates` creates it; the GPU runs it as one
    kernel launch over a table of (tensor, chunk) entries built at load.

    ```mlir
    %p:2, %m:2 = rn.multi_sgd_update params(%w, %b) grads(%gw, %gb)
        momentum_buffers(%mw, %mb) lr %lr momentum 9.000000e-01
        weight_decay 5.000000e-04 nesterov : (...) -> (...)
    ```
  }];
  let arguments = (ins
    Variadic<RN_FloatTensor>:$params,
    Variadic<RN_FloatTensor>:$grads,
    Variadic<RN_FloatTensor>:$momentum_buffers,
    RN_ScalarF32Tensor:$lr,
    Optional<RN_ScalarI1Tensor>:$skip_if,
    F64Attr:$momentum,
    F64Attr:$weight_decay,
    UnitAttr:$nesterov);
  let results = (outs Variadic<RN_FloatTensor>:$new_values);
  let assemblyFormat = [{
    `params` `(` $params `)` `grads` `(` $grads `)`
    (`momentum_buffers` `(` $momentum_buffers^ `)`)? `lr` $lr (`skip_if` $skip_if^)?
    `momentum` $momentum `weight_decay` $weight_decay (`nesterov` $nesterov^)?
    attr-dict `:` functional-type(operands, results)
  }];
  let extraClassDeclaration = [{
    /// new_values[i]: the new params[i].
    ::mlir::ResultRange getNewParams();
    /// new_values[size(params) + i]: the new momentum_buffers[i].
    ::mlir::ResultRange getNewMomentumBuffers();
  }];
  let hasVerifier = 1;
}

def RN_AdamWUpdateOp : RN_Op<"adamw_update", [
    RN_OnStream<"update">, RN_ArtifactOp, DeclareOpInterfaceMethods<RN_InPlaceOpInterface>,
    Pure]> {
  let summary = "AdamW with decoupled weight decay (updates `param`, `exp_avg`, `exp_avg_sq`)";
  let description = [{
    PyTorch's torch.optim.AdamW: param *= 1 - lr * weight_decay; m and v
    are updated with beta1/beta2; the step is lr * m_hat / (sqrt(v_hat) +
    epsilon) with bias correction from `step` (1 on the first step).
  }];
  let arguments = (ins
    RN_FloatTensor:$param,
    RN_FloatTensor:$grad,
    RN_FloatTensor:$exp_avg,
    RN_FloatTensor:$exp_avg_sq,
    RN_ScalarF32Tensor:$lr,
    RN_ScalarI32Tensor:$step,
    Optional<RN_ScalarI1Tensor>:$skip_if,
    F64Attr:$beta1,
    F64Attr:$beta2,
    F64Attr:$epsilon,
    F64Attr:$weight_decay);
  let results = (outs RN_FloatTensor:$new_param, RN_FloatTensor:$new_exp_avg,
                      RN_FloatTensor:$new_exp_avg_sq);
  let assemblyFormat = [{
    $param `,` $grad `,` $exp_avg `,` $exp_avg_sq `lr` $lr `step` $step
    (`skip_if` $skip_if^)? `betas` `(` $beta1 `,` $beta2 `)` `eps` $epsilon
    `weight_decay` $weight_decay attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def RN_MultiAdamWUpdateOp : RN_Op<"multi_adamw_update", [
    RN_OnStream<"update">, RN_ArtifactOp, DeclareOpInterfaceMethods<RN_InPlaceOpInterface>,
    Pure, AttrSizedOperandSegments]> {
  let summary = "AdamW of several parameters in one op (updates each `params`, `exp_avgs`, `exp_avg_sqs` entry)";
  let description = [{
    The `rn.adamw_update` of every parameter of a group, one op, as
    `rn.multi_sgd_update` is for SGD: tensor `i` is (`params[i]`,
    `grads[i]`, `exp_avgs[i]`, `exp_avg_sqs[i]`), all of one type, with the
    per-parameter formula element for element; one lr, step, skip_if and
    set of attributes; one element type. The results are the new params,
    then the new first moments, then the new second moments, each in place
    of its operand.

    ```mlir
    %r:6 = rn.multi_adamw_update params(%w, %b) grads(%gw, %gb)
        exp_avgs(%mw, %mb) exp_avg_sqs(%vw, %vb) lr %lr step %step
        betas(9.000000e-01, 9.990000e-01) eps 1.000000e-08
        weight_decay 1.000000e-02 : (...) -> (...)
    ```
  }];
  let arguments = (ins
    Variadic<RN_FloatTensor>:$params,
    Variadic<RN_FloatTensor>:$grads,
    Variadic<RN_FloatTensor>:$exp_avgs,
    Variadic<RN_FloatTensor>:$exp_avg_sqs,
    RN_ScalarF32Tensor:$lr,
    RN_ScalarI32Tensor:$step,
    Optional<RN_ScalarI1Tensor>:$skip_if,
    F64Attr:$beta1,
    F64Attr:$beta2,
    F64Attr:$epsilon,
    F64Attr:$weight_decay);
  let results = (outs Variadic<RN_FloatTensor>:$new_values);
  let assemblyFormat = [{
    `params` `(` $params `)` `grads` `(` $grads `)` `exp_avgs` `(` $exp_avgs `)`
    `exp_avg_sqs` `(` $exp_avg_sqs `)` `lr` $lr `step` $step (`skip_if` $skip_if^)?
    `betas` `(` $beta1 `,` $beta2 `)` `eps` $epsilon `weight_decay` $weight_decay
    attr-dict `:` functional-type(operands, results)
  }];
  let extraClassDeclaration = [{
    /// new_values[k * size(params) + i]: the new params[i] (k = 0),
    /// exp_avgs[i] (k = 1) and exp_avg_sqs[i] (k = 2).
    ::mlir::ResultRange getNewParams();
    ::mlir::ResultRange getNewExpAvgs();
    ::mlir::ResultRange getNewExpAvgSqs();
  }];
  let hasVerifier = 1;
}

def RN_LarsUpdateOp : RN_Op<"lars_update", [
    RN_OnStream<"update">, RN_ArtifactOp, DeclareOpInterfaceMethods<RN_InPlaceOpInterface>,
    Pure]> {
  let summary = "LARS: SGD with a layer-wise trust ratio (updates `param`, `momentum_buffer`)";
  let description = [{
    local_lr = trust_coefficient * |param| / (|grad| + weight_decay * |param|
    + epsilon) (1 when either norm is zero); g = local_lr * (grad +
    weight_decay * param); buf = momentum * buf + g; param -= lr * buf.
  }];
  let arguments = (ins
    RN_FloatTensor:$param,
    RN_FloatTensor:$grad,
    RN_FloatTensor:$momentum_buffer,
    RN_ScalarF32Tensor:$lr,
    Optional<RN_ScalarI1Tensor>:$skip_if,
    F64Attr:$momentum,
    F64Attr:$weight_decay,
    F64Attr:$trust_coefficient,
    F64Attr:$epsilon);
  let results = (outs RN_FloatTensor:$new_param,
                      RN_FloatTensor:$new_momentum_buffer);
  let assemblyFormat = [{
    $param `,` $grad `,` $momentum_buffer `lr` $lr (`skip_if` $skip_if^)?
    `momentum` $momentum `weight_decay` $weight_decay `trust` $trust_coefficient
    `eps` $epsilon attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def RN_MultiLarsUpdateOp : RN_Op<"multi_lars_update", [
    RN_OnStream<"update">, RN_ArtifactOp, DeclareOpInterfaceMethods<RN_InPlaceOpInterface>,
    Pure, AttrSizedOperandSegments]> {
  let summary = "LARS of several parameters in one op (updates each `params`, `momentum_buffers` entry)";
  let description = [{
    The `rn.lars_update` of every parameter of a group, one op, as
    `rn.multi_sgd_update` is for SGD: tensor `i` is (`params[i]`,
    `grads[i]`, `momentum_buffers[i]`), all of one type, and its trust
    ratio comes from the norms of `params[i]` and `grads[i]` alone, as the
    per-parameter op computes it; then the per-parameter formula element
    for element. One lr, one `skip_if` and one set of attributes; one
    element type. The results are the new params, then the new momentum
    buffers, each in place of its operand. `rn-group-updates` creates it;
    the GPU runs it as two launches for the whole group (the partial norms
    of every tensor, then the trust ratios and the update).

    ```mlir
    %p:2, %m:2 = rn.multi_lars_update params(%w, %b) grads(%gw, %gb)
        momentum_buffers(%mw, %mb) lr %lr momentum 9.000000e-01
        weight_decay 1.000000e-04 trust 1.000000e-03 eps 1.000000e-09
        : (...) -> (...)
    ```
  }];
  let arguments = (ins
    Variadic<RN_FloatTensor>:$params,
    Variadic<RN_FloatTensor>:$grads,
    Variadic<RN_FloatTensor>:$momentum_buffers,
    RN_ScalarF32Tensor:$lr,
    Optional<RN_ScalarI1Tensor>:$skip_if,
    F64Attr:$momentum,
    F64Attr:$weight_decay,
    F64Attr:$trust_coefficient,
    F64Attr:$epsilon);
  let results = (outs Variadic<RN_FloatTensor>:$new_values);
  let assemblyFormat = [{
    `params` `(` $params `)` `grads` `(` $grads `)`
    `momentum_buffers` `(` $momentum_buffers `)` `lr` $lr (`skip_if` $skip_if^)?
    `momentum` $momentum `weight_decay` $weight_decay `trust` $trust_coefficient
    `eps` $epsilon attr-dict `:` functional-type(operands, results)
  }];
  let extraClassDeclaration = [{
    /// new_values[i]: the new params[i].
    ::mlir::ResultRange getNewParams();
    /// new_values[size(params) + i]: the new momentum_buffers[i].
    ::mlir::ResultRange getNewMomentumBuffers();
  }];
  let hasVerifier = 1;
}

def RN_EmaUpdateOp : RN_Op<"ema_update", [
    RN_OnStream<"update">, RN_ArtifactOp, DeclareOpInterfaceMethods<RN_InPlaceOpInterface>,
    Pure, AllTypesMatch<["average", "param", "new_average"]>]> {
  let summary = "exponential moving average of a weight (updates `average`)";
  let description = "average = decay * average + (1 - decay) * param.";
  let arguments = (ins RN_FloatTensor:$average, RN_FloatTensor:$param,
                       F64Attr:$decay);
  let results = (outs RN_FloatTensor:$new_average);
  let assemblyFormat = [{
    $average `,` $param `decay` $decay attr-dict `:` type($new_average)
  }];
  let hasVerifier = 1;
}

def RN_MultiEmaUpdateOp : RN_Op<"multi_ema_update", [
    RN_OnStream<"update">, RN_ArtifactOp, DeclareOpInterfaceMethods<RN_InPlaceOpInterface>,
    Pure, SameVariadicOperandSize]> {
  let summary = "exponential moving averages of several weights in one op (updates each `averages` entry)";
  let description = [{
    The `rn.ema_update` of every weight of a group, one op: result `i` is
    `decay * averages[i] + (1 - decay) * params[i]` with the per-tensor
    op's formula, in place of `averages[i]`. One decay and one element type
    for the group (one kernel). `rn-group-elementwise` creates it.

    ```mlir
    %e:2 = rn.multi_ema_update averages(%ew, %eb) params(%w, %b) decay 9.990000e-01
        : (tensor<64x3x3x3xf32>, tensor<64xf32>, tensor<64x3x3x3xf32>, tensor<64xf32>)
        -> (tensor<64x3x3x3xf32>, tensor<64xf32>)
    ```
  }];
  let arguments = (ins Variadic<RN_FloatTensor>:$averages, Variadic<RN_FloatTensor>:$params,
                       F64Attr:$decay);
  let results = (outs Variadic<RN_FloatTensor>:$results);
  let assemblyFormat = [{
    `averages` `(` $averages `)` `params` `(` $params `)` `decay` $decay attr-dict
    `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def RN_CountCorrectOp : RN_Op<"count_correct", [
    RN_OnStream<"comp2">, RN_ArtifactOp, Pure]> {
  let summary = "number of rows whose arg-max equals the label (top-1 hits)";
  let arguments = (ins RN_FloatTensor:$logits, RN_LabelTensor:$labels);
  let results = (outs RN_ScalarI32Tensor:$correct);
  let assemblyFormat = [{
    $logits `,` $labels attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

#endif // RN_DIALECT_RN_TRAINING_OPS_TD
