// REQUIRES: rn-run
// RUN: rn-compile %s -o %t.rnx --quiet --pipeline "momentum=0.9"
// RUN: rn-run %t.rnx --synthetic --steps 20 --lr 0.05 --executor cpu | FileCheck %s
// RUN: rn-compile %s -o %t.f16.rnx --quiet --pipeline "precision=f16 loss-scaling=dynamic momentum=0.9"
// RUN: rn-run %t.f16.rnx --synthetic --steps 3 --lr 0.05 --executor cpu --interleave | FileCheck %s --check-prefix=INTERLEAVE
// RUN: rn-run %t.rnx --synthetic --steps 3 --lr 0.05 --executor cpu --state-digest %t.seq.json --state-digest-every 1
// RUN: rn-run %t.rnx --synthetic --steps 3 --lr 0.05 --executor cpu --interleave --state-digest %t.mixed.json --state-digest-every 1
// RUN: %python %S/../../../scripts/compare-digests.py %t.seq.json %t.mixed.json --tol 0 | FileCheck %s --check-prefix=SAME

// Tests the channel layout ops through the whole pipeline and the CPU
// executor: a ShuffleNet v2 unit (the stem's channels split in halves, one
// half through a convolution, the halves and the stem joined DenseNet-style
// and shuffled) compiles to an artifact that trains with finite losses; the
// f16 schedule with dynamic loss scaling runs interleaved at random without
// a hazard; and the f32 step interleaved gives the sequential one's state
// bit for bit (concat, split and shuffle on their streams read and write
// only what their access sets say).

// CHECK: step 1 loss {{[0-9]+\.[0-9]+}}
// CHECK: step 20 loss {{[0-9]+\.[0-9]+}}
// CHECK: loss first {{[0-9]+\.[0-9]+}} last {{[0-9]+\.[0-9]+}}
// INTERLEAVE: interleaved
// INTERLEAVE: step 3 loss {{[0-9]+\.[0-9]+}}
// INTERLEAVE-NOT: error
// SAME: 3/3 steps (3 the last), {{[0-9]+}} state entries, agree within 0 (bit for bit)

module attributes {rn.model = "channel_layout_tiny"} {
  rn.parameter @stem.weight : tensor<8x3x3x3xf32> = #rn.init<uniform, 1.924500897e-01>
  rn.parameter @bn.weight : tensor<8xf32> = #rn.init<ones>
  rn.parameter @bn.bias : tensor<8xf32> = #rn.init<zeros>
  rn.parameter buffer @bn.running_mean : tensor<8xf32> = #rn.init<zeros>
  rn.parameter buffer @bn.running_var : tensor<8xf32> = #rn.init<ones>
  rn.parameter @branch.weight : tensor<4x3x3x4xf32> = #rn.init<uniform, 1.666666667e-01>
  rn.parameter @fc.weight : tensor<3x16xf32> = #rn.init<uniform, 2.500000000e-01>
  rn.parameter @fc.bias : tensor<3xf32> = #rn.init<uniform, 2.500000000e-01>
  func.func @forward(%images: tensor<4x6x6x3xf32>, %labels: tensor<4xi32>) -> tensor<f32> {
    %0 = rn.param @stem.weight : tensor<8x3x3x3xf32>
    %1 = rn.conv2d %images, %0 stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 : (tensor<4x6x6x3xf32>, tensor<8x3x3x3xf32>) -> tensor<4x6x6x8xf32>
    %2 = rn.param @bn.weight : tensor<8xf32>
    %3 = rn.param @bn.bias : tensor<8xf32>
    %4 = rn.param @bn.running_mean : tensor<8xf32>
    %5 = rn.param @bn.running_var : tensor<8xf32>
    %6 = rn.batch_norm %1, %2, %3, %4, %5 eps 1.000000000e-05 momentum 1.000000000e-01 : (tensor<4x6x6x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<4x6x6x8xf32>
    %7 = rn.relu %6 : tensor<4x6x6x8xf32>
    %8:2 = rn.split %7 : tensor<4x6x6x8xf32> -> tensor<4x6x6x4xf32>, tensor<4x6x6x4xf32>
    %9 = rn.param @branch.weight : tensor<4x3x3x4xf32>
    %10 = rn.conv2d %8#1, %9 stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 : (tensor<4x6x6x4xf32>, tensor<4x3x3x4xf32>) -> tensor<4x6x6x4xf32>
    %11 = rn.concat %8#0, %10, %7 : (tensor<4x6x6x4xf32>, tensor<4x6x6x4xf32>, tensor<4x6x6x8xf32>) -> tensor<4x6x6x16xf32>
    %12 = rn.channel_shuffle %11 groups 2 : tensor<4x6x6x16xf32>
    %13 = rn.global_avg_pool %12 : tensor<4x6x6x16xf32> -> tensor<4x1x1x16xf32>
    %14 = rn.flatten %13 : tensor<4x1x1x16xf32> -> tensor<4x16xf32>
    %15 = rn.param @fc.weight : tensor<3x16xf32>
    %16 = rn.param @fc.bias : tensor<3xf32>
    %17 = rn.linear %14, %15, %16 : (tensor<4x16xf32>, tensor<3x16xf32>, tensor<3xf32>) -> tensor<4x3xf32>
    %18 = rn.softmax_cross_entropy %17, %labels label_smoothing 0.000000e+00 : (tensor<4x3xf32>, tensor<4xi32>) -> tensor<f32>
    return %18 : tensor<f32>
  }
}
