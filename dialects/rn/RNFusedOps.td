//===- RNFusedOps.td - Fused Conv+BN+ReLU ops of the rn dialect -*- tablegen -*-===//
//
// What rn-fuse-cbr produces: convolution + batch normalization (+ ReLU)
// (CBR) in training, backward and inference form, and the residual tail of a
// ResNet block, batch normalization + add + ReLU, in the same three forms.
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

def RN_CbrForwardOp : RN_Op<"cbr_forward", [Pure]> {
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
    $input `,` $filter `,` $gamma `,` $beta `stride` $strides `pad` $padding
    `dilation` $dilation `groups` $groups `eps` $epsilon (`relu` $relu^)?
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def RN_CbrBackwardOp : RN_Op<"cbr_backward", [
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
        %filter, %filter_grad_acc stride .. pad .. dilation .. groups .. input_grad
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
      (`rn-recompute-relu-mask`).

    Results, in order: `conv_output_grad` (the gradient at the convolution's
    output, kept as a value so that it has a memory slot), the input
    gradient (only with `input_grad`; the first layer, whose input is the
    batch, has none), `filter_grad_acc + dW`, `gamma_grad_acc + dgamma` and
    `beta_grad_acc + dbeta`. The three accumulated gradients update their
    accumulators in place. As for `rn.conv2d_backward`, `filter_grad_acc`
    may cover only the first input channels of a zero-padded filter, and
    with `plus %addend` (only with `input_grad`) the input gradient is
    `dX + addend`, rounded once: a residual junction's gradient sum, which
    `rn-fold-gradient-adds` moves into the data gradient's epilogue.

    Parts (ForkingOpInterface), in dependency order: `bn_grad` (ReLU and
    batch norm backward: writes `conv_output_grad` and the gamma and beta
    gradients), `weight_grad` (dW from `conv_output_grad` and `input`) and
    `input_grad` (dX from `conv_output_grad` and `filter`).

    ```mlir
    %dc, %grads:4 = rn.cbr_backward %dy, %x, %w, %c, %gamma, %mean, %inv_std,
        %gw, %ggamma, %gbeta relu %y stride [1, 1] pad [1, 1] dilation [1, 1]
        groups 1 input_grad : (...) -> (dc, dx, gw, ggamma, gbeta)
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
    Optional<RN_FloatTensor>:$input_grad_addend,
    DenseI64ArrayAttr:$strides,
    DenseI64ArrayAttr:$padding,
    DenseI64ArrayAttr:$dilation,
    I64Attr:$groups,
    UnitAttr:$input_grad);
  let results = (outs
    RN_FloatTensor:$conv_output_grad,
    Variadic<RN_FloatTensor>:$grads);
  let assemblyFormat = [{
    $output_grad `,` $input `,` $filter `,` $conv_output `,` $gamma `,`
    $batch_mean `,` $batch_inv_std `,` $filter_grad_acc `,` $gamma_grad_acc `,`
    $beta_grad_acc (`relu` $relu_output^)? (`relu_recompute` $relu_beta^)?
    `stride` $strides `pad` $padding
    `dilation` $dilation `groups` $groups (`input_grad` $input_grad^)?
    (`plus` $input_grad_addend^)?
    attr-dict `:` functional-type(operands, results)
  }];
  let extraClassDeclaration = [{
    bool hasRelu() { return getReluOutput() || getReluBeta(); }
    ::mlir::Value getInputGradResult() {
      return getInputGrad() ? getGrads()[0] : ::mlir::Value();
    }
    ::mlir::Value getFilterGradResult() { return getGrads()[getInputGrad() ? 1 : 0]; }
    ::mlir::Value getGammaGradResult() { return getGrads()[getInputGrad() ? 2 : 1]; }
    ::mlir::Value getBetaGradResult() { return getGrads()[getInputGrad() ? 3 : 2]; }
  }];
  let hasVerifier = 1;
}

def RN_CbrInferenceOp : RN_Op<"cbr_inference", [Pure]> {
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

def RN_BnAddReluOp : RN_Op<"bn_add_relu", [Pure]> {
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

def RN_BnAddReluInferenceOp : RN_Op<"bn_add_relu_inference", [Pure]> {
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

#endif // RN_DIALECT_RN_FUSED_OPS_TD
