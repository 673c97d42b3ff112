// RUN: not rn-opt %s --rn-assign-streams="policy=relu=comp9" 2>&1 | FileCheck %s --check-prefix=STREAM
// STREAM: error: policy entry 'relu=comp9' needs name=stream with stream one of trans, comp1, comp2, comp3, update
// RUN: not rn-opt %s --rn-assign-streams="policy=softplus=comp1" 2>&1 | FileCheck %s --check-prefix=NAME
// NAME: error: policy entry 'softplus=comp1' names no op or fork role of the table
// RUN: rn-opt %s --split-input-file --verify-diagnostics --rn-assign-streams

// Tests that streams are assigned after partitioning.
// expected-error@+1 {{rn-assign-streams needs a partitioned module; run rn-partition first}}
module {
  func.func @train_step() {
    return
  }
}

// -----

// Tests that an op outside the policy table is reported.
module {
  rn.parameter @w : tensor<4xf32> = #rn.init<zeros>
  rn.subgraph @DEEP in @train_step on #rn.stream<comp1>
  func.func @train_step() -> tensor<4xf32> {
    // expected-error@+1 {{no stream policy for 'rn.param'; give the op RN_OnStream<"..."> in its ODS or pass policy=...}}
    %0 = rn.param @w {rn.subgraph = @DEEP} : tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}
