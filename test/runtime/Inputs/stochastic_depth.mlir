module attributes {rn.model = "mlp_stochastic_depth"} {
  rn.parameter @fc1.weight : tensor<16x4xf32> = #rn.init<uniform, 5.000000e-01>
  rn.parameter @fc1.bias : tensor<16xf32> = #rn.init<uniform, 5.000000e-01>
  rn.parameter @block.weight : tensor<16x16xf32> = #rn.init<uniform, 2.500000e-01>
  rn.parameter @block.bias : tensor<16xf32> = #rn.init<uniform, 2.500000e-01>
  rn.parameter @fc2.weight : tensor<3x16xf32> = #rn.init<uniform, 2.500000e-01>
  rn.parameter @fc2.bias : tensor<3xf32> = #rn.init<uniform, 2.500000e-01>
  func.func @forward(%images: tensor<8x4xf32>, %labels: tensor<8xi32>) -> tensor<f32> {
    %0 = rn.param @fc1.weight : tensor<16x4xf32>
    %1 = rn.param @fc1.bias : tensor<16xf32>
    %2 = rn.linear %images, %0, %1 : (tensor<8x4xf32>, tensor<16x4xf32>, tensor<16xf32>) -> tensor<8x16xf32>
    %3 = rn.relu %2 : tensor<8x16xf32>
    %4 = rn.param @block.weight : tensor<16x16xf32>
    %5 = rn.param @block.bias : tensor<16xf32>
    %6 = rn.linear %3, %4, %5 : (tensor<8x16xf32>, tensor<16x16xf32>, tensor<16xf32>) -> tensor<8x16xf32>
    %7 = rn.stochastic_depth %6 p 5.000000e-01 : tensor<8x16xf32>
    %8 = rn.add %3, %7 : tensor<8x16xf32>
    %9 = rn.dropout %8 p 2.500000e-01 : tensor<8x16xf32>
    %10 = rn.param @fc2.weight : tensor<3x16xf32>
    %11 = rn.param @fc2.bias : tensor<3xf32>
    %12 = rn.linear %9, %10, %11 : (tensor<8x16xf32>, tensor<3x16xf32>, tensor<3xf32>) -> tensor<8x3xf32>
    %13 = rn.softmax_cross_entropy %12, %labels label_smoothing 0.000000e+00 : (tensor<8x3xf32>, tensor<8xi32>) -> tensor<f32>
    return %13 : tensor<f32>
  }
}
