// RUN: rn-opt %s --split-input-file --verify-diagnostics

// The backward ops: conv2d, linear, batch norm, the pools and the loss.

// Tests that a conv2d_backward output gradient has the forward output's shape.
func.func @conv_backward_dy(%dy: tensor<2x8x8x4xf32>, %x: tensor<2x8x8x3xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error@+1 {{output_grad type 'tensor<2x8x8x4xf32>' differs from the expected type 'tensor<2x4x4x4xf32>'}}
  %g = rn.conv2d_backward %dy, %x, %w, %w stride [2, 2] pad [1, 1] dilation [1, 1] groups 1 : (tensor<2x8x8x4xf32>, tensor<2x8x8x3xf32>, tensor<4x3x3x3xf32>, tensor<4x3x3x3xf32>) -> tensor<4x3x3x3xf32>
  return
}

// -----

// Tests that the filter accumulator has the filter's type.
func.func @conv_backward_acc(%dy: tensor<2x8x8x4xf32>, %x: tensor<2x8x8x3xf32>, %w: tensor<4x3x3x3xf32>, %a: tensor<4x3x3x3xf16>) {
  // expected-error@+1 {{filter_grad_acc type 'tensor<4x3x3x3xf16>' must be the filter's type 'tensor<4x3x3x3xf32>' or, with groups 1, that of its first input channels}}
  %g = rn.conv2d_backward %dy, %x, %w, %a stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 : (tensor<2x8x8x4xf32>, tensor<2x8x8x3xf32>, tensor<4x3x3x3xf32>, tensor<4x3x3x3xf16>) -> tensor<4x3x3x3xf16>
  return
}

// -----

// Tests that only an ungrouped convolution's accumulator may cover the
// filter's first input channels (rn-pad-conv-channels).
func.func @conv_backward_acc_grouped(%dy: tensor<2x8x8x4xf32>, %x: tensor<2x8x8x8xf32>, %w: tensor<4x3x3x4xf32>, %a: tensor<4x3x3x3xf32>) {
  // expected-error@+1 {{filter_grad_acc type 'tensor<4x3x3x3xf32>' must be the filter's type 'tensor<4x3x3x4xf32>' or, with groups 1, that of its first input channels}}
  %g = rn.conv2d_backward %dy, %x, %w, %a stride [1, 1] pad [1, 1] dilation [1, 1] groups 2 : (tensor<2x8x8x4xf32>, tensor<2x8x8x8xf32>, tensor<4x3x3x4xf32>, tensor<4x3x3x3xf32>) -> tensor<4x3x3x3xf32>
  return
}

// -----

// Tests that an input gradient addend comes with an input gradient result.
func.func @conv_backward_addend_without_input_grad(%dy: tensor<2x8x8x4xf32>, %x: tensor<2x8x8x3xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error@+1 {{has an input gradient addend ('plus') but no input_grad}}
  %g = rn.conv2d_backward %dy, %x, %w, %w stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 plus %x : (tensor<2x8x8x4xf32>, tensor<2x8x8x3xf32>, tensor<4x3x3x3xf32>, tensor<4x3x3x3xf32>, tensor<2x8x8x3xf32>) -> tensor<4x3x3x3xf32>
  return
}

// -----

// Tests that an input gradient addend has the input's type.
func.func @conv_backward_addend_type(%dy: tensor<2x8x8x4xf32>, %x: tensor<2x8x8x3xf32>, %w: tensor<4x3x3x3xf32>, %a: tensor<2x8x8x3xf16>) {
  // expected-error@+1 {{input gradient addend type 'tensor<2x8x8x3xf16>' differs from the expected type 'tensor<2x8x8x3xf32>'}}
  %g:2 = rn.conv2d_backward %dy, %x, %w, %w stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 plus %a : (tensor<2x8x8x4xf32>, tensor<2x8x8x3xf32>, tensor<4x3x3x3xf32>, tensor<4x3x3x3xf32>, tensor<2x8x8x3xf16>) -> (tensor<2x8x8x3xf32>, tensor<4x3x3x3xf32>)
  return
}

// -----

// Tests that conv2d_backward's result types are its optional input gradient and its filter gradient when there is no bias accumulator.
func.func @conv_backward_count(%dy: tensor<2x8x8x4xf32>, %x: tensor<2x8x8x3xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error@+1 {{expected 1 or 2 result types ([input_grad,] weight gradient), got 3}}
  %g:3 = rn.conv2d_backward %dy, %x, %w, %w stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 : (tensor<2x8x8x4xf32>, tensor<2x8x8x3xf32>, tensor<4x3x3x3xf32>, tensor<4x3x3x3xf32>) -> (tensor<2x8x8x3xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>)
  return
}

