// RUN: rn-opt %s --split-input-file --rn-build-training --verify-diagnostics

// Tests that a split with a slice the loss does not read is refused: its
// gradient would need a zero block.

module attributes {rn.model = "unused_slice"} {
  rn.parameter @conv.weight : tensor<4x1x1x3xf32> = #rn.init<uniform, 5.000000e-01>
  rn.parameter @fc.weight : tensor<3x3xf32> = #rn.init<uniform, 5.000000e-01>
  func.func @forward(%images: tensor<2x1x1x3xf32>, %labels: tensor<2xi32>) -> tensor<f32> {
    %w = rn.param @conv.weight : tensor<4x1x1x3xf32>
    %x = rn.conv2d %images, %w stride [1, 1] pad [0, 0] dilation [1, 1] groups 1 : (tensor<2x1x1x3xf32>, tensor<4x1x1x3xf32>) -> tensor<2x1x1x4xf32>
    %f = rn.flatten %x : tensor<2x1x1x4xf32> -> tensor<2x4xf32>
    // expected-error@+1 {{result #1 does not reach the loss; RN differentiates a split whose every slice the loss depends on}}
    %s:2 = rn.split %f : tensor<2x4xf32> -> tensor<2x3xf32>, tensor<2x1xf32>
    %fw = rn.param @fc.weight : tensor<3x3xf32>
    %l = rn.linear %s#0, %fw : (tensor<2x3xf32>, tensor<3x3xf32>) -> tensor<2x3xf32>
    %loss = rn.softmax_cross_entropy %l, %labels label_smoothing 0.000000e+00 : (tensor<2x3xf32>, tensor<2xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}
