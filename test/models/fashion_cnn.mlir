// Tests that the frontend's Fashion-MNIST CNN (conv-BN-ReLU blocks, max pool, dropout) verifies in rn-opt.

// RUN: %python -m rn.models fashion_cnn --batch 2 | rn-opt | FileCheck %s

// CHECK-LABEL: module attributes {rn.model = "fashion_cnn"}
// CHECK:       rn.parameter @"0.weight" : tensor<32x3x3x1xf32> = #rn.init<uniform, {{.*}}>
// CHECK-NEXT:  rn.parameter @"1.weight" : tensor<32xf32> = #rn.init<ones>
// CHECK-NEXT:  rn.parameter @"1.bias" : tensor<32xf32> = #rn.init<zeros>
// CHECK-NEXT:  rn.parameter buffer @"1.running_mean" : tensor<32xf32> = #rn.init<zeros>
// CHECK-NEXT:  rn.parameter buffer @"1.running_var" : tensor<32xf32> = #rn.init<ones>
// CHECK:       func.func @forward(%[[IMG:[a-z0-9]+]]: tensor<2x28x28x1xf32>, %[[LAB:[a-z0-9]+]]: tensor<2xi32>) -> tensor<f32>
// CHECK:       %[[W:[0-9]+]] = rn.param @"0.weight" : tensor<32x3x3x1xf32>
// CHECK:       %[[C:[0-9]+]] = rn.conv2d %[[IMG]], %[[W]] stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 : (tensor<2x28x28x1xf32>, tensor<32x3x3x1xf32>) -> tensor<2x28x28x32xf32>
// CHECK:       rn.batch_norm %[[C]], {{.*}} eps {{.*}} momentum {{.*}} -> tensor<2x28x28x32xf32>
// CHECK:       rn.max_pool2d %{{.*}} kernel [2, 2] stride [2, 2] pad [0, 0] : tensor<2x28x28x32xf32> -> tensor<2x14x14x32xf32>
// CHECK:       rn.max_pool2d {{.*}} -> tensor<2x7x7x64xf32>
// CHECK:       rn.flatten %{{.*}} : tensor<2x7x7x64xf32> -> tensor<2x3136xf32>
// CHECK:       rn.linear {{.*}} : (tensor<2x3136xf32>, tensor<128x3136xf32>, tensor<128xf32>) -> tensor<2x128xf32>
// CHECK:       rn.dropout %{{.*}} p {{.*}} : tensor<2x128xf32>
// CHECK:       %[[LOGITS:[0-9]+]] = rn.linear {{.*}} -> tensor<2x10xf32>
// CHECK:       %[[LOSS:[0-9]+]] = rn.softmax_cross_entropy %[[LOGITS]], %[[LAB]]
// CHECK:       return %[[LOSS]] : tensor<f32>
