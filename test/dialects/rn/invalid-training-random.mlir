// RUN: rn-opt %s --split-input-file --verify-diagnostics

// The random ops, dropout_train and stochastic_depth_train (probability,
// step, index and count; see Note [Random streams] in
// runtime/cpu/cpu_kernels.h), and the stochastic-depth backward.

// Tests the drop probability of dropout_train.
func.func @dropout_train_p(%x: tensor<4xf32>, %step: tensor<i32>) {
  // expected-error@+1 {{drop probability must be in [0, 1), got 1}}
  %y, %m = rn.dropout_train %x step %step p 1.000000e+00 index 0 of 1 : tensor<4xf32>, tensor<i32> -> tensor<4xf32>, tensor<4xf32>
  return
}

// -----

// Tests that the dropout mask has the input's type.
func.func @dropout_train_mask(%x: tensor<4xf32>, %step: tensor<i32>) {
  // expected-error@+1 {{mask type 'tensor<4xf16>' differs from input type 'tensor<4xf32>'}}
  %y, %m = rn.dropout_train %x step %step p 5.000000e-01 index 0 of 1 : tensor<4xf32>, tensor<i32> -> tensor<4xf32>, tensor<4xf16>
  return
}

// -----

// Tests that the step of dropout_train is an i32 scalar (the train step's
// step input, from which the random stream is formed).
func.func @dropout_train_step_type(%x: tensor<4xf32>, %step: tensor<1xi32>) {
  // expected-error@+1 {{operand #1 must be 0D tensor of 32-bit signless integer values, but got 'tensor<1xi32>'}}
  %y, %m = rn.dropout_train %x step %step p 5.000000e-01 index 0 of 1 : tensor<4xf32>, tensor<1xi32> -> tensor<4xf32>, tensor<4xf32>
  return
}

// -----

// Tests that dropout_train is given its step operand.
func.func @dropout_train_no_step(%x: tensor<4xf32>) {
  // expected-error@+1 {{expected 'step'}}
  %y, %m = rn.dropout_train %x p 5.000000e-01 index 0 of 1 : tensor<4xf32>, tensor<i32> -> tensor<4xf32>, tensor<4xf32>
  return
}

// -----

// Tests that the index of dropout_train is below its count: each dropout of
// a step needs its own random stream.
func.func @dropout_train_index(%x: tensor<4xf32>, %step: tensor<i32>) {
  // expected-error@+1 {{index must be in [0, count) = [0, 2), got 2}}
  %y, %m = rn.dropout_train %x step %step p 5.000000e-01 index 2 of 2 : tensor<4xf32>, tensor<i32> -> tensor<4xf32>, tensor<4xf32>
  return
}

// -----

// Tests that a negative index of dropout_train is refused (and not read as
// a huge unsigned one).
func.func @dropout_train_negative_index(%x: tensor<4xf32>, %step: tensor<i32>) {
  // expected-error@+1 {{index must be in [0, count) = [0, 2), got -1}}
  %y, %m = rn.dropout_train %x step %step p 5.000000e-01 index -1 of 2 : tensor<4xf32>, tensor<i32> -> tensor<4xf32>, tensor<4xf32>
  return
}

// -----

// Tests that dropout_train's count is at least 1.
func.func @dropout_train_count(%x: tensor<4xf32>, %step: tensor<i32>) {
  // expected-error@+1 {{count must be at least 1, got 0}}
  %y, %m = rn.dropout_train %x step %step p 5.000000e-01 index 0 of 0 : tensor<4xf32>, tensor<i32> -> tensor<4xf32>, tensor<4xf32>
  return
}

// -----

// Tests the drop probability of stochastic_depth_train: [0, 1].
func.func @stochastic_depth_train_p(%x: tensor<4x8xf32>, %step: tensor<i32>) {
  // expected-error@+1 {{drop probability must be in [0, 1], got 2}}
  %y, %m = rn.stochastic_depth_train %x step %step p 2.000000e+00 index 0 of 1 : tensor<4x8xf32>, tensor<i32> -> tensor<4x8xf32>, tensor<4xf32>
  return
}

