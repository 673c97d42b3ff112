// RUN: rn-opt %s --split-input-file --allow-unregistered-dialect --rn-plan-memory -verify-diagnostics
// RUN: not rn-opt %s --split-input-file --allow-unregistered-dialect --rn-plan-memory=alignment=100 2>&1 | FileCheck %s --check-prefix=ALIGNMENT
// RUN: not rn-opt %s --split-input-file --allow-unregistered-dialect --rn-plan-memory=workspace-mib=-1 2>&1 | FileCheck %s --check-prefix=WORKSPACE

// ALIGNMENT: rn-plan-memory: alignment must be a power of two, got 100
// WORKSPACE: rn-plan-memory: workspace-mib must be non-negative, got -1

// Tests an in-place update whose operand is still read afterwards: zeroing
// the accumulator in place would clobber the value relu reads.

module {
  rn.state gradient @grad.w of @w : tensor<4xf32> = #rn.init<zeros>
  rn.parameter @w : tensor<4xf32> = #rn.init<zeros>
  func.func @train_step(%g: tensor<4xf32> {rn.state = @grad.w}) -> (tensor<4xf32> {rn.state = @grad.w}, tensor<4xf32> {rn.output = "features"}) {
    // expected-error @+1 {{'rn.zero' op updates operand #0 (%arg0) in place (result #0), but %arg0 is still read afterwards: the update would clobber it}}
    %z = rn.zero %g : tensor<4xf32>
    // expected-note @+1 {{read here}}
    %r = rn.relu %g : tensor<4xf32>
    return %z, %r : tensor<4xf32>, tensor<4xf32>
  }
}

// -----

// Tests an in-place chain that would need two state slots: the result bound
// to @grad_f32.w is an in-place update of the argument bound to @grad.w.

module {
  rn.parameter @w : tensor<4xf32> = #rn.init<zeros>
  rn.state gradient @grad.w of @w : tensor<4xf32> = #rn.init<zeros>
  rn.state master_gradient @grad_f32.w of @w : tensor<4xf32> = #rn.init<zeros>
  rn.state loss_scale @loss_scale : tensor<f32> = #rn.init<constant, 6.553600e+04>
  // expected-note @+1 {{see argument #0 (bound to @grad.w)}}
  func.func @train_step(%g: tensor<4xf32> {rn.state = @grad.w}, %scale: tensor<f32> {rn.state = @loss_scale})
      -> (tensor<4xf32> {rn.state = @grad_f32.w}) {
    %u = rn.unscale %g, %scale : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
    // expected-error @+1 {{'func.return' op result #0 (bound to @grad_f32.w) and argument #0 (bound to @grad.w) are one in-place chain (one buffer), which cannot live in both @grad.w's slot and @grad_f32.w's slot}}
    return %u : tensor<4xf32>
  }
}

// -----

// Tests an in-place chain that would live in an input slot and a state slot.

module {
  rn.state gradient @grad.w of @w : tensor<4xf32> = #rn.init<zeros>
  rn.parameter @w : tensor<4xf32> = #rn.init<zeros>
  // expected-note @+1 {{see argument #0 (per-step input "images")}}
  func.func @train_step(%x: tensor<4xf32> {rn.input = "images"}) -> (tensor<4xf32> {rn.state = @grad.w}) {
    %z = rn.zero %x : tensor<4xf32>
    // expected-error @+1 {{'func.return' op result #0 (bound to @grad.w) and argument #0 (per-step input "images") are one in-place chain (one buffer), which cannot live in both the slot of input "images" and @grad.w's slot}}
    return %z : tensor<4xf32>
  }
}

// -----

// Tests a new value born in a state slot while the old value of that state
// is still read: the cast writes @grad_f32.w's slot before relu reads it.

module {
  rn.parameter @w : tensor<4xf32> = #rn.init<zeros>
  rn.state gradient @grad.w of @w : tensor<4xf16> = #rn.init<zeros>
  rn.state master_gradient @grad_f32.w of @w : tensor<4xf32> = #rn.init<zeros>
  func.func @train_step(%g16: tensor<4xf16> {rn.state = @grad.w}, %g32: tensor<4xf32> {rn.state = @grad_f32.w})
      -> (tensor<4xf32> {rn.state = @grad_f32.w}, tensor<4xf32> {rn.output = "features"}) {
    // expected-error @+1 {{'rn.cast' op writes %0 into @grad_f32.w's slot while %arg1, which lives there, is still read afterwards}}
    %c = rn.cast %g16 : tensor<4xf16> -> tensor<4xf32>
    // expected-note @+1 {{read here}}
    %r = rn.relu %g32 : tensor<4xf32>
    return %c, %r : tensor<4xf32>, tensor<4xf32>
  }
}

// -----

// Tests state updated in place but not returned: the slot would hold a value
// the step does not claim as the new state.

