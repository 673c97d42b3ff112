// RUN: rn-opt %s --split-input-file --verify-diagnostics

// Loss scaling: check_finite, unscale and the dynamic scale update.

// Tests that check_finite needs a tensor.
func.func @check_finite_empty() {
  // expected-error@+1 {{needs at least one tensor to check}}
  %0 = "rn.check_finite"() : () -> tensor<i1>
  return
}

// -----

// Tests that unscale keeps the gradient's type.
func.func @unscale_type(%g: tensor<4xf32>, %s: tensor<f32>) {
  // expected-error@+1 {{result type 'tensor<4xf16>' differs from the expected type 'tensor<4xf32>'}}
  %0 = rn.unscale %g, %s : (tensor<4xf32>, tensor<f32>) -> tensor<4xf16>
  return
}

// -----

// Tests the growth factor of dynamic loss scaling.
func.func @loss_scale_growth(%s: tensor<f32>, %n: tensor<i32>, %f: tensor<i1>) {
  // expected-error@+1 {{growth factor must be greater than 1, got 1}}
  %a, %b = rn.update_loss_scale %s, %n, %f growth 1.000000e+00 backoff 5.000000e-01 interval 2000 : (tensor<f32>, tensor<i32>, tensor<i1>) -> (tensor<f32>, tensor<i32>)
  return
}

// -----

// Tests the backoff factor of dynamic loss scaling.
func.func @loss_scale_backoff(%s: tensor<f32>, %n: tensor<i32>, %f: tensor<i1>) {
  // expected-error@+1 {{backoff factor must be in [0, 1), got 2}}
  %a, %b = rn.update_loss_scale %s, %n, %f growth 2.000000e+00 backoff 2.000000e+00 interval 2000 : (tensor<f32>, tensor<i32>, tensor<i1>) -> (tensor<f32>, tensor<i32>)
  return
}

// -----

// Tests that a zero backoff is rejected.
func.func @loss_scale_backoff_zero(%s: tensor<f32>, %n: tensor<i32>, %f: tensor<i1>) {
  // expected-error@+1 {{backoff factor must be positive}}
  %a, %b = rn.update_loss_scale %s, %n, %f growth 2.000000e+00 backoff 0.000000e+00 interval 2000 : (tensor<f32>, tensor<i32>, tensor<i1>) -> (tensor<f32>, tensor<i32>)
  return
}

// -----

// Tests the growth interval of dynamic loss scaling.
func.func @loss_scale_interval(%s: tensor<f32>, %n: tensor<i32>, %f: tensor<i1>) {
  // expected-error@+1 {{growth interval must be at least 1, got 0}}
  %a, %b = rn.update_loss_scale %s, %n, %f growth 2.000000e+00 backoff 5.000000e-01 interval 0 : (tensor<f32>, tensor<i32>, tensor<i1>) -> (tensor<f32>, tensor<i32>)
  return
}
