// Tests that the frontend's MLP (784-1024-1024-10) verifies in rn-opt, in f32 and bf16.

// RUN: %python -m rn.models mlp --batch 2 | rn-opt | FileCheck %s --check-prefix=MLP
// RUN: %python -m rn.models mlp --batch 2 --dtype bf16 | rn-opt | FileCheck %s --check-prefix=BF16

// MLP-LABEL: module attributes {rn.model = "mlp"}
// MLP:       rn.parameter @"1.weight" : tensor<1024x784xf32> = #rn.init<uniform, {{.*}}>
// MLP:       rn.parameter @"1.bias" : tensor<1024xf32> = #rn.init<uniform, {{.*}}>
// MLP:       rn.parameter @"5.bias" : tensor<10xf32>
// MLP:       func.func @forward(%[[IMG:[a-z0-9]+]]: tensor<2x28x28x1xf32>, %[[LAB:[a-z0-9]+]]: tensor<2xi32>) -> tensor<f32>
// MLP:       %[[X:[0-9]+]] = rn.flatten %[[IMG]] : tensor<2x28x28x1xf32> -> tensor<2x784xf32>
// MLP:       rn.linear %[[X]], %{{.*}}, %{{.*}} : (tensor<2x784xf32>, tensor<1024x784xf32>, tensor<1024xf32>) -> tensor<2x1024xf32>
// MLP:       rn.relu %{{.*}} : tensor<2x1024xf32>
// MLP:       %[[LOGITS:[0-9]+]] = rn.linear {{.*}} : (tensor<2x1024xf32>, tensor<10x1024xf32>, tensor<10xf32>) -> tensor<2x10xf32>
// MLP:       %[[LOSS:[0-9]+]] = rn.softmax_cross_entropy %[[LOGITS]], %[[LAB]] label_smoothing {{.*}} : (tensor<2x10xf32>, tensor<2xi32>) -> tensor<f32>
// MLP:       return %[[LOSS]] : tensor<f32>

// BF16:      rn.parameter @"1.weight" : tensor<1024x784xbf16>
// BF16:      func.func @forward(%{{.*}}: tensor<2x28x28x1xbf16>, %{{.*}}: tensor<2xi32>) -> tensor<f32>
// BF16:      rn.softmax_cross_entropy {{.*}} : (tensor<2x10xbf16>, tensor<2xi32>) -> tensor<f32>
