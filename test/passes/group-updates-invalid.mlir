// RUN: rn-opt %s --split-input-file --verify-diagnostics --rn-group-updates

// Tests that the module must be partitioned: the groups follow the
// subgraphs that read each parameter.
// expected-error@+1 {{rn-group-updates needs a partitioned module (it groups by the subgraph that reads each parameter): run rn-partition first}}
module {
  func.func @train_step(%w: tensor<4xf32>, %g: tensor<4xf32>, %lr: tensor<f32>) -> tensor<4xf32> {
    %0 = rn.sgd_update %w, %g lr %lr momentum 0.000000e+00 weight_decay 0.000000e+00 : (tensor<4xf32>, tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}

// -----

// Tests that every op of a function with updates is in a subgraph.
module {
  rn.subgraph @OPTIMIZER in @train_step on #rn.stream<update>
  func.func @train_step(%w: tensor<4xf32>, %g: tensor<4xf32>, %lr: tensor<f32>) -> tensor<4xf32> {
    // expected-error@+1 {{rn-group-updates needs every op in a subgraph: run rn-partition first}}
    %r = rn.relu %g : tensor<4xf32>
    %0 = rn.sgd_update %w, %r lr %lr momentum 0.000000e+00 weight_decay 0.000000e+00 {rn.subgraph = @OPTIMIZER} : (tensor<4xf32>, tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}

// -----

// Tests that the pass runs before streams are assigned (and memory planned):
// a new op would have neither.
module {
  rn.subgraph @OPTIMIZER in @train_step on #rn.stream<update>
  func.func @train_step(%w: tensor<4xf32>, %g: tensor<4xf32>, %lr: tensor<f32>) -> tensor<4xf32> {
    // expected-error@+1 {{rn-group-updates runs before rn-plan-memory and rn-assign-streams (this op has slots or a stream)}}
    %0 = rn.sgd_update %w, %g lr %lr momentum 0.000000e+00 weight_decay 0.000000e+00 {rn.stream = #rn.stream<update>, rn.subgraph = @OPTIMIZER} : (tensor<4xf32>, tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}

// -----

// Tests that a planned module is rejected.
// expected-error@+1 {{rn-group-updates runs before rn-plan-memory}}
module {
  rn.subgraph @OPTIMIZER in @train_step on #rn.stream<update>
  rn.memory_plan arena 256 alignment 256 regions [#rn.extent<weights, 0, 256>]
  func.func @train_step() {
    return
  }
}
