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
// RUN: rn-compile %S/../../runtime/Inputs/stochastic_depth.mlir -o %t.stochastic_depth.rnx --quiet
// RUN: cmp %t.stochastic_depth.rnx %S/../../runtime/Inputs/stochastic_depth.rnx
// The twins of group_updates_test.cpp: per-parameter updates, and the
// benchmark recipe with and without rn-group-updates.
// RUN: rn-compile %S/../../runtime/Inputs/mlp.mlir -o %t.mlp-per-param.rnx --quiet --pipeline "group-updates=false"
// RUN: cmp %t.mlp-per-param.rnx %S/../../runtime/Inputs/mlp-per-param.rnx
// RUN: rn-compile %S/../../runtime/Inputs/cbr.mlir -o %t.cbr-per-param.rnx --quiet --pipeline "precision=f16 loss-scaling=dynamic momentum=0.9 group-updates=false"
// RUN: cmp %t.cbr-per-param.rnx %S/../../runtime/Inputs/cbr-per-param.rnx
// RUN: rn-compile %S/../../runtime/Inputs/cnn.mlir -o %t.cnn-sgd.rnx --quiet --pipeline "nesterov=true weight-decay=5e-4 no-decay-bn-bias=true"
// RUN: cmp %t.cnn-sgd.rnx %S/../../runtime/Inputs/cnn-sgd.rnx
// RUN: rn-compile %S/../../runtime/Inputs/cnn.mlir -o %t.cnn-sgd-per-param.rnx --quiet --pipeline "nesterov=true weight-decay=5e-4 no-decay-bn-bias=true group-updates=false"
// RUN: cmp %t.cnn-sgd-per-param.rnx %S/../../runtime/Inputs/cnn-sgd-per-param.rnx
// RUN: rn-compile %S/../../runtime/Inputs/mlp.mlir -o %t.mlp-adamw.rnx --quiet --pipeline "optimizer=adamw weight-decay=1e-2 precision=f16 loss-scaling=dynamic"
// RUN: cmp %t.mlp-adamw.rnx %S/../../runtime/Inputs/mlp-adamw.rnx
// RUN: rn-compile %S/../../runtime/Inputs/mlp.mlir -o %t.mlp-adamw-per-param.rnx --quiet --pipeline "optimizer=adamw weight-decay=1e-2 precision=f16 loss-scaling=dynamic group-updates=false"
// RUN: cmp %t.mlp-adamw-per-param.rnx %S/../../runtime/Inputs/mlp-adamw-per-param.rnx
// RUN: rn-compile %S/../../runtime/Inputs/mlp.mlir -o %t.mlp-lars.rnx --quiet --pipeline "optimizer=lars weight-decay=1e-4 precision=f16 loss-scaling=dynamic"
// RUN: cmp %t.mlp-lars.rnx %S/../../runtime/Inputs/mlp-lars.rnx
// RUN: rn-compile %S/../../runtime/Inputs/mlp.mlir -o %t.mlp-lars-per-param.rnx --quiet --pipeline "optimizer=lars weight-decay=1e-4 precision=f16 loss-scaling=dynamic group-updates=false"
// RUN: cmp %t.mlp-lars-per-param.rnx %S/../../runtime/Inputs/mlp-lars-per-param.rnx
// cpu_executor_test.cpp's rn-fuse-bn-prologue program.
// RUN: rn-compile %S/../../runtime/Inputs/cbr.mlir -o %t.cbr-bnprologue.rnx --quiet --pipeline "precision=f16 loss-scaling=dynamic momentum=0.9 fuse-bn-prologue=true" 2>/dev/null
// RUN: cmp %t.cbr-bnprologue.rnx %S/../../runtime/Inputs/cbr-bnprologue.rnx
// The uint8-images twins of cbr (normalize_images; fused into the stem's
// pad under f16).
// RUN: rn-compile %S/../../runtime/Inputs/cbr-u8.mlir -o %t.cbr-u8.rnx --quiet --pipeline "precision=f16 loss-scaling=dynamic momentum=0.9"
// RUN: cmp %t.cbr-u8.rnx %S/../../runtime/Inputs/cbr-u8.rnx
// RUN: rn-compile %S/../../runtime/Inputs/cbr-u8.mlir -o %t.cbr-u8-f32.rnx --quiet
// RUN: cmp %t.cbr-u8-f32.rnx %S/../../runtime/Inputs/cbr-u8-f32.rnx
