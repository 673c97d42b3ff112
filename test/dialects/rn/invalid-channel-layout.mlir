// RUN: rn-opt %s --split-input-file --verify-diagnostics

// Tests that concat joins at least two inputs.
func.func @concat_one_input(%a: tensor<2x4x4x3xf32>) {
  // expected-error@+1 {{expects at least 2 inputs, got 1}}
  %0 = rn.concat %a : (tensor<2x4x4x3xf32>) -> tensor<2x4x4x3xf32>
  return
}

// -----

// Tests that concat's result is NHWC or [N, C].
func.func @concat_rank(%a: tensor<2x4x3xf32>) {
  // expected-error@+1 {{result must be NHWC (rank 4) or [N, C] (rank 2), got 'tensor<2x4x6xf32>'}}
  %0 = rn.concat %a, %a : (tensor<2x4x3xf32>, tensor<2x4x3xf32>) -> tensor<2x4x6xf32>
  return
}

// -----

// Tests that concat's inputs share the result's leading dimensions.
func.func @concat_spatial(%a: tensor<2x4x4x3xf32>, %b: tensor<2x2x2x5xf32>) {
  // expected-error@+1 {{input #1 'tensor<2x2x2x5xf32>' must match all but the last dimension of result 'tensor<2x4x4x8xf32>'}}
  %0 = rn.concat %a, %b : (tensor<2x4x4x3xf32>, tensor<2x2x2x5xf32>) -> tensor<2x4x4x8xf32>
  return
}

// -----

// Tests that concat's inputs have the result's rank.
func.func @concat_input_rank(%a: tensor<2x4x4x3xf32>, %b: tensor<2x5xf32>) {
  // expected-error@+1 {{input #1 must have rank 4 as result 'tensor<2x4x4x8xf32>', got 'tensor<2x5xf32>'}}
  %0 = rn.concat %a, %b : (tensor<2x4x4x3xf32>, tensor<2x5xf32>) -> tensor<2x4x4x8xf32>
  return
}

// -----

// Tests that concat's inputs have the result's element type.
func.func @concat_element_type(%a: tensor<2x4x4x3xf32>, %b: tensor<2x4x4x5xf16>) {
  // expected-error@+1 {{element type mismatch: input #1 is 'f16' but result is 'f32'}}
  %0 = rn.concat %a, %b : (tensor<2x4x4x3xf32>, tensor<2x4x4x5xf16>) -> tensor<2x4x4x8xf32>
  return
}

// -----

// Tests that concat's result is as wide as its inputs together.
func.func @concat_channels(%a: tensor<2x4x4x3xf32>, %b: tensor<2x4x4x5xf32>) {
  // expected-error@+1 {{the inputs' channels add up to 8, but result 'tensor<2x4x4x9xf32>' has 9}}
  %0 = rn.concat %a, %b : (tensor<2x4x4x3xf32>, tensor<2x4x4x5xf32>) -> tensor<2x4x4x9xf32>
  return
}

// -----

// Tests that split's slices add up to its input.
func.func @split_channels(%x: tensor<2x8xf32>) {
  // expected-error@+1 {{the results' channels add up to 7, but input 'tensor<2x8xf32>' has 8}}
  %0:2 = rn.split %x : tensor<2x8xf32> -> tensor<2x4xf32>, tensor<2x3xf32>
  return
}

// -----

// Tests that split makes at least two slices.
func.func @split_one_result(%x: tensor<2x8xf32>) {
  // expected-error@+1 {{expects at least 2 results, got 1}}
  %0 = rn.split %x : tensor<2x8xf32> -> tensor<2x8xf32>
  return
}

// -----

// Tests that a split's slice has at least one channel.
func.func @split_empty_slice(%x: tensor<2x8xf32>) {
  // expected-error@+1 {{result #1 must have at least one channel, got 'tensor<2x0xf32>'}}
  %0:2 = rn.split %x : tensor<2x8xf32> -> tensor<2x8xf32>, tensor<2x0xf32>
  return
}

// -----

// Tests that channel_shuffle's groups divide the channels.
func.func @channel_shuffle_groups(%x: tensor<2x4x4x6xf32>) {
  // expected-error@+1 {{groups 4 must be positive and divide the 6 channels of 'tensor<2x4x4x6xf32>'}}
  %0 = rn.channel_shuffle %x groups 4 : tensor<2x4x4x6xf32>
  return
}

// -----

// Tests that channel_shuffle takes NHWC tensors.
func.func @channel_shuffle_rank(%x: tensor<2x6xf32>) {
  // expected-error@+1 {{input must be NHWC (rank 4), got 'tensor<2x6xf32>'}}
  %0 = rn.channel_shuffle %x groups 2 : tensor<2x6xf32>
  return
}
