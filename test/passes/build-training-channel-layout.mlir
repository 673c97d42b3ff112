// RUN: rn-opt %s --split-input-file --rn-build-training | FileCheck %s

// Tests the gradient rule of rn.concat (a DenseNet layer): the result's
// gradient is split back into the inputs' slices, and the input that also
// feeds the convolution sums both of its gradients.

module attributes {rn.model = "dense_layer"} {
  rn.parameter @conv.weight : tensor<2x1x1x3xf32> = #rn.init<uniform, 5.000000e-01>
  rn.parameter @fc.weight : tensor<3x7xf32> = #rn.init<uniform, 5.000000e-01>
  func.func @forward(%images: tensor<2x4x4x3xf32>, %labels: tensor<2xi32>) -> tensor<f32> {
    %w = rn.param @conv.weight : tensor<2x1x1x3xf32>
    %c = rn.conv2d %images, %w stride [1, 1] pad [0, 0] dilation [1, 1] groups 1 : (tensor<2x4x4x3xf32>, tensor<2x1x1x3xf32>) -> tensor<2x4x4x2xf32>
    %r = rn.relu %c : tensor<2x4x4x2xf32>
    %j = rn.concat %c, %r, %images : (tensor<2x4x4x2xf32>, tensor<2x4x4x2xf32>, tensor<2x4x4x3xf32>) -> tensor<2x4x4x7xf32>
    %p = rn.global_avg_pool %j : tensor<2x4x4x7xf32> -> tensor<2x1x1x7xf32>
    %f = rn.flatten %p : tensor<2x1x1x7xf32> -> tensor<2x7xf32>
    %fw = rn.param @fc.weight : tensor<3x7xf32>
    %l = rn.linear %f, %fw : (tensor<2x7xf32>, tensor<3x7xf32>) -> tensor<2x3xf32>
    %loss = rn.softmax_cross_entropy %l, %labels label_smoothing 0.000000e+00 : (tensor<2x3xf32>, tensor<2xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// CHECK-LABEL: func.func @train_step
// CHECK:       %[[C:.+]] = rn.conv2d
// CHECK:       %[[R:.+]] = rn.relu %[[C]]
// CHECK:       rn.concat %[[C]], %[[R]], %{{.+}} : (tensor<2x4x4x2xf32>, tensor<2x4x4x2xf32>, tensor<2x4x4x3xf32>) -> tensor<2x4x4x7xf32>
// CHECK:       %[[DJ:.+]] = rn.global_avg_pool_backward
// CHECK:       %[[DS:.+]]:3 = rn.split %[[DJ]] : tensor<2x4x4x7xf32> -> tensor<2x4x4x2xf32>, tensor<2x4x4x2xf32>, tensor<2x4x4x3xf32>
// CHECK:       %[[DR:.+]] = rn.relu_backward %[[DS]]#1, %[[R]]
// CHECK:       %[[DC:.+]] = rn.add %[[DS]]#0, %[[DR]]
// CHECK:       rn.conv2d_backward %[[DC]]

// -----

// Tests the gradient rules of rn.split (a concat of its slices' gradients)
// and rn.channel_shuffle (the shuffle with C / groups groups): a ShuffleNet
// v2 unit.

module attributes {rn.model = "shuffle_unit"} {
  rn.parameter @conv.weight : tensor<2x1x1x2xf32> = #rn.init<uniform, 5.000000e-01>
  rn.parameter @fc.weight : tensor<3x6xf32> = #rn.init<uniform, 5.000000e-01>
  rn.parameter @stem.weight : tensor<4x1x1x3xf32> = #rn.init<uniform, 5.000000e-01>
  func.func @forward(%images: tensor<2x4x4x3xf32>, %labels: tensor<2xi32>) -> tensor<f32> {
    %sw = rn.param @stem.weight : tensor<4x1x1x3xf32>
    %x = rn.conv2d %images, %sw stride [1, 1] pad [0, 0] dilation [1, 1] groups 1 : (tensor<2x4x4x3xf32>, tensor<4x1x1x3xf32>) -> tensor<2x4x4x4xf32>
    %h:2 = rn.split %x : tensor<2x4x4x4xf32> -> tensor<2x4x4x2xf32>, tensor<2x4x4x2xf32>
    %w = rn.param @conv.weight : tensor<2x1x1x2xf32>
    %b = rn.conv2d %h#1, %w stride [1, 1] pad [0, 0] dilation [1, 1] groups 1 : (tensor<2x4x4x2xf32>, tensor<2x1x1x2xf32>) -> tensor<2x4x4x2xf32>
    %j = rn.concat %h#0, %b, %h#1 : (tensor<2x4x4x2xf32>, tensor<2x4x4x2xf32>, tensor<2x4x4x2xf32>) -> tensor<2x4x4x6xf32>
    %y = rn.channel_shuffle %j groups 2 : tensor<2x4x4x6xf32>
    %p = rn.global_avg_pool %y : tensor<2x4x4x6xf32> -> tensor<2x1x1x6xf32>
    %f = rn.flatten %p : tensor<2x1x1x6xf32> -> tensor<2x6xf32>
    %fw = rn.param @fc.weight : tensor<3x6xf32>
    %l = rn.linear %f, %fw : (tensor<2x6xf32>, tensor<3x6xf32>) -> tensor<2x3xf32>
    %loss = rn.softmax_cross_entropy %l, %labels label_smoothing 0.000000e+00 : (tensor<2x3xf32>, tensor<2xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// CHECK-LABEL: func.func @train_step
// CHECK:       %[[X:.+]] = rn.conv2d
// CHECK:       %[[H:.+]]:2 = rn.split %[[X]]
// CHECK:       rn.channel_shuffle %{{.+}} groups 2 : tensor<2x4x4x6xf32>
// CHECK:       %[[DP:.+]] = rn.global_avg_pool_backward
// CHECK:       %[[DJ:.+]] = rn.channel_shuffle %[[DP]] groups 3 : tensor<2x4x4x6xf32>
// CHECK:       %[[DS:.+]]:3 = rn.split %[[DJ]]
// CHECK:       %[[DB:.+]], %{{.+}} = rn.conv2d_backward %[[DS]]#1
// CHECK:       %[[DH1:.+]] = rn.add %[[DS]]#2, %[[DB]]
// CHECK:       %[[DX:.+]] = rn.concat %[[DS]]#0, %[[DH1]] : (tensor<2x4x4x2xf32>, tensor<2x4x4x2xf32>) -> tensor<2x4x4x4xf32>
// CHECK:       rn.conv2d_backward %[[DX]]
