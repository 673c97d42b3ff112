// RUN: rn-opt %s --split-input-file --verify-diagnostics

// Tests that per-parameter state names its parameter.
module {
  // expected-error@+1 {{'gradient' state must name a parameter with 'of'}}
  rn.state gradient @grad.w : tensor<4xf32> = #rn.init<zeros>
}

// -----

// Tests that the loss scale belongs to no parameter.
module {
  rn.parameter @w : tensor<4xf32> = #rn.init<zeros>
  // expected-error@+1 {{'loss_scale' state must not name a parameter with 'of'}}
  rn.state loss_scale @loss_scale of @w : tensor<f32> = #rn.init<constant, 1.000000e+00>
}

// -----

// Tests that the loss scale is a scalar f32.
module {
  // expected-error@+1 {{the loss scale must be tensor<f32>, got 'tensor<1xf32>'}}
  rn.state loss_scale @loss_scale : tensor<1xf32> = #rn.init<constant, 1.000000e+00>
}

// -----

// Tests that the loss-scale step count is a scalar i32.
module {
  // expected-error@+1 {{the loss-scale step count must be tensor<i32>, got 'tensor<f32>'}}
  rn.state loss_scale_good_steps @steps : tensor<f32> = #rn.init<zeros>
}

// -----

// Tests that state is a statically shaped tensor.
module {
  // expected-error@+1 {{type must be a statically shaped tensor, got 'tensor<?xf32>'}}
  rn.state loss_scale @loss_scale : tensor<?xf32> = #rn.init<zeros>
}

// -----

// Tests that low-precision copies are derived from their parameter.
module {
  rn.parameter @w : tensor<4xf32> = #rn.init<zeros>
  // expected-error@+1 {{'low_precision_weight' state must be initialized as #rn.init<derived>}}
  rn.state low_precision_weight @f16.w of @w : tensor<4xf16> = #rn.init<zeros>
}

// -----

// Tests that only copies and EMA weights are derived.
module {
  rn.parameter @w : tensor<4xf32> = #rn.init<zeros>
  // expected-error@+1 {{'momentum' state cannot be initialized as #rn.init<derived>}}
  rn.state momentum @momentum.w of @w : tensor<4xf32> = #rn.init<derived>
}

// -----

// Tests that parameters are never derived.
module {
  // expected-error@+1 {{a parameter cannot be initialized as #rn.init<derived>}}
  rn.parameter @w : tensor<4xf32> = #rn.init<derived>
}

// -----

// Tests that 'of' names a parameter.
module {
  rn.state loss_scale @loss_scale : tensor<f32> = #rn.init<constant, 1.000000e+00>
  // expected-error@+1 {{names @loss_scale, which is not an rn.parameter}}
  rn.state gradient @grad.x of @loss_scale : tensor<f32> = #rn.init<zeros>
}

// -----

// Tests that buffers have no training state.
module {
  rn.parameter buffer @running_mean : tensor<4xf32> = #rn.init<zeros>
  // expected-error@+1 {{names the buffer @running_mean, which is not trained}}
  rn.state gradient @grad.running_mean of @running_mean : tensor<4xf32> = #rn.init<zeros>
}

// -----

// Tests that state has its parameter's shape.
module {
  rn.parameter @w : tensor<4xf32> = #rn.init<zeros>
  // expected-error@+1 {{shape of 'tensor<8xf32>' differs from the parameter's 'tensor<4xf32>'}}
  rn.state gradient @grad.w of @w : tensor<8xf32> = #rn.init<zeros>
}

// -----

// Tests that optimizer state keeps the master weight's type.
module {
  rn.parameter @w : tensor<4xf32> = #rn.init<zeros>
  // expected-error@+1 {{'momentum' state must have the parameter's type 'tensor<4xf32>', got 'tensor<4xf16>'}}
  rn.state momentum @momentum.w of @w : tensor<4xf16> = #rn.init<zeros>
}

// -----

// Tests that rn.training is a dictionary.
// expected-error@+1 {{'rn.training' must be a dictionary of training options}}
module attributes {rn.training = "sgd"} {
}

// -----

// Tests that rn.state bindings name a symbol.
module {
  // expected-error@+1 {{'rn.state' on argument #0 must name an rn.parameter or rn.state}}
  func.func @f(%w: tensor<4xf32> {rn.state = "w"}) {
    return
  }
}

// -----

// Tests that rn.state bindings name declared state.
module {
  // expected-error@+1 {{argument #0 is bound to @g, which is not an rn.parameter or rn.state}}
  func.func @f(%w: tensor<4xf32> {rn.state = @g}) {
    return
  }
  func.func @g() {
    return
  }
}

// -----

// Tests that a bound value has its state's type.
module {
  rn.parameter @w : tensor<4xf32> = #rn.init<zeros>
  // expected-error@+1 {{result #0 has type 'tensor<4xf16>' but its state @w is 'tensor<4xf32>'}}
  func.func @f(%w: tensor<4xf16>) -> (tensor<4xf16> {rn.state = @w}) {
    return %w : tensor<4xf16>
  }
}

// -----

// Tests that rn.input names the input with a string.
module {
  // expected-error@+1 {{'rn.input' on argument #0 must be a string}}
  func.func @f(%x: tensor<4xf32> {rn.input = 1 : i32}) {
    return
  }
}

// -----

// Tests that rn.output is for results and rn.input for arguments.
module {
  // expected-error@+1 {{unknown rn dialect attribute 'rn.output' on argument #0}}
  func.func @f(%x: tensor<4xf32> {rn.output = "loss"}) {
    return
  }
}

// -----

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

// -----

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

// -----

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

// -----

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

// Tests that count_correct checks labels against logits.
func.func @count_correct_labels(%l: tensor<2x10xf32>, %y: tensor<4xi32>) {
  // expected-error@+1 {{labels hold 4 entries but the logits have a batch of 2}}
  %0 = rn.count_correct %l, %y : (tensor<2x10xf32>, tensor<4xi32>) -> tensor<i32>
  return
}

// -----

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
