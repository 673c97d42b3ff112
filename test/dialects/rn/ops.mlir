// RUN: rn-opt %s --split-input-file | rn-opt --split-input-file | FileCheck %s
// RUN: rn-opt %s --split-input-file --mlir-print-op-generic | rn-opt --split-input-file | FileCheck %s

// Tests that parameters and buffers round-trip with every initializer kind.

// CHECK: module attributes {rn.model = "params"}
module attributes {rn.model = "params"} {
  // CHECK: rn.parameter @conv1.weight : tensor<8x3x3x3xf32> = #rn.init<normal, 5.000000e-02>
  rn.parameter @conv1.weight : tensor<8x3x3x3xf32> = #rn.init<normal, 5.000000e-02>
  // CHECK: rn.parameter @"0.bias" : tensor<8xf16> = #rn.init<uniform, 2.500000e-01>
  rn.parameter @"0.bias" : tensor<8xf16> = #rn.init<uniform, 2.500000e-01>
  // CHECK: rn.parameter @bn1.weight : tensor<8xbf16> = #rn.init<ones>
  rn.parameter @bn1.weight : tensor<8xbf16> = #rn.init<ones>
  // CHECK: rn.parameter buffer @bn1.running_mean : tensor<8xf32> = #rn.init<zeros>
  rn.parameter buffer @bn1.running_mean : tensor<8xf32> = #rn.init<zeros>

  // CHECK-LABEL: func.func @read
  // CHECK: rn.param @conv1.weight : tensor<8x3x3x3xf32>
  // CHECK: rn.param @"0.bias" : tensor<8xf16>
  func.func @read() -> (tensor<8x3x3x3xf32>, tensor<8xf16>) {
    %0 = rn.param @conv1.weight : tensor<8x3x3x3xf32>
    %1 = rn.param @"0.bias" : tensor<8xf16>
    return %0, %1 : tensor<8x3x3x3xf32>, tensor<8xf16>
  }
}

// -----

// Tests conv2d without bias, with bias, strided, dilated and grouped.

// CHECK-LABEL: func.func @conv2d
func.func @conv2d(%x: tensor<2x32x32x16xf32>, %w: tensor<32x3x3x16xf32>, %b: tensor<32xf32>,
                  %wg: tensor<32x3x3x4xf32>) {
  // CHECK: rn.conv2d %{{.+}}, %{{.+}} stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 : (tensor<2x32x32x16xf32>, tensor<32x3x3x16xf32>) -> tensor<2x32x32x32xf32>
  %0 = rn.conv2d %x, %w stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 : (tensor<2x32x32x16xf32>, tensor<32x3x3x16xf32>) -> tensor<2x32x32x32xf32>
  // CHECK: rn.conv2d %{{.+}}, %{{.+}}, %{{.+}} stride [2, 2] pad [1, 1] dilation [1, 1] groups 1 : (tensor<2x32x32x16xf32>, tensor<32x3x3x16xf32>, tensor<32xf32>) -> tensor<2x16x16x32xf32>
  %1 = rn.conv2d %x, %w, %b stride [2, 2] pad [1, 1] dilation [1, 1] groups 1 : (tensor<2x32x32x16xf32>, tensor<32x3x3x16xf32>, tensor<32xf32>) -> tensor<2x16x16x32xf32>
  // CHECK: dilation [2, 2] groups 1 : {{.+}} -> tensor<2x28x28x32xf32>
  %2 = rn.conv2d %x, %w stride [1, 1] pad [0, 0] dilation [2, 2] groups 1 : (tensor<2x32x32x16xf32>, tensor<32x3x3x16xf32>) -> tensor<2x28x28x32xf32>
  // CHECK: groups 4 : (tensor<2x32x32x16xf32>, tensor<32x3x3x4xf32>) -> tensor<2x32x32x32xf32>
  %3 = rn.conv2d %x, %wg stride [1, 1] pad [1, 1] dilation [1, 1] groups 4 : (tensor<2x32x32x16xf32>, tensor<32x3x3x4xf32>) -> tensor<2x32x32x32xf32>
  return
}

// -----

// Tests batch_norm over NHWC and over [N, C], in f16.

// CHECK-LABEL: func.func @batch_norm
func.func @batch_norm(%x: tensor<2x8x8x4xf16>, %v: tensor<4xf16>, %y: tensor<2x4xf16>) {
  // CHECK: rn.batch_norm %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} eps 1.000000e-05 momentum 1.000000e-01 : (tensor<2x8x8x4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>) -> tensor<2x8x8x4xf16>
  %0 = rn.batch_norm %x, %v, %v, %v, %v eps 1.000000e-05 momentum 1.000000e-01 : (tensor<2x8x8x4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>) -> tensor<2x8x8x4xf16>
  // CHECK: rn.batch_norm {{.+}} -> tensor<2x4xf16>
  %1 = rn.batch_norm %y, %v, %v, %v, %v eps 1.000000e-03 momentum 0.000000e+00 : (tensor<2x4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>) -> tensor<2x4xf16>
  return
}

