module attributes {rn.model = "mlp_dropout"} {
  rn.parameter @fc1.weight : tensor<16x4xf32> = #rn.init<uniform, 5.000000e-01>
  rn.parameter @fc1.bias : tensor<16xf32> = #rn.init<uniform, 5.000000e-01>
  rn.parameter @fc2.weight : tensor<3x16xf32> = #rn.init<uniform, 2.500000e-01>
  rn.parameter @fc2.bias : tensor<3xf32> = #rn.init<uniform, 2.500000e-01>
  func.func @forward(%images: tensor<4x4xf32>, %labels: tensor<4xi32>) -> tensor<f32> {
    %0 = rn.param @fc1.weight : tensor<16x4xf32>
    %1 = rn.param @fc1.bias : tensor<16xf32>
    %2 = rn.linear %images, %0, %1 : (tensor<4x4xf32>, tensor<16x4xf32>, tensor<16xf32>) -> tensor<4x16xf32>
    %3 = rn.dropout %2 p 5.000000e-01 : tensor<4x16xf32>
    %4 = rn.relu %3 : tensor<4x16xf32>
    %5 = rn.dropout %4 p 2.500000e-01 : tensor<4x16xf32>
    %6 = rn.param @fc2.weight : tensor<3x16xf32>
    %7 = rn.param @fc2.bias : tensor<3xf32>
    %8 = rn.linear %5, %6, %7 : (tensor<4x16xf32>, tensor<3x16xf32>, tensor<3xf32>) -> tensor<4x3xf32>
    %9 = rn.softmax_cross_entropy %8, %labels label_smoothing 0.000000e+00 : (tensor<4x3xf32>, tensor<4xi32>) -> tensor<f32>
    return %9 : tensor<f32>
  }
}
