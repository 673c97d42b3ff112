// REQUIRES: rn-run
// RUN: rn-compile %s -o %t.rnx --quiet --pipeline "momentum=0.9"
// RUN: rn-run %t.rnx --synthetic --steps 30 --lr 0.1 --executor cpu > %t.log
// RUN: %python -c "import re,sys; t=open(sys.argv[1]).read(); first,last=map(float,re.search(r'loss first (\S+) last (\S+)',t).groups()); print('loss falls' if last < 0.9 * first else 'loss stays', first, last)" %t.log | FileCheck %s
// RUN: rn-compile %s -o %t.f16.rnx --quiet --pipeline "precision=f16 loss-scaling=dynamic momentum=0.9"
// RUN: rn-run %t.f16.rnx --synthetic --steps 3 --lr 0.1 --executor cpu --interleave | FileCheck %s --check-prefix=INTERLEAVE

// Tests the ops of the mobile networks through the whole pipeline and the
// CPU executor: a tiny network with ReLU6 (rn.hardtanh 0..6), a depthwise
// convolution, Hardswish, a squeeze-and-excitation gate (rn.channel_mul),
// Hardtanh, Hardsigmoid and Sigmoid compiles to an
// artifact that the runtime loads (its registry checks the new ops'
// attributes), and trains: the loss falls by more than 10% in 30 steps of
// f32 SGD on the synthetic data set; the f16 schedule with dynamic loss
// scaling runs interleaved at random without a hazard.

// CHECK: loss falls
// INTERLEAVE: interleaved
// INTERLEAVE: step 3 loss
// INTERLEAVE-NOT: error

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
    %24 = rn.hardsigmoid %23 : tensor<4x1x1x8xf32>
    %25 = rn.channel_mul %15, %24 : tensor<4x8x8x8xf32>, tensor<4x1x1x8xf32>
    %26 = rn.param @pw.weight : tensor<8x1x1x8xf32>
    %27 = rn.param @pw.bias : tensor<8xf32>
    %28 = rn.conv2d %25, %26, %27 stride [1, 1] pad [0, 0] dilation [1, 1] groups 1 : (tensor<4x8x8x8xf32>, tensor<8x1x1x8xf32>, tensor<8xf32>) -> tensor<4x8x8x8xf32>
    %29 = rn.hardtanh %28 min -2.000000000e+00 max 2.000000000e+00 : tensor<4x8x8x8xf32>
    %30 = rn.hardsigmoid %29 : tensor<4x8x8x8xf32>
    %31 = rn.sigmoid %30 : tensor<4x8x8x8xf32>
    %32 = rn.global_avg_pool %31 : tensor<4x8x8x8xf32> -> tensor<4x1x1x8xf32>
    %33 = rn.flatten %32 : tensor<4x1x1x8xf32> -> tensor<4x8xf32>
    %34 = rn.param @fc.weight : tensor<3x8xf32>
    %35 = rn.param @fc.bias : tensor<3xf32>
    %36 = rn.linear %33, %34, %35 : (tensor<4x8xf32>, tensor<3x8xf32>, tensor<3xf32>) -> tensor<4x3xf32>
    %37 = rn.softmax_cross_entropy %36, %labels label_smoothing 0.000000000e+00 : (tensor<4x3xf32>, tensor<4xi32>) -> tensor<f32>
    return %37 : tensor<f32>
  }
}

