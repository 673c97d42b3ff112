// REQUIRES: rn-run
// RUN: rn-compile %s -o %t.off.rnx --quiet --pipeline "optimizer=lars weight-decay=1e-4 precision=f16 loss-scaling=dynamic group-updates=false"
// RUN: rn-compile %s -o %t.on.rnx --quiet --pipeline "optimizer=lars weight-decay=1e-4 precision=f16 loss-scaling=dynamic"
// RUN: rn-run %t.off.rnx --synthetic --steps 4 --lr 0.1 --executor cpu --state-digest %t.off.json --state-digest-every 1
// RUN: rn-run %t.on.rnx --synthetic --steps 4 --lr 0.1 --executor cpu --state-digest %t.on.json --state-digest-every 1
// RUN: %python %S/../../../scripts/compare-digests.py %t.off.json %t.on.json --tol 0 | FileCheck %s
// RUN: rn-run %t.on.rnx --synthetic --steps 3 --lr 0.1 --executor cpu --interleave | FileCheck %s --check-prefix=INTERLEAVE

// Tests that rn-group-updates changes no bit of LARS training: the f16 MLP
// with dynamic loss scaling, compiled with its rn.multi_lars_update groups
// (one per first reader, each tensor with its own norms and trust ratio)
// and with one rn.lars_update per parameter, leaves the same state after
// every one of 4 steps on the CPU executor, and the grouped schedule runs
// interleaved at random without a hazard.

// CHECK: 4/4 steps (4 the last), {{[0-9]+}} state entries, agree within 0 (bit for bit)
// INTERLEAVE: interleaved
// INTERLEAVE: step 3 loss

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
