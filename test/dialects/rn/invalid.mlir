// RUN: rn-opt %s --split-input-file --verify-diagnostics

// Tests that a conv2d input must be rank 4.
func.func @conv_input_rank(%x: tensor<2x32x32xf32>, %w: tensor<8x3x3x3xf32>) {
  // expected-error@+1 {{input must be NHWC (rank 4), got 'tensor<2x32x32xf32>'}}
  %0 = rn.conv2d %x, %w stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 : (tensor<2x32x32xf32>, tensor<8x3x3x3xf32>) -> tensor<2x32x32x8xf32>
  return
}

// -----

// Tests that a conv2d filter must be rank 4.
func.func @conv_filter_rank(%x: tensor<2x32x32x3xf32>, %w: tensor<8x27xf32>) {
  // expected-error@+1 {{filter must be OHWI (rank 4), got 'tensor<8x27xf32>'}}
  %0 = rn.conv2d %x, %w stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 : (tensor<2x32x32x3xf32>, tensor<8x27xf32>) -> tensor<2x32x32x8xf32>
  return
}

// -----

// Tests that dynamic shapes are rejected: the memory plan needs sizes.
func.func @conv_dynamic(%x: tensor<?x32x32x3xf32>, %w: tensor<8x3x3x3xf32>) {
  // expected-error@+1 {{input must have a static shape, got 'tensor<?x32x32x3xf32>'}}
  %0 = rn.conv2d %x, %w stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 : (tensor<?x32x32x3xf32>, tensor<8x3x3x3xf32>) -> tensor<?x32x32x8xf32>
  return
}

// -----

// Tests that input and filter must share an element type.
func.func @conv_dtype_mix(%x: tensor<2x32x32x3xf32>, %w: tensor<8x3x3x3xf16>) {
  // expected-error@+1 {{element type mismatch: filter is 'f16' but input is 'f32'}}
  %0 = rn.conv2d %x, %w stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 : (tensor<2x32x32x3xf32>, tensor<8x3x3x3xf16>) -> tensor<2x32x32x8xf32>
  return
}

// -----

// Tests the channel check between input and filter.
func.func @conv_channels(%x: tensor<2x32x32x16xf32>, %w: tensor<8x3x3x3xf32>) {
  // expected-error@+1 {{filter expects 3 input channels per group but the input has 16 channels in 1 group(s)}}
  %0 = rn.conv2d %x, %w stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 : (tensor<2x32x32x16xf32>, tensor<8x3x3x3xf32>) -> tensor<2x32x32x8xf32>
  return
}

// -----

// Tests that groups must be positive.
func.func @conv_groups_zero(%x: tensor<2x32x32x4xf32>, %w: tensor<8x3x3x4xf32>) {
  // expected-error@+1 {{groups must be positive, got 0}}
  %0 = rn.conv2d %x, %w stride [1, 1] pad [1, 1] dilation [1, 1] groups 0 : (tensor<2x32x32x4xf32>, tensor<8x3x3x4xf32>) -> tensor<2x32x32x8xf32>
  return
}

// -----

// Tests that input channels must divide into the groups.
func.func @conv_groups_input(%x: tensor<2x32x32x6xf32>, %w: tensor<8x3x3x1xf32>) {
  // expected-error@+1 {{input channels 6 are not divisible by groups 4}}
  %0 = rn.conv2d %x, %w stride [1, 1] pad [1, 1] dilation [1, 1] groups 4 : (tensor<2x32x32x6xf32>, tensor<8x3x3x1xf32>) -> tensor<2x32x32x8xf32>
  return
}

// -----

// Tests that output channels must divide into the groups.
func.func @conv_groups_output(%x: tensor<2x32x32x8xf32>, %w: tensor<6x3x3x2xf32>) {
  // expected-error@+1 {{output channels 6 are not divisible by groups 4}}
  %0 = rn.conv2d %x, %w stride [1, 1] pad [1, 1] dilation [1, 1] groups 4 : (tensor<2x32x32x8xf32>, tensor<6x3x3x2xf32>) -> tensor<2x32x32x6xf32>
  return
}

// -----

// Tests that a conv bias has one entry per output channel.
func.func @conv_bias(%x: tensor<2x32x32x3xf32>, %w: tensor<8x3x3x3xf32>, %b: tensor<3xf32>) {
  // expected-error@+1 {{bias must be [8] (one per output channel), got 'tensor<3xf32>'}}
  %0 = rn.conv2d %x, %w, %b stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 : (tensor<2x32x32x3xf32>, tensor<8x3x3x3xf32>, tensor<3xf32>) -> tensor<2x32x32x8xf32>
  return
}

