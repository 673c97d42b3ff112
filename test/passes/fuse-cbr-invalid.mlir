// RUN: rn-opt %s --split-input-file --verify-diagnostics

// Negative tests of the fused CBR ops: one per verifier check. The shape
// rules they share with conv2d and batch_norm are tested in full in
// test/dialects/rn/invalid.mlir; here each op shows that it applies them.

// Tests that cbr_forward checks its convolution with the conv2d shape rule.
func.func @fwd_conv(%x: tensor<2x4x4x5xf32>, %w: tensor<4x3x3x3xf32>, %g: tensor<4xf32>, %b: tensor<4xf32>) {
  // expected-error@+1 {{filter expects 3 input channels per group but the input has 5 channels in 1 group(s)}}
  %y, %c, %m, %s = rn.cbr_forward %x, %w, %g, %b stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 eps 1.000000e-05 relu : (tensor<2x4x4x5xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x4x4x4xf32>, tensor<2x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

// Tests that cbr_forward returns the convolution output.
func.func @fwd_conv_output(%x: tensor<2x4x4x3xf32>, %w: tensor<4x3x3x3xf32>, %g: tensor<4xf32>, %b: tensor<4xf32>) {
  // expected-error@+1 {{conv_output type 'tensor<2x2x2x4xf32>' differs from the expected type 'tensor<2x4x4x4xf32>'}}
  %y, %c, %m, %s = rn.cbr_forward %x, %w, %g, %b stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 eps 1.000000e-05 relu : (tensor<2x4x4x3xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x4x4x4xf32>, tensor<2x2x2x4xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

// Tests that cbr_forward's gamma has one entry per output channel.
func.func @fwd_gamma(%x: tensor<2x4x4x3xf32>, %w: tensor<4x3x3x3xf32>, %g: tensor<3xf32>, %b: tensor<4xf32>) {
  // expected-error@+1 {{gamma must be [4] (one per channel), got 'tensor<3xf32>'}}
  %y, %c, %m, %s = rn.cbr_forward %x, %w, %g, %b stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 eps 1.000000e-05 relu : (tensor<2x4x4x3xf32>, tensor<4x3x3x3xf32>, tensor<3xf32>, tensor<4xf32>) -> (tensor<2x4x4x4xf32>, tensor<2x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

// Tests that cbr_forward's beta is f32 or the activation type.
func.func @fwd_beta_type(%x: tensor<2x4x4x3xf32>, %w: tensor<4x3x3x3xf32>, %g: tensor<4xf32>, %b: tensor<4xf16>) {
  // expected-error@+1 {{element type mismatch: beta is 'f16' but input is 'f32'}}
  %y, %c, %m, %s = rn.cbr_forward %x, %w, %g, %b stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 eps 1.000000e-05 relu : (tensor<2x4x4x3xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>, tensor<4xf16>) -> (tensor<2x4x4x4xf32>, tensor<2x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

// Tests that cbr_forward needs a positive epsilon.
func.func @fwd_eps(%x: tensor<2x4x4x3xf32>, %w: tensor<4x3x3x3xf32>, %g: tensor<4xf32>, %b: tensor<4xf32>) {
  // expected-error@+1 {{epsilon must be positive, got 0}}
  %y, %c, %m, %s = rn.cbr_forward %x, %w, %g, %b stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 eps 0.000000e+00 relu : (tensor<2x4x4x3xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x4x4x4xf32>, tensor<2x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

// Tests that cbr_forward's result has the convolution output type.
func.func @fwd_result(%x: tensor<2x4x4x3xf32>, %w: tensor<4x3x3x3xf32>, %g: tensor<4xf32>, %b: tensor<4xf32>) {
  // expected-error@+1 {{result type 'tensor<2x4x4x4xf16>' differs from the expected type 'tensor<2x4x4x4xf32>'}}
  %y, %c, %m, %s = rn.cbr_forward %x, %w, %g, %b stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 eps 1.000000e-05 relu : (tensor<2x4x4x3xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x4x4x4xf16>, tensor<2x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

// Tests that cbr_forward saves [C] f32 statistics.
func.func @fwd_stats(%x: tensor<2x4x4x3xf32>, %w: tensor<4x3x3x3xf32>, %g: tensor<4xf32>, %b: tensor<4xf32>) {
  // expected-error@+1 {{batch_inv_std type 'tensor<8xf32>' differs from the expected type 'tensor<4xf32>'}}
  %y, %c, %m, %s = rn.cbr_forward %x, %w, %g, %b stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 eps 1.000000e-05 relu : (tensor<2x4x4x3xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x4x4x4xf32>, tensor<2x4x4x4xf32>, tensor<4xf32>, tensor<8xf32>)
  return
}

// -----

// Tests that cbr_backward checks its convolution with the conv2d shape rule.
func.func @bwd_conv(%dy: tensor<2x4x4x4xf32>, %x: tensor<2x4x4x3xf32>, %w: tensor<4x3x3x3xf32>, %c: tensor<2x4x4x4xf32>, %g: tensor<4xf32>, %m: tensor<4xf32>, %s: tensor<4xf32>, %gw: tensor<4x3x3x3xf32>, %gg: tensor<4xf32>, %gb: tensor<4xf32>, %y: tensor<2x4x4x4xf32>) {
  // expected-error@+1 {{expects 2 stride values (height, width), got 1}}
  %dc, %gr:4 = rn.cbr_backward %dy, %x, %w, %c, %g, %m, %s, %gw, %gg, %gb relu %y stride [1] pad [1, 1] dilation [1, 1] groups 1 : (tensor<2x4x4x4xf32>, tensor<2x4x4x3xf32>, tensor<4x3x3x3xf32>, tensor<2x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>, tensor<4xf32>, tensor<2x4x4x4xf32>) -> (tensor<2x4x4x4xf32>, tensor<2x4x4x3xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

// Tests that cbr_backward's conv_output has the convolution output type.
func.func @bwd_conv_output(%dy: tensor<2x4x4x4xf32>, %x: tensor<2x4x4x3xf32>, %w: tensor<4x3x3x3xf32>, %c: tensor<2x4x4x8xf32>, %g: tensor<4xf32>, %m: tensor<4xf32>, %s: tensor<4xf32>, %gw: tensor<4x3x3x3xf32>, %gg: tensor<4xf32>, %gb: tensor<4xf32>, %y: tensor<2x4x4x4xf32>) {
  // expected-error@+1 {{conv_output type 'tensor<2x4x4x8xf32>' differs from the expected type 'tensor<2x4x4x4xf32>'}}
  %dc, %gr:4 = rn.cbr_backward %dy, %x, %w, %c, %g, %m, %s, %gw, %gg, %gb relu %y stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 : (tensor<2x4x4x4xf32>, tensor<2x4x4x3xf32>, tensor<4x3x3x3xf32>, tensor<2x4x4x8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>, tensor<4xf32>, tensor<2x4x4x4xf32>) -> (tensor<2x4x4x4xf32>, tensor<2x4x4x3xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

// Tests that cbr_backward's output gradient has the convolution output type.
func.func @bwd_output_grad(%dy: tensor<2x2x2x4xf32>, %x: tensor<2x4x4x3xf32>, %w: tensor<4x3x3x3xf32>, %c: tensor<2x4x4x4xf32>, %g: tensor<4xf32>, %m: tensor<4xf32>, %s: tensor<4xf32>, %gw: tensor<4x3x3x3xf32>, %gg: tensor<4xf32>, %gb: tensor<4xf32>, %y: tensor<2x4x4x4xf32>) {
  // expected-error@+1 {{output_grad type 'tensor<2x2x2x4xf32>' differs from the expected type 'tensor<2x4x4x4xf32>'}}
  %dc, %gr:4 = rn.cbr_backward %dy, %x, %w, %c, %g, %m, %s, %gw, %gg, %gb relu %y stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 : (tensor<2x2x2x4xf32>, tensor<2x4x4x3xf32>, tensor<4x3x3x3xf32>, tensor<2x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>, tensor<4xf32>, tensor<2x4x4x4xf32>) -> (tensor<2x4x4x4xf32>, tensor<2x4x4x3xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

// Tests that cbr_backward's relu_output has the convolution output type.
func.func @bwd_relu_output(%dy: tensor<2x4x4x4xf32>, %x: tensor<2x4x4x3xf32>, %w: tensor<4x3x3x3xf32>, %c: tensor<2x4x4x4xf32>, %g: tensor<4xf32>, %m: tensor<4xf32>, %s: tensor<4xf32>, %gw: tensor<4x3x3x3xf32>, %gg: tensor<4xf32>, %gb: tensor<4xf32>, %y: tensor<2x4x4x4xf16>) {
  // expected-error@+1 {{relu_output type 'tensor<2x4x4x4xf16>' differs from the expected type 'tensor<2x4x4x4xf32>'}}
  %dc, %gr:4 = rn.cbr_backward %dy, %x, %w, %c, %g, %m, %s, %gw, %gg, %gb relu %y stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 : (tensor<2x4x4x4xf32>, tensor<2x4x4x3xf32>, tensor<4x3x3x3xf32>, tensor<2x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>, tensor<4xf32>, tensor<2x4x4x4xf16>) -> (tensor<2x4x4x4xf32>, tensor<2x4x4x3xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

// Tests that cbr_backward's gamma accumulator has one entry per channel.
func.func @bwd_gamma_acc(%dy: tensor<2x4x4x4xf32>, %x: tensor<2x4x4x3xf32>, %w: tensor<4x3x3x3xf32>, %c: tensor<2x4x4x4xf32>, %g: tensor<4xf32>, %m: tensor<4xf32>, %s: tensor<4xf32>, %gw: tensor<4x3x3x3xf32>, %gg: tensor<8xf32>, %gb: tensor<4xf32>, %y: tensor<2x4x4x4xf32>) {
  // expected-error@+1 {{gamma_grad_acc must be [4] (one per channel), got 'tensor<8xf32>'}}
  %dc, %gr:4 = rn.cbr_backward %dy, %x, %w, %c, %g, %m, %s, %gw, %gg, %gb relu %y stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 : (tensor<2x4x4x4xf32>, tensor<2x4x4x3xf32>, tensor<4x3x3x3xf32>, tensor<2x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4x3x3x3xf32>, tensor<8xf32>, tensor<4xf32>, tensor<2x4x4x4xf32>) -> (tensor<2x4x4x4xf32>, tensor<2x4x4x3xf32>, tensor<4x3x3x3xf32>, tensor<8xf32>, tensor<4xf32>)
  return
}

// -----

// Tests that cbr_backward reads [C] f32 statistics.
func.func @bwd_stats(%dy: tensor<2x4x4x4xf32>, %x: tensor<2x4x4x3xf32>, %w: tensor<4x3x3x3xf32>, %c: tensor<2x4x4x4xf32>, %g: tensor<4xf32>, %m: tensor<8xf32>, %s: tensor<4xf32>, %gw: tensor<4x3x3x3xf32>, %gg: tensor<4xf32>, %gb: tensor<4xf32>, %y: tensor<2x4x4x4xf32>) {
  // expected-error@+1 {{batch_mean type 'tensor<8xf32>' differs from the expected type 'tensor<4xf32>'}}
  %dc, %gr:4 = rn.cbr_backward %dy, %x, %w, %c, %g, %m, %s, %gw, %gg, %gb relu %y stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 : (tensor<2x4x4x4xf32>, tensor<2x4x4x3xf32>, tensor<4x3x3x3xf32>, tensor<2x4x4x4xf32>, tensor<4xf32>, tensor<8xf32>, tensor<4xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>, tensor<4xf32>, tensor<2x4x4x4xf32>) -> (tensor<2x4x4x4xf32>, tensor<2x4x4x3xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

// Tests that cbr_backward accumulates dgamma in gamma's type.
func.func @bwd_gamma_acc_type(%dy: tensor<2x4x4x4xf16>, %x: tensor<2x4x4x3xf16>, %w: tensor<4x3x3x3xf16>, %c: tensor<2x4x4x4xf16>, %g: tensor<4xf32>, %m: tensor<4xf32>, %s: tensor<4xf32>, %gw: tensor<4x3x3x3xf16>, %gg: tensor<4xf16>, %gb: tensor<4xf32>, %y: tensor<2x4x4x4xf16>) {
  // expected-error@+1 {{gamma_grad_acc type 'tensor<4xf16>' differs from the expected type 'tensor<4xf32>'}}
  %dc, %gr:4 = rn.cbr_backward %dy, %x, %w, %c, %g, %m, %s, %gw, %gg, %gb relu %y stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 : (tensor<2x4x4x4xf16>, tensor<2x4x4x3xf16>, tensor<4x3x3x3xf16>, tensor<2x4x4x4xf16>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4x3x3x3xf16>, tensor<4xf16>, tensor<4xf32>, tensor<2x4x4x4xf16>) -> (tensor<2x4x4x4xf16>, tensor<2x4x4x3xf16>, tensor<4x3x3x3xf16>, tensor<4xf16>, tensor<4xf32>)
  return
}

// -----

// Tests that cbr_backward's filter accumulator has the filter type or
// fewer input channels, not more.
func.func @bwd_filter_acc(%dy: tensor<2x4x4x4xf32>, %x: tensor<2x4x4x3xf32>, %w: tensor<4x3x3x3xf32>, %c: tensor<2x4x4x4xf32>, %g: tensor<4xf32>, %m: tensor<4xf32>, %s: tensor<4xf32>, %gw: tensor<4x3x3x4xf32>, %gg: tensor<4xf32>, %gb: tensor<4xf32>, %y: tensor<2x4x4x4xf32>) {
  // expected-error@+1 {{filter_grad_acc type 'tensor<4x3x3x4xf32>' must be the filter's type 'tensor<4x3x3x3xf32>' or, with groups 1, that of its first input channels}}
  %dc, %gr:4 = rn.cbr_backward %dy, %x, %w, %c, %g, %m, %s, %gw, %gg, %gb relu %y stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 : (tensor<2x4x4x4xf32>, tensor<2x4x4x3xf32>, tensor<4x3x3x3xf32>, tensor<2x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4x3x3x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<2x4x4x4xf32>) -> (tensor<2x4x4x4xf32>, tensor<2x4x4x3xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

// Tests that cbr_backward's conv_output_grad has the convolution output type.
func.func @bwd_conv_output_grad(%dy: tensor<2x4x4x4xf32>, %x: tensor<2x4x4x3xf32>, %w: tensor<4x3x3x3xf32>, %c: tensor<2x4x4x4xf32>, %g: tensor<4xf32>, %m: tensor<4xf32>, %s: tensor<4xf32>, %gw: tensor<4x3x3x3xf32>, %gg: tensor<4xf32>, %gb: tensor<4xf32>, %y: tensor<2x4x4x4xf32>) {
  // expected-error@+1 {{conv_output_grad type 'tensor<2x4x4x3xf32>' differs from the expected type 'tensor<2x4x4x4xf32>'}}
  %dc, %gr:4 = rn.cbr_backward %dy, %x, %w, %c, %g, %m, %s, %gw, %gg, %gb relu %y stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 : (tensor<2x4x4x4xf32>, tensor<2x4x4x3xf32>, tensor<4x3x3x3xf32>, tensor<2x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>, tensor<4xf32>, tensor<2x4x4x4xf32>) -> (tensor<2x4x4x3xf32>, tensor<2x4x4x3xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

// Tests that cbr_backward has its four results and an optional input gradient.
func.func @bwd_count(%dy: tensor<2x4x4x4xf32>, %x: tensor<2x4x4x3xf32>, %w: tensor<4x3x3x3xf32>, %c: tensor<2x4x4x4xf32>, %g: tensor<4xf32>, %m: tensor<4xf32>, %s: tensor<4xf32>, %gw: tensor<4x3x3x3xf32>, %gg: tensor<4xf32>, %gb: tensor<4xf32>, %y: tensor<2x4x4x4xf32>) {
  // expected-error@+1 {{expected 4 or more results}}
  %dc, %gr:2 = rn.cbr_backward %dy, %x, %w, %c, %g, %m, %s, %gw, %gg, %gb relu %y stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 : (tensor<2x4x4x4xf32>, tensor<2x4x4x3xf32>, tensor<4x3x3x3xf32>, tensor<2x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>, tensor<4xf32>, tensor<2x4x4x4xf32>) -> (tensor<2x4x4x4xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>)
  return
}

// -----

// Tests that cbr_backward's input gradient has the input type.
func.func @bwd_input_grad(%dy: tensor<2x4x4x4xf32>, %x: tensor<2x4x4x3xf32>, %w: tensor<4x3x3x3xf32>, %c: tensor<2x4x4x4xf32>, %g: tensor<4xf32>, %m: tensor<4xf32>, %s: tensor<4xf32>, %gw: tensor<4x3x3x3xf32>, %gg: tensor<4xf32>, %gb: tensor<4xf32>, %y: tensor<2x4x4x4xf32>) {
  // expected-error@+1 {{input_grad type 'tensor<2x4x4x4xf32>' differs from the expected type 'tensor<2x4x4x3xf32>'}}
  %dc, %gr:4 = rn.cbr_backward %dy, %x, %w, %c, %g, %m, %s, %gw, %gg, %gb relu %y stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 : (tensor<2x4x4x4xf32>, tensor<2x4x4x3xf32>, tensor<4x3x3x3xf32>, tensor<2x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>, tensor<4xf32>, tensor<2x4x4x4xf32>) -> (tensor<2x4x4x4xf32>, tensor<2x4x4x4xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

// Tests that cbr_backward's filter gradient has the accumulator type.
func.func @bwd_filter_grad(%dy: tensor<2x4x4x4xf32>, %x: tensor<2x4x4x3xf32>, %w: tensor<4x3x3x3xf32>, %c: tensor<2x4x4x4xf32>, %g: tensor<4xf32>, %m: tensor<4xf32>, %s: tensor<4xf32>, %gw: tensor<4x3x3x3xf32>, %gg: tensor<4xf32>, %gb: tensor<4xf32>, %y: tensor<2x4x4x4xf32>) {
  // expected-error@+1 {{filter_grad type 'tensor<4x3x3x3xf16>' differs from the expected type 'tensor<4x3x3x3xf32>'}}
  %dc, %gr:3 = rn.cbr_backward %dy, %x, %w, %c, %g, %m, %s, %gw, %gg, %gb relu %y stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 : (tensor<2x4x4x4xf32>, tensor<2x4x4x3xf32>, tensor<4x3x3x3xf32>, tensor<2x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>, tensor<4xf32>, tensor<2x4x4x4xf32>) -> (tensor<2x4x4x4xf32>, tensor<4x3x3x3xf16>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

// Tests that cbr_backward's beta gradient has the accumulator type.
func.func @bwd_beta_grad(%dy: tensor<2x4x4x4xf32>, %x: tensor<2x4x4x3xf32>, %w: tensor<4x3x3x3xf32>, %c: tensor<2x4x4x4xf32>, %g: tensor<4xf32>, %m: tensor<4xf32>, %s: tensor<4xf32>, %gw: tensor<4x3x3x3xf32>, %gg: tensor<4xf32>, %gb: tensor<4xf32>, %y: tensor<2x4x4x4xf32>) {
  // expected-error@+1 {{beta_grad type 'tensor<4xf16>' differs from the expected type 'tensor<4xf32>'}}
  %dc, %gr:4 = rn.cbr_backward %dy, %x, %w, %c, %g, %m, %s, %gw, %gg, %gb relu %y stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 : (tensor<2x4x4x4xf32>, tensor<2x4x4x3xf32>, tensor<4x3x3x3xf32>, tensor<2x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>, tensor<4xf32>, tensor<2x4x4x4xf32>) -> (tensor<2x4x4x4xf32>, tensor<2x4x4x3xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>, tensor<4xf16>)
  return
}

// -----

// Tests that cbr_inference checks its convolution with the conv2d shape rule.
func.func @inf_conv(%x: tensor<2x4x4x3xf32>, %w: tensor<4x3x3x3xf32>, %g: tensor<4xf32>, %b: tensor<4xf32>, %rm: tensor<4xf32>, %rv: tensor<4xf32>) {
  // expected-error@+1 {{groups must be positive, got 0}}
  %y = rn.cbr_inference %x, %w, %g, %b, %rm, %rv stride [1, 1] pad [1, 1] dilation [1, 1] groups 0 eps 1.000000e-05 relu : (tensor<2x4x4x3xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x4x4x4xf32>
  return
}

// -----

// Tests that cbr_inference's running statistics have one entry per channel.
func.func @inf_running_var(%x: tensor<2x4x4x3xf32>, %w: tensor<4x3x3x3xf32>, %g: tensor<4xf32>, %b: tensor<4xf32>, %rm: tensor<4xf32>, %rv: tensor<8xf32>) {
  // expected-error@+1 {{running_var must be [4] (one per channel), got 'tensor<8xf32>'}}
  %y = rn.cbr_inference %x, %w, %g, %b, %rm, %rv stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 eps 1.000000e-05 relu : (tensor<2x4x4x3xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<8xf32>) -> tensor<2x4x4x4xf32>
  return
}

// -----

// Tests that cbr_inference needs a positive epsilon.
func.func @inf_eps(%x: tensor<2x4x4x3xf32>, %w: tensor<4x3x3x3xf32>, %g: tensor<4xf32>, %b: tensor<4xf32>, %rm: tensor<4xf32>, %rv: tensor<4xf32>) {
  // expected-error@+1 {{epsilon must be positive, got -1.000000e-05}}
  %y = rn.cbr_inference %x, %w, %g, %b, %rm, %rv stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 eps -1.000000e-05 relu : (tensor<2x4x4x3xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x4x4x4xf32>
  return
}

// -----

// Tests that cbr_inference's result has the convolution output type.
func.func @inf_result(%x: tensor<2x4x4x3xf32>, %w: tensor<4x3x3x3xf32>, %g: tensor<4xf32>, %b: tensor<4xf32>, %rm: tensor<4xf32>, %rv: tensor<4xf32>) {
  // expected-error@+1 {{result type 'tensor<2x2x2x4xf32>' differs from the expected type 'tensor<2x4x4x4xf32>'}}
  %y = rn.cbr_inference %x, %w, %g, %b, %rm, %rv stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 eps 1.000000e-05 relu : (tensor<2x4x4x3xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x2x2x4xf32>
  return
}

// -----

// Tests that bn_add_relu normalizes NHWC or [N, C].
func.func @bar_rank(%c: tensor<2x4x4xf32>, %g: tensor<4xf32>, %b: tensor<4xf32>, %sc: tensor<2x4x4xf32>) {
  // expected-error@+1 {{input must be NHWC (rank 4) or [N, C] (rank 2), got 'tensor<2x4x4xf32>'}}
  %y, %m, %s = rn.bn_add_relu %c, %g, %b shortcut %sc eps 1.000000e-05 : (tensor<2x4x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<2x4x4xf32>) -> (tensor<2x4x4xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

// Tests that bn_add_relu's gamma has one entry per channel.
func.func @bar_gamma(%c: tensor<2x4x4x4xf32>, %g: tensor<8xf32>, %b: tensor<4xf32>, %sc: tensor<2x4x4x4xf32>) {
  // expected-error@+1 {{gamma must be [4] (one per channel), got 'tensor<8xf32>'}}
  %y, %m, %s = rn.bn_add_relu %c, %g, %b shortcut %sc eps 1.000000e-05 : (tensor<2x4x4x4xf32>, tensor<8xf32>, tensor<4xf32>, tensor<2x4x4x4xf32>) -> (tensor<2x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

// Tests that bn_add_relu needs a positive epsilon.
func.func @bar_eps(%c: tensor<2x4x4x4xf32>, %g: tensor<4xf32>, %b: tensor<4xf32>, %sc: tensor<2x4x4x4xf32>) {
  // expected-error@+1 {{epsilon must be positive, got 0}}
  %y, %m, %s = rn.bn_add_relu %c, %g, %b shortcut %sc eps 0.000000e+00 : (tensor<2x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<2x4x4x4xf32>) -> (tensor<2x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

// Tests that bn_add_relu's shortcut has the input type.
func.func @bar_shortcut(%c: tensor<2x4x4x4xf32>, %g: tensor<4xf32>, %b: tensor<4xf32>, %sc: tensor<2x4x4x4xf16>) {
  // expected-error@+1 {{shortcut type 'tensor<2x4x4x4xf16>' differs from the expected type 'tensor<2x4x4x4xf32>'}}
  %y, %m, %s = rn.bn_add_relu %c, %g, %b shortcut %sc eps 1.000000e-05 : (tensor<2x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<2x4x4x4xf16>) -> (tensor<2x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

// Tests that bn_add_relu's result has the input type.
func.func @bar_result(%c: tensor<2x4x4x4xf32>, %g: tensor<4xf32>, %b: tensor<4xf32>, %sc: tensor<2x4x4x4xf32>) {
  // expected-error@+1 {{result type 'tensor<2x4x4x8xf32>' differs from the expected type 'tensor<2x4x4x4xf32>'}}
  %y, %m, %s = rn.bn_add_relu %c, %g, %b shortcut %sc eps 1.000000e-05 : (tensor<2x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<2x4x4x4xf32>) -> (tensor<2x4x4x8xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

// Tests that bn_add_relu saves [C] f32 statistics.
func.func @bar_stats(%c: tensor<2x4x4x4xf32>, %g: tensor<4xf32>, %b: tensor<4xf32>, %sc: tensor<2x4x4x4xf32>) {
  // expected-error@+1 {{batch_mean type 'tensor<8xf32>' differs from the expected type 'tensor<4xf32>'}}
  %y, %m, %s = rn.bn_add_relu %c, %g, %b shortcut %sc eps 1.000000e-05 : (tensor<2x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<2x4x4x4xf32>) -> (tensor<2x4x4x4xf32>, tensor<8xf32>, tensor<4xf32>)
  return
}

// -----

// Tests that bn_add_relu_backward's accumulators have one entry per channel.
func.func @barb_beta_acc(%dy: tensor<2x4x4x4xf32>, %y: tensor<2x4x4x4xf32>, %c: tensor<2x4x4x4xf32>, %g: tensor<4xf32>, %m: tensor<4xf32>, %s: tensor<4xf32>, %gg: tensor<4xf32>, %gb: tensor<8xf32>) {
  // expected-error@+1 {{beta_grad_acc must be [4] (one per channel), got 'tensor<8xf32>'}}
  %dc, %dsc, %dg, %db = rn.bn_add_relu_backward %dy, %y, %c, %g, %m, %s, %gg, %gb : (tensor<2x4x4x4xf32>, tensor<2x4x4x4xf32>, tensor<2x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<8xf32>) -> (tensor<2x4x4x4xf32>, tensor<2x4x4x4xf32>, tensor<4xf32>, tensor<8xf32>)
  return
}

// -----

// Tests that bn_add_relu_backward reads [C] f32 statistics.
func.func @barb_stats(%dy: tensor<2x4x4x4xf32>, %y: tensor<2x4x4x4xf32>, %c: tensor<2x4x4x4xf32>, %g: tensor<4xf32>, %m: tensor<4xf32>, %s: tensor<8xf32>, %gg: tensor<4xf32>, %gb: tensor<4xf32>) {
  // expected-error@+1 {{batch_inv_std type 'tensor<8xf32>' differs from the expected type 'tensor<4xf32>'}}
  %dc, %dsc, %dg, %db = rn.bn_add_relu_backward %dy, %y, %c, %g, %m, %s, %gg, %gb : (tensor<2x4x4x4xf32>, tensor<2x4x4x4xf32>, tensor<2x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<8xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x4x4x4xf32>, tensor<2x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

// Tests that bn_add_relu_backward's output gradient has the input type.
func.func @barb_output_grad(%dy: tensor<2x4x4x8xf32>, %y: tensor<2x4x4x4xf32>, %c: tensor<2x4x4x4xf32>, %g: tensor<4xf32>, %m: tensor<4xf32>, %s: tensor<4xf32>, %gg: tensor<4xf32>, %gb: tensor<4xf32>) {
  // expected-error@+1 {{output_grad type 'tensor<2x4x4x8xf32>' differs from the expected type 'tensor<2x4x4x4xf32>'}}
  %dc, %dsc, %dg, %db = rn.bn_add_relu_backward %dy, %y, %c, %g, %m, %s, %gg, %gb : (tensor<2x4x4x8xf32>, tensor<2x4x4x4xf32>, tensor<2x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x4x4x4xf32>, tensor<2x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

// Tests that bn_add_relu_backward's relu_output has the input type.
func.func @barb_relu_output(%dy: tensor<2x4x4x4xf32>, %y: tensor<2x4x4x4xf16>, %c: tensor<2x4x4x4xf32>, %g: tensor<4xf32>, %m: tensor<4xf32>, %s: tensor<4xf32>, %gg: tensor<4xf32>, %gb: tensor<4xf32>) {
  // expected-error@+1 {{relu_output type 'tensor<2x4x4x4xf16>' differs from the expected type 'tensor<2x4x4x4xf32>'}}
  %dc, %dsc, %dg, %db = rn.bn_add_relu_backward %dy, %y, %c, %g, %m, %s, %gg, %gb : (tensor<2x4x4x4xf32>, tensor<2x4x4x4xf16>, tensor<2x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x4x4x4xf32>, tensor<2x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

// Tests that bn_add_relu_backward's input gradient has the input type.
func.func @barb_input_grad(%dy: tensor<2x4x4x4xf32>, %y: tensor<2x4x4x4xf32>, %c: tensor<2x4x4x4xf32>, %g: tensor<4xf32>, %m: tensor<4xf32>, %s: tensor<4xf32>, %gg: tensor<4xf32>, %gb: tensor<4xf32>) {
  // expected-error@+1 {{input_grad type 'tensor<2x2x2x4xf32>' differs from the expected type 'tensor<2x4x4x4xf32>'}}
  %dc, %dsc, %dg, %db = rn.bn_add_relu_backward %dy, %y, %c, %g, %m, %s, %gg, %gb : (tensor<2x4x4x4xf32>, tensor<2x4x4x4xf32>, tensor<2x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x2x2x4xf32>, tensor<2x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

// Tests that bn_add_relu_backward's shortcut gradient has the input type.
func.func @barb_shortcut_grad(%dy: tensor<2x4x4x4xf32>, %y: tensor<2x4x4x4xf32>, %c: tensor<2x4x4x4xf32>, %g: tensor<4xf32>, %m: tensor<4xf32>, %s: tensor<4xf32>, %gg: tensor<4xf32>, %gb: tensor<4xf32>) {
  // expected-error@+1 {{shortcut_grad type 'tensor<2x2x2x4xf32>' differs from the expected type 'tensor<2x4x4x4xf32>'}}
  %dc, %dsc, %dg, %db = rn.bn_add_relu_backward %dy, %y, %c, %g, %m, %s, %gg, %gb : (tensor<2x4x4x4xf32>, tensor<2x4x4x4xf32>, tensor<2x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x4x4x4xf32>, tensor<2x2x2x4xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

// Tests that bn_add_relu_backward accumulates dgamma in gamma's type.
func.func @barb_gamma_acc_type(%dy: tensor<2x4x4x4xf16>, %y: tensor<2x4x4x4xf16>, %c: tensor<2x4x4x4xf16>, %g: tensor<4xf32>, %m: tensor<4xf32>, %s: tensor<4xf32>, %gg: tensor<4xf16>, %gb: tensor<4xf32>) {
  // expected-error@+1 {{gamma_grad_acc type 'tensor<4xf16>' differs from the expected type 'tensor<4xf32>'}}
  %dc, %dsc, %dg, %db = rn.bn_add_relu_backward %dy, %y, %c, %g, %m, %s, %gg, %gb : (tensor<2x4x4x4xf16>, tensor<2x4x4x4xf16>, tensor<2x4x4x4xf16>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf16>, tensor<4xf32>) -> (tensor<2x4x4x4xf16>, tensor<2x4x4x4xf16>, tensor<4xf16>, tensor<4xf32>)
  return
}

// -----

// Tests that bn_add_relu_backward's gamma gradient has the accumulator type.
func.func @barb_gamma_grad(%dy: tensor<2x4x4x4xf16>, %y: tensor<2x4x4x4xf16>, %c: tensor<2x4x4x4xf16>, %g: tensor<4xf32>, %m: tensor<4xf32>, %s: tensor<4xf32>, %gg: tensor<4xf32>, %gb: tensor<4xf32>) {
  // expected-error@+1 {{gamma_grad type 'tensor<4xf16>' differs from the expected type 'tensor<4xf32>'}}
  %dc, %dsc, %dg, %db = rn.bn_add_relu_backward %dy, %y, %c, %g, %m, %s, %gg, %gb : (tensor<2x4x4x4xf16>, tensor<2x4x4x4xf16>, tensor<2x4x4x4xf16>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x4x4x4xf16>, tensor<2x4x4x4xf16>, tensor<4xf16>, tensor<4xf32>)
  return
}

// -----

// Tests that bn_add_relu_backward's beta gradient has the accumulator type.
func.func @barb_beta_grad(%dy: tensor<2x4x4x4xf32>, %y: tensor<2x4x4x4xf32>, %c: tensor<2x4x4x4xf32>, %g: tensor<4xf32>, %m: tensor<4xf32>, %s: tensor<4xf32>, %gg: tensor<4xf32>, %gb: tensor<4xf32>) {
  // expected-error@+1 {{beta_grad type 'tensor<4xf16>' differs from the expected type 'tensor<4xf32>'}}
  %dc, %dsc, %dg, %db = rn.bn_add_relu_backward %dy, %y, %c, %g, %m, %s, %gg, %gb : (tensor<2x4x4x4xf32>, tensor<2x4x4x4xf32>, tensor<2x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x4x4x4xf32>, tensor<2x4x4x4xf32>, tensor<4xf32>, tensor<4xf16>)
  return
}

// -----

// Tests that bn_add_relu_inference's running statistics have one entry per channel.
func.func @bari_running_mean(%c: tensor<2x4x4x4xf32>, %g: tensor<4xf32>, %b: tensor<4xf32>, %rm: tensor<2xf32>, %rv: tensor<4xf32>, %sc: tensor<2x4x4x4xf32>) {
  // expected-error@+1 {{running_mean must be [4] (one per channel), got 'tensor<2xf32>'}}
  %y = rn.bn_add_relu_inference %c, %g, %b, %rm, %rv shortcut %sc eps 1.000000e-05 : (tensor<2x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<2xf32>, tensor<4xf32>, tensor<2x4x4x4xf32>) -> tensor<2x4x4x4xf32>
  return
}

// -----

// Tests that bn_add_relu_inference needs a positive epsilon.
func.func @bari_eps(%c: tensor<2x4x4x4xf32>, %g: tensor<4xf32>, %b: tensor<4xf32>, %rm: tensor<4xf32>, %rv: tensor<4xf32>, %sc: tensor<2x4x4x4xf32>) {
  // expected-error@+1 {{epsilon must be positive, got 0}}
  %y = rn.bn_add_relu_inference %c, %g, %b, %rm, %rv shortcut %sc eps 0.000000e+00 : (tensor<2x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<2x4x4x4xf32>) -> tensor<2x4x4x4xf32>
  return
}

// -----

// Tests that bn_add_relu_inference's shortcut has the input type.
func.func @bari_shortcut(%c: tensor<2x4x4x4xf32>, %g: tensor<4xf32>, %b: tensor<4xf32>, %rm: tensor<4xf32>, %rv: tensor<4xf32>, %sc: tensor<1x4x4x4xf32>) {
  // expected-error@+1 {{shortcut type 'tensor<1x4x4x4xf32>' differs from the expected type 'tensor<2x4x4x4xf32>'}}
  %y = rn.bn_add_relu_inference %c, %g, %b, %rm, %rv shortcut %sc eps 1.000000e-05 : (tensor<2x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<1x4x4x4xf32>) -> tensor<2x4x4x4xf32>
  return
}

// -----

// Tests that bn_add_relu_inference's result has the input type.
func.func @bari_result(%c: tensor<2x4x4x4xf32>, %g: tensor<4xf32>, %b: tensor<4xf32>, %rm: tensor<4xf32>, %rv: tensor<4xf32>, %sc: tensor<2x4x4x4xf32>) {
  // expected-error@+1 {{result type 'tensor<2x4x4x4xbf16>' differs from the expected type 'tensor<2x4x4x4xf32>'}}
  %y = rn.bn_add_relu_inference %c, %g, %b, %rm, %rv shortcut %sc eps 1.000000e-05 : (tensor<2x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<2x4x4x4xf32>) -> tensor<2x4x4x4xbf16>
  return
}

// -----

// Tests that cbr_backward's input gradient addend comes with an input gradient result.
func.func @bwd_addend_without_input_grad(%dy: tensor<2x4x4x4xf32>, %x: tensor<2x4x4x3xf32>, %w: tensor<4x3x3x3xf32>, %c: tensor<2x4x4x4xf32>, %g: tensor<4xf32>, %m: tensor<4xf32>, %s: tensor<4xf32>, %gw: tensor<4x3x3x3xf32>, %gg: tensor<4xf32>, %gb: tensor<4xf32>) {
  // expected-error@+1 {{has an input gradient addend ('plus') but no input_grad}}
  %dc, %gr:3 = rn.cbr_backward %dy, %x, %w, %c, %g, %m, %s, %gw, %gg, %gb stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 plus %x : (tensor<2x4x4x4xf32>, tensor<2x4x4x3xf32>, tensor<4x3x3x3xf32>, tensor<2x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>, tensor<4xf32>, tensor<2x4x4x3xf32>) -> (tensor<2x4x4x4xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

// Tests that cbr_backward takes its ReLU mask from one source only.
func.func @bwd_two_masks(%dy: tensor<2x4x4x4xf32>, %x: tensor<2x4x4x3xf32>, %w: tensor<4x3x3x3xf32>, %c: tensor<2x4x4x4xf32>, %g: tensor<4xf32>, %m: tensor<4xf32>, %s: tensor<4xf32>, %gw: tensor<4x3x3x3xf32>, %gg: tensor<4xf32>, %gb: tensor<4xf32>, %y: tensor<2x4x4x4xf32>, %b: tensor<4xf32>) {
  // expected-error@+1 {{takes the ReLU mask from relu_output or from relu_beta, not both}}
  %dc, %gr:4 = rn.cbr_backward %dy, %x, %w, %c, %g, %m, %s, %gw, %gg, %gb relu %y relu_recompute %b stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 : (tensor<2x4x4x4xf32>, tensor<2x4x4x3xf32>, tensor<4x3x3x3xf32>, tensor<2x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>, tensor<4xf32>, tensor<2x4x4x4xf32>, tensor<4xf32>) -> (tensor<2x4x4x4xf32>, tensor<2x4x4x3xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

// Tests that cbr_backward's relu_beta has one entry per channel.
func.func @bwd_relu_beta(%dy: tensor<2x4x4x4xf32>, %x: tensor<2x4x4x3xf32>, %w: tensor<4x3x3x3xf32>, %c: tensor<2x4x4x4xf32>, %g: tensor<4xf32>, %m: tensor<4xf32>, %s: tensor<4xf32>, %gw: tensor<4x3x3x3xf32>, %gg: tensor<4xf32>, %gb: tensor<4xf32>, %b: tensor<8xf32>) {
  // expected-error@+1 {{relu_beta must be [4] (one per channel), got 'tensor<8xf32>'}}
  %dc, %gr:4 = rn.cbr_backward %dy, %x, %w, %c, %g, %m, %s, %gw, %gg, %gb relu_recompute %b stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 : (tensor<2x4x4x4xf32>, tensor<2x4x4x3xf32>, tensor<4x3x3x3xf32>, tensor<2x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>, tensor<4xf32>, tensor<8xf32>) -> (tensor<2x4x4x4xf32>, tensor<2x4x4x3xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

// Tests that cbr_forward takes its prologue's scale and bias together (the
// custom form cannot say otherwise; the generic one can).
func.func @fwd_half_prologue(%x: tensor<2x4x4x8xf16>, %w: tensor<8x3x3x8xf16>, %g: tensor<8xf32>, %b: tensor<8xf32>, %s: tensor<8xf16>) {
  // expected-error@+1 {{takes prologue_scale and prologue_bias together, got only prologue_scale}}
  %y:4 = "rn.cbr_forward"(%x, %w, %g, %b, %s) <{dilation = array<i64: 1, 1>, epsilon = 1.000000e-05 : f64, groups = 1 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 0>, padding = array<i64: 1, 1>, relu, strides = array<i64: 1, 1>}> : (tensor<2x4x4x8xf16>, tensor<8x3x3x8xf16>, tensor<8xf32>, tensor<8xf32>, tensor<8xf16>) -> (tensor<2x4x4x8xf16>, tensor<2x4x4x8xf16>, tensor<8xf32>, tensor<8xf32>)
  return
}

// -----

// Tests that cbr_forward takes a prologue only with one group.
func.func @fwd_prologue_groups(%x: tensor<2x4x4x8xf16>, %w: tensor<8x3x3x4xf16>, %g: tensor<8xf32>, %b: tensor<8xf32>, %s: tensor<8xf16>) {
  // expected-error@+1 {{takes an input prologue only with groups 1, got 2}}
  %y, %c, %m, %v = rn.cbr_forward %x, %w, %g, %b prologue %s, %s stride [1, 1] pad [1, 1] dilation [1, 1] groups 2 eps 1.000000e-05 relu : (tensor<2x4x4x8xf16>, tensor<8x3x3x4xf16>, tensor<8xf32>, tensor<8xf32>, tensor<8xf16>, tensor<8xf16>) -> (tensor<2x4x4x8xf16>, tensor<2x4x4x8xf16>, tensor<8xf32>, tensor<8xf32>)
  return
}

// -----

// Tests that cbr_forward's prologue has one scale per input channel.
func.func @fwd_prologue_channels(%x: tensor<2x4x4x8xf16>, %w: tensor<4x3x3x8xf16>, %g: tensor<4xf32>, %b: tensor<4xf32>, %s: tensor<4xf16>) {
  // expected-error@+1 {{prologue_scale must be [8] (one per input channel), got 'tensor<4xf16>'}}
  %y, %c, %m, %v = rn.cbr_forward %x, %w, %g, %b prologue %s, %s stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 eps 1.000000e-05 relu : (tensor<2x4x4x8xf16>, tensor<4x3x3x8xf16>, tensor<4xf32>, tensor<4xf32>, tensor<4xf16>, tensor<4xf16>) -> (tensor<2x4x4x4xf16>, tensor<2x4x4x4xf16>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

// Tests that cbr_forward's prologue is in the input's type.
func.func @fwd_prologue_type(%x: tensor<2x4x4x8xf16>, %w: tensor<8x3x3x8xf16>, %g: tensor<8xf32>, %b: tensor<8xf32>, %s: tensor<8xf16>) {
  // expected-error@+1 {{element type mismatch: prologue_bias is 'f32' but input is 'f16'}}
  %y, %c, %m, %v = rn.cbr_forward %x, %w, %g, %b prologue %s, %b stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 eps 1.000000e-05 relu : (tensor<2x4x4x8xf16>, tensor<8x3x3x8xf16>, tensor<8xf32>, tensor<8xf32>, tensor<8xf16>, tensor<8xf32>) -> (tensor<2x4x4x8xf16>, tensor<2x4x4x8xf16>, tensor<8xf32>, tensor<8xf32>)
  return
}

// -----

// Tests that conv_bn_stats checks its convolution with the conv2d shape rule.
func.func @stats_conv(%x: tensor<2x4x4x5xf16>, %w: tensor<4x3x3x3xf16>) {
  // expected-error@+1 {{filter expects 3 input channels per group but the input has 5 channels in 1 group(s)}}
  %c, %m, %v = rn.conv_bn_stats %x, %w stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 eps 1.000000e-05 : (tensor<2x4x4x5xf16>, tensor<4x3x3x3xf16>) -> (tensor<2x4x4x4xf16>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

// Tests that conv_bn_stats returns the convolution output.
func.func @stats_conv_output(%x: tensor<2x4x4x3xf16>, %w: tensor<4x3x3x3xf16>) {
  // expected-error@+1 {{conv_output type 'tensor<2x2x2x4xf16>' differs from the expected type 'tensor<2x4x4x4xf16>'}}
  %c, %m, %v = rn.conv_bn_stats %x, %w stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 eps 1.000000e-05 : (tensor<2x4x4x3xf16>, tensor<4x3x3x3xf16>) -> (tensor<2x2x2x4xf16>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

// Tests that conv_bn_stats saves [C] f32 statistics.
func.func @stats_statistics(%x: tensor<2x4x4x3xf16>, %w: tensor<4x3x3x3xf16>) {
  // expected-error@+1 {{batch_mean type 'tensor<3xf32>' differs from the expected type 'tensor<4xf32>'}}
  %c, %m, %v = rn.conv_bn_stats %x, %w stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 eps 1.000000e-05 : (tensor<2x4x4x3xf16>, tensor<4x3x3x3xf16>) -> (tensor<2x4x4x4xf16>, tensor<3xf32>, tensor<4xf32>)
  return
}

// -----

// Tests that conv_bn_stats needs a positive epsilon.
func.func @stats_eps(%x: tensor<2x4x4x3xf16>, %w: tensor<4x3x3x3xf16>) {
  // expected-error@+1 {{epsilon must be positive, got 0}}
  %c, %m, %v = rn.conv_bn_stats %x, %w stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 eps 0.000000e+00 : (tensor<2x4x4x3xf16>, tensor<4x3x3x3xf16>) -> (tensor<2x4x4x4xf16>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

// Tests that conv_bn_stats checks its prologue as cbr_forward does.
func.func @stats_prologue(%x: tensor<2x4x4x8xf16>, %w: tensor<4x3x3x8xf16>, %s: tensor<4xf16>) {
  // expected-error@+1 {{prologue_scale must be [8] (one per input channel), got 'tensor<4xf16>'}}
  %c, %m, %v = rn.conv_bn_stats %x, %w prologue %s, %s stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 eps 1.000000e-05 : (tensor<2x4x4x8xf16>, tensor<4x3x3x8xf16>, tensor<4xf16>, tensor<4xf16>) -> (tensor<2x4x4x4xf16>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

// Tests that bn_scale_bias reads [C] statistics.
func.func @scale_bias_rank(%m: tensor<2x8xf32>, %v: tensor<8xf32>) {
  // expected-error@+1 {{batch_mean must be [C] (rank 1), got 'tensor<2x8xf32>'}}
  %s, %b = rn.bn_scale_bias %m, %v, %v, %v : (tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<8xf16>, tensor<8xf16>)
  return
}

// -----

// Tests that bn_scale_bias's vectors have one entry per channel.
func.func @scale_bias_channels(%m: tensor<8xf32>, %g: tensor<4xf32>) {
  // expected-error@+1 {{gamma must be [8] (one per channel, as batch_mean), got 'tensor<4xf32>'}}
  %s, %b = rn.bn_scale_bias %m, %m, %g, %m : (tensor<8xf32>, tensor<8xf32>, tensor<4xf32>, tensor<8xf32>) -> (tensor<8xf16>, tensor<8xf16>)
  return
}

// -----

// Tests that bn_scale_bias's results have one type.
func.func @scale_bias_types(%m: tensor<8xf32>) {
  // expected-error@+1 {{bias type 'tensor<8xbf16>' differs from the expected type 'tensor<8xf16>'}}
  %s, %b = rn.bn_scale_bias %m, %m, %m, %m : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<8xf16>, tensor<8xbf16>)
  return
}

// -----

// Tests that cbr_backward's prologue mask comes with relu_recompute.
func.func @bwd_prologue_mask(%dy: tensor<2x4x4x8xf16>, %x: tensor<2x4x4x8xf16>, %w: tensor<8x3x3x8xf16>, %v: tensor<8xf32>) {
  // expected-error@+1 {{takes prologue_mask only with relu_recompute (the mask recomputed from relu_beta)}}
  %dc, %g:4 = rn.cbr_backward %dy, %x, %w, %dy, %v, %v, %v, %w, %v, %v relu %dy prologue_mask stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 : (tensor<2x4x4x8xf16>, tensor<2x4x4x8xf16>, tensor<8x3x3x8xf16>, tensor<2x4x4x8xf16>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8x3x3x8xf16>, tensor<8xf32>, tensor<8xf32>, tensor<2x4x4x8xf16>) -> (tensor<2x4x4x8xf16>, tensor<2x4x4x8xf16>, tensor<8x3x3x8xf16>, tensor<8xf32>, tensor<8xf32>)
  return
}

// -----

// Tests that cbr_backward takes its input prologue's scale and bias together.
func.func @bwd_half_prologue(%dy: tensor<2x4x4x8xf16>, %x: tensor<2x4x4x8xf16>, %w: tensor<8x3x3x8xf16>, %v: tensor<8xf32>, %b: tensor<8xf16>) {
  // expected-error@+1 {{takes input_scale and input_bias together, got only input_bias}}
  %g:5 = "rn.cbr_backward"(%dy, %x, %w, %dy, %v, %v, %v, %w, %v, %v, %b) <{dilation = array<i64: 1, 1>, groups = 1 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 1, 0>, padding = array<i64: 1, 1>, strides = array<i64: 1, 1>}> : (tensor<2x4x4x8xf16>, tensor<2x4x4x8xf16>, tensor<8x3x3x8xf16>, tensor<2x4x4x8xf16>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8x3x3x8xf16>, tensor<8xf32>, tensor<8xf32>, tensor<8xf16>) -> (tensor<2x4x4x8xf16>, tensor<2x4x4x8xf16>, tensor<8x3x3x8xf16>, tensor<8xf32>, tensor<8xf32>)
  return
}

// -----

// Tests that cbr_backward's input prologue has one scale per input channel.
func.func @bwd_prologue_channels(%dy: tensor<2x4x4x4xf16>, %x: tensor<2x4x4x8xf16>, %w: tensor<4x3x3x8xf16>, %v: tensor<4xf32>, %s: tensor<4xf16>) {
  // expected-error@+1 {{input_scale must be [8] (one per input channel), got 'tensor<4xf16>'}}
  %dc, %g:4 = rn.cbr_backward %dy, %x, %w, %dy, %v, %v, %v, %w, %v, %v input_prologue %s, %s stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 : (tensor<2x4x4x4xf16>, tensor<2x4x4x8xf16>, tensor<4x3x3x8xf16>, tensor<2x4x4x4xf16>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4x3x3x8xf16>, tensor<4xf32>, tensor<4xf32>, tensor<4xf16>, tensor<4xf16>) -> (tensor<2x4x4x4xf16>, tensor<2x4x4x8xf16>, tensor<4x3x3x8xf16>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

// Tests that cbr_backward takes an input prologue only with one group.
func.func @bwd_prologue_groups(%dy: tensor<2x4x4x8xf16>, %x: tensor<2x4x4x8xf16>, %w: tensor<8x3x3x4xf16>, %v: tensor<8xf32>, %s: tensor<8xf16>) {
  // expected-error@+1 {{takes an input prologue only with groups 1, got 2}}
  %dc, %g:4 = rn.cbr_backward %dy, %x, %w, %dy, %v, %v, %v, %w, %v, %v input_prologue %s, %s stride [1, 1] pad [1, 1] dilation [1, 1] groups 2 : (tensor<2x4x4x8xf16>, tensor<2x4x4x8xf16>, tensor<8x3x3x4xf16>, tensor<2x4x4x8xf16>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8x3x3x4xf16>, tensor<8xf32>, tensor<8xf32>, tensor<8xf16>, tensor<8xf16>) -> (tensor<2x4x4x8xf16>, tensor<2x4x4x8xf16>, tensor<8x3x3x4xf16>, tensor<8xf32>, tensor<8xf32>)
  return
}