// -----

// Tests the result types of conv2d_backward.
func.func @conv_backward_types(%dy: tensor<2x8x8x4xf32>, %x: tensor<2x8x8x3xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error@+1 {{input_grad type 'tensor<2x8x8x4xf32>' differs from the expected type 'tensor<2x8x8x3xf32>'}}
  %g:2 = rn.conv2d_backward %dy, %x, %w, %w stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 : (tensor<2x8x8x4xf32>, tensor<2x8x8x3xf32>, tensor<4x3x3x3xf32>, tensor<4x3x3x3xf32>) -> (tensor<2x8x8x4xf32>, tensor<4x3x3x3xf32>)
  return
}

// -----

// Tests that linear_backward checks the forward shapes.
func.func @linear_backward_dy(%dy: tensor<2x8xf32>, %x: tensor<2x16xf32>, %w: tensor<10x16xf32>) {
  // expected-error@+1 {{output_grad type 'tensor<2x8xf32>' differs from the expected type 'tensor<2x10xf32>'}}
  %g = rn.linear_backward %dy, %x, %w, %w : (tensor<2x8xf32>, tensor<2x16xf32>, tensor<10x16xf32>, tensor<10x16xf32>) -> tensor<10x16xf32>
  return
}

// -----

// Tests that the weight accumulator has the weight's type.
func.func @linear_backward_acc(%dy: tensor<2x10xf32>, %x: tensor<2x16xf32>, %w: tensor<10x16xf32>, %a: tensor<16x10xf32>) {
  // expected-error@+1 {{weight_grad_acc type 'tensor<16x10xf32>' differs from the expected type 'tensor<10x16xf32>'}}
  %g = rn.linear_backward %dy, %x, %w, %a : (tensor<2x10xf32>, tensor<2x16xf32>, tensor<10x16xf32>, tensor<16x10xf32>) -> tensor<16x10xf32>
  return
}

// -----

// Tests that a bias accumulator adds a bias gradient result.
func.func @linear_backward_bias(%dy: tensor<2x10xf32>, %x: tensor<2x16xf32>, %w: tensor<10x16xf32>, %b: tensor<10xf32>) {
  // expected-error@+1 {{expected 2 or 3 result types ([input_grad,] weight gradient, bias_grad), got 1}}
  %g = rn.linear_backward %dy, %x, %w, %w, %b : (tensor<2x10xf32>, tensor<2x16xf32>, tensor<10x16xf32>, tensor<10x16xf32>, tensor<10xf32>) -> tensor<10x16xf32>
  return
}

// -----

