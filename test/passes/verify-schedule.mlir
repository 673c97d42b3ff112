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

// -----

// Tests that two graphs on different primary streams, with no data in
// common, are checked on the workspace of the stream they share: the tanh
// on comp1 (primary update) waits for the relu (primary comp1), and the next
// step's relu for the tanh.
// CHECK-LABEL: func.func @train_step
// CHECK: rn.event_wait external 1 on #rn.stream<comp1> {rn.subgraph = @FWD}
// CHECK: rn.event_wait external 0 on #rn.stream<comp1> {rn.subgraph = @UPDATE}
module {
  rn.memory_plan arena 2048 alignment 256 regions [#rn.extent<activations, 0, 1024>, #rn.extent<workspace_comp1, 1024, 1024>]
  rn.subgraph @FWD in @train_step on #rn.stream<comp1>
  rn.subgraph @UPDATE in @train_step on #rn.stream<update>
  func.func @train_step(%x: tensor<4xf32> {rn.slot = #rn.slot<activations, 0, 16>}) -> (tensor<4xf32>, tensor<4xf32>) {
    rn.event_wait external 1 on #rn.stream<comp1> {rn.subgraph = @FWD}
    %0 = rn.relu %x {rn.subgraph = @FWD, rn.stream = #rn.stream<comp1>, rn.slots = [#rn.slot<activations, 256, 16>]} : tensor<4xf32>
    rn.event_record external 0 on #rn.stream<comp1> {rn.subgraph = @FWD}
    rn.event_record fork 2 on #rn.stream<update> {rn.subgraph = @UPDATE}
    rn.event_wait fork 2 on #rn.stream<comp1> {rn.subgraph = @UPDATE}
    rn.event_wait external 0 on #rn.stream<comp1> {rn.subgraph = @UPDATE}
    %1 = rn.tanh %x {rn.subgraph = @UPDATE, rn.stream = #rn.stream<comp1>, rn.slots = [#rn.slot<activations, 512, 16>]} : tensor<4xf32>
    rn.event_record external 1 on #rn.stream<comp1> {rn.subgraph = @UPDATE}
    rn.event_record join 3 on #rn.stream<comp1> {rn.subgraph = @UPDATE}
    rn.event_wait join 3 on #rn.stream<update> {rn.subgraph = @UPDATE}
    return %0, %1 : tensor<4xf32>, tensor<4xf32>
  }
}

// -----

// Tests that graphs on one primary stream share its workspace without
// events: launch order orders them.
// CHECK-LABEL: func.func @train_step
// CHECK-NOT: rn.event
module {
  rn.memory_plan arena 2048 alignment 256 regions [#rn.extent<activations, 0, 1024>, #rn.extent<workspace_comp1, 1024, 1024>]
  rn.subgraph @FWD in @train_step on #rn.stream<comp1>
  rn.subgraph @BWD in @train_step on #rn.stream<comp1>
  func.func @train_step(%x: tensor<4xf32> {rn.slot = #rn.slot<activations, 0, 16>}) -> (tensor<4xf32>, tensor<4xf32>) {
    %0 = rn.relu %x {rn.subgraph = @FWD, rn.stream = #rn.stream<comp1>, rn.slots = [#rn.slot<activations, 256, 16>]} : tensor<4xf32>
    %1 = rn.tanh %x {rn.subgraph = @BWD, rn.stream = #rn.stream<comp1>, rn.slots = [#rn.slot<activations, 512, 16>]} : tensor<4xf32>
    return %0, %1 : tensor<4xf32>, tensor<4xf32>
  }
}

// -----

// Tests that a stream the plan gives no workspace (here comp1: the plan of
// workspace-mib=0) needs no event between graphs on different primary
// streams that share no data.
// CHECK-LABEL: func.func @train_step
// CHECK-NOT: rn.event_wait external
module {
  rn.memory_plan arena 1024 alignment 256 regions [#rn.extent<activations, 0, 1024>]
  rn.subgraph @FWD in @train_step on #rn.stream<comp1>
  rn.subgraph @UPDATE in @train_step on #rn.stream<update>
  func.func @train_step(%x: tensor<4xf32> {rn.slot = #rn.slot<activations, 0, 16>}) -> (tensor<4xf32>, tensor<4xf32>) {
    %0 = rn.relu %x {rn.subgraph = @FWD, rn.stream = #rn.stream<comp1>, rn.slots = [#rn.slot<activations, 256, 16>]} : tensor<4xf32>
    rn.event_record fork 2 on #rn.stream<update> {rn.subgraph = @UPDATE}
    rn.event_wait fork 2 on #rn.stream<comp1> {rn.subgraph = @UPDATE}
    %1 = rn.tanh %x {rn.subgraph = @UPDATE, rn.stream = #rn.stream<comp1>, rn.slots = [#rn.slot<activations, 512, 16>]} : tensor<4xf32>
    rn.event_record join 3 on #rn.stream<comp1> {rn.subgraph = @UPDATE}
    rn.event_wait join 3 on #rn.stream<update> {rn.subgraph = @UPDATE}
    return %0, %1 : tensor<4xf32>, tensor<4xf32>
  }
}
