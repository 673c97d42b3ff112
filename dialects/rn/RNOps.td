//===- RNOps.td - Model-level ops of the rn dialect --------*- tablegen -*-===//
//
// Model level: parameters, the forward tensor ops and the loss. The verifier
// of every shape-changing op computes its result type from the operands and
// attributes (with one precise message for a bad operand) and compares it
// with the written type.
//
//===----------------------------------------------------------------------===//

#ifndef RN_DIALECT_RN_OPS_TD
#define RN_DIALECT_RN_OPS_TD

include "dialects/rn/RNBase.td"
include "dialects/rn/RNInterfaces.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/IR/BuiltinAttributes.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def RN_FloatElement : AnyTypeOf<[F32, F16, BF16]>;
def RN_FloatTensor : RankedTensorOf<[F32, F16, BF16]>;
def RN_LabelTensor : RankedTensorOf<[I32]>;
def RN_ScalarF32Tensor : 0DTensorOf<[F32]>;

// Dropout and stochastic depth draw a fresh mask on every execution: two of
// them on one value must not be merged, which is what this resource prevents.
def RN_RandomGenerator : Resource<"::mlir::rn::RandomGeneratorResource">;

//===----------------------------------------------------------------------===//
// Parameters
//===----------------------------------------------------------------------===//

def RN_ParameterOp : RN_Op<"parameter", [
    Symbol, HasParent<"::mlir::ModuleOp">]> {
  let summary = "declares a model parameter or buffer";
  let description = [{
    A named tensor that persists across training steps. Trainable parameters
    receive gradients; `buffer` marks state that does not (BatchNorm running
    statistics). Names follow PyTorch's state-dict convention.

    ```mlir
    rn.parameter @conv1.weight : tensor<64x3x3x3xf32> = #rn.init<normal, 5.892556509e-02>
    rn.parameter buffer @bn1.running_var : tensor<64xf32> = #rn.init<ones>
    ```
  }];
  let arguments = (ins
    SymbolNameAttr:$sym_name,
    TypeAttrOf<AnyType>:$type,
    RN_InitAttr:$init,
    UnitAttr:$buffer);
  let assemblyFormat = [{
    (`buffer` $buffer^)? $sym_name `:` $type `=` qualified($init) attr-dict
  }];
  let extraClassDeclaration = [{
    ::mlir::RankedTensorType getTensorType() {
      return ::llvm::cast<::mlir::RankedTensorType>(getType());
    }
    bool isTrainable() { return !getBuffer(); }
  }];
  let hasVerifier = 1;
}

def RN_ParamOp : RN_Op<"param", [
    Pure, DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "reads a parameter declared by rn.parameter";
  let description = [{
    ```mlir
    %w = rn.param @conv1.weight : tensor<64x3x3x3xf32>
    ```
    The type must equal the declared one.
  }];
  let arguments = (ins FlatSymbolRefAttr:$name);
  let results = (outs RN_FloatTensor:$result);
  let assemblyFormat = "$name attr-dict `:` type($result)";
}

//===----------------------------------------------------------------------===//
// Convolution and normalization
//===----------------------------------------------------------------------===//

