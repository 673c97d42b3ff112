//===- RNFusedOps.td - Fused Conv+BN+ReLU ops of the rn dialect -*- tablegen -*-===//
//
// What rn-fuse-cbr produces: convolution + batch normalization (+ ReLU)
// (CBR) in training, backward and inference form, and the residual tail of a
// ResNet block, batch normalization + add + ReLU, in the same three forms;
// and what rn-fuse-bn-prologue makes of a CBR whose readers are
// convolutions: the convolution with its statistics (conv_bn_stats) and the
// apply's per-channel scale and bias (bn_scale_bias), which the readers
// apply in their prologue.
//
// Every fused op is defined as the composition of the unfused ops it
// replaces, which its description spells out: an executor may implement it
// any way it likes, but must match that composition within floating-point
// tolerance (the CPU executor checks fused against unfused ops). Like the
// training ops, each is a pure function of its operands; accumulated
// gradients update their accumulator operand (InPlaceOpInterface).
//
// The convolution of a CBR op has no bias: a bias before a batch
// normalization is cancelled by the mean subtraction, and rn-fuse-cbr leaves
// such convolutions unfused.
//
//===----------------------------------------------------------------------===//

#ifndef RN_DIALECT_RN_FUSED_OPS_TD
#define RN_DIALECT_RN_FUSED_OPS_TD

include "dialects/rn/RNBase.td"
include "dialects/rn/RNInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

//===----------------------------------------------------------------------===//
// Conv + BatchNorm (+ ReLU)
//===----------------------------------------------------------------------===//

