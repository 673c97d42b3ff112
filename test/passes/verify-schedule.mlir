// RUN: rn-opt %s --split-input-file --verify-diagnostics --rn-verify-schedule | FileCheck %s

// Tests that a correctly ordered cross-stream read passes unchanged.
// CHECK-LABEL: func.func @train_step
// CHECK: rn.event_wait internal 2 on #rn.stream<comp1>
module {
  rn.subgraph @DEEP in @train_step on #rn.stream<comp1>
  func.func @train_step(%x: tensor<4xf32>) -> tensor<4xf32> {
    rn.event_record fork 0 on #rn.stream<comp1> {rn.subgraph = @DEEP}
    rn.event_wait fork 0 on #rn.stream<comp3> {rn.subgraph = @DEEP}
    %0 = rn.relu %x {rn.subgraph = @DEEP, rn.stream = #rn.stream<comp3>} : tensor<4xf32>
    rn.event_record internal 2 on #rn.stream<comp3> {rn.subgraph = @DEEP}
    rn.event_wait internal 2 on #rn.stream<comp1> {rn.subgraph = @DEEP}
    %1 = rn.tanh %0 {rn.subgraph = @DEEP, rn.stream = #rn.stream<comp1>} : tensor<4xf32>
    rn.event_record join 1 on #rn.stream<comp3> {rn.subgraph = @DEEP}
    rn.event_wait join 1 on #rn.stream<comp1> {rn.subgraph = @DEEP}
    return %1 : tensor<4xf32>
  }
}

// -----

// Tests that a wait implied by an earlier one is reported as redundant.
// CHECK-LABEL: func.func @train_step
module {
  rn.subgraph @DEEP in @train_step on #rn.stream<comp1>
  func.func @train_step(%x: tensor<4xf32>) -> tensor<4xf32> {
    rn.event_record fork 0 on #rn.stream<comp1> {rn.subgraph = @DEEP}
    rn.event_wait fork 0 on #rn.stream<comp3> {rn.subgraph = @DEEP}
    %0 = rn.relu %x {rn.subgraph = @DEEP, rn.stream = #rn.stream<comp3>} : tensor<4xf32>
    rn.event_record internal 2 on #rn.stream<comp3> {rn.subgraph = @DEEP}
    rn.event_wait internal 2 on #rn.stream<comp1> {rn.subgraph = @DEEP}
    // expected-remark@+1 {{redundant wait: event 2 orders nothing that is not already ordered}}
    rn.event_wait internal 2 on #rn.stream<comp1> {rn.subgraph = @DEEP}
    %1 = rn.tanh %0 {rn.subgraph = @DEEP, rn.stream = #rn.stream<comp1>} : tensor<4xf32>
    rn.event_record join 1 on #rn.stream<comp3> {rn.subgraph = @DEEP}
    rn.event_wait join 1 on #rn.stream<comp1> {rn.subgraph = @DEEP}
    return %1 : tensor<4xf32>
  }
}
