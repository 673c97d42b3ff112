// RUN: rn-opt %s --split-input-file --verify-diagnostics --rn-group-elementwise

// Tests that the module must be partitioned: groups stay within subgraphs.
// expected-error@+1 {{rn-group-elementwise needs a partitioned module (it groups within subgraphs): run rn-partition first}}
module {
  func.func @train_step(%g: tensor<4xf32>) -> tensor<4xf32> {
    %0 = rn.zero %g : tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}

// -----

// Tests that every op is in a subgraph.
module {
  rn.subgraph @ZERO_GRAD in @train_step on #rn.stream<update>
  func.func @train_step(%g: tensor<4xf32>) -> tensor<4xf32> {
    // expected-error@+1 {{rn-group-elementwise needs every op in a subgraph: run rn-partition first}}
    %r = rn.relu %g : tensor<4xf32>
    %0 = rn.zero %r {rn.subgraph = @ZERO_GRAD} : tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}

// -----

// Tests that the pass runs before streams are assigned (and memory planned).
module {
  rn.subgraph @ZERO_GRAD in @train_step on #rn.stream<update>
  func.func @train_step(%g: tensor<4xf32>) -> tensor<4xf32> {
    // expected-error@+1 {{rn-group-elementwise runs before rn-plan-memory and rn-assign-streams (this op has slots or a stream)}}
    %0 = rn.zero %g {rn.stream = #rn.stream<update>, rn.subgraph = @ZERO_GRAD} : tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}

// -----

// Tests that a planned module is refused.
// expected-error@+1 {{rn-group-elementwise runs before rn-plan-memory}}
module {
  rn.subgraph @ZERO_GRAD in @train_step on #rn.stream<update>
  rn.memory_plan arena 256 alignment 256 regions [#rn.extent<gradients, 0, 256>]
  func.func @train_step(%g: tensor<4xf32>) -> tensor<4xf32> {
    %0 = rn.zero %g {rn.subgraph = @ZERO_GRAD} : tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}