// Tests that batch_norm_backward's output gradient has the input's type.
func.func @bn_backward_dy(%dy: tensor<2x4xf16>, %x: tensor<2x4xf32>, %v: tensor<4xf32>) {
  // expected-error@+1 {{output_grad type 'tensor<2x4xf16>' differs from the expected type 'tensor<2x4xf32>'}}
  %g:3 = rn.batch_norm_backward %dy, %x, %v, %v, %v, %v, %v : (tensor<2x4xf16>, tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

// Tests that the gamma accumulator has gamma's type.
func.func @bn_backward_acc(%x: tensor<2x4xf16>, %v: tensor<4xf32>, %h: tensor<4xf16>) {
  // expected-error@+1 {{weight_grad_acc type 'tensor<4xf16>' differs from the expected type 'tensor<4xf32>'}}
  %g:3 = rn.batch_norm_backward %x, %x, %v, %v, %v, %h, %v : (tensor<2x4xf16>, tensor<2x4xf16>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf16>, tensor<4xf32>) -> (tensor<2x4xf16>, tensor<4xf16>, tensor<4xf32>)
  return
}

// -----

// Tests that max_pool2d_backward checks the forward shapes.
func.func @max_pool_backward_dy(%dy: tensor<2x8x8x4xf32>, %x: tensor<2x8x8x4xf32>) {
  // expected-error@+1 {{output_grad type 'tensor<2x8x8x4xf32>' differs from the expected type 'tensor<2x4x4x4xf32>'}}
  %g = rn.max_pool2d_backward %dy, %x kernel [2, 2] stride [2, 2] pad [0, 0] : (tensor<2x8x8x4xf32>, tensor<2x8x8x4xf32>) -> tensor<2x8x8x4xf32>
  return
}

// -----

// Tests that max_pool2d_backward returns the input's type.
func.func @max_pool_backward_dx(%dy: tensor<2x4x4x4xf32>, %x: tensor<2x8x8x4xf32>) {
  // expected-error@+1 {{input_grad type 'tensor<2x8x8x8xf32>' differs from the expected type 'tensor<2x8x8x4xf32>'}}
  %g = rn.max_pool2d_backward %dy, %x kernel [2, 2] stride [2, 2] pad [0, 0] : (tensor<2x4x4x4xf32>, tensor<2x8x8x4xf32>) -> tensor<2x8x8x8xf32>
  return
}

// -----

// Tests that max_pool2d_backward sizes the output by ceil_mode.
func.func @max_pool_backward_ceil(%dy: tensor<2x3x3x4xf32>, %x: tensor<2x7x7x4xf32>) {
  // expected-error@+1 {{output_grad type 'tensor<2x3x3x4xf32>' differs from the expected type 'tensor<2x4x4x4xf32>'}}
  %g = rn.max_pool2d_backward %dy, %x kernel [2, 2] stride [2, 2] pad [0, 0] ceil_mode : (tensor<2x3x3x4xf32>, tensor<2x7x7x4xf32>) -> tensor<2x7x7x4xf32>
  return
}

// -----

// Tests that avg_pool2d_backward sizes the output by ceil_mode.
func.func @avg_pool_backward_ceil(%dy: tensor<2x3x3x4xf32>) {
  // expected-error@+1 {{output_grad type 'tensor<2x3x3x4xf32>' differs from the expected type 'tensor<2x4x4x4xf32>'}}
  %g = rn.avg_pool2d_backward %dy kernel [2, 2] stride [2, 2] pad [0, 0] ceil_mode exclude_pad : tensor<2x3x3x4xf32> -> tensor<2x7x7x4xf32>
  return
}

// -----

// Tests that avg_pool2d_backward checks the forward shapes.
func.func @avg_pool_backward(%dy: tensor<2x4x4x4xf32>) {
  // expected-error@+1 {{output_grad type 'tensor<2x4x4x4xf32>' differs from the expected type 'tensor<2x3x3x4xf32>'}}
  %g = rn.avg_pool2d_backward %dy kernel [2, 2] stride [2, 2] pad [0, 0] : tensor<2x4x4x4xf32> -> tensor<2x6x6x4xf32>
  return
}

// -----

// Tests that global_avg_pool_backward checks the forward shapes.
func.func @gap_backward(%dy: tensor<2x1x1x4xf32>) {
  // expected-error@+1 {{output_grad type 'tensor<2x1x1x4xf32>' differs from the expected type 'tensor<2x1x1x8xf32>'}}
  %g = rn.global_avg_pool_backward %dy : tensor<2x1x1x4xf32> -> tensor<2x8x8x8xf32>
  return
}

// -----

// Tests that the loss gradient has the logits' type.
func.func @loss_backward_type(%l: tensor<2x10xf16>, %y: tensor<2xi32>) {
  // expected-error@+1 {{logits_grad type 'tensor<2x10xf32>' differs from the expected type 'tensor<2x10xf16>'}}
  %g = rn.softmax_cross_entropy_backward %l, %y label_smoothing 0.000000e+00 : (tensor<2x10xf16>, tensor<2xi32>) -> tensor<2x10xf32>
  return
}

// -----

// Tests the label check of the loss gradient.
func.func @loss_backward_labels(%l: tensor<2x10xf32>, %y: tensor<3xi32>) {
  // expected-error@+1 {{labels hold 3 entries but the logits have a batch of 2}}
  %g = rn.softmax_cross_entropy_backward %l, %y label_smoothing 0.000000e+00 : (tensor<2x10xf32>, tensor<3xi32>) -> tensor<2x10xf32>
  return
}

// -----

// Tests the label smoothing of the loss gradient.
func.func @loss_backward_smoothing(%l: tensor<2x10xf32>, %y: tensor<2xi32>) {
  // expected-error@+1 {{label smoothing must be in [0, 1), got 1}}
  %g = rn.softmax_cross_entropy_backward %l, %y label_smoothing 1.000000e+00 : (tensor<2x10xf32>, tensor<2xi32>) -> tensor<2x10xf32>
  return
}
