module attributes {rn.model = "cbr_tiny"} {
  rn.parameter buffer @input.mean : tensor<1xf32> = #rn.init<values, [4.000000000e-01]>
  rn.parameter buffer @input.std : tensor<1xf32> = #rn.init<values, [3.000000000e-01]>
  rn.parameter @conv1.weight : tensor<4x3x3x1xf32> = #rn.init<uniform, 3.333333e-01>
  rn.parameter @bn1.weight : tensor<4xf32> = #rn.init<ones>
  rn.parameter @bn1.bias : tensor<4xf32> = #rn.init<zeros>
  rn.parameter buffer @bn1.running_mean : tensor<4xf32> = #rn.init<zeros>
  rn.parameter buffer @bn1.running_var : tensor<4xf32> = #rn.init<ones>
  rn.parameter @conv2.weight : tensor<4x3x3x4xf32> = #rn.init<uniform, 1.666667e-01>
  rn.parameter @bn2.weight : tensor<4xf32> = #rn.init<ones>
  rn.parameter @bn2.bias : tensor<4xf32> = #rn.init<zeros>
  rn.parameter buffer @bn2.running_mean : tensor<4xf32> = #rn.init<zeros>
  rn.parameter buffer @bn2.running_var : tensor<4xf32> = #rn.init<ones>
  rn.parameter @fc.weight : tensor<3x4xf32> = #rn.init<uniform, 5.000000e-01>
  rn.parameter @fc.bias : tensor<3xf32> = #rn.init<uniform, 5.000000e-01>
  func.func @forward(%pixels: tensor<4x6x6x1xui8>, %labels: tensor<4xi32>) -> tensor<f32> {
    %mean = rn.param @input.mean : tensor<1xf32>
    %std = rn.param @input.std : tensor<1xf32>
    %images = rn.normalize_images %pixels, %mean, %std : tensor<4x6x6x1xui8>, tensor<1xf32>, tensor<1xf32> -> tensor<4x6x6x1xf32>
    %0 = rn.param @conv1.weight : tensor<4x3x3x1xf32>
    %1 = rn.conv2d %images, %0 stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 : (tensor<4x6x6x1xf32>, tensor<4x3x3x1xf32>) -> tensor<4x6x6x4xf32>
    %2 = rn.param @bn1.weight : tensor<4xf32>
    %3 = rn.param @bn1.bias : tensor<4xf32>
    %4 = rn.param @bn1.running_mean : tensor<4xf32>
    %5 = rn.param @bn1.running_var : tensor<4xf32>
    %6 = rn.batch_norm %1, %2, %3, %4, %5 eps 1.000000000e-05 momentum 1.000000000e-01 : (tensor<4x6x6x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4x6x6x4xf32>
    %7 = rn.relu %6 : tensor<4x6x6x4xf32>
    %8 = rn.param @conv2.weight : tensor<4x3x3x4xf32>
    %9 = rn.conv2d %7, %8 stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 : (tensor<4x6x6x4xf32>, tensor<4x3x3x4xf32>) -> tensor<4x6x6x4xf32>
    %10 = rn.param @bn2.weight : tensor<4xf32>
    %11 = rn.param @bn2.bias : tensor<4xf32>
    %12 = rn.param @bn2.running_mean : tensor<4xf32>
    %13 = rn.param @bn2.running_var : tensor<4xf32>
    %14 = rn.batch_norm %9, %10, %11, %12, %13 eps 1.000000000e-05 momentum 1.000000000e-01 : (tensor<4x6x6x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4x6x6x4xf32>
    %15 = rn.relu %14 : tensor<4x6x6x4xf32>
    %16 = rn.global_avg_pool %15 : tensor<4x6x6x4xf32> -> tensor<4x1x1x4xf32>
    %17 = rn.flatten %16 : tensor<4x1x1x4xf32> -> tensor<4x4xf32>
    %18 = rn.param @fc.weight : tensor<3x4xf32>
    %19 = rn.param @fc.bias : tensor<3xf32>
    %20 = rn.linear %17, %18, %19 : (tensor<4x4xf32>, tensor<3x4xf32>, tensor<3xf32>) -> tensor<4x3xf32>
    %21 = rn.softmax_cross_entropy %20, %labels label_smoothing 0.000000e+00 : (tensor<4x3xf32>, tensor<4xi32>) -> tensor<f32>
    return %21 : tensor<f32>
  }
}
