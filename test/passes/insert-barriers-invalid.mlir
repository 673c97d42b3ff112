// RUN: rn-opt %s --split-input-file --verify-diagnostics --rn-insert-barriers

// Tests that barriers are inserted once.
// expected-error@+1 {{the module already has event barriers}}
module {
  rn.subgraph @DEEP in @train_step on #rn.stream<comp1>
  func.func @train_step(%x: tensor<4xf32>) -> tensor<4xf32> {
    rn.event_record internal 0 on #rn.stream<comp1> {rn.subgraph = @DEEP}
    return %x : tensor<4xf32>
  }
}

// -----

// Tests that streams are assigned first.
module {
  rn.subgraph @DEEP in @train_step on #rn.stream<comp1>
  func.func @train_step(%x: tensor<4xf32>) -> tensor<4xf32> {
    // expected-error@+1 {{op has no stream; run rn-assign-streams first}}
    %0 = rn.relu %x {rn.subgraph = @DEEP} : tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}