module {
  rn.parameter @w : tensor<4xf32> = #rn.init<zeros>
  rn.state gradient @grad.w of @w : tensor<4xf32> = #rn.init<zeros>
  func.func @train_step(%g: tensor<4xf32> {rn.state = @grad.w}) -> (tensor<4xf32> {rn.output = "features"}) {
    // expected-error @+1 {{'rn.zero' op updates %arg0 (@grad.w) in place, but the function does not return the new value bound to @grad.w}}
    %z = rn.zero %g : tensor<4xf32>
    %r = rn.relu %z : tensor<4xf32>
    return %r : tensor<4xf32>
  }
}

// -----

// Tests two results of one op updating the same value in place.

module {
  rn.parameter buffer @bn.running_mean : tensor<4xf32> = #rn.init<zeros>
  func.func @train_step(%m: tensor<4xf32> {rn.state = @bn.running_mean}, %x: tensor<4xf32> {rn.input = "images"})
      -> (tensor<4xf32> {rn.state = @bn.running_mean}) {
    // expected-error @+1 {{'rn.update_running_stats' op results #0 and #1 both update %arg0 in place: they would share one slot}}
    %a, %b = rn.update_running_stats %m, %m, %x, %x eps 1.000000e-05 momentum 1.000000e-01 count 4 : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
    return %a : tensor<4xf32>
  }
}

// -----

// Tests a host staging buffer read directly next to its device copy.

module {
  func.func @eval_step(%x: tensor<4xf32> {rn.input = "images"}) -> (tensor<4xf32> {rn.output = "features"}) {
    %d = rn.host_to_device %x : tensor<4xf32>
    // expected-error @+1 {{'rn.relu' op reads input argument #0 directly, but it is a host staging buffer (copied to the device by rn.host_to_device): read the device copy}}
    %r = rn.relu %x : tensor<4xf32>
    return %r : tensor<4xf32>
  }
}

// -----

// Tests a host-to-device copy of something that is not a per-step input.

module {
  rn.parameter @w : tensor<4xf32> = #rn.init<zeros>
  func.func @eval_step(%w: tensor<4xf32> {rn.state = @w}) -> (tensor<4xf32> {rn.output = "features"}) {
    // expected-error @+1 {{'rn.host_to_device' op copies a value that is not an 'rn.input' argument of the step function: only per-step inputs come from the host}}
    %d = rn.host_to_device %w : tensor<4xf32>
    return %d : tensor<4xf32>
  }
}

// -----

// Tests an argument without a static size.

module {
  // expected-error @+1 {{'func.func' op argument #0 has type 'tensor<?x8xf32>', which has no static size: it cannot get a slot}}
  func.func @eval_step(%x: tensor<?x8xf32> {rn.input = "images"}) -> (tensor<?x8xf32> {rn.output = "features"}) {
    %r = rn.relu %x : tensor<?x8xf32>
    return %r : tensor<?x8xf32>
  }
}

// -----

// Tests a result without a static size (an op the planner does not know,
// handled through its types).

module {
  func.func @eval_step(%x: tensor<4xf32> {rn.input = "images"}) -> (tensor<4xf32> {rn.output = "features"}) {
    // expected-error @+1 {{'test.unknown' op result #1 has type 'tensor<*xf32>', which has no static size: it cannot get a slot}}
    %a, %b = "test.unknown"(%x) : (tensor<4xf32>) -> (tensor<4xf32>, tensor<*xf32>)
    return %a : tensor<4xf32>
  }
}

// -----

// Tests an op with a region inside a step function.

module {
  func.func @eval_step(%x: tensor<4xf32> {rn.input = "images"}) -> (tensor<4xf32> {rn.output = "features"}) {
    // expected-error @+1 {{'test.region' op has regions: the memory planner only plans flat step functions}}
    %a = "test.region"(%x) ({
      "test.terminator"() : () -> ()
    }) : (tensor<4xf32>) -> tensor<4xf32>
    return %a : tensor<4xf32>
  }
}

// -----

// Tests a step-function argument that is neither state nor input.

module {
  // expected-error @+1 {{'func.func' op argument #1 has neither 'rn.state' nor 'rn.input': the planner cannot tell where it lives}}
  func.func @eval_step(%x: tensor<4xf32> {rn.input = "images"}, %y: tensor<4xf32>) -> (tensor<4xf32> {rn.output = "features"}) {
    %r = rn.relu %x : tensor<4xf32>
    return %r : tensor<4xf32>
  }
}

// -----

// Tests a module without step functions (rn-build-training has not run).

// expected-error @+1 {{rn-plan-memory: the module has no step function (a function with 'rn.state' or 'rn.input' arguments): run rn-build-training first}}
module {
  func.func @forward(%x: tensor<4xf32>) -> tensor<4xf32> {
    %r = rn.relu %x : tensor<4xf32>
    return %r : tensor<4xf32>
  }
}

// -----

// Tests re-running the pass on a planned module.

module {
  // expected-error @+1 {{'rn.memory_plan' op the module already has a memory plan}}
  rn.memory_plan arena 512 alignment 256 regions [#rn.extent<inputs_a, 0, 256>, #rn.extent<inputs_b, 256, 256>]
  func.func @eval_step(%x: tensor<4xf32> {rn.input = "images", rn.slot = #rn.slot<inputs_a, 0, 16>}) -> (tensor<4xf32> {rn.output = "features"}) {
    return %x : tensor<4xf32>
  }
}
