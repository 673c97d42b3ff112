// RUN: rn-opt %s --split-input-file --verify-diagnostics --rn-bucket-all-reduce

// Tests that the all-reduce must be in a subgraph: run rn-partition first.
module {
  func.func @train_step(%g: tensor<4xf32>) -> tensor<4xf32> {
    // expected-error@+1 {{rn-bucket-all-reduce needs a partitioned module: run rn-partition first}}
    %0 = rn.all_reduce_mean %g : (tensor<4xf32>) -> tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}

// -----

// Tests that the pass runs before streams are assigned (and memory planned).
module {
  rn.subgraph @ALL_REDUCE in @train_step on #rn.stream<update>
  func.func @train_step(%g: tensor<4xf32>) -> tensor<4xf32> {
    // expected-error@+1 {{rn-bucket-all-reduce runs before rn-plan-memory and rn-assign-streams}}
    %0 = rn.all_reduce_mean %g {rn.stream = #rn.stream<update>, rn.subgraph = @ALL_REDUCE} : (tensor<4xf32>) -> tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}
