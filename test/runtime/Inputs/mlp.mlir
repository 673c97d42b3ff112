module attributes {rn.model = "mlp_tiny"} {
  rn.parameter @fc1.weight : tensor<8x4xf32> = #rn.init<uniform, 5.000000e-01>
  rn.parameter @fc1.bias : tensor<8xf32> = #rn.init<uniform, 5.000000e-01>
  rn.parameter @fc2.weight : tensor<3x8xf32> = #rn.init<uniform, 3.535533845e-01>
  rn.parameter @fc2.bias : tensor<3xf32> = #rn.init<uniform, 3.535533845e-01>
  func.func @forward(%images: tensor<4x4xf32>, %labels: tensor<4xi32>) -> tensor<f32> {
    %0 = rn.param @fc1.weight : tensor<8x4xf32>
    %1 = rn.param @fc1.bias : tensor<8xf32>
    %2 = rn.linear %images, %0, %1 : (tensor<4x4xf32>, tensor<8x4xf32>, tensor<8xf32>) -> tensor<4x8xf32>
    %3 = rn.relu %2 : tensor<4x8xf32>
    %4 = rn.param @fc2.weight : tensor<3x8xf32>
    %5 = rn.param @fc2.bias : tensor<3xf32>
    %6 = rn.linear %3, %4, %5 : (tensor<4x8xf32>, tensor<3x8xf32>, tensor<3xf32>) -> tensor<4x3xf32>
    %7 = rn.softmax_cross_entropy %6, %labels label_smoothing 0.000000e+00 : (tensor<4x3xf32>, tensor<4xi32>) -> tensor<f32>
    return %7 : tensor<f32>
  }
}
