// RUN: rn-opt %s --split-input-file --verify-diagnostics --rn-partition

// Tests that the training step must exist.
// expected-error@+1 {{rn-partition needs @train_step and @eval_step; run rn-build-training first}}
module {
  func.func @forward() {
    return
  }
}

// -----

// Tests that a module is partitioned once.
// expected-error@+1 {{the module is already partitioned}}
module {
  rn.subgraph @DEEP in @train_step on #rn.stream<comp1>
  func.func @train_step() {
    return
  }
  func.func @eval_step() {
    return
  }
}
