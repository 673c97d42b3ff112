// Tests that the frontend's VGG models (CIFAR vgg11c/vgg16c, torchvision vgg11_bn/vgg16_bn) verify in rn-opt.

// RUN: %python -m rn.models vgg11c --batch 2 | rn-opt | FileCheck %s --check-prefix=V11C
// RUN: %python -m rn.models vgg16c --batch 2 --dtype f16 | rn-opt | FileCheck %s --check-prefix=V16C
// RUN: %python -m rn.models vgg11 --batch 2 | rn-opt | FileCheck %s --check-prefix=V11
// RUN: %python -m rn.models vgg16 --batch 2 | rn-opt | FileCheck %s --check-prefix=V16

// V11C-LABEL: module attributes {rn.model = "vgg11c"}
// V11C:       rn.parameter @"0.weight" : tensor<64x3x3x3xf32> = #rn.init<uniform, {{.*}}>
// V11C-NOT:   rn.parameter @"0.bias"
// V11C:       rn.parameter @"30.weight" : tensor<10x512xf32>
// V11C:       func.func @forward(%[[IMG:[a-z0-9]+]]: tensor<2x32x32x3xf32>, %[[LAB:[a-z0-9]+]]: tensor<2xi32>) -> tensor<f32>
// V11C:       rn.conv2d %[[IMG]], %{{[0-9]+}} stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 : (tensor<2x32x32x3xf32>, tensor<64x3x3x3xf32>) -> tensor<2x32x32x64xf32>
// V11C:       rn.max_pool2d {{.*}} : tensor<2x2x2x512xf32> -> tensor<2x1x1x512xf32>
// V11C-NEXT:  rn.flatten {{.*}} : tensor<2x1x1x512xf32> -> tensor<2x512xf32>
// V11C:       %[[LOGITS:[0-9]+]] = rn.linear {{.*}} : (tensor<2x512xf32>, tensor<10x512xf32>, tensor<10xf32>) -> tensor<2x10xf32>
// V11C:       %[[LOSS:[0-9]+]] = rn.softmax_cross_entropy %[[LOGITS]], %[[LAB]]
// V11C:       return %[[LOSS]] : tensor<f32>

// V16C-LABEL: module attributes {rn.model = "vgg16c"}
// V16C:       rn.parameter buffer @"1.running_var" : tensor<64xf16> = #rn.init<ones>
// V16C:       rn.parameter @"45.weight" : tensor<10x512xf16>
// V16C:       func.func @forward(%{{.*}}: tensor<2x32x32x3xf16>, %{{.*}}: tensor<2xi32>) -> tensor<f32>
// V16C-COUNT-13: rn.conv2d
// V16C:       rn.linear {{.*}} -> tensor<2x10xf16>
// V16C:       rn.softmax_cross_entropy {{.*}} -> tensor<f32>

// V11-LABEL: module attributes {rn.model = "vgg11"}
// V11:       rn.parameter @features.0.weight : tensor<64x3x3x3xf32> = #rn.init<normal, {{.*}}>
// V11-NEXT:  rn.parameter @features.0.bias : tensor<64xf32> = #rn.init<zeros>
// V11:       rn.parameter @classifier.0.weight : tensor<4096x25088xf32> = #rn.init<normal, {{(1\.0*e-02|0\.01)}}>
// V11:       rn.parameter @classifier.6.weight : tensor<1000x4096xf32>
// V11:       func.func @forward(%[[IMG:[a-z0-9]+]]: tensor<2x224x224x3xf32>, %[[LAB:[a-z0-9]+]]: tensor<2xi32>) -> tensor<f32>
// V11:       rn.conv2d %[[IMG]], %{{[0-9]+}}, %{{[0-9]+}} stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 : (tensor<2x224x224x3xf32>, tensor<64x3x3x3xf32>, tensor<64xf32>) -> tensor<2x224x224x64xf32>
// V11:       rn.max_pool2d {{.*}} -> tensor<2x7x7x512xf32>
// V11-NEXT:  rn.flatten {{.*}} : tensor<2x7x7x512xf32> -> tensor<2x25088xf32>
// V11:       rn.dropout {{.*}} : tensor<2x4096xf32>
// V11:       %[[LOGITS:[0-9]+]] = rn.linear {{.*}} : (tensor<2x4096xf32>, tensor<1000x4096xf32>, tensor<1000xf32>) -> tensor<2x1000xf32>
// V11:       %[[LOSS:[0-9]+]] = rn.softmax_cross_entropy %[[LOGITS]], %[[LAB]]
// V11:       return %[[LOSS]] : tensor<f32>

// V16-LABEL: module attributes {rn.model = "vgg16"}
// V16:       rn.parameter @features.40.weight : tensor<512x3x3x512xf32>
// V16:       func.func @forward
// V16-COUNT-13: rn.conv2d
// V16:       rn.flatten {{.*}} -> tensor<2x25088xf32>
// V16:       rn.linear {{.*}} -> tensor<2x1000xf32>
// V16:       return