// -----

// Tests the elementwise ops, add and dropout in bf16.

// CHECK-LABEL: func.func @elementwise
func.func @elementwise(%x: tensor<2x8xbf16>) -> tensor<2x8xbf16> {
  // CHECK: %[[R:.+]] = rn.relu %{{.+}} : tensor<2x8xbf16>
  %0 = rn.relu %x : tensor<2x8xbf16>
  // CHECK: %[[T:.+]] = rn.tanh %[[R]] : tensor<2x8xbf16>
  %1 = rn.tanh %0 : tensor<2x8xbf16>
  // CHECK: %[[S:.+]] = rn.silu %[[T]] : tensor<2x8xbf16>
  %2 = rn.silu %1 : tensor<2x8xbf16>
  // CHECK: %[[A:.+]] = rn.add %[[S]], %[[R]] : tensor<2x8xbf16>
  %3 = rn.add %2, %0 : tensor<2x8xbf16>
  // CHECK: rn.dropout %[[A]] p 5.000000e-01 : tensor<2x8xbf16>
  %4 = rn.dropout %3 p 5.000000e-01 : tensor<2x8xbf16>
  return %4 : tensor<2x8xbf16>
}

// -----

// Tests max and average pooling (ImageNet stem pool, LeNet pool), global
// average pooling and flatten.

// CHECK-LABEL: func.func @pooling
func.func @pooling(%x: tensor<2x112x112x64xf32>) -> tensor<2x64xf32> {
  // CHECK: rn.max_pool2d %{{.+}} kernel [3, 3] stride [2, 2] pad [1, 1] : tensor<2x112x112x64xf32> -> tensor<2x56x56x64xf32>
  %0 = rn.max_pool2d %x kernel [3, 3] stride [2, 2] pad [1, 1] : tensor<2x112x112x64xf32> -> tensor<2x56x56x64xf32>
  // CHECK: rn.avg_pool2d %{{.+}} kernel [2, 2] stride [2, 2] pad [0, 0] : tensor<2x56x56x64xf32> -> tensor<2x28x28x64xf32>
  %1 = rn.avg_pool2d %0 kernel [2, 2] stride [2, 2] pad [0, 0] : tensor<2x56x56x64xf32> -> tensor<2x28x28x64xf32>
  // CHECK: rn.global_avg_pool %{{.+}} : tensor<2x28x28x64xf32> -> tensor<2x1x1x64xf32>
  %2 = rn.global_avg_pool %1 : tensor<2x28x28x64xf32> -> tensor<2x1x1x64xf32>
  // CHECK: rn.flatten %{{.+}} : tensor<2x1x1x64xf32> -> tensor<2x64xf32>
  %3 = rn.flatten %2 : tensor<2x1x1x64xf32> -> tensor<2x64xf32>
  return %3 : tensor<2x64xf32>
}

// -----

// Tests linear with and without bias and the loss with label smoothing.

// CHECK-LABEL: func.func @classifier
func.func @classifier(%x: tensor<4x784xf32>, %w1: tensor<128x784xf32>, %b1: tensor<128xf32>,
                      %w2: tensor<10x128xf32>, %labels: tensor<4xi32>) -> tensor<f32> {
  // CHECK: %[[H:.+]] = rn.linear %{{.+}}, %{{.+}}, %{{.+}} : (tensor<4x784xf32>, tensor<128x784xf32>, tensor<128xf32>) -> tensor<4x128xf32>
  %0 = rn.linear %x, %w1, %b1 : (tensor<4x784xf32>, tensor<128x784xf32>, tensor<128xf32>) -> tensor<4x128xf32>
  // CHECK: %[[L:.+]] = rn.linear %[[H]], %{{.+}} : (tensor<4x128xf32>, tensor<10x128xf32>) -> tensor<4x10xf32>
  %1 = rn.linear %0, %w2 : (tensor<4x128xf32>, tensor<10x128xf32>) -> tensor<4x10xf32>
  // CHECK: rn.softmax_cross_entropy %[[L]], %{{.+}} label_smoothing 1.000000e-01 : (tensor<4x10xf32>, tensor<4xi32>) -> tensor<f32>
  %2 = rn.softmax_cross_entropy %1, %labels label_smoothing 1.000000e-01 : (tensor<4x10xf32>, tensor<4xi32>) -> tensor<f32>
  return %2 : tensor<f32>
}

// -----

// Tests that the loss is f32 even when the logits are f16.

// CHECK-LABEL: func.func @half_logits
func.func @half_logits(%logits: tensor<4x10xf16>, %labels: tensor<4xi32>) -> tensor<f32> {
  // CHECK: rn.softmax_cross_entropy {{.+}} : (tensor<4x10xf16>, tensor<4xi32>) -> tensor<f32>
  %0 = rn.softmax_cross_entropy %logits, %labels label_smoothing 0.000000e+00 : (tensor<4x10xf16>, tensor<4xi32>) -> tensor<f32>
  return %0 : tensor<f32>
}
