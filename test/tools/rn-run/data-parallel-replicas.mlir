// REQUIRES: rn-run
// RUN: split-file %s %t
// RUN: rn-compile %t/batch8.mlir -o %t/one.rnx --quiet --pipeline "momentum=0.9 weight-decay=1e-4"
// RUN: rn-compile %t/batch4.mlir -o %t/dp.rnx --quiet --pipeline "momentum=0.9 weight-decay=1e-4 data-parallel=true all-reduce-bucket-bytes=0"
// RUN: rn-compile %t/batch4.mlir -o %t/buckets.rnx --quiet --pipeline "momentum=0.9 weight-decay=1e-4 data-parallel=true all-reduce-bucket-bytes=64"
// RUN: rn-run %t/one.rnx --synthetic --steps 6 --lr 0.1 --executor cpu --state-digest %t/one.json > %t/one.log
// RUN: rn-run %t/dp.rnx --synthetic --steps 6 --lr 0.1 --executor cpu --cpu-replicas 2 --state-digest %t/dp.json > %t/dp.log
// RUN: rn-run %t/buckets.rnx --synthetic --steps 6 --lr 0.1 --executor cpu --cpu-replicas 2 --state-digest %t/buckets.json > %t/buckets.log
// RUN: FileCheck %s --check-prefix=REPLICAS < %t/dp.log
// RUN: %python %S/../../../scripts/compare-digests.py --losses %t/one.log %t/dp.log --tol 1e-6 | FileCheck %s --check-prefix=LOSSES
// RUN: %python %S/../../../scripts/compare-digests.py --losses %t/one.log %t/buckets.log --tol 1e-6 | FileCheck %s --check-prefix=LOSSES
// RUN: %python %S/../../../scripts/compare-digests.py %t/one.json %t/dp.json --tol 1e-6 | FileCheck %s --check-prefix=STATE
// RUN: %python %S/../../../scripts/compare-digests.py %t/one.json %t/buckets.json --tol 1e-6 | FileCheck %s --check-prefix=STATE
// RUN: not rn-run %t/dp.rnx --synthetic --steps 1 --executor cpu --cpu-replicas 2 --interleave 2>&1 | FileCheck %s --check-prefix=INTERLEAVE
// RUN: not rn-run %t/one.rnx --synthetic --steps 1 --executor cpu --cpu-replicas 2 2>&1 | FileCheck %s --check-prefix=PLAIN

// Tests data-parallel training's multi-rank logic on the CPU, the
// reference of the GPU ranks: two CPU replicas in one process
// (--cpu-replicas 2) at batch 4 each, each training its shard of every
// global batch, their gradients averaged by the replica group (one
// all-reduce, and in 64-byte buckets during the backward), reproduce one
// replica at the global batch 8 (an MLP: no batch statistics), losses and
// every state entry within f32 rounding of the other summation order.
// Replicas do not run interleaved, and several ranks need an artifact
// compiled data-parallel.

// REPLICAS: rn-run: executor cpu, data-parallel rank 0 of 2
// REPLICAS: model tiny_mlp: batch 4
// REPLICAS: step 6 loss
// LOSSES: 6/6 step losses agree within 1e-06
// STATE: 12/12 state entries agree within 1e-06
// INTERLEAVE: error: the CPU executor's replicas do not run interleaved
// PLAIN: error: rank 1 of 2: {{.*}}one.rnx was not compiled data-parallel

//--- batch8.mlir
module attributes {rn.model = "tiny_mlp"} {
  rn.parameter @fc1.weight : tensor<16x4xf32> = #rn.init<uniform, 5.000000e-01>
  rn.parameter @fc1.bias : tensor<16xf32> = #rn.init<uniform, 5.000000e-01>
  rn.parameter @fc2.weight : tensor<3x16xf32> = #rn.init<uniform, 2.500000e-01>
  rn.parameter @fc2.bias : tensor<3xf32> = #rn.init<uniform, 2.500000e-01>
  func.func @forward(%images: tensor<8x4xf32>, %labels: tensor<8xi32>) -> tensor<f32> {
    %0 = rn.param @fc1.weight : tensor<16x4xf32>
    %1 = rn.param @fc1.bias : tensor<16xf32>
    %2 = rn.linear %images, %0, %1 : (tensor<8x4xf32>, tensor<16x4xf32>, tensor<16xf32>) -> tensor<8x16xf32>
    %3 = rn.relu %2 : tensor<8x16xf32>
    %4 = rn.param @fc2.weight : tensor<3x16xf32>
    %5 = rn.param @fc2.bias : tensor<3xf32>
    %6 = rn.linear %3, %4, %5 : (tensor<8x16xf32>, tensor<3x16xf32>, tensor<3xf32>) -> tensor<8x3xf32>
    %7 = rn.softmax_cross_entropy %6, %labels label_smoothing 0.000000e+00 : (tensor<8x3xf32>, tensor<8xi32>) -> tensor<f32>
    return %7 : tensor<f32>
  }
}

//--- batch4.mlir
module attributes {rn.model = "tiny_mlp"} {
  rn.parameter @fc1.weight : tensor<16x4xf32> = #rn.init<uniform, 5.000000e-01>
  rn.parameter @fc1.bias : tensor<16xf32> = #rn.init<uniform, 5.000000e-01>
  rn.parameter @fc2.weight : tensor<3x16xf32> = #rn.init<uniform, 2.500000e-01>
  rn.parameter @fc2.bias : tensor<3xf32> = #rn.init<uniform, 2.500000e-01>
  func.func @forward(%images: tensor<4x4xf32>, %labels: tensor<4xi32>) -> tensor<f32> {
    %0 = rn.param @fc1.weight : tensor<16x4xf32>
    %1 = rn.param @fc1.bias : tensor<16xf32>
    %2 = rn.linear %images, %0, %1 : (tensor<4x4xf32>, tensor<16x4xf32>, tensor<16xf32>) -> tensor<4x16xf32>
    %3 = rn.relu %2 : tensor<4x16xf32>
    %4 = rn.param @fc2.weight : tensor<3x16xf32>
    %5 = rn.param @fc2.bias : tensor<3xf32>
    %6 = rn.linear %3, %4, %5 : (tensor<4x16xf32>, tensor<3x16xf32>, tensor<3xf32>) -> tensor<4x3xf32>
    %7 = rn.softmax_cross_entropy %6, %labels label_smoothing 0.000000e+00 : (tensor<4x3xf32>, tensor<4xi32>) -> tensor<f32>
    return %7 : tensor<f32>
  }
}
