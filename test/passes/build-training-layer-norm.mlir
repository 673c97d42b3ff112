// RUN: rn-opt %s --rn-build-training | FileCheck %s
// RUN: rn-opt %s --rn-build-training="precision=bf16" | FileCheck %s --check-prefix=BF16

// Tests the gradient rules of ConvNeXt's ops: rn.layer_norm (the same op in
// both steps; its backward recomputes the row statistics from the input and
// adds dweight and dbias into their accumulators) and rn.channel_scale (a
// trainable [C] weight, its gradient summed over every row). Under mixed
// precision the layer norm's parameters stay f32 (normalization
// parameters) and the layer scale gets a low-precision copy (a weight).

module attributes {rn.model = "convnext_block"} {
  rn.parameter @conv.weight : tensor<4x3x3x3xf32> = #rn.init<uniform, 1.924500897e-01>
  rn.parameter @norm.weight : tensor<4xf32> = #rn.init<ones>
  rn.parameter @norm.bias : tensor<4xf32> = #rn.init<zeros>
  rn.parameter @gamma : tensor<4xf32> = #rn.init<values, [1.0e-06, 1.0e-06, 1.0e-06, 1.0e-06]>
  rn.parameter @fc.weight : tensor<3x4xf32> = #rn.init<uniform, 5.000000e-01>
  func.func @forward(%images: tensor<2x4x4x3xf32>, %labels: tensor<2xi32>) -> tensor<f32> {
    %w = rn.param @conv.weight : tensor<4x3x3x3xf32>
    %c = rn.conv2d %images, %w stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 : (tensor<2x4x4x3xf32>, tensor<4x3x3x3xf32>) -> tensor<2x4x4x4xf32>
    %nw = rn.param @norm.weight : tensor<4xf32>
    %nb = rn.param @norm.bias : tensor<4xf32>
    %n = rn.layer_norm %c, %nw, %nb eps 1.0e-06 : (tensor<2x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x4x4x4xf32>
    %g = rn.param @gamma : tensor<4xf32>
    %s = rn.channel_scale %n, %g : tensor<2x4x4x4xf32>, tensor<4xf32>
    %r = rn.add %s, %c : tensor<2x4x4x4xf32>
    %p = rn.global_avg_pool %r : tensor<2x4x4x4xf32> -> tensor<2x1x1x4xf32>
    %f = rn.flatten %p : tensor<2x1x1x4xf32> -> tensor<2x4xf32>
    %fw = rn.param @fc.weight : tensor<3x4xf32>
    %l = rn.linear %f, %fw : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<2x3xf32>
    %loss = rn.softmax_cross_entropy %l, %labels label_smoothing 0.000000e+00 : (tensor<2x3xf32>, tensor<2xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// CHECK-LABEL: func.func @train_step
// CHECK:       %[[C:.+]] = rn.conv2d
// CHECK:       %[[N:.+]] = rn.layer_norm %[[C]], %{{.+}}, %{{.+}} eps 9.9999999999999995E-7 : (tensor<2x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x4x4x4xf32>
// CHECK:       rn.channel_scale %[[N]], %{{.+}} : tensor<2x4x4x4xf32>, tensor<4xf32>
// CHECK:       %[[DR:.+]] = rn.global_avg_pool_backward
// CHECK:       %[[DN:.+]], %{{.+}} = rn.channel_scale_backward %[[DR]], %[[N]], %{{.+}}, %{{.+}} : tensor<2x4x4x4xf32>, tensor<4xf32>
// CHECK:       %[[DC:.+]], %{{.+}}, %{{.+}} = rn.layer_norm_backward %[[DN]], %[[C]], %{{.+}}, %{{.+}}, %{{.+}} eps 9.9999999999999995E-7 : (tensor<2x4x4x4xf32>, tensor<2x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>)
// CHECK:       %[[SUM:.+]] = rn.add %[[DR]], %[[DC]]
// CHECK:       rn.conv2d_backward %[[SUM]]
// CHECK-LABEL: func.func @eval_step
// CHECK:       rn.layer_norm
// CHECK:       rn.channel_scale

// BF16-LABEL: func.func @train_step
// BF16:       rn.layer_norm %{{.+}}, %{{.+}}, %{{.+}} eps {{.+}} : (tensor<2x4x4x4xbf16>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x4x4x4xbf16>
// BF16:       rn.channel_scale %{{.+}}, %{{.+}} : tensor<2x4x4x4xbf16>, tensor<4xbf16>
// BF16:       rn.channel_scale_backward %{{.+}} : tensor<2x4x4x4xbf16>, tensor<4xbf16>
// BF16:       rn.layer_norm_backward {{.+}} -> (tensor<2x4x4x4xbf16>, tensor<4xf32>, tensor<4xf32>)
