// REQUIRES: rn-run
// RUN: rn-compile %s -o %t.rnx --quiet --pipeline "momentum=0.9"
// RUN: rn-run %t.rnx --synthetic --steps 20 --lr 0.05 --executor cpu | FileCheck %s
// RUN: rn-compile %s -o %t.f16.rnx --quiet --pipeline "precision=f16 loss-scaling=dynamic momentum=0.9"
// RUN: rn-run %t.f16.rnx --synthetic --steps 3 --lr 0.05 --executor cpu --interleave | FileCheck %s --check-prefix=INTERLEAVE
// RUN: sed -e 's/4x3x3x8/4x4x4x8/g' %s > %t.adaptive.mlir
// RUN: sed -E -e 's/rn\.adaptive_avg_pool2d (%%[0-9]+) :/rn.avg_pool2d \1 kernel [2, 2] stride [2, 2] pad [0, 0] :/' %t.adaptive.mlir > %t.plain.mlir
// RUN: rn-compile %t.adaptive.mlir -o %t.adaptive.rnx --quiet --pipeline "momentum=0.9"
// RUN: rn-compile %t.plain.mlir -o %t.plain.rnx --quiet --pipeline "momentum=0.9"
// RUN: rn-run %t.adaptive.rnx --synthetic --steps 3 --lr 0.05 --executor cpu --state-digest %t.adaptive.json --state-digest-every 1
// RUN: rn-run %t.plain.rnx --synthetic --steps 3 --lr 0.05 --executor cpu --state-digest %t.plain.json --state-digest-every 1
// RUN: %python %S/../../../scripts/compare-digests.py %t.adaptive.json %t.plain.json --tol 0 | FileCheck %s --check-prefix=SAME
// RUN: grep -cE "^ +%%[0-9]+ = rn.adaptive_avg_pool2d .* -> tensor<4x4x4x8xf32>" %t.adaptive.mlir | FileCheck %s --check-prefix=ONE
// RUN: grep -cE "^ +%%[0-9]+ = rn.avg_pool2d .* -> tensor<4x4x4x8xf32>" %t.plain.mlir | FileCheck %s --check-prefix=ONE
// RUN: not grep -E "^ +%%[0-9]+ = rn.adaptive_avg_pool2d" %t.plain.mlir

// Tests the ops of the mobile networks through the whole pipeline and the
// CPU executor: a tiny network with ReLU6 (rn.hardtanh 0..6), a depthwise
// convolution, Hardswish, a squeeze-and-excitation block (Sigmoid gate,
// rn.channel_mul), an adaptive average pooling 8x8 -> 3x3
// (rn.adaptive_avg_pool2d), Hardtanh and Hardsigmoid compiles to an
// artifact that the runtime loads and trains with finite losses (whether
// it learns is not this test's question: its head, a global average pool,
// cannot fit the synthetic set's linear teacher; the gradients are checked
// in gradcheck_test.cpp); the f16 schedule with dynamic loss scaling runs
// interleaved at random without a hazard. And an adaptive pooling whose
// output divides its input (8x8 -> 4x4) trains bit for bit as the plain
// 2x2/2 average pooling it equals, forward and backward through the
// executor.

// CHECK: step 1 loss {{[0-9]+\.[0-9]+}}
// CHECK: step 20 loss {{[0-9]+\.[0-9]+}}
// CHECK: loss first {{[0-9]+\.[0-9]+}} last {{[0-9]+\.[0-9]+}}
// INTERLEAVE: interleaved
// INTERLEAVE: step 3 loss {{[0-9]+\.[0-9]+}}
// INTERLEAVE-NOT: error
// SAME: 3/3 steps (3 the last), {{[0-9]+}} state entries, agree within 0 (bit for bit)
// ONE: 1