def RN_CbrForwardOp : RN_Op<"cbr_forward", [
    RN_OnStream<"comp1">, RN_ArtifactOp, AttrSizedOperandSegments, Pure]> {
  let summary = "convolution + training-mode batch normalization (+ ReLU)";
  let description = [{
    Equals, with the same attributes:

    ```mlir
    %conv_output = rn.conv2d %input, %filter stride .. pad .. dilation .. groups ..
    %bn, %batch_mean, %batch_inv_std = rn.batch_norm_train %conv_output, %gamma, %beta eps ..
    %result = rn.relu %bn            // only with `relu`; otherwise %result = %bn
    ```

    The convolution has no bias. The statistics are those of `conv_output`
    as stored (in its element type), saved in f32 as for
    `rn.batch_norm_train`: the batch mean and 1 / sqrt(var + eps), var the
    biased variance over N, H and W. `conv_output` is returned because the
    backward op needs it (the batch normalization's input); `batch_mean`
    and `batch_inv_std` feed the backward op and `rn.update_running_stats`.
    Under mixed precision `input`, `filter`, `conv_output` and `result` are
    f16/bf16 while `gamma` and `beta` may be f32.

    With `prologue %prologue_scale, %prologue_bias` (one group only), the
    convolution reads the previous layer's batch norm apply + ReLU of
    `input` instead of `input` (`rn-fuse-bn-prologue`; `input` is then that
    layer's conv_output):

    ```mlir
    P(input)[n, h, w, c] = relu(round(fma(input, prologue_scale[c],
                                          prologue_bias[c])))
    ```

    `input` read as stored, one f32 fused multiply-add rounded once to
    `input`'s element type (the rounding of cuDNN's fused prologue
    engines); `prologue_scale` and `prologue_bias` are [C_in] of that type
    (from `rn.bn_scale_bias`).

    ```mlir
    %y, %c, %mean, %inv_std = rn.cbr_forward %x, %w, %gamma, %beta
        stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 eps 1.000000e-05 relu
        : (tensor<8x32x32x64xf16>, tensor<64x3x3x64xf16>, tensor<64xf32>, tensor<64xf32>)
        -> (tensor<8x32x32x64xf16>, tensor<8x32x32x64xf16>, tensor<64xf32>, tensor<64xf32>)
    ```
  }];
  let arguments = (ins
    RN_FloatTensor:$input,
    RN_FloatTensor:$filter,
    RN_FloatTensor:$gamma,
    RN_FloatTensor:$beta,
    Optional<RN_FloatTensor>:$prologue_scale,
    Optional<RN_FloatTensor>:$prologue_bias,
    DenseI64ArrayAttr:$strides,
    DenseI64ArrayAttr:$padding,
    DenseI64ArrayAttr:$dilation,
    I64Attr:$groups,
    F64Attr:$epsilon,
    UnitAttr:$relu);
  let results = (outs
    RN_FloatTensor:$result,
    RN_FloatTensor:$conv_output,
    RankedTensorOf<[F32]>:$batch_mean,
    RankedTensorOf<[F32]>:$batch_inv_std);
  let assemblyFormat = [{
    $input `,` $filter `,` $gamma `,` $beta
    (`prologue` $prologue_scale^ `,` $prologue_bias)? `stride` $strides
    `pad` $padding `dilation` $dilation `groups` $groups `eps` $epsilon
    (`relu` $relu^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def RN_CbrBackwardOp : RN_Op<"cbr_backward", [RN_ArtifactOp,
    DeclareOpInterfaceMethods<RN_ForkingOpInterface>,
    DeclareOpInterfaceMethods<RN_InPlaceOpInterface>, AttrSizedOperandSegments, Pure]> {
  let summary = "gradients of rn.cbr_forward: ReLU, batch norm and convolution backward";
  let description = [{
    Equals, with the convolution attributes of the forward op:

    ```mlir
    %d = rn.relu_backward %output_grad, %relu_output   // only with `relu %relu_output`;
                                                        // otherwise %d = %output_grad
    %conv_output_grad, %gamma_grad, %beta_grad = rn.batch_norm_backward %d,
        %conv_output, %gamma, %batch_mean, %batch_inv_std, %gamma_grad_acc, %beta_grad_acc
    %input_grad, %filter_grad = rn.conv2d_backward %conv_output_grad, %input,
        %filter, %filter_grad_acc stride .. pad .. dilation .. groups ..
    ```

    Operands: `output_grad` is the gradient at the forward op's `result`;
    `input`, `filter`, `conv_output`, `gamma`, `batch_mean` and
    `batch_inv_std` are the forward op's operands and results;
    When the forward op applied the ReLU, exactly one of two operands
    gives its mask, which zeroes `output_grad` where the forward's result
    is not positive:
    - `relu %relu_output`: the forward op's `result`, read as stored;
    - `relu_recompute %relu_beta`: the forward op's `beta`. The mask is
      then recomputed from `conv_output` where the backward reads it
      anyway: positive where `round(fma(conv_output - batch_mean,
      batch_inv_std * gamma, beta))` is, in f32 and rounded to
      `conv_output`'s type. That is the forward's normalization from its
      saved f32 statistics, so it equals the stored result's mask wherever
      the forward normalized the same way (the GPU executor does, bit for
      bit; the CPU reference normalizes in double, which can differ only
      where the normalized value rounds to zero). It saves reading the
      ReLU result in both of the backward's passes over the activation
      (`rn-recompute-relu-mask`). With `prologue_mask` (only with
      `relu_recompute`) the mask takes the rounding of the next layer's
      prologue instead, which reads the activation in its place
      (`rn-fuse-bn-prologue`): with `%s, %b = rn.bn_scale_bias
      %batch_mean, %batch_inv_std, %gamma, %relu_beta` in `conv_output`'s
      type, positive where `round(fma(conv_output, s, b))` is, so that
      mask and prologue agree bit for bit.

    With `input_prologue %input_scale, %input_bias` the forward op read
    its input through a prologue with that scale and bias (`prologue` on
    `rn.cbr_forward`; `input` is the previous layer's conv_output): the
    filter gradient is the one of that prologue's output, P(input), and
    the data gradient is the gradient at P(input) (the ReLU inside P is the
    previous layer's, whose backward masks it).

    Results, in order: `conv_output_grad` (the gradient at the convolution's
    output, kept as a value so that it has a memory slot), the optional
    input gradient `input_grad` (the first layer, whose input is the batch,
    has none: the number of result types says which), `filter_grad`
    (`filter_grad_acc + dW`), `gamma_grad` (`gamma_grad_acc + dgamma`) and
    `beta_grad` (`beta_grad_acc + dbeta`). The three accumulated gradients update their
    accumulators in place. As for `rn.conv2d_backward`, `filter_grad_acc`
    may cover only the first input channels of a zero-padded filter, and
    with `plus %addend` (only with an input gradient) the input gradient is
    `dX + addend`, rounded once: a residual junction's gradient sum, which
    `rn-fold-gradient-adds` moves into the data gradient's epilogue.

    Parts (ForkingOpInterface), in dependency order: `bn_grad` (ReLU and
    batch norm backward: writes `conv_output_grad` and the gamma and beta
    gradients), `weight_grad` (dW from `conv_output_grad` and `input`, and
    the input prologue's scale and bias) and `input_grad` (dX from
    `conv_output_grad` and `filter`).

    ```mlir
    %dc, %dx, %dw, %dgamma, %dbeta = rn.cbr_backward %dy, %x, %w, %c, %gamma,
        %mean, %inv_std, %gw, %ggamma, %gbeta relu %y stride [1, 1]
        pad [1, 1] dilation [1, 1] groups 1 : (...) -> (dc, dx, gw, ggamma, gbeta)
    ```
  }];
  let arguments = (ins
    RN_FloatTensor:$output_grad,
    RN_FloatTensor:$input,
    RN_FloatTensor:$filter,
    RN_FloatTensor:$conv_output,
    RN_FloatTensor:$gamma,
    RankedTensorOf<[F32]>:$batch_mean,
    RankedTensorOf<[F32]>:$batch_inv_std,
    RN_FloatTensor:$filter_grad_acc,
    RN_FloatTensor:$gamma_grad_acc,
    RN_FloatTensor:$beta_grad_acc,
    Optional<RN_FloatTensor>:$relu_output,
    Optional<RN_FloatTensor>:$relu_beta,
    Optional<RN_FloatTensor>:$input_scale,
    Optional<RN_FloatTensor>:$input_bias,
    Optional<RN_FloatTensor>:$input_grad_addend,
    DenseI64ArrayAttr:$strides,
    DenseI64ArrayAttr:$padding,
    DenseI64ArrayAttr:$dilation,
    I64Attr:$groups,
    UnitAttr:$prologue_mask);
  let results = (outs
    RN_FloatTensor:$conv_output_grad,
    Optional<RN_FloatTensor>:$input_grad,
    RN_FloatTensor:$filter_grad,
    RN_FloatTensor:$gamma_grad,
    RN_FloatTensor:$beta_grad);
  let assemblyFormat = [{
    $output_grad `,` $input `,` $filter `,` $conv_output `,` $gamma `,`
    $batch_mean `,` $batch_inv_std `,` $filter_grad_acc `,` $gamma_grad_acc `,`
    $beta_grad_acc (`relu` $relu_output^)? (`relu_recompute` $relu_beta^)?
    (`prologue_mask` $prologue_mask^)?
    (`input_prologue` $input_scale^ `,` $input_bias)? `stride` $strides
    `pad` $padding
    `dilation` $dilation `groups` $groups (`plus` $input_grad_addend^)?
    attr-dict `:` functional-type(operands, results)
  }];
  let extraClassDeclaration = [{
    bool hasRelu() { return getReluOutput() || getReluBeta(); }
  }];
  let hasVerifier = 1;
}

def RN_CbrInferenceOp : RN_Op<"cbr_inference", [
    RN_OnStream<"comp1">, RN_ArtifactOp, Pure]> {
  let summary = "convolution + inference-mode batch normalization (+ ReLU)";
  let description = [{
    Equals, with the same attributes:

    ```mlir
    %c = rn.conv2d %input, %filter stride .. pad .. dilation .. groups ..
    %bn = rn.batch_norm_inference %c, %gamma, %beta, %running_mean, %running_var eps ..
    %result = rn.relu %bn            // only with `relu`; otherwise %result = %bn
    ```

    The convolution has no bias; `gamma`, `beta` and the running statistics
    may be f32 with f16/bf16 activations.

    ```mlir
    %y = rn.cbr_inference %x, %w, %gamma, %beta, %mean, %var stride [1, 1]
        pad [1, 1] dilation [1, 1] groups 1 eps 1.000000e-05 relu : (...) -> tensor<8x32x32x64xf32>
    ```
  }];
  let arguments = (ins
    RN_FloatTensor:$input,
    RN_FloatTensor:$filter,
    RN_FloatTensor:$gamma,
    RN_FloatTensor:$beta,
    RN_FloatTensor:$running_mean,
    RN_FloatTensor:$running_var,
    DenseI64ArrayAttr:$strides,
    DenseI64ArrayAttr:$padding,
    DenseI64ArrayAttr:$dilation,
    I64Attr:$groups,
    F64Attr:$epsilon,
    UnitAttr:$relu);
  let results = (outs RN_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $filter `,` $gamma `,` $beta `,` $running_mean `,` $running_var
    `stride` $strides `pad` $padding `dilation` $dilation `groups` $groups
    `eps` $epsilon (`relu` $relu^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Residual tail: BatchNorm + add + ReLU
//===----------------------------------------------------------------------===//

def RN_BnAddReluOp : RN_Op<"bn_add_relu", [
    RN_OnStream<"comp2">, RN_ArtifactOp, Pure]> {
  let summary = "training-mode batch normalization + residual add + ReLU";
  let description = [{
    The tail of a ResNet block. Equals:

    ```mlir
    %bn, %batch_mean, %batch_inv_std = rn.batch_norm_train %input, %gamma, %beta eps ..
    %sum = rn.add %bn, %shortcut
    %result = rn.relu %sum
    ```

    `shortcut` has the type of `input` and `result`; the statistics are
    saved as for `rn.batch_norm_train` (f32 mean and 1 / sqrt(var + eps))
    for the backward op and `rn.update_running_stats`. `gamma` and `beta`
    may be f32 with f16/bf16 activations.

    ```mlir
    %y, %mean, %inv_std = rn.bn_add_relu %c, %gamma, %beta shortcut %x eps 1.000000e-05
        : (tensor<8x32x32x64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<8x32x32x64xf32>)
        -> (tensor<8x32x32x64xf32>, tensor<64xf32>, tensor<64xf32>)
    ```
  }];
  let arguments = (ins
    RN_FloatTensor:$input,
    RN_FloatTensor:$gamma,
    RN_FloatTensor:$beta,
    RN_FloatTensor:$shortcut,
    F64Attr:$epsilon);
  let results = (outs
    RN_FloatTensor:$result,
    RankedTensorOf<[F32]>:$batch_mean,
    RankedTensorOf<[F32]>:$batch_inv_std);
  let assemblyFormat = [{
    $input `,` $gamma `,` $beta `shortcut` $shortcut `eps` $epsilon attr-dict
    `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def RN_BnAddReluBackwardOp : RN_Op<"bn_add_relu_backward", [
    RN_OnStream<"comp2">, RN_ArtifactOp,
    DeclareOpInterfaceMethods<RN_InPlaceOpInterface>, Pure]> {
  let summary = "gradients of rn.bn_add_relu";
  let description = [{
    Equals:

    ```mlir
    %d = rn.relu_backward %output_grad, %relu_output
    %input_grad, %gamma_grad, %beta_grad = rn.batch_norm_backward %d, %input,
        %gamma, %batch_mean, %batch_inv_std, %gamma_grad_acc, %beta_grad_acc
    %shortcut_grad = %d
    ```

    `output_grad` is the gradient at the forward op's result, `relu_output`
    that result; `input`, `gamma` and the statistics are the forward op's.
    Results: the gradient at the batch norm's input, the gradient of the
    shortcut (the add passes its gradient through), `gamma_grad_acc +
    dgamma` and `beta_grad_acc + dbeta`; the last two update their
    accumulators in place.

    ```mlir
    %dc, %dshortcut, %ggamma, %gbeta = rn.bn_add_relu_backward %dy, %y, %c,
        %gamma, %mean, %inv_std, %ggamma0, %gbeta0 : (...) -> (...)
    ```
  }];
  let arguments = (ins
    RN_FloatTensor:$output_grad,
    RN_FloatTensor:$relu_output,
    RN_FloatTensor:$input,
    RN_FloatTensor:$gamma,
    RankedTensorOf<[F32]>:$batch_mean,
    RankedTensorOf<[F32]>:$batch_inv_std,
    RN_FloatTensor:$gamma_grad_acc,
    RN_FloatTensor:$beta_grad_acc);
  let results = (outs
    RN_FloatTensor:$input_grad,
    RN_FloatTensor:$shortcut_grad,
    RN_FloatTensor:$gamma_grad,
    RN_FloatTensor:$beta_grad);
  let assemblyFormat = [{
    $output_grad `,` $relu_output `,` $input `,` $gamma `,` $batch_mean `,`
    $batch_inv_std `,` $gamma_grad_acc `,` $beta_grad_acc attr-dict
    `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def RN_BnAddReluInferenceOp : RN_Op<"bn_add_relu_inference", [
    RN_OnStream<"comp2">, RN_ArtifactOp, Pure]> {
  let summary = "inference-mode batch normalization + residual add + ReLU";
  let description = [{
    Equals:

    ```mlir
    %bn = rn.batch_norm_inference %input, %gamma, %beta, %running_mean, %running_var eps ..
    %sum = rn.add %bn, %shortcut
    %result = rn.relu %sum
    ```

    `shortcut` has the type of `input` and `result`.

    ```mlir
    %y = rn.bn_add_relu_inference %c, %gamma, %beta, %mean, %var shortcut %x
        eps 1.000000e-05 : (...) -> tensor<8x32x32x64xf32>
    ```
  }];
  let arguments = (ins
    RN_FloatTensor:$input,
    RN_FloatTensor:$gamma,
    RN_FloatTensor:$beta,
    RN_FloatTensor:$running_mean,
    RN_FloatTensor:$running_var,
    RN_FloatTensor:$shortcut,
    F64Attr:$epsilon);
  let results = (outs RN_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $gamma `,` $beta `,` $running_mean `,` $running_var
    `shortcut` $shortcut `eps` $epsilon attr-dict
    `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// BN apply + ReLU as the next convolution's prologue
//===----------------------------------------------------------------------===//

def RN_BnScaleBiasOp : RN_Op<"bn_scale_bias", [
    RN_OnStream<"comp1">, RN_ArtifactOp, Pure]> {
  let summary = "per-channel scale and bias of a training-mode batch norm apply";
  let description = [{
    The batch normalization `(x - batch_mean) * batch_inv_std * gamma + beta`
    as one multiply and one add per channel, in the results' type T (the
    activations'), for the next convolution's prologue (`prologue` on
    `rn.cbr_forward` and `rn.conv_bn_stats`, `rn-fuse-bn-prologue`). Per
    channel c, in f32, with a single-rounding fused multiply-add:

    ```mlir
    scale[c] = round_T(batch_inv_std[c] * gamma[c])
    bias[c]  = round_T(fma(-batch_mean[c], scale[c], beta[c]))  // scale as rounded
    ```

    `batch_mean` and `batch_inv_std` are a training-mode batch norm's saved
    f32 statistics; `gamma` and `beta` may be f32 or T; `scale` and `bias`
    have one type. All six are [C].

    ```mlir
    %scale, %bias = rn.bn_scale_bias %mean, %inv_std, %gamma, %beta
        : (tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>)
        -> (tensor<64xf16>, tensor<64xf16>)
    ```
  }];
  let arguments = (ins
    RankedTensorOf<[F32]>:$batch_mean,
    RankedTensorOf<[F32]>:$batch_inv_std,
    RN_FloatTensor:$gamma,
    RN_FloatTensor:$beta);
  let results = (outs RN_FloatTensor:$scale, RN_FloatTensor:$bias);
  let assemblyFormat = [{
    $batch_mean `,` $batch_inv_std `,` $gamma `,` $beta attr-dict
    `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def RN_ConvBnStatsOp : RN_Op<"conv_bn_stats", [
    RN_OnStream<"comp1">, RN_ArtifactOp, AttrSizedOperandSegments, Pure]> {
  let summary = "convolution + its output's batch statistics (rn.cbr_forward without the apply)";
  let description = [{
    `rn.cbr_forward` without its batch norm apply and ReLU. Equals, with
    the same attributes:

    ```mlir
    %conv_output = rn.conv2d %input, %filter stride .. pad .. dilation .. groups ..
    %batch_mean, %batch_inv_std = the saved statistics of
        rn.batch_norm_train %conv_output, .., .. eps ..   // any gamma and beta
    ```

    The statistics are those of `conv_output` as stored, exactly as
    `rn.cbr_forward` computes them (f32 batch mean and 1 / sqrt(var + eps),
    var the biased variance over N, H and W). The apply moves into the
    prologue of the convolutions that read `conv_output`
    (`rn-fuse-bn-prologue`), with the scale and bias of `rn.bn_scale_bias`.
    With `prologue %prologue_scale, %prologue_bias` (one group only) the
    convolution reads P(input), the previous layer's apply + ReLU, instead
    of `input`, as for `rn.cbr_forward`.

    ```mlir
    %c, %mean, %inv_std = rn.conv_bn_stats %x, %w prologue %s, %b
        stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 eps 1.000000e-05
        : (tensor<8x32x32x64xf16>, tensor<64x3x3x64xf16>, tensor<64xf16>, tensor<64xf16>)
        -> (tensor<8x32x32x64xf16>, tensor<64xf32>, tensor<64xf32>)
    ```
  }];
  let arguments = (ins
    RN_FloatTensor:$input,
    RN_FloatTensor:$filter,
    Optional<RN_FloatTensor>:$prologue_scale,
    Optional<RN_FloatTensor>:$prologue_bias,
    DenseI64ArrayAttr:$strides,
    DenseI64ArrayAttr:$padding,
    DenseI64ArrayAttr:$dilation,
    I64Attr:$groups,
    F64Attr:$epsilon);
  let results = (outs
    RN_FloatTensor:$conv_output,
    RankedTensorOf<[F32]>:$batch_mean,
    RankedTensorOf<[F32]>:$batch_inv_std);
  let assemblyFormat = [{
    $input `,` $filter (`prologue` $prologue_scale^ `,` $prologue_bias)?
    `stride` $strides `pad` $padding `dilation` $dilation `groups` $groups
    `eps` $epsilon attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

#endif // RN_DIALECT_RN_FUSED_OPS_TD
