// Tests that the frontend's LeNet-5 (Tanh, AvgPool2d, padded first conv) verifies in rn-opt.

// RUN: %python -m rn.models lenet5 --batch 2 | rn-opt | FileCheck %s

// CHECK-LABEL: module attributes {rn.model = "lenet5"}
// CHECK:       rn.parameter @"0.weight" : tensor<6x5x5x1xf32> = #rn.init<uniform, {{.*}}>
// CHECK:       rn.parameter @"0.bias" : tensor<6xf32>
// CHECK:       rn.parameter @"11.weight" : tensor<10x84xf32>
// CHECK:       func.func @forward(%[[IMG:[a-z0-9]+]]: tensor<2x28x28x1xf32>, %[[LAB:[a-z0-9]+]]: tensor<2xi32>) -> tensor<f32>
// CHECK:       rn.conv2d %[[IMG]], %{{.*}}, %{{.*}} stride [1, 1] pad [2, 2] dilation [1, 1] groups 1 : (tensor<2x28x28x1xf32>, tensor<6x5x5x1xf32>, tensor<6xf32>) -> tensor<2x28x28x6xf32>
// CHECK:       rn.tanh %{{.*}} : tensor<2x28x28x6xf32>
// CHECK:       rn.avg_pool2d %{{.*}} kernel [2, 2] stride [2, 2] pad [0, 0] : tensor<2x28x28x6xf32> -> tensor<2x14x14x6xf32>
// CHECK:       rn.conv2d {{.*}} -> tensor<2x10x10x16xf32>
// CHECK:       rn.avg_pool2d {{.*}} -> tensor<2x5x5x16xf32>
// CHECK:       rn.flatten %{{.*}} : tensor<2x5x5x16xf32> -> tensor<2x400xf32>
// CHECK:       %[[LOGITS:[0-9]+]] = rn.linear {{.*}} -> tensor<2x10xf32>
// CHECK:       %[[LOSS:[0-9]+]] = rn.softmax_cross_entropy %[[LOGITS]], %[[LAB]]
// CHECK:       return %[[LOSS]] : tensor<f32>
