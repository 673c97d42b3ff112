// RUN: rn-opt %s --split-input-file --verify-diagnostics

// The training-step forms of forward ops: casts and reshapes, batch norm
// (train, inference, running statistics), the channel pad of the stem and
// count_correct.

// Tests that a cast changes the element type.
func.func @cast_same(%x: tensor<4xf32>) {
  // expected-error@+1 {{casts 'tensor<4xf32>' to itself}}
  %0 = rn.cast %x : tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

// Tests that a cast keeps the shape.
func.func @cast_shape(%x: tensor<4xf32>) {
  // expected-error@+1 {{requires the same shape for all operands and results}}
  %0 = "rn.cast"(%x) : (tensor<4xf32>) -> tensor<8xf16>
  return
}

// -----

// Tests that a reshape keeps size and element type.
func.func @reshape_size(%x: tensor<2x8xf32>) {
  // expected-error@+1 {{cannot reshape 'tensor<2x8xf32>' to 'tensor<2x4xf32>': element type and count must be kept}}
  %0 = rn.reshape %x : tensor<2x8xf32> -> tensor<2x4xf32>
  return
}

// -----

// Tests that reshapes are static.
func.func @reshape_dynamic(%x: tensor<2x?xf32>) {
  // expected-error@+1 {{input must have a static shape, got 'tensor<2x?xf32>'}}
  %0 = rn.reshape %x : tensor<2x?xf32> -> tensor<2x8xf32>
  return
}

// -----

// Tests that batch_norm_train keeps its input type.
func.func @bn_train_result(%x: tensor<2x4xf16>, %g: tensor<4xf32>) {
  // expected-error@+1 {{result type 'tensor<2x4xf32>' differs from the expected type 'tensor<2x4xf16>'}}
  %y, %m, %s = rn.batch_norm_train %x, %g, %g eps 1.000000e-05 : (tensor<2x4xf16>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

// Tests that batch statistics are [C] f32.
func.func @bn_train_stats(%x: tensor<2x4xf16>, %g: tensor<4xf32>) {
  // expected-error@+1 {{batch_mean type 'tensor<2xf32>' differs from the expected type 'tensor<4xf32>'}}
  %y, %m, %s = rn.batch_norm_train %x, %g, %g eps 1.000000e-05 : (tensor<2x4xf16>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x4xf16>, tensor<2xf32>, tensor<4xf32>)
  return
}

// -----

// Tests that BatchNorm parameters are f32 or the input's type.
func.func @bn_inference_dtype(%x: tensor<2x4xf16>, %g: tensor<4xbf16>) {
  // expected-error@+1 {{element type mismatch: weight is 'bf16' but input is 'f16'}}
  %y = rn.batch_norm_inference %x, %g, %g, %g, %g eps 1.000000e-05 : (tensor<2x4xf16>, tensor<4xbf16>, tensor<4xbf16>, tensor<4xbf16>, tensor<4xbf16>) -> tensor<2x4xf16>
  return
}

// -----

// Tests that an unbiased variance needs two samples.
func.func @running_stats_count(%m: tensor<4xf32>) {
  // expected-error@+1 {{count must be at least 2 for an unbiased variance, got 1}}
  %a, %b = rn.update_running_stats %m, %m, %m, %m eps 1.000000e-05 momentum 1.000000e-01 count 1 : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

// Tests that running statistics keep their type.
func.func @running_stats_type(%m: tensor<4xf32>, %h: tensor<4xf16>) {
  // expected-error@+1 {{running_var type 'tensor<4xf16>' differs from running_mean type 'tensor<4xf32>'}}
  %a, %b = rn.update_running_stats %m, %h, %m, %m eps 1.000000e-05 momentum 1.000000e-01 count 8 : (tensor<4xf32>, tensor<4xf16>, tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf16>)
  return
}

// -----

// Tests that a pad widens the channels.
func.func @pad_channels_narrows(%x: tensor<2x4x4x8xf32>) {
  // expected-error@+1 {{must widen the channels: 8 -> 3}}
  %0 = rn.pad_channels %x : tensor<2x4x4x8xf32> -> tensor<2x4x4x3xf16>
  return
}

// -----

// Tests that a pad keeps every dimension but the last.
func.func @pad_channels_shape(%x: tensor<2x4x4x3xf32>) {
  // expected-error@+1 {{result 'tensor<2x4x5x8xf16>' must have the shape of input 'tensor<2x4x4x3xf32>' but for the last dimension}}
  %0 = rn.pad_channels %x : tensor<2x4x4x3xf32> -> tensor<2x4x5x8xf16>
  return
}

// -----

// Tests that a pad of uint8 images normalizes them.
func.func @pad_channels_bytes(%x: tensor<2x4x4x3xui8>) {
  // expected-error@+1 {{input 'tensor<2x4x4x3xui8>' is not a float tensor: uint8 images are padded with 'normalize %mean, %std'}}
  %0 = rn.pad_channels %x : tensor<2x4x4x3xui8> -> tensor<2x4x4x8xf16>
  return
}

// -----

// Tests that a normalizing pad reads uint8 images.
func.func @pad_channels_normalize_float(%x: tensor<2x4x4x3xf32>, %m: tensor<3xf32>, %s: tensor<3xf32>) {
  // expected-error@+1 {{input must be uint8 (ui8) images, got 'tensor<2x4x4x3xf32>'}}
  %0 = rn.pad_channels %x normalize %m, %s : tensor<2x4x4x3xf32>, tensor<3xf32>, tensor<3xf32> -> tensor<2x4x4x8xf16>
  return
}

// -----

// Tests that a normalizing pad takes one std per channel.
func.func @pad_channels_normalize_std(%x: tensor<2x4x4x3xui8>, %m: tensor<3xf32>, %s: tensor<1xf32>) {
  // expected-error@+1 {{std must be [3] f32 (one per channel of the input 'tensor<2x4x4x3xui8>'), got 'tensor<1xf32>'}}
  %0 = rn.pad_channels %x normalize %m, %s : tensor<2x4x4x3xui8>, tensor<3xf32>, tensor<1xf32> -> tensor<2x4x4x8xf16>
  return
}

// -----

// Tests that count_correct checks labels against logits.
func.func @count_correct_labels(%l: tensor<2x10xf32>, %y: tensor<4xi32>) {
  // expected-error@+1 {{labels hold 4 entries but the logits have a batch of 2}}
  %0 = rn.count_correct %l, %y : (tensor<2x10xf32>, tensor<4xi32>) -> tensor<i32>
  return
}