// -----

// Tests that the index of stochastic_depth_train is below its count (the
// random ops of a step need distinct streams).
func.func @stochastic_depth_train_index(%x: tensor<4x8xf32>, %step: tensor<i32>) {
  // expected-error@+1 {{index must be in [0, count) = [0, 3), got 3}}
  %y, %m = rn.stochastic_depth_train %x step %step p 5.000000e-01 index 3 of 3 : tensor<4x8xf32>, tensor<i32> -> tensor<4x8xf32>, tensor<4xf32>
  return
}

// -----

// Tests that stochastic_depth_train's count is at least 1.
func.func @stochastic_depth_train_count(%x: tensor<4x8xf32>, %step: tensor<i32>) {
  // expected-error@+1 {{count must be at least 1, got 0}}
  %y, %m = rn.stochastic_depth_train %x step %step p 5.000000e-01 index 0 of 0 : tensor<4x8xf32>, tensor<i32> -> tensor<4x8xf32>, tensor<4xf32>
  return
}

// -----

// Tests that the mask holds one scale per sample, not per element.
func.func @stochastic_depth_train_mask_shape(%x: tensor<4x8xf32>, %step: tensor<i32>) {
  // expected-error@+1 {{mask must be 'tensor<4xf32>' (one f32 scale per sample of 'tensor<4x8xf32>'), got 'tensor<4x8xf32>'}}
  %y, %m = rn.stochastic_depth_train %x step %step p 5.000000e-01 index 0 of 1 : tensor<4x8xf32>, tensor<i32> -> tensor<4x8xf32>, tensor<4x8xf32>
  return
}

// -----

// Tests that the mask is f32 whatever the input's type (mixed precision).
func.func @stochastic_depth_train_mask_type(%x: tensor<4x8xf16>, %step: tensor<i32>) {
  // expected-error@+1 {{result #1 must be ranked tensor of 32-bit float values, but got 'tensor<4xf16>'}}
  %y, %m = rn.stochastic_depth_train %x step %step p 5.000000e-01 index 0 of 1 : tensor<4x8xf16>, tensor<i32> -> tensor<4x8xf16>, tensor<4xf16>
  return
}

// -----

// Tests that the result has the input's type.
func.func @stochastic_depth_train_result(%x: tensor<4x8xf32>, %step: tensor<i32>) {
  // expected-error@+1 {{result type 'tensor<4x8xf16>' differs from the expected type 'tensor<4x8xf32>'}}
  %y, %m = rn.stochastic_depth_train %x step %step p 5.000000e-01 index 0 of 1 : tensor<4x8xf32>, tensor<i32> -> tensor<4x8xf16>, tensor<4xf32>
  return
}

// -----

// Tests that stochastic_depth_train needs a batch dimension.
func.func @stochastic_depth_train_scalar(%x: tensor<f32>, %step: tensor<i32>) {
  // expected-error@+1 {{input must have a batch dimension, got 'tensor<f32>'}}
  %y, %m = rn.stochastic_depth_train %x step %step p 5.000000e-01 index 0 of 1 : tensor<f32>, tensor<i32> -> tensor<f32>, tensor<1xf32>
  return
}

// -----

// Tests that the backward's mask has one scale per sample of the gradient.
func.func @stochastic_depth_backward_mask(%dy: tensor<4x8xf32>, %m: tensor<8xf32>) {
  // expected-error@+1 {{mask must be 'tensor<4xf32>' (one f32 scale per sample of 'tensor<4x8xf32>'), got 'tensor<8xf32>'}}
  %dx = rn.stochastic_depth_backward %dy, %m : tensor<4x8xf32>, tensor<8xf32>
  return
}

// -----

// Tests that the backward's input gradient has the output gradient's type.
func.func @stochastic_depth_backward_type(%dy: tensor<4x8xf32>, %m: tensor<4xf32>) {
  // expected-error@+1 {{all of {output_grad, input_grad} have same type}}
  %dx = "rn.stochastic_depth_backward"(%dy, %m) : (tensor<4x8xf32>, tensor<4xf32>) -> tensor<4x8xf16>
  return
}
