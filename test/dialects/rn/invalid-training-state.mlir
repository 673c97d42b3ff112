// RUN: rn-opt %s --split-input-file --verify-diagnostics

// State declarations (rn.state, rn.training) and the rn.state, rn.input
// and rn.output bindings of the training step.

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
