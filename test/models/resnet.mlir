// Tests that the frontend's ResNets (CIFAR resnet18c/34c/50c, torchvision resnet18/34/50) verify in rn-opt.

// RUN: %python -m rn.models resnet18c --batch 2 | rn-opt | FileCheck %s --check-prefix=R18C
// RUN: %python -m rn.models resnet34c --batch 2 | rn-opt | FileCheck %s --check-prefix=R34C
// RUN: %python -m rn.models resnet50c --batch 2 --dtype bf16 | rn-opt | FileCheck %s --check-prefix=R50C
// RUN: %python -m rn.models resnet18 --batch 2 | rn-opt | FileCheck %s --check-prefix=R18
// RUN: %python -m rn.models resnet34 --batch 2 | rn-opt | FileCheck %s --check-prefix=R34
// RUN: %python -m rn.models resnet50 --batch 2 | rn-opt | FileCheck %s --check-prefix=R50

// R18C-LABEL: module attributes {rn.model = "resnet18c"}
// R18C:       rn.parameter @conv1.weight : tensor<64x3x3x3xf32> = #rn.init<uniform, {{.*}}>
// R18C:       rn.parameter buffer @bn1.running_mean : tensor<64xf32> = #rn.init<zeros>
// R18C-NOT:   rn.parameter @layer1.0.downsample
// R18C:       rn.parameter @layer2.0.downsample.0.weight : tensor<128x1x1x64xf32>
// R18C:       rn.parameter @fc.weight : tensor<10x512xf32>
// R18C:       func.func @forward(%[[IMG:[a-z0-9]+]]: tensor<2x32x32x3xf32>, %[[LAB:[a-z0-9]+]]: tensor<2xi32>) -> tensor<f32>
// R18C:       %[[W:[0-9]+]] = rn.param @conv1.weight : tensor<64x3x3x3xf32>
// R18C:       rn.conv2d %[[IMG]], %[[W]] stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 : (tensor<2x32x32x3xf32>, tensor<64x3x3x3xf32>) -> tensor<2x32x32x64xf32>
// R18C-NOT:   rn.max_pool2d
// R18C:       rn.add %{{.*}}, %{{.*}} : tensor<2x32x32x64xf32>
// R18C:       rn.conv2d {{.*}} stride [2, 2] pad [0, 0] {{.*}} : (tensor<2x32x32x64xf32>, tensor<128x1x1x64xf32>) -> tensor<2x16x16x128xf32>
// R18C:       rn.global_avg_pool %{{.*}} : tensor<2x4x4x512xf32> -> tensor<2x1x1x512xf32>
// R18C:       rn.flatten %{{.*}} : tensor<2x1x1x512xf32> -> tensor<2x512xf32>
// R18C:       %[[LOGITS:[0-9]+]] = rn.linear {{.*}} : (tensor<2x512xf32>, tensor<10x512xf32>, tensor<10xf32>) -> tensor<2x10xf32>
// R18C:       %[[LOSS:[0-9]+]] = rn.softmax_cross_entropy %[[LOGITS]], %[[LAB]] label_smoothing {{.*}} : (tensor<2x10xf32>, tensor<2xi32>) -> tensor<f32>
// R18C:       return %[[LOSS]] : tensor<f32>

// R34C-LABEL: module attributes {rn.model = "resnet34c"}
// R34C:       rn.parameter @layer3.5.conv2.weight : tensor<256x3x3x256xf32>
// R34C:       func.func @forward(%{{.*}}: tensor<2x32x32x3xf32>, %{{.*}}: tensor<2xi32>) -> tensor<f32>
// R34C-COUNT-16: rn.add
// R34C:       rn.linear {{.*}} -> tensor<2x10xf32>

// R50C-LABEL: module attributes {rn.model = "resnet50c"}
// R50C:       rn.parameter @conv1.weight : tensor<64x3x3x3xbf16>
// R50C:       rn.parameter @layer1.0.downsample.0.weight : tensor<256x1x1x64xbf16>
// R50C:       rn.parameter @fc.weight : tensor<10x2048xbf16>
// R50C:       func.func @forward(%{{.*}}: tensor<2x32x32x3xbf16>, %{{.*}}: tensor<2xi32>) -> tensor<f32>
// R50C:       %[[W:[0-9]+]] = rn.param @layer2.0.conv2.weight
// R50C-NEXT:  rn.conv2d %{{.*}}, %[[W]] stride [2, 2] pad [1, 1] {{.*}} -> tensor<2x16x16x128xbf16>
// R50C:       rn.global_avg_pool %{{.*}} : tensor<2x4x4x2048xbf16> -> tensor<2x1x1x2048xbf16>
// R50C:       rn.linear {{.*}} : (tensor<2x2048xbf16>, tensor<10x2048xbf16>, tensor<10xbf16>) -> tensor<2x10xbf16>
// R50C:       rn.softmax_cross_entropy {{.*}} -> tensor<f32>

// R18-LABEL: module attributes {rn.model = "resnet18"}
// R18:       rn.parameter @conv1.weight : tensor<64x7x7x3xf32> = #rn.init<normal, {{.*}}>
// R18:       rn.parameter @fc.weight : tensor<1000x512xf32> = #rn.init<uniform, {{.*}}>
// R18:       func.func @forward(%[[IMG:[a-z0-9]+]]: tensor<2x224x224x3xf32>, %[[LAB:[a-z0-9]+]]: tensor<2xi32>) -> tensor<f32>
// R18:       rn.conv2d %[[IMG]], %{{[0-9]+}} stride [2, 2] pad [3, 3] dilation [1, 1] groups 1 : (tensor<2x224x224x3xf32>, tensor<64x7x7x3xf32>) -> tensor<2x112x112x64xf32>
// R18:       rn.max_pool2d %{{.*}} kernel [3, 3] stride [2, 2] pad [1, 1] : tensor<2x112x112x64xf32> -> tensor<2x56x56x64xf32>
// R18:       rn.global_avg_pool %{{.*}} : tensor<2x7x7x512xf32> -> tensor<2x1x1x512xf32>
// R18:       %[[LOGITS:[0-9]+]] = rn.linear {{.*}} -> tensor<2x1000xf32>
// R18:       %[[LOSS:[0-9]+]] = rn.softmax_cross_entropy %[[LOGITS]], %[[LAB]]
// R18:       return %[[LOSS]] : tensor<f32>

// R34-LABEL: module attributes {rn.model = "resnet34"}
// R34:       rn.parameter @layer4.2.bn2.bias : tensor<512xf32>
// R34:       func.func @forward
// R34-COUNT-16: rn.add
// R34:       rn.linear {{.*}} : (tensor<2x512xf32>, tensor<1000x512xf32>, tensor<1000xf32>) -> tensor<2x1000xf32>

// R50-LABEL: module attributes {rn.model = "resnet50"}
// R50:       rn.parameter @layer4.2.conv3.weight : tensor<2048x1x1x512xf32>
// R50:       func.func @forward(%{{.*}}: tensor<2x224x224x3xf32>, %{{.*}}: tensor<2xi32>) -> tensor<f32>
// R50:       rn.max_pool2d {{.*}} -> tensor<2x56x56x64xf32>
// R50-COUNT-16: rn.add
// R50:       rn.global_avg_pool %{{.*}} : tensor<2x7x7x2048xf32> -> tensor<2x1x1x2048xf32>
// R50:       rn.linear {{.*}} : (tensor<2x2048xf32>, tensor<1000x2048xf32>, tensor<1000xf32>) -> tensor<2x1000xf32>
// R50:       rn.softmax_cross_entropy {{.*}} -> tensor<f32>
