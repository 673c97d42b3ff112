// RUN: rn-opt %s --split-input-file --verify-diagnostics

// The grouped elementwise ops (multi_zero, multi_unscale, multi_cast) and
// the data-parallel all-reduce with its bucket index.

// Tests that an all-reduce needs a tensor.
func.func @all_reduce_empty() {
  // expected-error@+1 {{needs at least one tensor to reduce}}
  "rn.all_reduce_mean"() : () -> ()
  return
}

// -----

// Tests that an all-reduce keeps the types.
func.func @all_reduce_types(%g: tensor<4xf32>) {
  // expected-error@+1 {{results must have the types of the inputs}}
  %0 = "rn.all_reduce_mean"(%g) : (tensor<4xf32>) -> tensor<4xf16>
  return
}

// -----

// Tests that a multi-tensor zero needs a tensor.
func.func @multi_zero_empty() {
  // expected-error@+1 {{'rn.multi_zero' op needs at least one tensor}}
  "rn.multi_zero"() : () -> ()
  return
}

// -----

// Tests that a multi-tensor zero keeps the types.
func.func @multi_zero_types(%g: tensor<4xf32>) {
  // expected-error@+1 {{'rn.multi_zero' op results must have the types of the inputs (1 inputs, 1 results)}}
  %0 = "rn.multi_zero"(%g) : (tensor<4xf32>) -> tensor<4xf16>
  return
}

// -----

// Tests that a multi-tensor unscale has one element type (one kernel).
func.func @multi_unscale_element_types(%a: tensor<4xf32>, %b: tensor<4xf16>, %s: tensor<f32>) {
  // expected-error@+1 {{'rn.multi_unscale' op has one element type: tensor #1 is 'f16', tensor #0 'f32'}}
  %0:2 = rn.multi_unscale grads(%a, %b) scale %s : (tensor<4xf32>, tensor<4xf16>, tensor<f32>) -> (tensor<4xf32>, tensor<4xf16>)
  return
}

// -----

// Tests that a multi-tensor unscale returns one result per grad.
func.func @multi_unscale_results(%a: tensor<4xf32>, %b: tensor<4xf32>, %s: tensor<f32>) {
  // expected-error@+1 {{'rn.multi_unscale' op results must have the types of the inputs (2 inputs, 1 results)}}
  %0 = rn.multi_unscale grads(%a, %b) scale %s : (tensor<4xf32>, tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  return
}

// -----

// Tests that a multi-tensor cast changes the element type.
func.func @multi_cast_to_itself(%a: tensor<4xf32>) {
  // expected-error@+1 {{'rn.multi_cast' op casts 'f32' to itself}}
  %0 = rn.multi_cast %a : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

// Tests that a multi-tensor cast converts one element type to one other.
func.func @multi_cast_types(%a: tensor<4xf32>, %b: tensor<4xf16>) {
  // expected-error@+1 {{'rn.multi_cast' op converts one element type to one other: tensor #1 is 'f16' -> 'f16', tensor #0 'f32' -> 'f16'}}
  %0:2 = rn.multi_cast %a, %b : (tensor<4xf32>, tensor<4xf16>) -> (tensor<4xf16>, tensor<4xf16>)
  return
}

// -----

// Tests that a multi-tensor cast keeps each shape.
func.func @multi_cast_shape(%a: tensor<4xf32>) {
  // expected-error@+1 {{'rn.multi_cast' op result #0 must have the shape of input #0}}
  %0 = rn.multi_cast %a : (tensor<4xf32>) -> tensor<2xf16>
  return
}

// -----

// Tests that a multi-tensor cast returns one result per input.
func.func @multi_cast_results(%a: tensor<4xf32>, %b: tensor<4xf32>) {
  // expected-error@+1 {{'rn.multi_cast' op returns one result per input (2 inputs, 1 results)}}
  %0 = rn.multi_cast %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf16>
  return
}

// -----

// Tests that an all-reduce bucket's index is a non-negative integer.
func.func @bucket_index(%g: tensor<4xf32>) {
  // expected-error@+1 {{'rn.bucket' must be a non-negative bucket index}}
  %0 = rn.all_reduce_mean %g {rn.bucket = -1 : i64} : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

// Tests that only an all-reduce bucket and its casts carry a bucket index.
func.func @bucket_on_other_op(%g: tensor<4xf32>) {
  // expected-error@+1 {{'rn.bucket' belongs on an all-reduce bucket or its casts}}
  %0 = rn.relu %g {rn.bucket = 0 : i64} : tensor<4xf32>
  return
}
