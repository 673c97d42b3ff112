// Tests that the artifacts checked in for the runtime's unit tests (which
// build without MLIR and cannot run rn-compile) are what the compiler
// produces today; regenerate them as test/runtime/Inputs/README.md says when
// this fails.

// RUN: rn-compile %S/../../runtime/Inputs/mlp.mlir -o %t.mlp.rnx --quiet
// RUN: cmp %t.mlp.rnx %S/../../runtime/Inputs/mlp.rnx
// RUN: rn-compile %S/../../runtime/Inputs/cbr.mlir -o %t.cbr.rnx --quiet --pipeline "precision=f16 loss-scaling=dynamic momentum=0.9"
// RUN: cmp %t.cbr.rnx %S/../../runtime/Inputs/cbr.rnx
// RUN: rn-compile %S/../../runtime/Inputs/cnn.mlir -o %t.cnn.rnx --quiet
// RUN: cmp %t.cnn.rnx %S/../../runtime/Inputs/cnn.rnx
// RUN: rn-compile %S/../../runtime/Inputs/dropout.mlir -o %t.dropout.rnx --quiet
// RUN: cmp %t.dropout.rnx %S/../../runtime/Inputs/dropout.rnx
