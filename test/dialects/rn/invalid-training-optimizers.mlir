// RUN: rn-opt %s --split-input-file --verify-diagnostics

// The optimizer updates, one tensor and multi-tensor: SGD, AdamW, LARS and
// EMA.

// Tests that SGD operands share the parameter's type.
func.func @sgd_types(%w: tensor<4xf32>, %g: tensor<4xf16>, %lr: tensor<f32>) {
  // expected-error@+1 {{grad type 'tensor<4xf16>' differs from param type 'tensor<4xf32>'}}
  %0 = rn.sgd_update %w, %g lr %lr momentum 0.000000e+00 weight_decay 0.000000e+00 : (tensor<4xf32>, tensor<4xf16>, tensor<f32>) -> tensor<4xf32>
  return
}

// -----

// Tests the SGD momentum range.
func.func @sgd_momentum_range(%w: tensor<4xf32>, %lr: tensor<f32>) {
  // expected-error@+1 {{momentum must be in [0, 1), got 1}}
  %0:2 = rn.sgd_update %w, %w, %w lr %lr momentum 1.000000e+00 weight_decay 0.000000e+00 : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>) -> (tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

// Tests that weight decay is non-negative.
func.func @sgd_decay(%w: tensor<4xf32>, %lr: tensor<f32>) {
  // expected-error@+1 {{weight decay must be non-negative, got -1}}
  %0 = rn.sgd_update %w, %w lr %lr momentum 0.000000e+00 weight_decay -1.000000e+00 : (tensor<4xf32>, tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  return
}

// -----

// Tests that momentum needs a buffer.
func.func @sgd_missing_buffer(%w: tensor<4xf32>, %lr: tensor<f32>) {
  // expected-error@+1 {{needs a momentum buffer for momentum 0.9}}
  %0 = rn.sgd_update %w, %w lr %lr momentum 9.000000e-01 weight_decay 0.000000e+00 : (tensor<4xf32>, tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  return
}

// -----

// Tests that a buffer without momentum is rejected.
func.func @sgd_stray_buffer(%w: tensor<4xf32>, %lr: tensor<f32>) {
  // expected-error@+1 {{has a momentum buffer but momentum is 0}}
  %0:2 = rn.sgd_update %w, %w, %w lr %lr momentum 0.000000e+00 weight_decay 0.000000e+00 : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>) -> (tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

// Tests that the updated buffer is returned.
func.func @sgd_buffer_result(%w: tensor<4xf32>, %lr: tensor<f32>) {
  // expected-error@+1 {{returns the momentum buffer exactly when it takes one}}
  %0 = rn.sgd_update %w, %w, %w lr %lr momentum 9.000000e-01 weight_decay 0.000000e+00 : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  return
}

// -----

// Tests that Nesterov needs momentum.
func.func @sgd_nesterov(%w: tensor<4xf32>, %lr: tensor<f32>) {
  // expected-error@+1 {{Nesterov momentum needs momentum > 0}}
  %0 = rn.sgd_update %w, %w lr %lr momentum 0.000000e+00 weight_decay 0.000000e+00 nesterov : (tensor<4xf32>, tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  return
}

// -----

// Tests that a multi-tensor SGD update has at least one parameter.
func.func @multi_sgd_empty(%lr: tensor<f32>) {
  // expected-error@+1 {{needs at least one param}}
  rn.multi_sgd_update params() grads() lr %lr momentum 0.000000e+00 weight_decay 0.000000e+00 : (tensor<f32>) -> ()
  return
}

// -----

// Tests that a multi-tensor SGD update takes one grad per param.
func.func @multi_sgd_grads(%w: tensor<4xf32>, %lr: tensor<f32>) {
  // expected-error@+1 {{takes one grad per param: 2 params, 1 grads}}
  %0:2 = rn.multi_sgd_update params(%w, %w) grads(%w) lr %lr momentum 0.000000e+00 weight_decay 0.000000e+00 : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>) -> (tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

// Tests that momentum needs one buffer per param.
func.func @multi_sgd_buffers(%w: tensor<4xf32>, %lr: tensor<f32>) {
  // expected-error@+1 {{takes one momentum_buffer per param: 2 params, 1 momentum_buffers}}
  %0:3 = rn.multi_sgd_update params(%w, %w) grads(%w, %w) momentum_buffers(%w) lr %lr momentum 9.000000e-01 weight_decay 0.000000e+00 : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

// Tests that buffers without momentum are rejected.
func.func @multi_sgd_stray_buffers(%w: tensor<4xf32>, %lr: tensor<f32>) {
  // expected-error@+1 {{has momentum buffers but momentum is 0}}
  %0:2 = rn.multi_sgd_update params(%w) grads(%w) momentum_buffers(%w) lr %lr momentum 0.000000e+00 weight_decay 0.000000e+00 : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>) -> (tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

// Tests that the new params and buffers are all returned.
func.func @multi_sgd_results(%w: tensor<4xf32>, %lr: tensor<f32>) {
  // expected-error@+1 {{returns the new params and momentum buffers (4 results), got 3}}
  %0:3 = rn.multi_sgd_update params(%w, %w) grads(%w, %w) momentum_buffers(%w, %w) lr %lr momentum 9.000000e-01 weight_decay 0.000000e+00 : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

// Tests that a group has one element type.
func.func @multi_sgd_element_type(%w: tensor<4xf32>, %h: tensor<4xf16>, %lr: tensor<f32>) {
  // expected-error@+1 {{params #1 element type 'f16' differs from params #0 element type 'f32' (one element type per group)}}
  %0:2 = rn.multi_sgd_update params(%w, %h) grads(%w, %h) lr %lr momentum 0.000000e+00 weight_decay 0.000000e+00 : (tensor<4xf32>, tensor<4xf16>, tensor<4xf32>, tensor<4xf16>, tensor<f32>) -> (tensor<4xf32>, tensor<4xf16>)
  return
}

// -----

// Tests that each tensor's grad, buffer and results have its param's type.
func.func @multi_sgd_types(%w: tensor<4xf32>, %v: tensor<8xf32>, %lr: tensor<f32>) {
  // expected-error@+1 {{momentum_buffers #1 type 'tensor<4xf32>' differs from params #1 type 'tensor<8xf32>'}}
  %0:4 = rn.multi_sgd_update params(%w, %v) grads(%w, %v) momentum_buffers(%w, %w) lr %lr momentum 9.000000e-01 weight_decay 0.000000e+00 : (tensor<4xf32>, tensor<8xf32>, tensor<4xf32>, tensor<8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>) -> (tensor<4xf32>, tensor<8xf32>, tensor<4xf32>, tensor<8xf32>)
  return
}

// -----

// Tests that a result has its param's type.
func.func @multi_sgd_result_type(%w: tensor<4xf32>, %v: tensor<8xf32>, %lr: tensor<f32>) {
  // expected-error@+1 {{new_params #0 type 'tensor<8xf32>' differs from params #0 type 'tensor<4xf32>'}}
  %0:2 = rn.multi_sgd_update params(%w, %v) grads(%w, %v) lr %lr momentum 0.000000e+00 weight_decay 0.000000e+00 : (tensor<4xf32>, tensor<8xf32>, tensor<4xf32>, tensor<8xf32>, tensor<f32>) -> (tensor<8xf32>, tensor<8xf32>)
  return
}

// -----

// Tests the multi-tensor SGD momentum range.
func.func @multi_sgd_momentum(%w: tensor<4xf32>, %lr: tensor<f32>) {
  // expected-error@+1 {{momentum must be in [0, 1), got 1}}
  %0:2 = rn.multi_sgd_update params(%w) grads(%w) momentum_buffers(%w) lr %lr momentum 1.000000e+00 weight_decay 0.000000e+00 : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>) -> (tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

// Tests that the multi-tensor SGD weight decay is non-negative.
func.func @multi_sgd_decay(%w: tensor<4xf32>, %lr: tensor<f32>) {
  // expected-error@+1 {{weight decay must be non-negative, got -1}}
  %0 = rn.multi_sgd_update params(%w) grads(%w) lr %lr momentum 0.000000e+00 weight_decay -1.000000e+00 : (tensor<4xf32>, tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  return
}

// -----

// Tests that multi-tensor Nesterov needs momentum.
func.func @multi_sgd_nesterov(%w: tensor<4xf32>, %lr: tensor<f32>) {
  // expected-error@+1 {{Nesterov momentum needs momentum > 0}}
  %0 = rn.multi_sgd_update params(%w) grads(%w) lr %lr momentum 0.000000e+00 weight_decay 0.000000e+00 nesterov : (tensor<4xf32>, tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  return
}

// -----

// Tests that a multi-tensor AdamW update takes one of each moment per param.
func.func @multi_adamw_moments(%w: tensor<4xf32>, %lr: tensor<f32>, %t: tensor<i32>) {
  // expected-error@+1 {{takes one exp_avg_sq per param: 2 params, 1 exp_avg_sqs}}
  %0:6 = rn.multi_adamw_update params(%w, %w) grads(%w, %w) exp_avgs(%w, %w) exp_avg_sqs(%w) lr %lr step %t betas(9.000000e-01, 5.000000e-01) eps 1.000000e-08 weight_decay 0.000000e+00 : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<i32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

// Tests that the new params and moments are all returned.
func.func @multi_adamw_results(%w: tensor<4xf32>, %lr: tensor<f32>, %t: tensor<i32>) {
  // expected-error@+1 {{returns the new params, exp_avgs and exp_avg_sqs (3 results), got 2}}
  %0:2 = rn.multi_adamw_update params(%w) grads(%w) exp_avgs(%w) exp_avg_sqs(%w) lr %lr step %t betas(9.000000e-01, 5.000000e-01) eps 1.000000e-08 weight_decay 0.000000e+00 : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<i32>) -> (tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

// Tests that a multi-tensor AdamW group has one element type.
func.func @multi_adamw_element_type(%w: tensor<4xf32>, %h: tensor<4xbf16>, %lr: tensor<f32>, %t: tensor<i32>) {
  // expected-error@+1 {{params #1 element type 'bf16' differs from params #0 element type 'f32' (one element type per group)}}
  %0:6 = rn.multi_adamw_update params(%w, %h) grads(%w, %h) exp_avgs(%w, %h) exp_avg_sqs(%w, %h) lr %lr step %t betas(9.000000e-01, 5.000000e-01) eps 1.000000e-08 weight_decay 0.000000e+00 : (tensor<4xf32>, tensor<4xbf16>, tensor<4xf32>, tensor<4xbf16>, tensor<4xf32>, tensor<4xbf16>, tensor<4xf32>, tensor<4xbf16>, tensor<f32>, tensor<i32>) -> (tensor<4xf32>, tensor<4xbf16>, tensor<4xf32>, tensor<4xbf16>, tensor<4xf32>, tensor<4xbf16>)
  return
}

// -----

// Tests that each moment has its param's type.
func.func @multi_adamw_types(%w: tensor<4xf32>, %v: tensor<8xf32>, %lr: tensor<f32>, %t: tensor<i32>) {
  // expected-error@+1 {{exp_avgs #1 type 'tensor<4xf32>' differs from params #1 type 'tensor<8xf32>'}}
  %0:6 = rn.multi_adamw_update params(%w, %v) grads(%w, %v) exp_avgs(%w, %w) exp_avg_sqs(%w, %v) lr %lr step %t betas(9.000000e-01, 5.000000e-01) eps 1.000000e-08 weight_decay 0.000000e+00 : (tensor<4xf32>, tensor<8xf32>, tensor<4xf32>, tensor<8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<8xf32>, tensor<f32>, tensor<i32>) -> (tensor<4xf32>, tensor<8xf32>, tensor<4xf32>, tensor<8xf32>, tensor<4xf32>, tensor<8xf32>)
  return
}

// -----

// Tests the multi-tensor AdamW attributes (beta2 here; epsilon and weight
// decay as rn.adamw_update's).
func.func @multi_adamw_beta(%w: tensor<4xf32>, %lr: tensor<f32>, %t: tensor<i32>) {
  // expected-error@+1 {{beta2 must be in [0, 1), got 1}}
  %0:3 = rn.multi_adamw_update params(%w) grads(%w) exp_avgs(%w) exp_avg_sqs(%w) lr %lr step %t betas(9.000000e-01, 1.000000e+00) eps 1.000000e-08 weight_decay 0.000000e+00 : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<i32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

// Tests that the multi-tensor AdamW epsilon is positive.
func.func @multi_adamw_epsilon(%w: tensor<4xf32>, %lr: tensor<f32>, %t: tensor<i32>) {
  // expected-error@+1 {{epsilon must be positive, got 0}}
  %0:3 = rn.multi_adamw_update params(%w) grads(%w) exp_avgs(%w) exp_avg_sqs(%w) lr %lr step %t betas(9.000000e-01, 5.000000e-01) eps 0.000000e+00 weight_decay 0.000000e+00 : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<i32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

// Tests that a multi-tensor AdamW update has at least one parameter.
func.func @multi_adamw_empty(%lr: tensor<f32>, %t: tensor<i32>) {
  // expected-error@+1 {{needs at least one param}}
  rn.multi_adamw_update params() grads() exp_avgs() exp_avg_sqs() lr %lr step %t betas(9.000000e-01, 5.000000e-01) eps 1.000000e-08 weight_decay 0.000000e+00 : (tensor<f32>, tensor<i32>) -> ()
  return
}

// -----

// Tests the AdamW betas.
func.func @adamw_beta(%w: tensor<4xf32>, %lr: tensor<f32>, %t: tensor<i32>) {
  // expected-error@+1 {{beta2 must be in [0, 1), got 1}}
  %0:3 = rn.adamw_update %w, %w, %w, %w lr %lr step %t betas(9.000000e-01, 1.000000e+00) eps 1.000000e-08 weight_decay 0.000000e+00 : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<i32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

// Tests the AdamW epsilon.
func.func @adamw_eps(%w: tensor<4xf32>, %lr: tensor<f32>, %t: tensor<i32>) {
  // expected-error@+1 {{epsilon must be positive, got 0}}
  %0:3 = rn.adamw_update %w, %w, %w, %w lr %lr step %t betas(9.000000e-01, 9.000000e-01) eps 0.000000e+00 weight_decay 0.000000e+00 : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<i32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

// Tests that AdamW moments share the parameter's type.
func.func @adamw_types(%w: tensor<4xf32>, %h: tensor<4xf16>, %lr: tensor<f32>, %t: tensor<i32>) {
  // expected-error@+1 {{exp_avg type 'tensor<4xf16>' differs from param type 'tensor<4xf32>'}}
  %0:3 = rn.adamw_update %w, %w, %h, %w lr %lr step %t betas(9.000000e-01, 9.000000e-01) eps 1.000000e-08 weight_decay 0.000000e+00 : (tensor<4xf32>, tensor<4xf32>, tensor<4xf16>, tensor<4xf32>, tensor<f32>, tensor<i32>) -> (tensor<4xf32>, tensor<4xf16>, tensor<4xf32>)
  return
}

// -----

// Tests the LARS trust coefficient.
func.func @lars_trust(%w: tensor<4xf32>, %lr: tensor<f32>) {
  // expected-error@+1 {{trust coefficient must be positive, got 0}}
  %0:2 = rn.lars_update %w, %w, %w lr %lr momentum 9.000000e-01 weight_decay 0.000000e+00 trust 0.000000e+00 eps 0.000000e+00 : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>) -> (tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

// Tests the LARS epsilon.
func.func @lars_eps(%w: tensor<4xf32>, %lr: tensor<f32>) {
  // expected-error@+1 {{epsilon must be non-negative, got -1}}
  %0:2 = rn.lars_update %w, %w, %w lr %lr momentum 9.000000e-01 weight_decay 0.000000e+00 trust 1.000000e-03 eps -1.000000e+00 : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>) -> (tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

// Tests that a multi-tensor LARS update has at least one parameter.
func.func @multi_lars_empty(%lr: tensor<f32>) {
  // expected-error@+1 {{needs at least one param}}
  rn.multi_lars_update params() grads() momentum_buffers() lr %lr momentum 9.000000e-01 weight_decay 0.000000e+00 trust 1.000000e-03 eps 0.000000e+00 : (tensor<f32>) -> ()
  return
}

// -----

// Tests that a multi-tensor LARS update takes one grad per param.
func.func @multi_lars_grads(%w: tensor<4xf32>, %lr: tensor<f32>) {
  // expected-error@+1 {{takes one grad per param: 2 params, 1 grads}}
  %0:4 = rn.multi_lars_update params(%w, %w) grads(%w) momentum_buffers(%w, %w) lr %lr momentum 9.000000e-01 weight_decay 0.000000e+00 trust 1.000000e-03 eps 0.000000e+00 : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

// Tests that a multi-tensor LARS update takes one momentum buffer per param.
func.func @multi_lars_buffers(%w: tensor<4xf32>, %lr: tensor<f32>) {
  // expected-error@+1 {{takes one momentum_buffer per param: 2 params, 1 momentum_buffers}}
  %0:4 = rn.multi_lars_update params(%w, %w) grads(%w, %w) momentum_buffers(%w) lr %lr momentum 9.000000e-01 weight_decay 0.000000e+00 trust 1.000000e-03 eps 0.000000e+00 : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

// Tests that the new params and momentum buffers are all returned.
func.func @multi_lars_results(%w: tensor<4xf32>, %lr: tensor<f32>) {
  // expected-error@+1 {{returns the new params and momentum buffers (4 results), got 3}}
  %0:3 = rn.multi_lars_update params(%w, %w) grads(%w, %w) momentum_buffers(%w, %w) lr %lr momentum 9.000000e-01 weight_decay 0.000000e+00 trust 1.000000e-03 eps 0.000000e+00 : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

// Tests that a multi-tensor LARS group has one element type.
func.func @multi_lars_element_type(%w: tensor<4xf32>, %h: tensor<4xf16>, %lr: tensor<f32>) {
  // expected-error@+1 {{params #1 element type 'f16' differs from params #0 element type 'f32' (one element type per group)}}
  %0:4 = rn.multi_lars_update params(%w, %h) grads(%w, %h) momentum_buffers(%w, %h) lr %lr momentum 9.000000e-01 weight_decay 0.000000e+00 trust 1.000000e-03 eps 0.000000e+00 : (tensor<4xf32>, tensor<4xf16>, tensor<4xf32>, tensor<4xf16>, tensor<4xf32>, tensor<4xf16>, tensor<f32>) -> (tensor<4xf32>, tensor<4xf16>, tensor<4xf32>, tensor<4xf16>)
  return
}

// -----

// Tests that each tensor's momentum buffer has its param's type.
func.func @multi_lars_types(%w: tensor<4xf32>, %v: tensor<8xf32>, %lr: tensor<f32>) {
  // expected-error@+1 {{momentum_buffers #1 type 'tensor<4xf32>' differs from params #1 type 'tensor<8xf32>'}}
  %0:4 = rn.multi_lars_update params(%w, %v) grads(%w, %v) momentum_buffers(%w, %w) lr %lr momentum 9.000000e-01 weight_decay 0.000000e+00 trust 1.000000e-03 eps 0.000000e+00 : (tensor<4xf32>, tensor<8xf32>, tensor<4xf32>, tensor<8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>) -> (tensor<4xf32>, tensor<8xf32>, tensor<4xf32>, tensor<8xf32>)
  return
}

// -----

// Tests that each new momentum buffer has its param's type.
func.func @multi_lars_result_type(%w: tensor<4xf32>, %v: tensor<8xf32>, %lr: tensor<f32>) {
  // expected-error@+1 {{new_momentum_buffers #0 type 'tensor<8xf32>' differs from params #0 type 'tensor<4xf32>'}}
  %0:4 = rn.multi_lars_update params(%w, %v) grads(%w, %v) momentum_buffers(%w, %v) lr %lr momentum 9.000000e-01 weight_decay 0.000000e+00 trust 1.000000e-03 eps 0.000000e+00 : (tensor<4xf32>, tensor<8xf32>, tensor<4xf32>, tensor<8xf32>, tensor<4xf32>, tensor<8xf32>, tensor<f32>) -> (tensor<4xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>)
  return
}

// -----

// Tests the multi-tensor LARS momentum range.
func.func @multi_lars_momentum(%w: tensor<4xf32>, %lr: tensor<f32>) {
  // expected-error@+1 {{momentum must be in [0, 1), got 1}}
  %0:2 = rn.multi_lars_update params(%w) grads(%w) momentum_buffers(%w) lr %lr momentum 1.000000e+00 weight_decay 0.000000e+00 trust 1.000000e-03 eps 0.000000e+00 : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>) -> (tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

// Tests that the multi-tensor LARS weight decay is non-negative.
func.func @multi_lars_decay(%w: tensor<4xf32>, %lr: tensor<f32>) {
  // expected-error@+1 {{weight decay must be non-negative, got -1}}
  %0:2 = rn.multi_lars_update params(%w) grads(%w) momentum_buffers(%w) lr %lr momentum 9.000000e-01 weight_decay -1.000000e+00 trust 1.000000e-03 eps 0.000000e+00 : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>) -> (tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

// Tests the multi-tensor LARS trust coefficient.
func.func @multi_lars_trust(%w: tensor<4xf32>, %lr: tensor<f32>) {
  // expected-error@+1 {{trust coefficient must be positive, got 0}}
  %0:2 = rn.multi_lars_update params(%w) grads(%w) momentum_buffers(%w) lr %lr momentum 9.000000e-01 weight_decay 0.000000e+00 trust 0.000000e+00 eps 0.000000e+00 : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>) -> (tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

// Tests the multi-tensor LARS epsilon.
func.func @multi_lars_eps(%w: tensor<4xf32>, %lr: tensor<f32>) {
  // expected-error@+1 {{epsilon must be non-negative, got -1}}
  %0:2 = rn.multi_lars_update params(%w) grads(%w) momentum_buffers(%w) lr %lr momentum 9.000000e-01 weight_decay 0.000000e+00 trust 1.000000e-03 eps -1.000000e+00 : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>) -> (tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

// Tests the EMA decay.
func.func @ema_decay(%w: tensor<4xf32>) {
  // expected-error@+1 {{decay must be in [0, 1), got 1}}
  %0 = rn.ema_update %w, %w decay 1.000000e+00 : tensor<4xf32>
  return
}

// -----

// Tests that a multi-tensor EMA takes one param of each average's type.
func.func @multi_ema_params(%a: tensor<4xf32>, %p: tensor<2xf32>) {
  // expected-error@+1 {{'rn.multi_ema_update' op takes one param of each average's type}}
  %0 = rn.multi_ema_update averages(%a) params(%p) decay 5.000000e-01 : (tensor<4xf32>, tensor<2xf32>) -> tensor<4xf32>
  return
}

// -----

// Tests that a multi-tensor EMA's decay is in [0, 1).
func.func @multi_ema_decay(%a: tensor<4xf32>, %p: tensor<4xf32>) {
  // expected-error@+1 {{'rn.multi_ema_update' op decay must be in [0, 1)}}
  %0 = rn.multi_ema_update averages(%a) params(%p) decay 1.000000e+00 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return
}
