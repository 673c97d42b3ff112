// RUN: rn-opt %s --split-input-file --verify-diagnostics

// Tests the rank check of layer_norm.
func.func @layer_norm_rank(%x: tensor<2x8x4xf32>, %v: tensor<4xf32>) {
  // expected-error@+1 {{input must be NHWC (rank 4) or [N, C] (rank 2), got 'tensor<2x8x4xf32>'}}
  %0 = rn.layer_norm %x, %v, %v eps 1.000000e-06 : (tensor<2x8x4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x8x4xf32>
  return
}

// -----

// Tests that layer_norm's weight has one entry per channel.
func.func @layer_norm_weight(%x: tensor<2x4xf32>, %v: tensor<4xf32>, %w: tensor<3xf32>) {
  // expected-error@+1 {{weight must be [4] (one per channel), got 'tensor<3xf32>'}}
  %0 = rn.layer_norm %x, %w, %v eps 1.000000e-06 : (tensor<2x4xf32>, tensor<3xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  return
}

// -----

// Tests that layer_norm's parameters are f32 or of the input's type.
func.func @layer_norm_bias_type(%x: tensor<2x4xf16>, %v: tensor<4xf32>, %b: tensor<4xbf16>) {
  // expected-error@+1 {{bias}}
  %0 = rn.layer_norm %x, %v, %b eps 1.000000e-06 : (tensor<2x4xf16>, tensor<4xf32>, tensor<4xbf16>) -> tensor<2x4xf16>
  return
}

// -----

// Tests that layer_norm's epsilon is positive.
func.func @layer_norm_eps(%x: tensor<2x4xf32>, %v: tensor<4xf32>) {
  // expected-error@+1 {{epsilon must be positive, got 0}}
  %0 = rn.layer_norm %x, %v, %v eps 0.000000e+00 : (tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  return
}

// -----

// Tests that layer_norm's result has the input's type.
func.func @layer_norm_result(%x: tensor<2x4xf32>, %v: tensor<4xf32>) {
  // expected-error@+1 {{result}}
  %0 = rn.layer_norm %x, %v, %v eps 1.000000e-06 : (tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x4xf16>
  return
}

// -----

// Tests that layer_norm_backward's output gradient has the input's type.
func.func @layer_norm_backward_dy(%dy: tensor<2x4xf16>, %x: tensor<2x4xf32>, %v: tensor<4xf32>) {
  // expected-error@+1 {{output_grad}}
  %0:3 = rn.layer_norm_backward %dy, %x, %v, %v, %v eps 1.000000e-06 : (tensor<2x4xf16>, tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

// Tests that layer_norm_backward's gradients have their accumulators' types.
func.func @layer_norm_backward_results(%x: tensor<2x4xf32>, %v: tensor<4xf32>) {
  // expected-error@+1 {{bias_grad}}
  %0:3 = rn.layer_norm_backward %x, %x, %v, %v, %v eps 1.000000e-06 : (tensor<2x4xf32>, tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x4xf32>, tensor<4xf32>, tensor<3xf32>)
  return
}

// -----

// Tests that channel_scale's scale is [C] of the input's type.
func.func @channel_scale_shape(%x: tensor<2x4x4x8xf32>, %s: tensor<4xf32>) {
  // expected-error@+1 {{scale must be [8] (one per channel), got 'tensor<4xf32>'}}
  %0 = rn.channel_scale %x, %s : tensor<2x4x4x8xf32>, tensor<4xf32>
  return
}

// -----

func.func @channel_scale_type(%x: tensor<2x4x4x8xf16>, %s: tensor<8xf32>) {
  // expected-error@+1 {{scale}}
  %0 = rn.channel_scale %x, %s : tensor<2x4x4x8xf16>, tensor<8xf32>
  return
}

// -----

// Tests the rank check of channel_scale_backward.
func.func @channel_scale_backward_rank(%x: tensor<2x4x8xf32>, %s: tensor<8xf32>) {
  // expected-error@+1 {{input must be NHWC (rank 4) or [N, C] (rank 2), got 'tensor<2x4x8xf32>'}}
  %0:2 = rn.channel_scale_backward %x, %x, %s, %s : tensor<2x4x8xf32>, tensor<8xf32>
  return
}
