// RUN: rn-opt %s --split-input-file --verify-diagnostics --rn-verify-schedule

// Tests that a read on another stream without an event is reported (the
// barrier between relu and tanh was deleted).
module {
  rn.subgraph @DEEP in @train_step on #rn.stream<comp1>
  func.func @train_step(%x: tensor<4xf32>) -> tensor<4xf32> {
    rn.event_record fork 0 on #rn.stream<comp1> {rn.subgraph = @DEEP}
    rn.event_wait fork 0 on #rn.stream<comp3> {rn.subgraph = @DEEP}
    // expected-note@+1 {{the earlier access}}
    %0 = rn.relu %x {rn.subgraph = @DEEP, rn.stream = #rn.stream<comp3>} : tensor<4xf32>
    // expected-error@+1 {{missing barrier: 'rn.tanh' on comp1 reads an unplanned value that 'rn.relu' on comp3 writes, and no event orders them (read after write)}}
    %1 = rn.tanh %0 {rn.subgraph = @DEEP, rn.stream = #rn.stream<comp1>} : tensor<4xf32>
    rn.event_record join 1 on #rn.stream<comp3> {rn.subgraph = @DEEP}
    rn.event_wait join 1 on #rn.stream<comp1> {rn.subgraph = @DEEP}
    return %1 : tensor<4xf32>
  }
}

// -----

// Tests a write-after-read hazard created by slot reuse: %1 reuses the slot
// of %0 while the silu on comp3 may still be reading it.
module {
  rn.subgraph @DEEP in @train_step on #rn.stream<comp1>
  func.func @train_step(%x: tensor<4xf32> {rn.slot = #rn.slot<activations, 0, 16>}) -> tensor<4xf32> {
    rn.event_record fork 0 on #rn.stream<comp1> {rn.subgraph = @DEEP}
    rn.event_wait fork 0 on #rn.stream<comp3> {rn.subgraph = @DEEP}
    %0 = rn.relu %x {rn.subgraph = @DEEP, rn.stream = #rn.stream<comp1>, rn.slots = [#rn.slot<activations, 256, 16>]} : tensor<4xf32>
    rn.event_record internal 2 on #rn.stream<comp1> {rn.subgraph = @DEEP}
    rn.event_wait internal 2 on #rn.stream<comp3> {rn.subgraph = @DEEP}
    // expected-note@+1 {{the earlier access}}
    %1 = rn.silu %0 {rn.subgraph = @DEEP, rn.stream = #rn.stream<comp3>, rn.slots = [#rn.slot<activations, 512, 16>]} : tensor<4xf32>
    // expected-error@+1 {{missing barrier: 'rn.tanh' on comp1 writes slot <activations, 256, 16> that 'rn.silu' on comp3 reads, and no event orders them (write after read)}}
    %2 = rn.tanh %x {rn.subgraph = @DEEP, rn.stream = #rn.stream<comp1>, rn.slots = [#rn.slot<activations, 256, 16>]} : tensor<4xf32>
    rn.event_record join 1 on #rn.stream<comp3> {rn.subgraph = @DEEP}
    rn.event_wait join 1 on #rn.stream<comp1> {rn.subgraph = @DEEP}
    return %2 : tensor<4xf32>
  }
}

// -----

// Tests that a secondary stream must be forked from the primary.
module {
  rn.subgraph @DEEP in @train_step on #rn.stream<comp1>
  func.func @train_step(%x: tensor<4xf32>) -> tensor<4xf32> {
    // expected-error@+1 {{stream comp3 starts work in subgraph @DEEP without a fork event from comp1: capture would not include it}}
    %0 = rn.relu %x {rn.subgraph = @DEEP, rn.stream = #rn.stream<comp3>} : tensor<4xf32>
    rn.event_record join 1 on #rn.stream<comp3> {rn.subgraph = @DEEP}
    rn.event_wait join 1 on #rn.stream<comp1> {rn.subgraph = @DEEP}
    return %0 : tensor<4xf32>
  }
}

// -----

// Tests that a secondary stream must join the primary before the end.
module {
  rn.subgraph @DEEP in @train_step on #rn.stream<comp1>
  func.func @train_step(%x: tensor<4xf32>) -> tensor<4xf32> {
    rn.event_record fork 0 on #rn.stream<comp1> {rn.subgraph = @DEEP}
    rn.event_wait fork 0 on #rn.stream<comp3> {rn.subgraph = @DEEP}
    // expected-error@+1 {{stream comp3 ends subgraph @DEEP without joining comp1: unjoined work makes capture fail}}
    %0 = rn.relu %x {rn.subgraph = @DEEP, rn.stream = #rn.stream<comp3>} : tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}

// -----

// Tests that a wait needs a record.
module {
  rn.subgraph @DEEP in @train_step on #rn.stream<comp1>
  func.func @train_step(%x: tensor<4xf32>) -> tensor<4xf32> {
    // expected-error@+1 {{waits on event 7, which nothing in @train_step records}}
    rn.event_wait external 7 on #rn.stream<comp1> {rn.subgraph = @DEEP}
    %0 = rn.relu %x {rn.subgraph = @DEEP, rn.stream = #rn.stream<comp1>} : tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}

// -----

// Tests that ops must belong to a subgraph.
module {
  func.func @train_step(%x: tensor<4xf32>) -> tensor<4xf32> {
    // expected-error@+1 {{op belongs to no subgraph; run rn-partition first}}
    %0 = rn.relu %x : tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}

// -----

// Tests that ops must have a stream.
module {
  rn.subgraph @DEEP in @train_step on #rn.stream<comp1>
  func.func @train_step(%x: tensor<4xf32>) -> tensor<4xf32> {
    // expected-error@+1 {{op has no stream; run rn-assign-streams first}}
    %0 = rn.relu %x {rn.subgraph = @DEEP} : tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}

// -----

// Tests that a subgraph's ops must be adjacent.
module {
  rn.subgraph @A in @train_step on #rn.stream<comp1>
  rn.subgraph @B in @train_step on #rn.stream<comp1>
  func.func @train_step(%x: tensor<4xf32>) -> tensor<4xf32> {
    %0 = rn.relu %x {rn.subgraph = @A, rn.stream = #rn.stream<comp1>} : tensor<4xf32>
    %1 = rn.relu %0 {rn.subgraph = @B, rn.stream = #rn.stream<comp1>} : tensor<4xf32>
    // expected-error@+1 {{subgraph @A is not contiguous: its ops must be adjacent}}
    %2 = rn.relu %1 {rn.subgraph = @A, rn.stream = #rn.stream<comp1>} : tensor<4xf32>
    return %2 : tensor<4xf32>
  }
}

// -----

// Tests that a missing workspace barrier is reported: the relu (primary
// comp1) and the tanh (primary update) share no data but both use
// workspace_comp1, and the graphs run concurrently (the wait before the
// tanh was deleted; the next step's relu still waits for the tanh).
module {
  rn.memory_plan arena 2048 alignment 256 regions [#rn.extent<activations, 0, 1024>, #rn.extent<workspace_comp1, 1024, 1024>]
  rn.subgraph @FWD in @train_step on #rn.stream<comp1>
  rn.subgraph @UPDATE in @train_step on #rn.stream<update>
  func.func @train_step(%x: tensor<4xf32> {rn.slot = #rn.slot<activations, 0, 16>}) -> (tensor<4xf32>, tensor<4xf32>) {
    rn.event_wait external 1 on #rn.stream<comp1> {rn.subgraph = @FWD}
    // expected-note@+1 {{the earlier access}}
    %0 = rn.relu %x {rn.subgraph = @FWD, rn.stream = #rn.stream<comp1>, rn.slots = [#rn.slot<activations, 256, 16>]} : tensor<4xf32>
    rn.event_record fork 2 on #rn.stream<update> {rn.subgraph = @UPDATE}
    rn.event_wait fork 2 on #rn.stream<comp1> {rn.subgraph = @UPDATE}
    // expected-error@+1 {{missing barrier: 'rn.tanh' on comp1 writes the stream workspace workspace_comp1 that 'rn.relu' on comp1 writes, and no event orders them (write after write)}}
    %1 = rn.tanh %x {rn.subgraph = @UPDATE, rn.stream = #rn.stream<comp1>, rn.slots = [#rn.slot<activations, 512, 16>]} : tensor<4xf32>
    rn.event_record external 1 on #rn.stream<comp1> {rn.subgraph = @UPDATE}
    rn.event_record join 3 on #rn.stream<comp1> {rn.subgraph = @UPDATE}
    rn.event_wait join 3 on #rn.stream<update> {rn.subgraph = @UPDATE}
    return %0, %1 : tensor<4xf32>, tensor<4xf32>
  }
}