// -----

// Tests that a conv bias shares the input's element type.
func.func @conv_bias_dtype(%x: tensor<2x32x32x3xf32>, %w: tensor<8x3x3x3xf32>, %b: tensor<8xbf16>) {
  // expected-error@+1 {{element type mismatch: bias is 'bf16' but input is 'f32'}}
  %0 = rn.conv2d %x, %w, %b stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 : (tensor<2x32x32x3xf32>, tensor<8x3x3x3xf32>, tensor<8xbf16>) -> tensor<2x32x32x8xf32>
  return
}

// -----

// Tests that strides come as (height, width).
func.func @conv_stride_count(%x: tensor<2x32x32x3xf32>, %w: tensor<8x3x3x3xf32>) {
  // expected-error@+1 {{expects 2 stride values (height, width), got 3}}
  %0 = rn.conv2d %x, %w stride [1, 1, 1] pad [1, 1] dilation [1, 1] groups 1 : (tensor<2x32x32x3xf32>, tensor<8x3x3x3xf32>) -> tensor<2x32x32x8xf32>
  return
}

// -----

// Tests that padding comes as (height, width).
func.func @conv_padding_count(%x: tensor<2x32x32x3xf32>, %w: tensor<8x3x3x3xf32>) {
  // expected-error@+1 {{expects 2 padding values (height, width), got 1}}
  %0 = rn.conv2d %x, %w stride [1, 1] pad [1] dilation [1, 1] groups 1 : (tensor<2x32x32x3xf32>, tensor<8x3x3x3xf32>) -> tensor<2x32x32x8xf32>
  return
}

// -----

// Tests that dilation comes as (height, width).
func.func @conv_dilation_count(%x: tensor<2x32x32x3xf32>, %w: tensor<8x3x3x3xf32>) {
  // expected-error@+1 {{expects 2 dilation values (height, width), got 0}}
  %0 = rn.conv2d %x, %w stride [1, 1] pad [1, 1] dilation [] groups 1 : (tensor<2x32x32x3xf32>, tensor<8x3x3x3xf32>) -> tensor<2x32x32x8xf32>
  return
}

// -----

// Tests that a zero stride is rejected.
func.func @conv_stride_zero(%x: tensor<2x32x32x3xf32>, %w: tensor<8x3x3x3xf32>) {
  // expected-error@+1 {{stride must be positive, got 0 for width}}
  %0 = rn.conv2d %x, %w stride [1, 0] pad [1, 1] dilation [1, 1] groups 1 : (tensor<2x32x32x3xf32>, tensor<8x3x3x3xf32>) -> tensor<2x32x32x8xf32>
  return
}

// -----

// Tests that negative padding is rejected.
func.func @conv_padding_negative(%x: tensor<2x32x32x3xf32>, %w: tensor<8x3x3x3xf32>) {
  // expected-error@+1 {{padding must be non-negative, got -1 for height}}
  %0 = rn.conv2d %x, %w stride [1, 1] pad [-1, 1] dilation [1, 1] groups 1 : (tensor<2x32x32x3xf32>, tensor<8x3x3x3xf32>) -> tensor<2x30x32x8xf32>
  return
}

// -----

// Tests that a zero dilation is rejected.
func.func @conv_dilation_zero(%x: tensor<2x32x32x3xf32>, %w: tensor<8x3x3x3xf32>) {
  // expected-error@+1 {{dilation must be positive, got 0 for height}}
  %0 = rn.conv2d %x, %w stride [1, 1] pad [1, 1] dilation [0, 1] groups 1 : (tensor<2x32x32x3xf32>, tensor<8x3x3x3xf32>) -> tensor<2x32x32x8xf32>
  return
}

// -----

// Tests that a window larger than the padded input is rejected.
func.func @conv_window_too_large(%x: tensor<2x4x4x3xf32>, %w: tensor<8x7x7x3xf32>) {
  // expected-error@+1 {{window height 7 exceeds the padded input height 6}}
  %0 = rn.conv2d %x, %w stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 : (tensor<2x4x4x3xf32>, tensor<8x7x7x3xf32>) -> tensor<2x1x1x8xf32>
  return
}

// -----