def RN_Conv2dOp : RN_Op<"conv2d", [
    DeclareOpInterfaceMethods<RN_GradientOpInterface>,
    DeclareOpInterfaceMethods<RN_ParameterOperandsOpInterface>,
    RN_OnStream<"comp1">, RN_ArtifactOp, Pure]> {
  let summary = "2-D convolution, NHWC input, OHWI filter";
  let description = [{
    `input` is [N, H, W, C], `filter` is [O, KH, KW, C / groups], the optional
    `bias` is [O]. Padding is symmetric per spatial dimension. Output
    spatial size: floor((H + 2 * pad - dilation * (KH - 1) - 1) / stride) + 1.

    ```mlir
    %y = rn.conv2d %x, %w stride [1, 1] pad [1, 1] dilation [1, 1] groups 1
        : (tensor<8x32x32x3xf32>, tensor<64x3x3x3xf32>) -> tensor<8x32x32x64xf32>
    ```
  }];
  let arguments = (ins
    RN_FloatTensor:$input,
    RN_FloatTensor:$filter,
    Optional<RN_FloatTensor>:$bias,
    DenseI64ArrayAttr:$strides,
    DenseI64ArrayAttr:$padding,
    DenseI64ArrayAttr:$dilation,
    I64Attr:$groups);
  let results = (outs RN_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $filter (`,` $bias^)? `stride` $strides `pad` $padding
    `dilation` $dilation `groups` $groups attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def RN_BatchNormOp : RN_Op<"batch_norm", [
    DeclareOpInterfaceMethods<RN_TrainingFormOpInterface>,
    DeclareOpInterfaceMethods<RN_ParameterOperandsOpInterface>,
    RN_OnStream<"comp2">, RN_ArtifactOp, Pure]> {
  let summary = "batch normalization over the channel (last) dimension";
  let description = [{
    Training-mode batch normalization of an NHWC (rank 4) or [N, C] (rank 2)
    tensor: normalizes with the batch statistics; `running_mean` and
    `running_var` are the buffers the training step updates with `momentum`
    (PyTorch's convention: new = (1 - momentum) * old + momentum * batch).

    ```mlir
    %y = rn.batch_norm %x, %gamma, %beta, %mean, %var eps 1.000000e-05 momentum 1.000000e-01
        : (tensor<8x32x32x64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>)
        -> tensor<8x32x32x64xf32>
    ```
  }];
  let arguments = (ins
    RN_FloatTensor:$input,
    RN_FloatTensor:$weight,
    RN_FloatTensor:$bias,
    RN_FloatTensor:$running_mean,
    RN_FloatTensor:$running_var,
    F64Attr:$epsilon,
    F64Attr:$momentum);
  let results = (outs RN_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight `,` $bias `,` $running_mean `,` $running_var
    `eps` $epsilon `momentum` $momentum attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def RN_LayerNormOp : RN_Op<"layer_norm", [
    DeclareOpInterfaceMethods<RN_GradientOpInterface>,
    DeclareOpInterfaceMethods<RN_ParameterOperandsOpInterface>,
    RN_OnStream<"comp2">, RN_ArtifactOp, Pure]> {
  let summary = "layer normalization over the channel (last) dimension";
  let description = [{
    `torch.nn.LayerNorm(C)` applied to each row of C channels of an NHWC
    (rank 4) or [N, C] (rank 2) tensor: y = (x - mean) / sqrt(var + eps) *
    weight + bias, with the row's mean and biased variance. The same in
    training and evaluation. `weight` and `bias` are [C] of the input's
    element type or f32 (mixed precision keeps normalization parameters
    f32). Its backward (`rn.layer_norm_backward`) recomputes the row
    statistics from the input.

    ```mlir
    %y = rn.layer_norm %x, %gamma, %beta eps 1.000000e-06
        : (tensor<8x14x14x96xf32>, tensor<96xf32>, tensor<96xf32>) -> tensor<8x14x14x96xf32>
    ```
  }];
  let arguments = (ins
    RN_FloatTensor:$input,
    RN_FloatTensor:$weight,
    RN_FloatTensor:$bias,
    F64Attr:$epsilon);
  let results = (outs RN_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight `,` $bias `eps` $epsilon attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Input normalization (uint8 images on the wire)
//===----------------------------------------------------------------------===//

def RN_NormalizeImagesOp : RN_Op<"normalize_images", [
    RN_OnStream<"comp3">, RN_ArtifactOp, Pure]> {
  let summary = "uint8 NHWC images to normalized floats: (x / 255 - mean) * (1 / std)";
  let description = [{
    Per channel c, in f32 whatever the result type:
    `result[n, h, w, c] = (float(x) / 255 - mean[c]) * (1 / std[c])`, then
    rounded once to the result's element type. A model whose `images`
    input is uint8 reads it through this op alone, so the batch crosses
    to the device as bytes; `mean` and `std` are buffers
    (`rn.parameter buffer @input.mean`, `@input.std`) that the runtime sets
    from the data. No gradient: its operands are data and buffers.

    ```mlir
    %x = rn.normalize_images %images, %mean, %std
        : tensor<32x32x32x3xui8>, tensor<3xf32>, tensor<3xf32> -> tensor<32x32x32x3xf32>
    ```
  }];
  let arguments = (ins
    RankedTensorOf<[UI8]>:$input,
    RankedTensorOf<[F32]>:$mean,
    RankedTensorOf<[F32]>:$std);
  let results = (outs RN_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $mean `,` $std attr-dict `:` type($input) `,` type($mean) `,`
    type($std) `->` type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

class RN_UnaryElementwiseOp<string mnemonic, string what>
    : RN_Op<mnemonic, [RN_OnStream<"comp3">,
                       DeclareOpInterfaceMethods<RN_GradientOpInterface>,
                       RN_ArtifactOp, Pure, SameOperandsAndResultType]> {
  let summary = what;
  let arguments = (ins RN_FloatTensor:$input);
  let results = (outs RN_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
}

def RN_ReluOp : RN_UnaryElementwiseOp<"relu", "max(x, 0)">;
def RN_TanhOp : RN_UnaryElementwiseOp<"tanh", "hyperbolic tangent">;
def RN_SiluOp : RN_UnaryElementwiseOp<"silu", "x * sigmoid(x)">;
def RN_SigmoidOp : RN_UnaryElementwiseOp<"sigmoid", "1 / (1 + exp(-x))">;

def RN_GeluExact : I32EnumAttrCase<"none", 0>;
def RN_GeluTanh : I32EnumAttrCase<"tanh", 1>;
def RN_GeluApproximation : I32EnumAttr<"GeluApproximation",
    "GELU's form: exact (erf) or its tanh approximation",
    [RN_GeluExact, RN_GeluTanh]> {
  let cppNamespace = "::mlir::rn";
}

def RN_GeluOp : RN_Op<"gelu", [
    DeclareOpInterfaceMethods<RN_GradientOpInterface>,
    RN_OnStream<"comp3">, RN_ArtifactOp, Pure, SameOperandsAndResultType]> {
  let summary = "x * Phi(x), Phi the standard normal CDF (PyTorch's GELU)";
  let description = [{
    `torch.nn.GELU(approximate=...)`: with `none`,
    x / 2 * (1 + erf(x / sqrt(2))); with `tanh`,
    x / 2 * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3))).
    Its backward (`rn.gelu_backward`) reads the input.

    ```mlir
    %y = rn.gelu %x approximate none : tensor<8x14x14x96xf16>
    ```
  }];
  let arguments = (ins RN_FloatTensor:$input, RN_GeluApproximation:$approximate);
  let results = (outs RN_FloatTensor:$result);
  let assemblyFormat = "$input `approximate` $approximate attr-dict `:` type($result)";
}
def RN_HardswishOp : RN_UnaryElementwiseOp<"hardswish", "x * relu6(x + 3) / 6"> {
  let description = [{
    PyTorch's Hardswish: 0 for x <= -3, x for x >= 3, x * (x + 3) / 6 in
    between. NaN propagates.
  }];
}
def RN_HardsigmoidOp : RN_UnaryElementwiseOp<"hardsigmoid", "relu6(x + 3) / 6"> {
  let description = [{
    PyTorch's Hardsigmoid: 0 for x <= -3, 1 for x >= 3, x / 6 + 1 / 2 in
    between. NaN propagates.
  }];
}

def RN_HardtanhOp : RN_Op<"hardtanh", [
    DeclareOpInterfaceMethods<RN_GradientOpInterface>,
    RN_OnStream<"comp3">, RN_ArtifactOp, Pure, SameOperandsAndResultType]> {
  let summary = "clamp(x, min_val, max_val)";
  let description = [{
    PyTorch's Hardtanh; ReLU6 is `min 0 max 6`. NaN propagates (as
    PyTorch's clamp). The bounds apply as f32 values whatever the tensor's
    type (PyTorch's f32 arithmetic for f16 and bf16), and min_val < max_val.

    ```mlir
    %y = rn.hardtanh %x min 0.000000e+00 max 6.000000e+00 : tensor<8x16x16x32xf16>
    ```
  }];
  let arguments = (ins RN_FloatTensor:$input, F64Attr:$min_val, F64Attr:$max_val);
  let results = (outs RN_FloatTensor:$result);
  let assemblyFormat = [{
    $input `min` $min_val `max` $max_val attr-dict `:` type($result)
  }];
  let hasVerifier = 1;
}

def RN_AddOp : RN_Op<"add", [
    DeclareOpInterfaceMethods<RN_GradientOpInterface>,
    RN_OnStream<"comp3">, RN_ArtifactOp, Pure, Commutative, SameOperandsAndResultType]> {
  let summary = "elementwise sum of two tensors of one type (residual joins)";
  let arguments = (ins RN_FloatTensor:$lhs, RN_FloatTensor:$rhs);
  let results = (outs RN_FloatTensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($result)";
}

def RN_ChannelMulOp : RN_Op<"channel_mul", [
    DeclareOpInterfaceMethods<RN_GradientOpInterface>,
    RN_OnStream<"comp3">, RN_ArtifactOp, Pure,
    AllTypesMatch<["input", "result"]>]> {
  let summary = "y[n, h, w, c] = x[n, h, w, c] * s[n, 0, 0, c]";
  let description = [{
    Scales each channel of each image by its own factor: the gate of a
    squeeze-and-excitation block (MobileNetV3, EfficientNet), whose `scale`
    is computed from the input's global average pool. `input` is NHWC,
    `scale` is [N, 1, 1, C] of the input's element type.

    ```mlir
    %y = rn.channel_mul %x, %s : tensor<8x14x14x96xf16>, tensor<8x1x1x96xf16>
    ```
  }];
  let arguments = (ins RN_FloatTensor:$input, RN_FloatTensor:$scale);
  let results = (outs RN_FloatTensor:$result);
  let assemblyFormat = "$input `,` $scale attr-dict `:` type($input) `,` type($scale)";
  let hasVerifier = 1;
}

def RN_ChannelScaleOp : RN_Op<"channel_scale", [
    DeclareOpInterfaceMethods<RN_GradientOpInterface>,
    DeclareOpInterfaceMethods<RN_ParameterOperandsOpInterface>,
    RN_OnStream<"comp3">, RN_ArtifactOp, Pure,
    AllTypesMatch<["input", "result"]>]> {
  let summary = "y[..., c] = x[..., c] * s[c]: a trainable per-channel scale";
  let description = [{
    Multiplies each channel (the last dimension) of an NHWC (rank 4) or
    [N, C] (rank 2) tensor by a weight: ConvNeXt's layer scale
    (`gamma * x` with gamma [C, 1, 1] in PyTorch's NCHW). `scale` is [C]
    of the input's element type.

    ```mlir
    %y = rn.channel_scale %x, %gamma : tensor<8x14x14x96xf32>, tensor<96xf32>
    ```
  }];
  let arguments = (ins RN_FloatTensor:$input, RN_FloatTensor:$scale);
  let results = (outs RN_FloatTensor:$result);
  let assemblyFormat = "$input `,` $scale attr-dict `:` type($input) `,` type($scale)";
  let hasVerifier = 1;
}

def RN_ConcatOp : RN_Op<"concat", [
    DeclareOpInterfaceMethods<RN_GradientOpInterface>,
    RN_OnStream<"comp3">, RN_ArtifactOp, Pure]> {
  let summary = "concatenation along the channel (last) dimension";
  let description = [{
    Joins two or more NHWC (rank 4) or [N, C] (rank 2) tensors of one
    element type and equal leading dimensions along the last dimension, in
    operand order: PyTorch's `torch.cat(xs, dim=1)` of NCHW tensors
    (DenseNet, Inception, GoogLeNet, SqueezeNet, ShuffleNet). The result is a
    new buffer: each input is copied into its channel slice. Its gradient is
    `rn.split` of the result's gradient.

    ```mlir
    %y = rn.concat %a, %b : (tensor<8x28x28x64xf16>, tensor<8x28x28x32xf16>)
                            -> tensor<8x28x28x96xf16>
    ```
  }];
  let arguments = (ins Variadic<RN_FloatTensor>:$inputs);
  let results = (outs RN_FloatTensor:$result);
  let assemblyFormat = "$inputs attr-dict `:` functional-type($inputs, $result)";
  let hasVerifier = 1;
}

def RN_SplitOp : RN_Op<"split", [
    DeclareOpInterfaceMethods<RN_GradientOpInterface>,
    RN_OnStream<"comp3">, RN_ArtifactOp, Pure]> {
  let summary = "slices of the channel (last) dimension: the inverse of concat";
  let description = [{
    Cuts an NHWC (rank 4) or [N, C] (rank 2) tensor into two or more
    consecutive slices of its last dimension, whose sizes are the results'
    last dimensions: PyTorch's `torch.split` / `torch.chunk` along NCHW's
    channels (ShuffleNet v2), and the backward of `rn.concat`. Each result
    is a new buffer. Its gradient is `rn.concat` of the slices' gradients,
    so the loss must depend on every slice.

    ```mlir
    %halves:2 = rn.split %x : tensor<8x28x28x116xf16>
                              -> tensor<8x28x28x58xf16>, tensor<8x28x28x58xf16>
    ```
  }];
  let arguments = (ins RN_FloatTensor:$input);
  let results = (outs Variadic<RN_FloatTensor>:$results);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($results)";
  let hasVerifier = 1;
}

def RN_ChannelShuffleOp : RN_Op<"channel_shuffle", [
    DeclareOpInterfaceMethods<RN_GradientOpInterface>,
    RN_OnStream<"comp3">, RN_ArtifactOp, Pure, SameOperandsAndResultType]> {
  let summary = "ShuffleNet's channel shuffle: C = g x (C/g) transposed";
  let description = [{
    Permutes the channels (last dimension) of an NHWC tensor: output channel
    `j * groups + i` is input channel `i * (C / groups) + j`, PyTorch's
    `x.view(N, g, C/g, H, W).transpose(1, 2).reshape(N, C, H, W)` and
    `torch.nn.ChannelShuffle(g)`. Its gradient is the shuffle with
    `C / groups` groups, the inverse permutation.

    ```mlir
    %y = rn.channel_shuffle %x groups 2 : tensor<8x28x28x116xf16>
    ```
  }];
  let arguments = (ins RN_FloatTensor:$input, I64Attr:$groups);
  let results = (outs RN_FloatTensor:$result);
  let assemblyFormat = "$input `groups` $groups attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def RN_DropoutOp : RN_Op<"dropout", [
    DeclareOpInterfaceMethods<RN_TrainingFormOpInterface>, RN_RandomInTraining,
    RN_OnStream<"comp2">,
    SameOperandsAndResultType,
    MemoryEffects<[MemRead<RN_RandomGenerator>, MemWrite<RN_RandomGenerator>]>]> {
  let summary = "inverted dropout: zeroes with probability p, scales by 1/(1-p)";
  let arguments = (ins RN_FloatTensor:$input, F64Attr:$p);
  let results = (outs RN_FloatTensor:$result);
  let assemblyFormat = "$input `p` $p attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def RN_StochasticDepthOp : RN_Op<"stochastic_depth", [
    DeclareOpInterfaceMethods<RN_TrainingFormOpInterface>, RN_RandomInTraining,
    RN_OnStream<"comp2">,
    SameOperandsAndResultType,
    MemoryEffects<[MemRead<RN_RandomGenerator>, MemWrite<RN_RandomGenerator>]>]> {
  let summary = "drops whole samples with probability p, scales the kept ones by 1/(1-p)";
  let description = [{
    Stochastic depth (EfficientNet's residual branches): PyTorch's
    `torchvision.ops.stochastic_depth(input, p, mode="row")` in training.
    Each sample n of the batch (dimension 0) is kept with probability
    1 - p and then scaled by 1 / (1 - p), or dropped: every element of the
    sample is zero. p = 1 drops every sample. `rn-build-training` makes it
    `rn.stochastic_depth_train` in the training step and the identity in
    the evaluation step.

    ```mlir
    %y = rn.stochastic_depth %x p 2.000000e-01 : tensor<8x14x14x96xf16>
    ```
  }];
  let arguments = (ins RN_FloatTensor:$input, F64Attr:$p);
  let results = (outs RN_FloatTensor:$result);
  let assemblyFormat = "$input `p` $p attr-dict `:` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Pooling and reshaping
//===----------------------------------------------------------------------===//

def RN_MaxPool2dOp : RN_Op<"max_pool2d", [RN_OnStream<"comp2">,
    DeclareOpInterfaceMethods<RN_GradientOpInterface>, RN_ArtifactOp, Pure]> {
  let summary = "2-D max pooling over NHWC";
  let description = [{
    Padding is at most half the kernel, as in PyTorch; padded positions never
    win the max. With `ceil_mode` (PyTorch's ceil_mode=True) the output size
    is ceil((H + 2p - k) / s) + 1, less one when the last window would start
    past the input and its left padding; the last window may then be
    partial and only its positions inside the input count.
  }];
  let arguments = (ins
    RN_FloatTensor:$input,
    DenseI64ArrayAttr:$kernel,
    DenseI64ArrayAttr:$strides,
    DenseI64ArrayAttr:$padding,
    UnitAttr:$ceil_mode);
  let results = (outs RN_FloatTensor:$result);
  let assemblyFormat = [{
    $input `kernel` $kernel `stride` $strides `pad` $padding
    (`ceil_mode` $ceil_mode^)? attr-dict `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
}

def RN_AvgPool2dOp : RN_Op<"avg_pool2d", [RN_OnStream<"comp2">,
    DeclareOpInterfaceMethods<RN_GradientOpInterface>, RN_ArtifactOp, Pure]> {
  let summary = "2-D average pooling over NHWC";
  let description = [{
    PyTorch's divisor: the window clipped to the padded input, padded
    positions counting (count_include_pad=True), or with `exclude_pad`
    (count_include_pad=False) the window clipped to the input. Without
    `ceil_mode` and with `exclude_pad` absent every window divides by
    KH * KW. `ceil_mode` sizes the output as rn.max_pool2d's does.
  }];
  let arguments = (ins
    RN_FloatTensor:$input,
    DenseI64ArrayAttr:$kernel,
    DenseI64ArrayAttr:$strides,
    DenseI64ArrayAttr:$padding,
    UnitAttr:$ceil_mode,
    UnitAttr:$exclude_pad);
  let results = (outs RN_FloatTensor:$result);
  let assemblyFormat = [{
    $input `kernel` $kernel `stride` $strides `pad` $padding
    (`ceil_mode` $ceil_mode^)? (`exclude_pad` $exclude_pad^)? attr-dict
    `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
}

def RN_AdaptiveAvgPool2dOp : RN_Op<"adaptive_avg_pool2d", [
    DeclareOpInterfaceMethods<RN_GradientOpInterface>,
    RN_OnStream<"comp2">, RN_ArtifactOp, Pure]> {
  let summary = "PyTorch's adaptive average pooling over NHWC: [N, H, W, C] -> [N, OH, OW, C]";
  let description = [{
    The output size is the result type's. Output row i averages the input
    rows floor(i * H / OH) to ceil((i + 1) * H / OH) (exclusive), columns
    likewise: windows of varying size that may overlap, each divided by its
    own element count (PyTorch's AdaptiveAvgPool2d). The frontend emits it
    only where the output does not divide the input (otherwise
    rn.global_avg_pool or rn.avg_pool2d compute the same).

    ```mlir
    %y = rn.adaptive_avg_pool2d %x : tensor<8x10x10x64xf32> -> tensor<8x7x7x64xf32>
    ```
  }];
  let arguments = (ins RN_FloatTensor:$input);
  let results = (outs RN_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def RN_GlobalAvgPoolOp : RN_Op<"global_avg_pool", [
    DeclareOpInterfaceMethods<RN_GradientOpInterface>,
    RN_OnStream<"comp2">, RN_ArtifactOp, Pure]> {
  let summary = "mean over H and W: [N, H, W, C] -> [N, 1, 1, C]";
  let arguments = (ins RN_FloatTensor:$input);
  let results = (outs RN_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def RN_FlattenOp : RN_Op<"flatten", [
    DeclareOpInterfaceMethods<RN_GradientOpInterface>,
    RN_OnStream<"comp3">, RN_ArtifactOp, Pure]> {
  let summary = "[N, d1, ..., dk] -> [N, d1 * ... * dk]";
  let description = [{
    Flattens in memory (NHWC) order, so for C > 1 and H * W > 1 the feature
    order differs from PyTorch's NCHW flatten.
  }];
  let arguments = (ins RN_FloatTensor:$input);
  let results = (outs RN_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Fully connected and loss
//===----------------------------------------------------------------------===//

def RN_LinearOp : RN_Op<"linear", [
    DeclareOpInterfaceMethods<RN_GradientOpInterface>,
    DeclareOpInterfaceMethods<RN_ParameterOperandsOpInterface>,
    RN_OnStream<"comp1">, RN_ArtifactOp, Pure]> {
  let summary = "y = x * W^T + b with W as [out, in]";
  let arguments = (ins
    RN_FloatTensor:$input,
    RN_FloatTensor:$weight,
    Optional<RN_FloatTensor>:$bias);
  let results = (outs RN_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight (`,` $bias^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def RN_SoftmaxCrossEntropyOp : RN_Op<"softmax_cross_entropy", [
    RN_OnStream<"comp1">, RN_ArtifactOp,
    Pure]> {
  let summary = "mean softmax cross-entropy of logits [N, C] against labels [N]";
  let description = [{
    The loss of the model, accumulated in f32 whatever the logits' type. With
    label smoothing s the target is (1 - s) * onehot + s / C.

    ```mlir
    %loss = rn.softmax_cross_entropy %logits, %labels label_smoothing 0.000000e+00
        : (tensor<8x10xf32>, tensor<8xi32>) -> tensor<f32>
    ```
  }];
  let arguments = (ins
    RN_FloatTensor:$logits,
    RN_LabelTensor:$labels,
    F64Attr:$label_smoothing);
  let results = (outs RN_ScalarF32Tensor:$loss);
  let assemblyFormat = [{
    $logits `,` $labels `label_smoothing` $label_smoothing attr-dict
    `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

include "dialects/rn/RNTrainingOps.td"
include "dialects/rn/RNFusedOps.td"
include "dialects/rn/RNScheduleOps.td"

#endif // RN_DIALECT_RN_OPS_TD
