// REQUIRES: rn-run
// RUN: rn-compile %s -o %t.rnx --quiet --pipeline "momentum=0.9"
// RUN: rn-run %t.rnx --synthetic --steps 20 --lr 0.05 --executor cpu | FileCheck %s
// RUN: rn-compile %s -o %t.f16.rnx --quiet --pipeline "precision=f16 loss-scaling=dynamic momentum=0.9"
// RUN: rn-run %t.f16.rnx --synthetic --steps 3 --lr 0.05 --executor cpu --interleave | FileCheck %s --check-prefix=INTERLEAVE
// RUN: sed -e 's/rn.stochastic_depth %%10 p 5.000000e-01/rn.stochastic_depth %%10 p 0.000000e+00/' %s > %t.p0.mlir
// RUN: sed -e '/rn.stochastic_depth/d' -e 's/rn.add %%7, %%11/rn.add %%7, %%10/' %s > %t.plain.mlir
// RUN: grep -cE "^ +%%11 = rn.stochastic_depth %%10 p 0.000000e\+00" %t.p0.mlir | FileCheck %s --check-prefix=ONE
// RUN: not grep -E "^ +%%[0-9]+ = rn.stochastic_depth" %t.plain.mlir
// RUN: rn-compile %t.p0.mlir -o %t.p0.rnx --quiet --pipeline "momentum=0.9"
// RUN: rn-compile %t.plain.mlir -o %t.plain.rnx --quiet --pipeline "momentum=0.9"
// RUN: rn-run %t.rnx --synthetic --steps 3 --lr 0.05 --executor cpu --state-digest %t.half.json --state-digest-every 1
// RUN: rn-run %t.rnx --synthetic --steps 3 --lr 0.05 --executor cpu --state-digest %t.half2.json --state-digest-every 1
// RUN: rn-run %t.p0.rnx --synthetic --steps 3 --lr 0.05 --executor cpu --state-digest %t.p0.json --state-digest-every 1
// RUN: rn-run %t.plain.rnx --synthetic --steps 3 --lr 0.05 --executor cpu --state-digest %t.plain.json --state-digest-every 1
// RUN: %python %S/../../../scripts/compare-digests.py %t.half.json %t.half2.json --tol 0 | FileCheck %s --check-prefix=SAME
// RUN: %python %S/../../../scripts/compare-digests.py %t.p0.json %t.plain.json --tol 0 | FileCheck %s --check-prefix=SAME
// RUN: not %python %S/../../../scripts/compare-digests.py %t.half.json %t.plain.json --tol 0 | FileCheck %s --check-prefix=DIFFER

// Tests stochastic depth through the whole pipeline and the CPU executor: a
// tiny network whose residual branch (a convolution) goes through
// rn.stochastic_depth p 0.5 compiles to an artifact that the runtime loads
// and trains with finite losses; the f16 schedule with dynamic loss scaling
// runs interleaved at random without a hazard. Two runs draw the same
// masks (the same digests, bit for bit); at p 0 the network trains bit for
// bit as the one without the op (the mask is all ones, forward and
// backward), and at p 0.5 it does not (samples lose their branch).

// CHECK: step 1 loss {{[0-9]+\.[0-9]+}}
// CHECK: step 20 loss {{[0-9]+\.[0-9]+}}
// CHECK: loss first {{[0-9]+\.[0-9]+}} last {{[0-9]+\.[0-9]+}}
// INTERLEAVE: interleaved
// INTERLEAVE: step 3 loss {{[0-9]+\.[0-9]+}}
// INTERLEAVE-NOT: error
// SAME: 3/3 steps (3 the last), {{[0-9]+}} state entries, agree within 0 (bit for bit)
// DIFFER: step 1: {{[0-9]+}}/{{[0-9]+}} state entries beyond 0
// ONE: 1

module attributes {rn.model = "stochastic_depth_tiny"} {
  rn.parameter @stem.weight : tensor<8x3x3x3xf32> = #rn.init<uniform, 1.924500897e-01>
  rn.parameter @bn.weight : tensor<8xf32> = #rn.init<ones>
  rn.parameter @bn.bias : tensor<8xf32> = #rn.init<zeros>
  rn.parameter buffer @bn.running_mean : tensor<8xf32> = #rn.init<zeros>
  rn.parameter buffer @bn.running_var : tensor<8xf32> = #rn.init<ones>
  rn.parameter @block.weight : tensor<8x3x3x8xf32> = #rn.init<uniform, 1.178511302e-01>
  rn.parameter @block.bias : tensor<8xf32> = #rn.init<uniform, 1.178511302e-01>
  rn.parameter @fc.weight : tensor<3x8xf32> = #rn.init<uniform, 3.535533906e-01>
  rn.parameter @fc.bias : tensor<3xf32> = #rn.init<uniform, 3.535533906e-01>
  func.func @forward(%images: tensor<4x6x6x3xf32>, %labels: tensor<4xi32>) -> tensor<f32> {
    %0 = rn.param @stem.weight : tensor<8x3x3x3xf32>
    %1 = rn.conv2d %images, %0 stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 : (tensor<4x6x6x3xf32>, tensor<8x3x3x3xf32>) -> tensor<4x6x6x8xf32>
    %2 = rn.param @bn.weight : tensor<8xf32>
    %3 = rn.param @bn.bias : tensor<8xf32>
    %4 = rn.param @bn.running_mean : tensor<8xf32>
    %5 = rn.param @bn.running_var : tensor<8xf32>
    %6 = rn.batch_norm %1, %2, %3, %4, %5 eps 1.000000000e-05 momentum 1.000000000e-01 : (tensor<4x6x6x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<4x6x6x8xf32>
    %7 = rn.silu %6 : tensor<4x6x6x8xf32>
    %8 = rn.param @block.weight : tensor<8x3x3x8xf32>
    %9 = rn.param @block.bias : tensor<8xf32>
    %10 = rn.conv2d %7, %8, %9 stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 : (tensor<4x6x6x8xf32>, tensor<8x3x3x8xf32>, tensor<8xf32>) -> tensor<4x6x6x8xf32>
    %11 = rn.stochastic_depth %10 p 5.000000e-01 : tensor<4x6x6x8xf32>
    %12 = rn.add %7, %11 : tensor<4x6x6x8xf32>
    %13 = rn.global_avg_pool %12 : tensor<4x6x6x8xf32> -> tensor<4x1x1x8xf32>
    %14 = rn.flatten %13 : tensor<4x1x1x8xf32> -> tensor<4x8xf32>
    %15 = rn.param @fc.weight : tensor<3x8xf32>
    %16 = rn.param @fc.bias : tensor<3xf32>
    %17 = rn.linear %14, %15, %16 : (tensor<4x8xf32>, tensor<3x8xf32>, tensor<3xf32>) -> tensor<4x3xf32>
    %18 = rn.softmax_cross_entropy %17, %labels label_smoothing 0.000000e+00 : (tensor<4x3xf32>, tensor<4xi32>) -> tensor<f32>
    return %18 : tensor<f32>
  }
}