// Tests that a written result type must equal the inferred one.
func.func @conv_result_type(%x: tensor<2x32x32x3xf32>, %w: tensor<8x3x3x3xf32>) {
  // expected-error@+1 {{result type 'tensor<2x32x32x8xf32>' differs from the inferred type 'tensor<2x16x16x8xf32>'}}
  %0 = rn.conv2d %x, %w stride [2, 2] pad [1, 1] dilation [1, 1] groups 1 : (tensor<2x32x32x3xf32>, tensor<8x3x3x3xf32>) -> tensor<2x32x32x8xf32>
  return
}

// -----

// Tests that operands must be f32, f16 or bf16 tensors.
func.func @conv_integer(%x: tensor<2x32x32x3xi8>, %w: tensor<8x3x3x3xf32>) {
  // expected-error@+1 {{operand #0 must be ranked tensor of 32-bit float or 16-bit float or bfloat16 type values}}
  %0 = rn.conv2d %x, %w stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 : (tensor<2x32x32x3xi8>, tensor<8x3x3x3xf32>) -> tensor<2x32x32x8xf32>
  return
}

// -----

// Tests the rank check of batch_norm.
func.func @bn_rank(%x: tensor<2x8x4xf32>, %v: tensor<4xf32>) {
  // expected-error@+1 {{input must be NHWC (rank 4) or [N, C] (rank 2), got 'tensor<2x8x4xf32>'}}
  %0 = rn.batch_norm %x, %v, %v, %v, %v eps 1.000000e-05 momentum 1.000000e-01 : (tensor<2x8x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x8x4xf32>
  return
}

// -----

// Tests that batch_norm rejects dynamic shapes.
func.func @bn_dynamic(%x: tensor<?x4xf32>, %v: tensor<4xf32>) {
  // expected-error@+1 {{input must have a static shape, got 'tensor<?x4xf32>'}}
  %0 = rn.batch_norm %x, %v, %v, %v, %v eps 1.000000e-05 momentum 1.000000e-01 : (tensor<?x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<?x4xf32>
  return
}

// -----

// Tests that each batch_norm vector has one entry per channel.
func.func @bn_channels(%x: tensor<2x8x8x4xf32>, %v: tensor<4xf32>, %bad: tensor<8xf32>) {
  // expected-error@+1 {{running_var must be [4] (one per channel), got 'tensor<8xf32>'}}
  %0 = rn.batch_norm %x, %v, %v, %v, %bad eps 1.000000e-05 momentum 1.000000e-01 : (tensor<2x8x8x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<8xf32>) -> tensor<2x8x8x4xf32>
  return
}

// -----

// Tests that batch_norm vectors share the input's element type.
func.func @bn_dtype(%x: tensor<2x8x8x4xf16>, %v: tensor<4xf16>, %w: tensor<4xf32>) {
  // expected-error@+1 {{element type mismatch: weight is 'f32' but input is 'f16'}}
  %0 = rn.batch_norm %x, %w, %v, %v, %v eps 1.000000e-05 momentum 1.000000e-01 : (tensor<2x8x8x4xf16>, tensor<4xf32>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>) -> tensor<2x8x8x4xf16>
  return
}

// -----

// Tests that epsilon must be positive.
func.func @bn_epsilon(%x: tensor<2x4xf32>, %v: tensor<4xf32>) {
  // expected-error@+1 {{epsilon must be positive, got 0}}
  %0 = rn.batch_norm %x, %v, %v, %v, %v eps 0.000000e+00 momentum 1.000000e-01 : (tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  return
}

// -----

// Tests that momentum must lie in [0, 1].
func.func @bn_momentum(%x: tensor<2x4xf32>, %v: tensor<4xf32>) {
  // expected-error@+1 {{momentum must be in [0, 1], got 1.5}}
  %0 = rn.batch_norm %x, %v, %v, %v, %v eps 1.000000e-05 momentum 1.500000e+00 : (tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  return
}

// -----

// Tests that hardtanh's bounds are ordered.
func.func @hardtanh_bounds(%x: tensor<2x8xf32>) {
  // expected-error@+1 {{'rn.hardtanh' op min_val must be below max_val (both finite), got min_val 6 and max_val 0}}
  %0 = rn.hardtanh %x min 6.000000e+00 max 0.000000e+00 : tensor<2x8xf32>
  return
}

// -----

// Tests that hardtanh's bounds may not be equal either.
func.func @hardtanh_equal_bounds(%x: tensor<2x8xf32>) {
  // expected-error@+1 {{min_val must be below max_val (both finite), got min_val 1 and max_val 1}}
  %0 = rn.hardtanh %x min 1.000000e+00 max 1.000000e+00 : tensor<2x8xf32>
  return
}

// -----

// Tests that hardtanh's bounds are finite.
func.func @hardtanh_infinite_bound(%x: tensor<2x8xf32>) {
  // expected-error@+1 {{min_val must be below max_val (both finite), got min_val -inf and max_val 6}}
  %0 = rn.hardtanh %x min 0xFFF0000000000000 max 6.000000e+00 : tensor<2x8xf32>
  return
}

// -----

// Tests that hardtanh_backward checks the bounds of its forward op.
func.func @hardtanh_backward_bounds(%dy: tensor<2x8xf32>, %y: tensor<2x8xf32>) {
  // expected-error@+1 {{'rn.hardtanh_backward' op min_val must be below max_val (both finite), got min_val 6 and max_val -6}}
  %0 = rn.hardtanh_backward %dy, %y min 6.000000e+00 max -6.000000e+00 : tensor<2x8xf32>
  return
}

// -----

// Tests that channel_mul's scale has one factor per image and channel.
func.func @channel_mul_scale_shape(%x: tensor<2x4x4x8xf32>, %s: tensor<2x1x1x4xf32>) {
  // expected-error@+1 {{'rn.channel_mul' op scale must be [N, 1, 1, C] of the input 'tensor<2x4x4x8xf32>', that is 'tensor<2x1x1x8xf32>', got 'tensor<2x1x1x4xf32>'}}
  %0 = rn.channel_mul %x, %s : tensor<2x4x4x8xf32>, tensor<2x1x1x4xf32>
  return
}

// -----

// Tests that channel_mul's scale is per image (not one for the batch).
func.func @channel_mul_scale_batch(%x: tensor<2x4x4x8xf32>, %s: tensor<1x1x1x8xf32>) {
  // expected-error@+1 {{scale must be [N, 1, 1, C] of the input 'tensor<2x4x4x8xf32>', that is 'tensor<2x1x1x8xf32>', got 'tensor<1x1x1x8xf32>'}}
  %0 = rn.channel_mul %x, %s : tensor<2x4x4x8xf32>, tensor<1x1x1x8xf32>
  return
}

// -----

// Tests that channel_mul's scale has the input's element type.
func.func @channel_mul_scale_type(%x: tensor<2x4x4x8xf16>, %s: tensor<2x1x1x8xf32>) {
  // expected-error@+1 {{'rn.channel_mul' op element type mismatch: scale is 'f32' but input is 'f16'}}
  %0 = rn.channel_mul %x, %s : tensor<2x4x4x8xf16>, tensor<2x1x1x8xf32>
  return
}

// -----

// Tests that channel_mul's input is NHWC.
func.func @channel_mul_rank(%x: tensor<2x8xf32>, %s: tensor<2x1x1x8xf32>) {
  // expected-error@+1 {{'rn.channel_mul' op input must be NHWC (rank 4), got 'tensor<2x8xf32>'}}
  %0 = rn.channel_mul %x, %s : tensor<2x8xf32>, tensor<2x1x1x8xf32>
  return
}

// -----

// Tests that channel_mul_backward checks its forward operands.
func.func @channel_mul_backward_scale(%x: tensor<2x4x4x8xf32>, %s: tensor<2x4x4x8xf32>) {
  // expected-error@+1 {{'rn.channel_mul_backward' op scale must be [N, 1, 1, C]}}
  %0:2 = rn.channel_mul_backward %x, %x, %s : tensor<2x4x4x8xf32>, tensor<2x4x4x8xf32>
  return
}

// -----

// Tests that adaptive pooling keeps the channels.
func.func @adaptive_pool_channels(%x: tensor<2x10x10x8xf32>) {
  // expected-error@+1 {{'rn.adaptive_avg_pool2d' op result 'tensor<2x3x3x4xf32>' must keep the batch and the channels of the input 'tensor<2x10x10x8xf32>'}}
  %0 = rn.adaptive_avg_pool2d %x : tensor<2x10x10x8xf32> -> tensor<2x3x3x4xf32>
  return
}

// -----

// Tests that adaptive pooling keeps the batch.
func.func @adaptive_pool_batch(%x: tensor<2x10x10x8xf32>) {
  // expected-error@+1 {{must keep the batch and the channels}}
  %0 = rn.adaptive_avg_pool2d %x : tensor<2x10x10x8xf32> -> tensor<1x3x3x8xf32>
  return
}

// -----

// Tests that adaptive pooling keeps the element type.
func.func @adaptive_pool_type(%x: tensor<2x10x10x8xf32>) {
  // expected-error@+1 {{'rn.adaptive_avg_pool2d' op element type mismatch: result is 'f16' but input is 'f32'}}
  %0 = rn.adaptive_avg_pool2d %x : tensor<2x10x10x8xf32> -> tensor<2x3x3x8xf16>
  return
}

// -----

// Tests that adaptive pooling needs NHWC and a non-empty output.
func.func @adaptive_pool_empty(%x: tensor<2x10x10x8xf32>) {
  // expected-error@+1 {{'rn.adaptive_avg_pool2d' op the spatial sizes of input 'tensor<2x10x10x8xf32>' and result 'tensor<2x0x3x8xf32>' must be positive}}
  %0 = rn.adaptive_avg_pool2d %x : tensor<2x10x10x8xf32> -> tensor<2x0x3x8xf32>
  return
}

// -----

// Tests that the backward checks its types the same way.
func.func @adaptive_pool_backward_rank(%dy: tensor<2x3x3x8xf32>) {
  // expected-error@+1 {{'rn.adaptive_avg_pool2d_backward' op input_grad must be NHWC (rank 4), got 'tensor<2x100x8xf32>'}}
  %0 = rn.adaptive_avg_pool2d_backward %dy : tensor<2x3x3x8xf32> -> tensor<2x100x8xf32>
  return
}

// -----

// Tests that the drop probability lies in [0, 1).
func.func @dropout_p(%x: tensor<2x8xf32>) {
  // expected-error@+1 {{drop probability must be in [0, 1), got 1}}
  %0 = rn.dropout %x p 1.000000e+00 : tensor<2x8xf32>
  return
}

// -----

// Tests that the drop probability of stochastic depth lies in [0, 1] (1
// drops every sample, as torchvision allows).
func.func @stochastic_depth_p(%x: tensor<2x8xf32>) {
  // expected-error@+1 {{drop probability must be in [0, 1], got 1.5}}
  %0 = rn.stochastic_depth %x p 1.500000e+00 : tensor<2x8xf32>
  return
}

// -----

func.func @stochastic_depth_negative_p(%x: tensor<2x8xf32>) {
  // expected-error@+1 {{drop probability must be in [0, 1], got -0.1}}
  %0 = rn.stochastic_depth %x p -1.000000e-01 : tensor<2x8xf32>
  return
}

// -----

// Tests that stochastic depth needs a batch dimension: it drops whole samples.
func.func @stochastic_depth_scalar(%x: tensor<f32>) {
  // expected-error@+1 {{'rn.stochastic_depth' op input must have a batch dimension, got 'tensor<f32>'}}
  %0 = rn.stochastic_depth %x p 2.000000e-01 : tensor<f32>
  return
}

// -----

// Tests that add needs operands of one type (residual shapes must agree).
func.func @add_shapes(%a: tensor<2x8x8x64xf32>, %b: tensor<2x8x8x128xf32>) {
  // expected-error@+1 {{requires the same type for all operands and results}}
  %0 = "rn.add"(%a, %b) : (tensor<2x8x8x64xf32>, tensor<2x8x8x128xf32>) -> tensor<2x8x8x64xf32>
  return
}

// -----

// Tests that pooling needs a rank-4 input.
func.func @pool_rank(%x: tensor<2x8xf32>) {
  // expected-error@+1 {{input must be NHWC (rank 4), got 'tensor<2x8xf32>'}}
  %0 = rn.max_pool2d %x kernel [2, 2] stride [2, 2] pad [0, 0] : tensor<2x8xf32> -> tensor<2x4xf32>
  return
}

// -----

// Tests that a pooling kernel must be positive.
func.func @pool_kernel(%x: tensor<2x8x8x4xf32>) {
  // expected-error@+1 {{kernel width must be positive, got 0}}
  %0 = rn.avg_pool2d %x kernel [2, 0] stride [2, 2] pad [0, 0] : tensor<2x8x8x4xf32> -> tensor<2x4x4x4xf32>
  return
}

// -----

// Tests that pooling kernels come as (height, width).
func.func @pool_kernel_count(%x: tensor<2x8x8x4xf32>) {
  // expected-error@+1 {{expects 2 kernel values (height, width), got 1}}
  %0 = rn.avg_pool2d %x kernel [2] stride [2, 2] pad [0, 0] : tensor<2x8x8x4xf32> -> tensor<2x4x4x4xf32>
  return
}

// -----

// Tests that ceil_mode sizes the result by PyTorch's rule: 2x2/2 with pad 1
// over 5 rounds up to 4 windows, and the last, starting in the right
// padding, is dropped.
func.func @pool_ceil_mode(%x: tensor<2x5x5x4xf32>) {
  // expected-error@+1 {{result type 'tensor<2x4x4x4xf32>' differs from the inferred type 'tensor<2x3x3x4xf32>'}}
  %0 = rn.max_pool2d %x kernel [2, 2] stride [2, 2] pad [1, 1] ceil_mode : tensor<2x5x5x4xf32> -> tensor<2x4x4x4xf32>
  return
}

// -----

// Tests that without ceil_mode the result is floor mode's.
func.func @pool_floor_mode(%x: tensor<2x7x7x4xf32>) {
  // expected-error@+1 {{result type 'tensor<2x4x4x4xf32>' differs from the inferred type 'tensor<2x3x3x4xf32>'}}
  %0 = rn.avg_pool2d %x kernel [2, 2] stride [2, 2] pad [0, 0] exclude_pad : tensor<2x7x7x4xf32> -> tensor<2x4x4x4xf32>
  return
}

// -----

// Tests PyTorch's rule that pool padding is at most half the kernel.
func.func @pool_padding(%x: tensor<2x8x8x4xf32>) {
  // expected-error@+1 {{padding 2 exceeds half the kernel size 3}}
  %0 = rn.max_pool2d %x kernel [3, 3] stride [1, 1] pad [2, 2] : tensor<2x8x8x4xf32> -> tensor<2x10x10x4xf32>
  return
}

// -----

// Tests that global average pooling needs a rank-4 input.
func.func @gap_rank(%x: tensor<2x8xf32>) {
  // expected-error@+1 {{input must be NHWC (rank 4), got 'tensor<2x8xf32>'}}
  %0 = rn.global_avg_pool %x : tensor<2x8xf32> -> tensor<2x1x1x8xf32>
  return
}

// -----

// Tests that flatten needs a feature dimension.
func.func @flatten_rank(%x: tensor<8xf32>) {
  // expected-error@+1 {{input must have a batch dimension and at least one feature dimension, got 'tensor<8xf32>'}}
  %0 = rn.flatten %x : tensor<8xf32> -> tensor<8x1xf32>
  return
}

// -----

// Tests that flatten rejects dynamic shapes.
func.func @flatten_dynamic(%x: tensor<2x?xf32>) {
  // expected-error@+1 {{input must have a static shape, got 'tensor<2x?xf32>'}}
  %0 = rn.flatten %x : tensor<2x?xf32> -> tensor<2x?xf32>
  return
}

// -----

// Tests that linear needs a rank-2 input (flatten first).
func.func @linear_input_rank(%x: tensor<2x1x1x8xf32>, %w: tensor<10x8xf32>) {
  // expected-error@+1 {{input must be [N, in_features] (rank 2), got 'tensor<2x1x1x8xf32>'}}
  %0 = rn.linear %x, %w : (tensor<2x1x1x8xf32>, tensor<10x8xf32>) -> tensor<2x10xf32>
  return
}

// -----

// Tests that a linear weight is rank 2.
func.func @linear_weight_rank(%x: tensor<2x8xf32>, %w: tensor<80xf32>) {
  // expected-error@+1 {{weight must be [out_features, in_features] (rank 2), got 'tensor<80xf32>'}}
  %0 = rn.linear %x, %w : (tensor<2x8xf32>, tensor<80xf32>) -> tensor<2x10xf32>
  return
}

// -----

// Tests the feature check between input and weight.
func.func @linear_features(%x: tensor<2x8xf32>, %w: tensor<10x16xf32>) {
  // expected-error@+1 {{weight expects 16 input features but the input has 8}}
  %0 = rn.linear %x, %w : (tensor<2x8xf32>, tensor<10x16xf32>) -> tensor<2x10xf32>
  return
}

// -----

// Tests that a linear bias has one entry per output feature.
func.func @linear_bias(%x: tensor<2x8xf32>, %w: tensor<10x8xf32>, %b: tensor<8xf32>) {
  // expected-error@+1 {{bias must be [10] (one per output channel), got 'tensor<8xf32>'}}
  %0 = rn.linear %x, %w, %b : (tensor<2x8xf32>, tensor<10x8xf32>, tensor<8xf32>) -> tensor<2x10xf32>
  return
}

// -----

// Tests that input and weight of linear share an element type.
func.func @linear_dtype(%x: tensor<2x8xbf16>, %w: tensor<10x8xf32>) {
  // expected-error@+1 {{element type mismatch: weight is 'f32' but input is 'bf16'}}
  %0 = rn.linear %x, %w : (tensor<2x8xbf16>, tensor<10x8xf32>) -> tensor<2x10xbf16>
  return
}

// -----

// Tests that logits are [N, classes].
func.func @loss_logits_rank(%l: tensor<4x10x1xf32>, %y: tensor<4xi32>) {
  // expected-error@+1 {{logits must be [N, classes] (rank 2), got 'tensor<4x10x1xf32>'}}
  %0 = rn.softmax_cross_entropy %l, %y label_smoothing 0.000000e+00 : (tensor<4x10x1xf32>, tensor<4xi32>) -> tensor<f32>
  return
}

// -----

// Tests that labels are [N].
func.func @loss_labels_rank(%l: tensor<4x10xf32>, %y: tensor<4x1xi32>) {
  // expected-error@+1 {{labels must be [N] (rank 1), got 'tensor<4x1xi32>'}}
  %0 = rn.softmax_cross_entropy %l, %y label_smoothing 0.000000e+00 : (tensor<4x10xf32>, tensor<4x1xi32>) -> tensor<f32>
  return
}

// -----

// Tests that labels match the batch of the logits.
func.func @loss_batch(%l: tensor<4x10xf32>, %y: tensor<8xi32>) {
  // expected-error@+1 {{labels hold 8 entries but the logits have a batch of 4}}
  %0 = rn.softmax_cross_entropy %l, %y label_smoothing 0.000000e+00 : (tensor<4x10xf32>, tensor<8xi32>) -> tensor<f32>
  return
}

// -----

// Tests that labels are i32 class indices.
func.func @loss_labels_dtype(%l: tensor<4x10xf32>, %y: tensor<4xi64>) {
  // expected-error@+1 {{operand #1 must be ranked tensor of 32-bit signless integer values}}
  %0 = rn.softmax_cross_entropy %l, %y label_smoothing 0.000000e+00 : (tensor<4x10xf32>, tensor<4xi64>) -> tensor<f32>
  return
}

// -----

// Tests that label smoothing lies in [0, 1).
func.func @loss_smoothing(%l: tensor<4x10xf32>, %y: tensor<4xi32>) {
  // expected-error@+1 {{label smoothing must be in [0, 1), got -1.000000e-01}}
  %0 = rn.softmax_cross_entropy %l, %y label_smoothing -1.000000e-01 : (tensor<4x10xf32>, tensor<4xi32>) -> tensor<f32>
  return
}

// -----

// Tests that rn.param names a declared parameter.
module {
  func.func @unknown_param() {
    // expected-error@+1 {{references unknown parameter @conv9.weight}}
    %0 = rn.param @conv9.weight : tensor<8xf32>
    return
  }
}

// -----

// Tests that rn.param names an rn.parameter and not another symbol.
module {
  func.func @not_a_param() {
    // expected-error@+1 {{@not_a_param is a 'func.func', not an rn.parameter}}
    %0 = rn.param @not_a_param : tensor<8xf32>
    return
  }
}

// -----

// Tests that rn.param has the declared type.
module {
  rn.parameter @fc.bias : tensor<10xf32> = #rn.init<zeros>
  func.func @param_type() {
    // expected-error@+1 {{result type 'tensor<12xf32>' differs from the declared type 'tensor<10xf32>' of @fc.bias}}
    %0 = rn.param @fc.bias : tensor<12xf32>
    return
  }
}

// -----

// Tests that parameters are statically shaped float tensors.
module {
  // expected-error@+1 {{type must be a statically shaped f32, f16 or bf16 tensor, got 'tensor<?xf32>'}}
  rn.parameter @dyn : tensor<?xf32> = #rn.init<zeros>
}

// -----

// Tests that integer parameters are rejected.
module {
  // expected-error@+1 {{type must be a statically shaped f32, f16 or bf16 tensor, got 'tensor<4xi32>'}}
  rn.parameter @counts : tensor<4xi32> = #rn.init<zeros>
}

// -----

// Tests that parameters live at module level.
func.func @nested_parameter() {
  // expected-error@+1 {{expects parent op 'builtin.module'}}
  rn.parameter @w : tensor<4xf32> = #rn.init<zeros>
  return
}

// -----

// Tests that two parameters cannot share a name.
module {
  // expected-note@+1 {{see existing symbol definition here}}
  rn.parameter @w : tensor<4xf32> = #rn.init<zeros>
  // expected-error@+1 {{redefinition of symbol named 'w'}}
  rn.parameter @w : tensor<4xf32> = #rn.init<ones>
}

// -----

// Tests that unknown initializers are named in the error.
module {
  // expected-error@+1 {{unknown initializer 'xavier', expected zeros, ones, constant, uniform, normal, derived or values}}
  rn.parameter @w : tensor<4xf32> = #rn.init<xavier>
}

// -----

// Tests that zeros and ones take no scale.
module {
  // expected-error@+1 {{'ones' initializer takes no scale}}
  rn.parameter @w : tensor<4xf32> = #rn.init<ones, 1.000000e+00>
}

// -----

// Tests that a uniform bound must be positive.
module {
  // expected-error@+1 {{'uniform' initializer needs a positive finite bound, got -5.000000e-01}}
  rn.parameter @w : tensor<4xf32> = #rn.init<uniform, -5.000000e-01>
}

// -----

// Tests that a normal std is required.
module {
  // expected-error@+1 {{'normal' initializer needs a positive finite std, got 0}}
  rn.parameter @w : tensor<4xf32> = #rn.init<normal>
}

// -----

// Tests that a values initializer lists its values.
module {
  // expected-error@+1 {{'values' initializer needs a list of values}}
  rn.parameter buffer @input.mean : tensor<3xf32> = #rn.init<values>
}

// -----

// Tests that a values initializer gives one value per element.
module {
  // expected-error@+1 {{'rn.parameter' op 'values' initializer gives 2 values for 'tensor<3xf32>' (3 elements)}}
  rn.parameter buffer @input.mean : tensor<3xf32> = #rn.init<values, [5.000000e-01, 2.500000e-01]>
}

// -----

// Tests that normalize_images takes uint8 images.
func.func @normalize_float_input(%x: tensor<2x4x4x3xf32>, %m: tensor<3xf32>, %s: tensor<3xf32>) {
  // expected-error@+1 {{operand #0 must be ranked tensor of 8-bit unsigned integer values}}
  %0 = rn.normalize_images %x, %m, %s : tensor<2x4x4x3xf32>, tensor<3xf32>, tensor<3xf32> -> tensor<2x4x4x3xf32>
  return
}

// -----

// Tests that normalize_images takes NHWC images.
func.func @normalize_rank(%x: tensor<2x16x3xui8>, %m: tensor<3xf32>, %s: tensor<3xf32>) {
  // expected-error@+1 {{input must be NHWC (rank 4), got 'tensor<2x16x3xui8>'}}
  %0 = rn.normalize_images %x, %m, %s : tensor<2x16x3xui8>, tensor<3xf32>, tensor<3xf32> -> tensor<2x16x3xf32>
  return
}

// -----

// Tests that normalize_images takes one mean and std per channel.
func.func @normalize_channels(%x: tensor<2x4x4x3xui8>, %m: tensor<4xf32>, %s: tensor<3xf32>) {
  // expected-error@+1 {{mean must be [3] f32 (one per channel of the input 'tensor<2x4x4x3xui8>'), got 'tensor<4xf32>'}}
  %0 = rn.normalize_images %x, %m, %s : tensor<2x4x4x3xui8>, tensor<4xf32>, tensor<3xf32> -> tensor<2x4x4x3xf32>
  return
}

// -----

// Tests that normalize_images keeps the shape of its input.
func.func @normalize_shape(%x: tensor<2x4x4x3xui8>, %m: tensor<3xf32>, %s: tensor<3xf32>) {
  // expected-error@+1 {{result type 'tensor<2x4x4x8xf16>' differs from the inferred type 'tensor<2x4x4x3xf16>'}}
  %0 = rn.normalize_images %x, %m, %s : tensor<2x4x4x3xui8>, tensor<3xf32>, tensor<3xf32> -> tensor<2x4x4x8xf16>
  return
}

// -----

// Tests that rn.model names the model with a string.
// expected-error@+1 {{'rn.model' must be a string naming the model}}
module attributes {rn.model = 3 : i64} {
}

// -----

// Tests that rn.model belongs on the module.
// expected-error@+1 {{'rn.model' belongs on the top-level module}}
func.func @f() attributes {rn.model = "mlp"} {
  return
}

// -----

// Tests that unknown rn attributes are rejected.
// expected-error@+1 {{unknown rn dialect attribute 'rn.modle'}}
module attributes {rn.modle = "mlp"} {
}

// -----

// Tests that unknown rn ops are rejected.
func.func @unknown_op(%x: tensor<2x8xf32>) {
  // expected-error@+1 {{custom op 'rn.softplus' is unknown}}
  %0 = rn.softplus %x : tensor<2x8xf32>
  return
}