module attributes {rn.model = "mobile_tiny"} {
  rn.parameter @conv1.weight : tensor<8x3x3x3xf32> = #rn.init<uniform, 1.924500897e-01>
  rn.parameter @bn1.weight : tensor<8xf32> = #rn.init<ones>
  rn.parameter @bn1.bias : tensor<8xf32> = #rn.init<zeros>
  rn.parameter buffer @bn1.running_mean : tensor<8xf32> = #rn.init<zeros>
  rn.parameter buffer @bn1.running_var : tensor<8xf32> = #rn.init<ones>
  rn.parameter @dw.weight : tensor<8x3x3x1xf32> = #rn.init<uniform, 3.333333333e-01>
  rn.parameter @bn2.weight : tensor<8xf32> = #rn.init<ones>
  rn.parameter @bn2.bias : tensor<8xf32> = #rn.init<zeros>
  rn.parameter buffer @bn2.running_mean : tensor<8xf32> = #rn.init<zeros>
  rn.parameter buffer @bn2.running_var : tensor<8xf32> = #rn.init<ones>
  rn.parameter @se.fc1.weight : tensor<4x1x1x8xf32> = #rn.init<uniform, 3.535533906e-01>
  rn.parameter @se.fc1.bias : tensor<4xf32> = #rn.init<uniform, 3.535533906e-01>
  rn.parameter @se.fc2.weight : tensor<8x1x1x4xf32> = #rn.init<uniform, 5.000000000e-01>
  rn.parameter @se.fc2.bias : tensor<8xf32> = #rn.init<uniform, 5.000000000e-01>
  rn.parameter @pw.weight : tensor<8x1x1x8xf32> = #rn.init<uniform, 3.535533906e-01>
  rn.parameter @pw.bias : tensor<8xf32> = #rn.init<uniform, 3.535533906e-01>
  rn.parameter @fc.weight : tensor<3x8xf32> = #rn.init<uniform, 3.535533906e-01>
  rn.parameter @fc.bias : tensor<3xf32> = #rn.init<uniform, 3.535533906e-01>
  func.func @forward(%images: tensor<4x8x8x3xf32>, %labels: tensor<4xi32>) -> tensor<f32> {
    %0 = rn.param @conv1.weight : tensor<8x3x3x3xf32>
    %1 = rn.conv2d %images, %0 stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 : (tensor<4x8x8x3xf32>, tensor<8x3x3x3xf32>) -> tensor<4x8x8x8xf32>
    %2 = rn.param @bn1.weight : tensor<8xf32>
    %3 = rn.param @bn1.bias : tensor<8xf32>
    %4 = rn.param @bn1.running_mean : tensor<8xf32>
    %5 = rn.param @bn1.running_var : tensor<8xf32>
    %6 = rn.batch_norm %1, %2, %3, %4, %5 eps 1.000000000e-05 momentum 1.000000000e-01 : (tensor<4x8x8x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<4x8x8x8xf32>
    %7 = rn.hardtanh %6 min 0.000000000e+00 max 6.000000000e+00 : tensor<4x8x8x8xf32>
    %8 = rn.param @dw.weight : tensor<8x3x3x1xf32>
    %9 = rn.conv2d %7, %8 stride [1, 1] pad [1, 1] dilation [1, 1] groups 8 : (tensor<4x8x8x8xf32>, tensor<8x3x3x1xf32>) -> tensor<4x8x8x8xf32>
    %10 = rn.param @bn2.weight : tensor<8xf32>
    %11 = rn.param @bn2.bias : tensor<8xf32>
    %12 = rn.param @bn2.running_mean : tensor<8xf32>
    %13 = rn.param @bn2.running_var : tensor<8xf32>
    %14 = rn.batch_norm %9, %10, %11, %12, %13 eps 1.000000000e-05 momentum 1.000000000e-01 : (tensor<4x8x8x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<4x8x8x8xf32>
    %15 = rn.hardswish %14 : tensor<4x8x8x8xf32>
    %16 = rn.global_avg_pool %15 : tensor<4x8x8x8xf32> -> tensor<4x1x1x8xf32>
    %17 = rn.param @se.fc1.weight : tensor<4x1x1x8xf32>
    %18 = rn.param @se.fc1.bias : tensor<4xf32>
    %19 = rn.conv2d %16, %17, %18 stride [1, 1] pad [0, 0] dilation [1, 1] groups 1 : (tensor<4x1x1x8xf32>, tensor<4x1x1x8xf32>, tensor<4xf32>) -> tensor<4x1x1x4xf32>
    %20 = rn.relu %19 : tensor<4x1x1x4xf32>
    %21 = rn.param @se.fc2.weight : tensor<8x1x1x4xf32>
    %22 = rn.param @se.fc2.bias : tensor<8xf32>
    %23 = rn.conv2d %20, %21, %22 stride [1, 1] pad [0, 0] dilation [1, 1] groups 1 : (tensor<4x1x1x4xf32>, tensor<8x1x1x4xf32>, tensor<8xf32>) -> tensor<4x1x1x8xf32>
    %24 = rn.sigmoid %23 : tensor<4x1x1x8xf32>
    %25 = rn.channel_mul %15, %24 : tensor<4x8x8x8xf32>, tensor<4x1x1x8xf32>
    %26 = rn.adaptive_avg_pool2d %25 : tensor<4x8x8x8xf32> -> tensor<4x3x3x8xf32>
    %27 = rn.param @pw.weight : tensor<8x1x1x8xf32>
    %28 = rn.param @pw.bias : tensor<8xf32>
    %29 = rn.conv2d %26, %27, %28 stride [1, 1] pad [0, 0] dilation [1, 1] groups 1 : (tensor<4x3x3x8xf32>, tensor<8x1x1x8xf32>, tensor<8xf32>) -> tensor<4x3x3x8xf32>
    %30 = rn.hardtanh %29 min -2.000000000e+00 max 2.000000000e+00 : tensor<4x3x3x8xf32>
    %31 = rn.hardsigmoid %30 : tensor<4x3x3x8xf32>
    %32 = rn.global_avg_pool %31 : tensor<4x3x3x8xf32> -> tensor<4x1x1x8xf32>
    %33 = rn.flatten %32 : tensor<4x1x1x8xf32> -> tensor<4x8xf32>
    %34 = rn.param @fc.weight : tensor<3x8xf32>
    %35 = rn.param @fc.bias : tensor<3xf32>
    %36 = rn.linear %33, %34, %35 : (tensor<4x8xf32>, tensor<3x8xf32>, tensor<3xf32>) -> tensor<4x3xf32>
    %37 = rn.softmax_cross_entropy %36, %labels label_smoothing 0.000000000e+00 : (tensor<4x3xf32>, tensor<4xi32>) -> tensor<f32>
    return %37 : tensor<f32>
  }
}

