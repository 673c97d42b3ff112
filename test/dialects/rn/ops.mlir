// RUN: rn-opt %s --split-input-file | rn-opt --split-input-file | FileCheck %s
// RUN: rn-opt %s --split-input-file --mlir-print-op-generic | rn-opt --split-input-file | FileCheck %s

// Tests that parameters and buffers round-trip with every initializer kind.

// CHECK: module attributes {rn.model = "params"}
module attributes {rn.model = "params"} {
  // CHECK: rn.parameter @conv1.weight : tensor<8x3x3x3xf32> = #rn.init<normal, 5.000000e-02>
  rn.parameter @conv1.weight : tensor<8x3x3x3xf32> = #rn.init<normal, 5.000000e-02>
  // CHECK: rn.parameter @"0.bias" : tensor<8xf16> = #rn.init<uniform, 2.500000e-01>
  rn.parameter @"0.bias" : tensor<8xf16> = #rn.init<uniform, 2.500000e-01>
  // CHECK: rn.parameter @bn1.weight : tensor<8xbf16> = #rn.init<ones>
  rn.parameter @bn1.weight : tensor<8xbf16> = #rn.init<ones>
  // CHECK: rn.parameter buffer @bn1.running_mean : tensor<8xf32> = #rn.init<zeros>
  rn.parameter buffer @bn1.running_mean : tensor<8xf32> = #rn.init<zeros>

  // CHECK-LABEL: func.func @read
  // CHECK: rn.param @conv1.weight : tensor<8x3x3x3xf32>
  // CHECK: rn.param @"0.bias" : tensor<8xf16>
  func.func @read() -> (tensor<8x3x3x3xf32>, tensor<8xf16>) {
    %0 = rn.param @conv1.weight : tensor<8x3x3x3xf32>
    %1 = rn.param @"0.bias" : tensor<8xf16>
    return %0, %1 : tensor<8x3x3x3xf32>, tensor<8xf16>
  }
}

// -----

// Tests uint8 images normalized on the device: the explicit values of the
// normalization buffers and normalize_images to f32 and f16.

// CHECK-LABEL: module attributes {rn.model = "bytes"}
module attributes {rn.model = "bytes"} {
  // CHECK: rn.parameter buffer @input.mean : tensor<3xf32> = #rn.init<values, [4.914000e-01, 4.822000e-01, 4.465000e-01]>
  rn.parameter buffer @input.mean : tensor<3xf32> = #rn.init<values, [4.914000e-01, 4.822000e-01, 4.465000e-01]>
  // CHECK: rn.parameter buffer @input.std : tensor<3xf32> = #rn.init<values, [2.470000e-01, 2.435000e-01, 2.616000e-01]>
  rn.parameter buffer @input.std : tensor<3xf32> = #rn.init<values, [2.470000e-01, 2.435000e-01, 2.616000e-01]>

  // CHECK-LABEL: func.func @normalize
  func.func @normalize(%images: tensor<2x4x4x3xui8>) -> (tensor<2x4x4x3xf32>, tensor<2x4x4x3xf16>) {
    %mean = rn.param @input.mean : tensor<3xf32>
    %std = rn.param @input.std : tensor<3xf32>
    // CHECK: rn.normalize_images %{{.+}}, %{{.+}}, %{{.+}} : tensor<2x4x4x3xui8>, tensor<3xf32>, tensor<3xf32> -> tensor<2x4x4x3xf32>
    %0 = rn.normalize_images %images, %mean, %std : tensor<2x4x4x3xui8>, tensor<3xf32>, tensor<3xf32> -> tensor<2x4x4x3xf32>
    // CHECK: rn.normalize_images {{.+}} -> tensor<2x4x4x3xf16>
    %1 = rn.normalize_images %images, %mean, %std : tensor<2x4x4x3xui8>, tensor<3xf32>, tensor<3xf32> -> tensor<2x4x4x3xf16>
    return %0, %1 : tensor<2x4x4x3xf32>, tensor<2x4x4x3xf16>
  }
}

// -----

// Tests conv2d without bias, with bias, strided, dilated and grouped.

// CHECK-LABEL: func.func @conv2d
func.func @conv2d(%x: tensor<2x32x32x16xf32>, %w: tensor<32x3x3x16xf32>, %b: tensor<32xf32>,
                  %wg: tensor<32x3x3x4xf32>) {
  // CHECK: rn.conv2d %{{.+}}, %{{.+}} stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 : (tensor<2x32x32x16xf32>, tensor<32x3x3x16xf32>) -> tensor<2x32x32x32xf32>
  %0 = rn.conv2d %x, %w stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 : (tensor<2x32x32x16xf32>, tensor<32x3x3x16xf32>) -> tensor<2x32x32x32xf32>
  // CHECK: rn.conv2d %{{.+}}, %{{.+}}, %{{.+}} stride [2, 2] pad [1, 1] dilation [1, 1] groups 1 : (tensor<2x32x32x16xf32>, tensor<32x3x3x16xf32>, tensor<32xf32>) -> tensor<2x16x16x32xf32>
  %1 = rn.conv2d %x, %w, %b stride [2, 2] pad [1, 1] dilation [1, 1] groups 1 : (tensor<2x32x32x16xf32>, tensor<32x3x3x16xf32>, tensor<32xf32>) -> tensor<2x16x16x32xf32>
  // CHECK: dilation [2, 2] groups 1 : {{.+}} -> tensor<2x28x28x32xf32>
  %2 = rn.conv2d %x, %w stride [1, 1] pad [0, 0] dilation [2, 2] groups 1 : (tensor<2x32x32x16xf32>, tensor<32x3x3x16xf32>) -> tensor<2x28x28x32xf32>
  // CHECK: groups 4 : (tensor<2x32x32x16xf32>, tensor<32x3x3x4xf32>) -> tensor<2x32x32x32xf32>
  %3 = rn.conv2d %x, %wg stride [1, 1] pad [1, 1] dilation [1, 1] groups 4 : (tensor<2x32x32x16xf32>, tensor<32x3x3x4xf32>) -> tensor<2x32x32x32xf32>
  return
}

// -----

// Tests batch_norm over NHWC and over [N, C], in f16.

// CHECK-LABEL: func.func @batch_norm
func.func @batch_norm(%x: tensor<2x8x8x4xf16>, %v: tensor<4xf16>, %y: tensor<2x4xf16>) {
  // CHECK: rn.batch_norm %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} eps 1.000000e-05 momentum 1.000000e-01 : (tensor<2x8x8x4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>) -> tensor<2x8x8x4xf16>
  %0 = rn.batch_norm %x, %v, %v, %v, %v eps 1.000000e-05 momentum 1.000000e-01 : (tensor<2x8x8x4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>) -> tensor<2x8x8x4xf16>
  // CHECK: rn.batch_norm {{.+}} -> tensor<2x4xf16>
  %1 = rn.batch_norm %y, %v, %v, %v, %v eps 1.000000e-03 momentum 0.000000e+00 : (tensor<2x4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>) -> tensor<2x4xf16>
  return
}

// -----

// Tests the elementwise ops (GELU in both forms), add, dropout and
// stochastic depth in bf16.

// CHECK-LABEL: func.func @elementwise
func.func @elementwise(%x: tensor<2x8xbf16>) -> tensor<2x8xbf16> {
  // CHECK: %[[R:.+]] = rn.relu %{{.+}} : tensor<2x8xbf16>
  %0 = rn.relu %x : tensor<2x8xbf16>
  // CHECK: %[[T:.+]] = rn.tanh %[[R]] : tensor<2x8xbf16>
  %1 = rn.tanh %0 : tensor<2x8xbf16>
  // CHECK: %[[S:.+]] = rn.silu %[[T]] : tensor<2x8xbf16>
  %2 = rn.silu %1 : tensor<2x8xbf16>
  // CHECK: %[[G:.+]] = rn.gelu %[[S]] approximate none : tensor<2x8xbf16>
  %g = rn.gelu %2 approximate none : tensor<2x8xbf16>
  // CHECK: %[[GT:.+]] = rn.gelu %[[G]] approximate tanh : tensor<2x8xbf16>
  %gt = rn.gelu %g approximate tanh : tensor<2x8xbf16>
  // CHECK: %[[A:.+]] = rn.add %[[GT]], %[[R]] : tensor<2x8xbf16>
  %3 = rn.add %gt, %0 : tensor<2x8xbf16>
  // CHECK: %[[D:.+]] = rn.dropout %[[A]] p 5.000000e-01 : tensor<2x8xbf16>
  %4 = rn.dropout %3 p 5.000000e-01 : tensor<2x8xbf16>
  // CHECK: rn.stochastic_depth %[[D]] p 1.000000e+00 : tensor<2x8xbf16>
  %5 = rn.stochastic_depth %4 p 1.000000e+00 : tensor<2x8xbf16>
  return %5 : tensor<2x8xbf16>
}

// -----

// Tests the activations of the mobile networks (ReLU6 as hardtanh 0..6,
// Hardtanh, Hardswish, Hardsigmoid, Sigmoid) in f16.

// CHECK-LABEL: func.func @mobile_activations
func.func @mobile_activations(%x: tensor<2x4x4x8xf16>) -> tensor<2x4x4x8xf16> {
  // CHECK: %[[R6:.+]] = rn.hardtanh %{{.+}} min 0.000000e+00 max 6.000000e+00 : tensor<2x4x4x8xf16>
  %0 = rn.hardtanh %x min 0.000000e+00 max 6.000000e+00 : tensor<2x4x4x8xf16>
  // CHECK: %[[HT:.+]] = rn.hardtanh %[[R6]] min -1.000000e+00 max 1.000000e+00 : tensor<2x4x4x8xf16>
  %1 = rn.hardtanh %0 min -1.000000e+00 max 1.000000e+00 : tensor<2x4x4x8xf16>
  // CHECK: %[[HS:.+]] = rn.hardswish %[[HT]] : tensor<2x4x4x8xf16>
  %2 = rn.hardswish %1 : tensor<2x4x4x8xf16>
  // CHECK: %[[HG:.+]] = rn.hardsigmoid %[[HS]] : tensor<2x4x4x8xf16>
  %3 = rn.hardsigmoid %2 : tensor<2x4x4x8xf16>
  // CHECK: %[[SG:.+]] = rn.sigmoid %[[HG]] : tensor<2x4x4x8xf16>
  %4 = rn.sigmoid %3 : tensor<2x4x4x8xf16>
  // CHECK: %[[GATE:.+]] = rn.global_avg_pool %[[SG]] : tensor<2x4x4x8xf16> -> tensor<2x1x1x8xf16>
  %5 = rn.global_avg_pool %4 : tensor<2x4x4x8xf16> -> tensor<2x1x1x8xf16>
  // CHECK: rn.channel_mul %[[SG]], %[[GATE]] : tensor<2x4x4x8xf16>, tensor<2x1x1x8xf16>
  %6 = rn.channel_mul %4, %5 : tensor<2x4x4x8xf16>, tensor<2x1x1x8xf16>
  return %6 : tensor<2x4x4x8xf16>
}

// -----

// Tests max and average pooling (ImageNet stem pool, LeNet pool), global
// average pooling and flatten.

// CHECK-LABEL: func.func @pooling
func.func @pooling(%x: tensor<2x112x112x64xf32>) -> tensor<2x64xf32> {
  // CHECK: rn.max_pool2d %{{.+}} kernel [3, 3] stride [2, 2] pad [1, 1] : tensor<2x112x112x64xf32> -> tensor<2x56x56x64xf32>
  %0 = rn.max_pool2d %x kernel [3, 3] stride [2, 2] pad [1, 1] : tensor<2x112x112x64xf32> -> tensor<2x56x56x64xf32>
  // CHECK: rn.avg_pool2d %{{.+}} kernel [2, 2] stride [2, 2] pad [0, 0] : tensor<2x56x56x64xf32> -> tensor<2x28x28x64xf32>
  %1 = rn.avg_pool2d %0 kernel [2, 2] stride [2, 2] pad [0, 0] : tensor<2x56x56x64xf32> -> tensor<2x28x28x64xf32>
  // CHECK: rn.global_avg_pool %{{.+}} : tensor<2x28x28x64xf32> -> tensor<2x1x1x64xf32>
  %2 = rn.global_avg_pool %1 : tensor<2x28x28x64xf32> -> tensor<2x1x1x64xf32>
  // CHECK: rn.flatten %{{.+}} : tensor<2x1x1x64xf32> -> tensor<2x64xf32>
  %3 = rn.flatten %2 : tensor<2x1x1x64xf32> -> tensor<2x64xf32>
  return %3 : tensor<2x64xf32>
}

// -----

// Tests PyTorch's ceil_mode (GoogLeNet's 3x3/2 pools: 112 -> 56, where floor
// mode gives 55; 5x5 2x2/2 pad 1 drops the window starting in the right
// padding: 3, not 4) and count_include_pad=False average pooling.

// CHECK-LABEL: func.func @pooling_ceil_mode
func.func @pooling_ceil_mode(%x: tensor<2x112x112x64xf32>, %s: tensor<2x5x5x4xf32>) {
  // CHECK: rn.max_pool2d %{{.+}} kernel [3, 3] stride [2, 2] pad [0, 0] ceil_mode : tensor<2x112x112x64xf32> -> tensor<2x56x56x64xf32>
  %0 = rn.max_pool2d %x kernel [3, 3] stride [2, 2] pad [0, 0] ceil_mode : tensor<2x112x112x64xf32> -> tensor<2x56x56x64xf32>
  // CHECK: rn.max_pool2d %{{.+}} kernel [3, 3] stride [2, 2] pad [0, 0] : tensor<2x112x112x64xf32> -> tensor<2x55x55x64xf32>
  %1 = rn.max_pool2d %x kernel [3, 3] stride [2, 2] pad [0, 0] : tensor<2x112x112x64xf32> -> tensor<2x55x55x64xf32>
  // CHECK: rn.avg_pool2d %{{.+}} kernel [2, 2] stride [2, 2] pad [1, 1] ceil_mode : tensor<2x5x5x4xf32> -> tensor<2x3x3x4xf32>
  %2 = rn.avg_pool2d %s kernel [2, 2] stride [2, 2] pad [1, 1] ceil_mode : tensor<2x5x5x4xf32> -> tensor<2x3x3x4xf32>
  // CHECK: rn.avg_pool2d %{{.+}} kernel [3, 3] stride [1, 1] pad [1, 1] exclude_pad : tensor<2x5x5x4xf32> -> tensor<2x5x5x4xf32>
  %3 = rn.avg_pool2d %s kernel [3, 3] stride [1, 1] pad [1, 1] exclude_pad : tensor<2x5x5x4xf32> -> tensor<2x5x5x4xf32>
  // CHECK: rn.avg_pool2d %{{.+}} kernel [3, 3] stride [2, 2] pad [1, 1] ceil_mode exclude_pad : tensor<2x5x5x4xf32> -> tensor<2x3x3x4xf32>
  %4 = rn.avg_pool2d %s kernel [3, 3] stride [2, 2] pad [1, 1] ceil_mode exclude_pad : tensor<2x5x5x4xf32> -> tensor<2x3x3x4xf32>
  // CHECK: rn.max_pool2d_backward %{{.+}}, %{{.+}} kernel [2, 2] stride [2, 2] pad [1, 1] ceil_mode : (tensor<2x3x3x4xf32>, tensor<2x5x5x4xf32>) -> tensor<2x5x5x4xf32>
  %5 = rn.max_pool2d_backward %2, %s kernel [2, 2] stride [2, 2] pad [1, 1] ceil_mode : (tensor<2x3x3x4xf32>, tensor<2x5x5x4xf32>) -> tensor<2x5x5x4xf32>
  // CHECK: rn.avg_pool2d_backward %{{.+}} kernel [3, 3] stride [2, 2] pad [1, 1] ceil_mode exclude_pad : tensor<2x3x3x4xf32> -> tensor<2x5x5x4xf32>
  %6 = rn.avg_pool2d_backward %4 kernel [3, 3] stride [2, 2] pad [1, 1] ceil_mode exclude_pad : tensor<2x3x3x4xf32> -> tensor<2x5x5x4xf32>
  return
}

// -----

// Tests adaptive average pooling to an output that does not divide the
// input, and to a larger output.

// CHECK-LABEL: func.func @adaptive_pooling
func.func @adaptive_pooling(%x: tensor<2x10x10x64xbf16>) -> tensor<2x12x5x64xbf16> {
  // CHECK: %[[A:.+]] = rn.adaptive_avg_pool2d %{{.+}} : tensor<2x10x10x64xbf16> -> tensor<2x7x3x64xbf16>
  %0 = rn.adaptive_avg_pool2d %x : tensor<2x10x10x64xbf16> -> tensor<2x7x3x64xbf16>
  // CHECK: rn.adaptive_avg_pool2d %[[A]] : tensor<2x7x3x64xbf16> -> tensor<2x12x5x64xbf16>
  %1 = rn.adaptive_avg_pool2d %0 : tensor<2x7x3x64xbf16> -> tensor<2x12x5x64xbf16>
  return %1 : tensor<2x12x5x64xbf16>
}

// -----

// Tests linear with and without bias and the loss with label smoothing.

// CHECK-LABEL: func.func @classifier
func.func @classifier(%x: tensor<4x784xf32>, %w1: tensor<128x784xf32>, %b1: tensor<128xf32>,
                      %w2: tensor<10x128xf32>, %labels: tensor<4xi32>) -> tensor<f32> {
  // CHECK: %[[H:.+]] = rn.linear %{{.+}}, %{{.+}}, %{{.+}} : (tensor<4x784xf32>, tensor<128x784xf32>, tensor<128xf32>) -> tensor<4x128xf32>
  %0 = rn.linear %x, %w1, %b1 : (tensor<4x784xf32>, tensor<128x784xf32>, tensor<128xf32>) -> tensor<4x128xf32>
  // CHECK: %[[L:.+]] = rn.linear %[[H]], %{{.+}} : (tensor<4x128xf32>, tensor<10x128xf32>) -> tensor<4x10xf32>
  %1 = rn.linear %0, %w2 : (tensor<4x128xf32>, tensor<10x128xf32>) -> tensor<4x10xf32>
  // CHECK: rn.softmax_cross_entropy %[[L]], %{{.+}} label_smoothing 1.000000e-01 : (tensor<4x10xf32>, tensor<4xi32>) -> tensor<f32>
  %2 = rn.softmax_cross_entropy %1, %labels label_smoothing 1.000000e-01 : (tensor<4x10xf32>, tensor<4xi32>) -> tensor<f32>
  return %2 : tensor<f32>
}

// -----

// Tests that the loss is f32 even when the logits are f16.

// CHECK-LABEL: func.func @half_logits
func.func @half_logits(%logits: tensor<4x10xf16>, %labels: tensor<4xi32>) -> tensor<f32> {
  // CHECK: rn.softmax_cross_entropy {{.+}} : (tensor<4x10xf16>, tensor<4xi32>) -> tensor<f32>
  %0 = rn.softmax_cross_entropy %logits, %labels label_smoothing 0.000000e+00 : (tensor<4x10xf16>, tensor<4xi32>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// Tests training state declarations of every role.

// CHECK-LABEL: module attributes {rn.model = "state", rn.training = {optimizer = "sgd"}}
module attributes {rn.model = "state", rn.training = {optimizer = "sgd"}} {
  rn.parameter @w : tensor<4x3x3x2xf32> = #rn.init<normal, 1.000000e-01>
  // CHECK: rn.state gradient @grad.w of @w : tensor<4x3x3x2xf16> = #rn.init<zeros>
  rn.state gradient @grad.w of @w : tensor<4x3x3x2xf16> = #rn.init<zeros>
  // CHECK: rn.state master_gradient @grad_f32.w of @w : tensor<4x3x3x2xf32> = #rn.init<zeros>
  rn.state master_gradient @grad_f32.w of @w : tensor<4x3x3x2xf32> = #rn.init<zeros>
  // CHECK: rn.state low_precision_weight @f16.w of @w : tensor<4x3x3x2xf16> = #rn.init<derived>
  rn.state low_precision_weight @f16.w of @w : tensor<4x3x3x2xf16> = #rn.init<derived>
  // CHECK: rn.state momentum @momentum.w of @w
  rn.state momentum @momentum.w of @w : tensor<4x3x3x2xf32> = #rn.init<zeros>
  // CHECK: rn.state adam_m @adam_m.w of @w
  rn.state adam_m @adam_m.w of @w : tensor<4x3x3x2xf32> = #rn.init<zeros>
  // CHECK: rn.state adam_v @adam_v.w of @w
  rn.state adam_v @adam_v.w of @w : tensor<4x3x3x2xf32> = #rn.init<zeros>
  // CHECK: rn.state ema @ema.w of @w : tensor<4x3x3x2xf32> = #rn.init<derived>
  rn.state ema @ema.w of @w : tensor<4x3x3x2xf32> = #rn.init<derived>
  // CHECK: rn.state loss_scale @loss_scale : tensor<f32> = #rn.init<constant, 6.553600e+04>
  rn.state loss_scale @loss_scale : tensor<f32> = #rn.init<constant, 6.553600e+04>
  // CHECK: rn.state loss_scale_good_steps @good_steps : tensor<i32> = #rn.init<zeros>
  rn.state loss_scale_good_steps @good_steps : tensor<i32> = #rn.init<zeros>

  // CHECK-LABEL: func.func @bound
  // CHECK-SAME: (%{{.+}}: tensor<4x3x3x2xf32> {rn.state = @w}, %{{.+}}: tensor<f32> {rn.input = "lr"}) -> (tensor<4x3x3x2xf32> {rn.state = @w}, tensor<f32> {rn.output = "loss"})
  func.func @bound(%w: tensor<4x3x3x2xf32> {rn.state = @w}, %lr: tensor<f32> {rn.input = "lr"})
      -> (tensor<4x3x3x2xf32> {rn.state = @w}, tensor<f32> {rn.output = "loss"}) {
    return %w, %lr : tensor<4x3x3x2xf32>, tensor<f32>
  }
}

// -----

// Tests the training-mode forward ops, casts, pads (of floats, and of uint8
// images normalizing them) and reshapes.

// CHECK-LABEL: func.func @training_forward
func.func @training_forward(%x: tensor<2x4x4x8xf16>, %g: tensor<8xf32>, %m: tensor<8xf32>, %f: tensor<2x8xf32>, %step: tensor<i32>,
                            %bytes: tensor<2x4x4x3xui8>, %nmean: tensor<3xf32>, %nstd: tensor<3xf32>) {
  // CHECK: rn.batch_norm_train %{{.+}}, %{{.+}}, %{{.+}} eps 1.000000e-05 : (tensor<2x4x4x8xf16>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x4x4x8xf16>, tensor<8xf32>, tensor<8xf32>)
  %y, %mean, %istd = rn.batch_norm_train %x, %g, %g eps 1.000000e-05 : (tensor<2x4x4x8xf16>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x4x4x8xf16>, tensor<8xf32>, tensor<8xf32>)
  // CHECK: rn.batch_norm_inference %{{.+}} eps 1.000000e-05 : (tensor<2x4x4x8xf16>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x4x4x8xf16>
  %i = rn.batch_norm_inference %x, %g, %g, %m, %m eps 1.000000e-05 : (tensor<2x4x4x8xf16>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x4x4x8xf16>
  // CHECK: rn.update_running_stats {{.+}} eps 1.000000e-05 momentum 1.000000e-01 count 32 : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>)
  %nm, %nv = rn.update_running_stats %m, %m, %mean, %istd eps 1.000000e-05 momentum 1.000000e-01 count 32 : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>)
  // CHECK: rn.dropout_train %{{.+}} step %{{.+}} p 2.500000e-01 index 1 of 3 : tensor<2x8xf32>, tensor<i32> -> tensor<2x8xf32>, tensor<2x8xf32>
  %d, %mask = rn.dropout_train %f step %step p 2.500000e-01 index 1 of 3 : tensor<2x8xf32>, tensor<i32> -> tensor<2x8xf32>, tensor<2x8xf32>
  // CHECK: rn.stochastic_depth_train %{{.+}} step %{{.+}} p 2.000000e-01 index 2 of 3 : tensor<2x4x4x8xf16>, tensor<i32> -> tensor<2x4x4x8xf16>, tensor<2xf32>
  %sd, %smask = rn.stochastic_depth_train %x step %step p 2.000000e-01 index 2 of 3 : tensor<2x4x4x8xf16>, tensor<i32> -> tensor<2x4x4x8xf16>, tensor<2xf32>
  // CHECK: rn.cast %{{.+}} : tensor<2x8xf32> -> tensor<2x8xbf16>
  %c = rn.cast %f : tensor<2x8xf32> -> tensor<2x8xbf16>
  // CHECK: rn.pad_channels %{{.+}} : tensor<2x8xf32> -> tensor<2x16xf16>
  %padded = rn.pad_channels %f : tensor<2x8xf32> -> tensor<2x16xf16>
  // CHECK: rn.pad_channels %{{.+}} normalize %{{.+}}, %{{.+}} : tensor<2x4x4x3xui8>, tensor<3xf32>, tensor<3xf32> -> tensor<2x4x4x8xbf16>
  %stem = rn.pad_channels %bytes normalize %nmean, %nstd : tensor<2x4x4x3xui8>, tensor<3xf32>, tensor<3xf32> -> tensor<2x4x4x8xbf16>
  // CHECK: rn.reshape %{{.+}} : tensor<2x8xf32> -> tensor<2x1x1x8xf32>
  %r = rn.reshape %f : tensor<2x8xf32> -> tensor<2x1x1x8xf32>
  return
}

// -----

// Tests every backward op.

// CHECK-LABEL: func.func @backward
func.func @backward(%x: tensor<2x8x8x3xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<4xf32>,
                    %dy: tensor<2x4x4x4xf32>, %y: tensor<2x8x8x4xf32>, %v: tensor<4xf32>,
                    %h: tensor<2x16xf32>, %fw: tensor<10x16xf32>, %fb: tensor<10xf32>, %dl: tensor<2x10xf32>,
                    %labels: tensor<2xi32>, %scale: tensor<f32>, %v2: tensor<2xf32>) {
  // CHECK: rn.conv2d_backward %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} stride [2, 2] pad [1, 1] dilation [1, 1] groups 1 : {{.+}} -> (tensor<2x8x8x3xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>)
  %cg:3 = rn.conv2d_backward %dy, %x, %w, %w, %b stride [2, 2] pad [1, 1] dilation [1, 1] groups 1 : (tensor<2x4x4x4xf32>, tensor<2x8x8x3xf32>, tensor<4x3x3x3xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> (tensor<2x8x8x3xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>)
  // CHECK: rn.conv2d_backward {{.+}} groups 1 plus %{{.+}} : {{.+}} -> (tensor<2x8x8x3xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>)
  %ca:3 = rn.conv2d_backward %dy, %x, %w, %w, %b stride [2, 2] pad [1, 1] dilation [1, 1] groups 1 plus %x : (tensor<2x4x4x4xf32>, tensor<2x8x8x3xf32>, tensor<4x3x3x3xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>, tensor<2x8x8x3xf32>) -> (tensor<2x8x8x3xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>)
  // CHECK: rn.conv2d_backward {{.+}} groups 1 : {{.+}} -> tensor<4x3x3x3xf32>
  %cf = rn.conv2d_backward %dy, %x, %w, %w stride [2, 2] pad [1, 1] dilation [1, 1] groups 1 : (tensor<2x4x4x4xf32>, tensor<2x8x8x3xf32>, tensor<4x3x3x3xf32>, tensor<4x3x3x3xf32>) -> tensor<4x3x3x3xf32>
  // CHECK: rn.linear_backward {{.+}} : {{.+}} -> (tensor<2x16xf32>, tensor<10x16xf32>, tensor<10xf32>)
  %lg:3 = rn.linear_backward %dl, %h, %fw, %fw, %fb : (tensor<2x10xf32>, tensor<2x16xf32>, tensor<10x16xf32>, tensor<10x16xf32>, tensor<10xf32>) -> (tensor<2x16xf32>, tensor<10x16xf32>, tensor<10xf32>)
  // CHECK: rn.batch_norm_backward {{.+}} -> (tensor<2x8x8x4xf32>, tensor<4xf32>, tensor<4xf32>)
  %bg:3 = rn.batch_norm_backward %y, %y, %v, %v, %v, %v, %v : (tensor<2x8x8x4xf32>, tensor<2x8x8x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x8x8x4xf32>, tensor<4xf32>, tensor<4xf32>)
  // CHECK: rn.relu_backward %{{.+}}, %{{.+}} : tensor<2x8x8x4xf32>
  %r = rn.relu_backward %y, %y : tensor<2x8x8x4xf32>
  // CHECK: rn.tanh_backward %{{.+}}, %{{.+}} : tensor<2x8x8x4xf32>
  %t = rn.tanh_backward %y, %y : tensor<2x8x8x4xf32>
  // CHECK: rn.silu_backward %{{.+}}, %{{.+}} : tensor<2x8x8x4xf32>
  %s = rn.silu_backward %y, %y : tensor<2x8x8x4xf32>
  // CHECK: rn.gelu_backward %{{.+}}, %{{.+}} approximate tanh : tensor<2x8x8x4xf32>
  %gb = rn.gelu_backward %y, %y approximate tanh : tensor<2x8x8x4xf32>
  // CHECK: rn.dropout_backward %{{.+}}, %{{.+}} : tensor<2x16xf32>
  %d = rn.dropout_backward %h, %h : tensor<2x16xf32>
  // CHECK: rn.stochastic_depth_backward %{{.+}}, %{{.+}} : tensor<2x8x8x4xf32>, tensor<2xf32>
  %sdb = rn.stochastic_depth_backward %y, %v2 : tensor<2x8x8x4xf32>, tensor<2xf32>
  // CHECK: rn.sigmoid_backward %{{.+}}, %{{.+}} : tensor<2x8x8x4xf32>
  %sb = rn.sigmoid_backward %y, %y : tensor<2x8x8x4xf32>
  // CHECK: rn.hardtanh_backward %{{.+}}, %{{.+}} min 0.000000e+00 max 6.000000e+00 : tensor<2x8x8x4xf32>
  %htb = rn.hardtanh_backward %y, %y min 0.000000e+00 max 6.000000e+00 : tensor<2x8x8x4xf32>
  // CHECK: rn.hardswish_backward %{{.+}}, %{{.+}} : tensor<2x8x8x4xf32>
  %hsb = rn.hardswish_backward %y, %y : tensor<2x8x8x4xf32>
  // CHECK: rn.hardsigmoid_backward %{{.+}}, %{{.+}} : tensor<2x8x8x4xf32>
  %hgb = rn.hardsigmoid_backward %y, %y : tensor<2x8x8x4xf32>
  %se = rn.global_avg_pool %y : tensor<2x8x8x4xf32> -> tensor<2x1x1x4xf32>
  // CHECK: rn.channel_mul_backward %{{.+}}, %{{.+}}, %{{.+}} : tensor<2x8x8x4xf32>, tensor<2x1x1x4xf32>
  %cmx, %cms = rn.channel_mul_backward %y, %y, %se : tensor<2x8x8x4xf32>, tensor<2x1x1x4xf32>
  // CHECK: rn.max_pool2d_backward %{{.+}}, %{{.+}} kernel [2, 2] stride [2, 2] pad [0, 0] : (tensor<2x4x4x4xf32>, tensor<2x8x8x4xf32>) -> tensor<2x8x8x4xf32>
  %mp = rn.max_pool2d_backward %dy, %y kernel [2, 2] stride [2, 2] pad [0, 0] : (tensor<2x4x4x4xf32>, tensor<2x8x8x4xf32>) -> tensor<2x8x8x4xf32>
  // CHECK: rn.avg_pool2d_backward %{{.+}} kernel [2, 2] stride [2, 2] pad [0, 0] : tensor<2x4x4x4xf32> -> tensor<2x8x8x4xf32>
  %ap = rn.avg_pool2d_backward %dy kernel [2, 2] stride [2, 2] pad [0, 0] : tensor<2x4x4x4xf32> -> tensor<2x8x8x4xf32>
  %gy = rn.global_avg_pool %y : tensor<2x8x8x4xf32> -> tensor<2x1x1x4xf32>
  // CHECK: rn.adaptive_avg_pool2d_backward %{{.+}} : tensor<2x4x4x4xf32> -> tensor<2x8x8x4xf32>
  %aap = rn.adaptive_avg_pool2d_backward %dy : tensor<2x4x4x4xf32> -> tensor<2x8x8x4xf32>
  // CHECK: rn.global_avg_pool_backward %{{.+}} : tensor<2x1x1x4xf32> -> tensor<2x8x8x4xf32>
  %gp = rn.global_avg_pool_backward %gy : tensor<2x1x1x4xf32> -> tensor<2x8x8x4xf32>
  // CHECK: rn.softmax_cross_entropy_backward %{{.+}}, %{{.+}} scale %{{.+}} label_smoothing 0.000000e+00 : (tensor<2x10xf32>, tensor<2xi32>, tensor<f32>) -> tensor<2x10xf32>
  %sg = rn.softmax_cross_entropy_backward %dl, %labels scale %scale label_smoothing 0.000000e+00 : (tensor<2x10xf32>, tensor<2xi32>, tensor<f32>) -> tensor<2x10xf32>
  return
}

// -----

// Tests zero-grad, loss scaling, the optimizers (multi-tensor SGD with and
// without momentum and multi-tensor AdamW included), EMA and accuracy.

// CHECK-LABEL: func.func @update
func.func @update(%w: tensor<16xf32>, %g: tensor<16xf32>, %m: tensor<16xf32>, %lr: tensor<f32>,
                  %step: tensor<i32>, %scale: tensor<f32>, %logits: tensor<2x10xf16>, %labels: tensor<2xi32>,
                  %w2: tensor<4x4xf32>) {
  // CHECK: rn.zero %{{.+}} : tensor<16xf32>
  %z = rn.zero %g : tensor<16xf32>
  // CHECK: %[[INF:.+]] = rn.check_finite %{{.+}}, %{{.+}} : tensor<16xf32>, tensor<16xf32> -> tensor<i1>
  %inf = rn.check_finite %g, %m : tensor<16xf32>, tensor<16xf32> -> tensor<i1>
  // CHECK: rn.unscale %{{.+}}, %{{.+}} : (tensor<16xf32>, tensor<f32>) -> tensor<16xf32>
  %u = rn.unscale %g, %scale : (tensor<16xf32>, tensor<f32>) -> tensor<16xf32>
  // CHECK: rn.multi_unscale grads(%{{.+}}, %{{.+}}) scale %{{.+}} : (tensor<16xf32>, tensor<16xf32>, tensor<f32>) -> (tensor<16xf32>, tensor<16xf32>)
  %mu:2 = rn.multi_unscale grads(%g, %m) scale %scale : (tensor<16xf32>, tensor<16xf32>, tensor<f32>) -> (tensor<16xf32>, tensor<16xf32>)
  // CHECK: rn.multi_cast %{{.+}}, %{{.+}} : (tensor<16xf32>, tensor<4x4xf32>) -> (tensor<16xf16>, tensor<4x4xf16>)
  %mc:2 = rn.multi_cast %g, %w2 : (tensor<16xf32>, tensor<4x4xf32>) -> (tensor<16xf16>, tensor<4x4xf16>)
  // CHECK: rn.multi_ema_update averages(%{{.+}}, %{{.+}}) params(%{{.+}}, %{{.+}}) decay 5.000000e-01 : (tensor<16xf32>, tensor<4x4xf32>, tensor<16xf32>, tensor<4x4xf32>) -> (tensor<16xf32>, tensor<4x4xf32>)
  %me:2 = rn.multi_ema_update averages(%m, %w2) params(%w, %w2) decay 5.000000e-01 : (tensor<16xf32>, tensor<4x4xf32>, tensor<16xf32>, tensor<4x4xf32>) -> (tensor<16xf32>, tensor<4x4xf32>)
  // CHECK: rn.multi_zero %{{.+}}, %{{.+}} : (tensor<16xf32>, tensor<4x4xf32>) -> (tensor<16xf32>, tensor<4x4xf32>)
  %mz:2 = rn.multi_zero %g, %w2 : (tensor<16xf32>, tensor<4x4xf32>) -> (tensor<16xf32>, tensor<4x4xf32>)
  // CHECK: rn.update_loss_scale %{{.+}}, %{{.+}}, %[[INF]] growth 2.000000e+00 backoff 5.000000e-01 interval 2000
  %ns, %ng = rn.update_loss_scale %scale, %step, %inf growth 2.000000e+00 backoff 5.000000e-01 interval 2000 : (tensor<f32>, tensor<i32>, tensor<i1>) -> (tensor<f32>, tensor<i32>)
  // CHECK: rn.sgd_update %{{.+}}, %{{.+}}, %{{.+}} lr %{{.+}} skip_if %[[INF]] momentum 9.000000e-01 weight_decay 5.000000e-04 nesterov
  %p1, %b1 = rn.sgd_update %w, %u, %m lr %lr skip_if %inf momentum 9.000000e-01 weight_decay 5.000000e-04 nesterov : (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<f32>, tensor<i1>) -> (tensor<16xf32>, tensor<16xf32>)
  // CHECK: rn.sgd_update %{{.+}}, %{{.+}} lr %{{.+}} momentum 0.000000e+00 weight_decay 0.000000e+00 : (tensor<16xf32>, tensor<16xf32>, tensor<f32>) -> tensor<16xf32>
  %p2 = rn.sgd_update %w, %u lr %lr momentum 0.000000e+00 weight_decay 0.000000e+00 : (tensor<16xf32>, tensor<16xf32>, tensor<f32>) -> tensor<16xf32>
  // CHECK: rn.multi_sgd_update params(%{{.+}}, %{{.+}}) grads(%{{.+}}, %{{.+}}) momentum_buffers(%{{.+}}, %{{.+}}) lr %{{.+}} skip_if %[[INF]] momentum 9.000000e-01 weight_decay 5.000000e-04 nesterov : (tensor<16xf32>, tensor<4x4xf32>, tensor<16xf32>, tensor<4x4xf32>, tensor<16xf32>, tensor<4x4xf32>, tensor<f32>, tensor<i1>) -> (tensor<16xf32>, tensor<4x4xf32>, tensor<16xf32>, tensor<4x4xf32>)
  %q:4 = rn.multi_sgd_update params(%w, %w2) grads(%u, %w2) momentum_buffers(%m, %w2) lr %lr skip_if %inf momentum 9.000000e-01 weight_decay 5.000000e-04 nesterov : (tensor<16xf32>, tensor<4x4xf32>, tensor<16xf32>, tensor<4x4xf32>, tensor<16xf32>, tensor<4x4xf32>, tensor<f32>, tensor<i1>) -> (tensor<16xf32>, tensor<4x4xf32>, tensor<16xf32>, tensor<4x4xf32>)
  // CHECK: rn.multi_sgd_update params(%{{.+}}) grads(%{{.+}}) lr %{{.+}} momentum 0.000000e+00 weight_decay 0.000000e+00 : (tensor<16xf32>, tensor<16xf32>, tensor<f32>) -> tensor<16xf32>
  %q1 = rn.multi_sgd_update params(%w) grads(%u) lr %lr momentum 0.000000e+00 weight_decay 0.000000e+00 : (tensor<16xf32>, tensor<16xf32>, tensor<f32>) -> tensor<16xf32>
  // CHECK: rn.multi_adamw_update params(%{{.+}}, %{{.+}}) grads(%{{.+}}, %{{.+}}) exp_avgs(%{{.+}}, %{{.+}}) exp_avg_sqs(%{{.+}}, %{{.+}}) lr %{{.+}} step %{{.+}} skip_if %[[INF]] betas(9.000000e-01, 5.000000e-01) eps 1.000000e-08 weight_decay 1.000000e-02 : (tensor<16xf32>, tensor<4x4xf32>, tensor<16xf32>, tensor<4x4xf32>, tensor<16xf32>, tensor<4x4xf32>, tensor<16xf32>, tensor<4x4xf32>, tensor<f32>, tensor<i32>, tensor<i1>) -> (tensor<16xf32>, tensor<4x4xf32>, tensor<16xf32>, tensor<4x4xf32>, tensor<16xf32>, tensor<4x4xf32>)
  %qa:6 = rn.multi_adamw_update params(%w, %w2) grads(%u, %w2) exp_avgs(%m, %w2) exp_avg_sqs(%m, %w2) lr %lr step %step skip_if %inf betas(9.000000e-01, 5.000000e-01) eps 1.000000e-08 weight_decay 1.000000e-02 : (tensor<16xf32>, tensor<4x4xf32>, tensor<16xf32>, tensor<4x4xf32>, tensor<16xf32>, tensor<4x4xf32>, tensor<16xf32>, tensor<4x4xf32>, tensor<f32>, tensor<i32>, tensor<i1>) -> (tensor<16xf32>, tensor<4x4xf32>, tensor<16xf32>, tensor<4x4xf32>, tensor<16xf32>, tensor<4x4xf32>)
  // CHECK: rn.adamw_update {{.+}} step %{{.+}} betas(9.000000e-01, 5.000000e-01) eps 1.000000e-08 weight_decay 1.000000e-02
  %p3:3 = rn.adamw_update %w, %u, %m, %m lr %lr step %step betas(9.000000e-01, 5.000000e-01) eps 1.000000e-08 weight_decay 1.000000e-02 : (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<f32>, tensor<i32>) -> (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>)
  // CHECK: rn.lars_update {{.+}} momentum 9.000000e-01 weight_decay 1.000000e-04 trust 1.000000e-03 eps 0.000000e+00
  %p4:2 = rn.lars_update %w, %u, %m lr %lr momentum 9.000000e-01 weight_decay 1.000000e-04 trust 1.000000e-03 eps 0.000000e+00 : (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<f32>) -> (tensor<16xf32>, tensor<16xf32>)
  // CHECK: rn.multi_lars_update params(%{{.+}}, %{{.+}}) grads(%{{.+}}, %{{.+}}) momentum_buffers(%{{.+}}, %{{.+}}) lr %{{.+}} skip_if %[[INF]] momentum 9.000000e-01 weight_decay 1.000000e-04 trust 1.000000e-03 eps 1.000000e-09 : (tensor<16xf32>, tensor<4x4xf32>, tensor<16xf32>, tensor<4x4xf32>, tensor<16xf32>, tensor<4x4xf32>, tensor<f32>, tensor<i1>) -> (tensor<16xf32>, tensor<4x4xf32>, tensor<16xf32>, tensor<4x4xf32>)
  %ql:4 = rn.multi_lars_update params(%w, %w2) grads(%u, %w2) momentum_buffers(%m, %w2) lr %lr skip_if %inf momentum 9.000000e-01 weight_decay 1.000000e-04 trust 1.000000e-03 eps 1.000000e-09 : (tensor<16xf32>, tensor<4x4xf32>, tensor<16xf32>, tensor<4x4xf32>, tensor<16xf32>, tensor<4x4xf32>, tensor<f32>, tensor<i1>) -> (tensor<16xf32>, tensor<4x4xf32>, tensor<16xf32>, tensor<4x4xf32>)
  // CHECK: rn.multi_lars_update params(%{{.+}}) grads(%{{.+}}) momentum_buffers(%{{.+}}) lr %{{.+}} momentum 0.000000e+00 weight_decay 0.000000e+00 trust 2.000000e-02 eps 0.000000e+00 : (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<f32>) -> (tensor<16xf32>, tensor<16xf32>)
  %ql1:2 = rn.multi_lars_update params(%w) grads(%u) momentum_buffers(%m) lr %lr momentum 0.000000e+00 weight_decay 0.000000e+00 trust 2.000000e-02 eps 0.000000e+00 : (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<f32>) -> (tensor<16xf32>, tensor<16xf32>)
  // CHECK: rn.ema_update %{{.+}}, %{{.+}} decay 5.000000e-01 : tensor<16xf32>
  %e = rn.ema_update %m, %p1 decay 5.000000e-01 : tensor<16xf32>
  // CHECK: rn.all_reduce_mean %{{.+}}, %{{.+}} : (tensor<16xf32>, tensor<f32>) -> (tensor<16xf32>, tensor<f32>)
  %r:2 = rn.all_reduce_mean %g, %scale : (tensor<16xf32>, tensor<f32>) -> (tensor<16xf32>, tensor<f32>)
  // CHECK: rn.all_reduce_mean %{{.+}} {rn.bucket = 2 : i64} : (tensor<16xf32>) -> tensor<16xf32>
  %rb = rn.all_reduce_mean %g {rn.bucket = 2 : i64} : (tensor<16xf32>) -> tensor<16xf32>
  // CHECK: rn.count_correct %{{.+}}, %{{.+}} : (tensor<2x10xf16>, tensor<2xi32>) -> tensor<i32>
  %c = rn.count_correct %logits, %labels : (tensor<2x10xf16>, tensor<2xi32>) -> tensor<i32>
  return
}

// -----

// Tests the BN prologue forms (rn-fuse-bn-prologue): bn_scale_bias,
// conv_bn_stats with and without a prologue, cbr_forward with one, and
// cbr_backward with an input prologue and the prologue's mask.

// CHECK-LABEL: func.func @bn_prologue
func.func @bn_prologue(%x: tensor<2x4x4x8xf16>, %w: tensor<8x3x3x8xf16>, %g: tensor<8xf32>, %b: tensor<8xf32>,
                       %dy: tensor<2x4x4x8xf16>) {
  // CHECK: %[[C:.+]], %[[M:.+]], %[[S:.+]] = rn.conv_bn_stats %{{.+}}, %{{.+}} stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 eps 1.000000e-05 : (tensor<2x4x4x8xf16>, tensor<8x3x3x8xf16>) -> (tensor<2x4x4x8xf16>, tensor<8xf32>, tensor<8xf32>)
  %c, %m, %s = rn.conv_bn_stats %x, %w stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 eps 1.000000e-05 : (tensor<2x4x4x8xf16>, tensor<8x3x3x8xf16>) -> (tensor<2x4x4x8xf16>, tensor<8xf32>, tensor<8xf32>)
  // CHECK: %[[SCALE:.+]], %[[BIAS:.+]] = rn.bn_scale_bias %[[M]], %[[S]], %{{.+}}, %{{.+}} : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<8xf16>, tensor<8xf16>)
  %scale, %bias = rn.bn_scale_bias %m, %s, %g, %b : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<8xf16>, tensor<8xf16>)
  // CHECK: rn.conv_bn_stats %[[C]], %{{.+}} prologue %[[SCALE]], %[[BIAS]] stride [2, 2] pad [1, 1] dilation [1, 1] groups 1 eps 1.000000e-03 : (tensor<2x4x4x8xf16>, tensor<8x3x3x8xf16>, tensor<8xf16>, tensor<8xf16>) -> (tensor<2x2x2x8xf16>, tensor<8xf32>, tensor<8xf32>)
  %c2, %m2, %s2 = rn.conv_bn_stats %c, %w prologue %scale, %bias stride [2, 2] pad [1, 1] dilation [1, 1] groups 1 eps 1.000000e-03 : (tensor<2x4x4x8xf16>, tensor<8x3x3x8xf16>, tensor<8xf16>, tensor<8xf16>) -> (tensor<2x2x2x8xf16>, tensor<8xf32>, tensor<8xf32>)
  // CHECK: %[[Y:.+]], %[[C3:.+]], %[[M3:.+]], %[[S3:.+]] = rn.cbr_forward %[[C]], %{{.+}}, %{{.+}}, %{{.+}} prologue %[[SCALE]], %[[BIAS]] stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 eps 1.000000e-05 relu : (tensor<2x4x4x8xf16>, tensor<8x3x3x8xf16>, tensor<8xf32>, tensor<8xf32>, tensor<8xf16>, tensor<8xf16>) -> (tensor<2x4x4x8xf16>, tensor<2x4x4x8xf16>, tensor<8xf32>, tensor<8xf32>)
  %y, %c3, %m3, %s3 = rn.cbr_forward %c, %w, %g, %b prologue %scale, %bias stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 eps 1.000000e-05 relu : (tensor<2x4x4x8xf16>, tensor<8x3x3x8xf16>, tensor<8xf32>, tensor<8xf32>, tensor<8xf16>, tensor<8xf16>) -> (tensor<2x4x4x8xf16>, tensor<2x4x4x8xf16>, tensor<8xf32>, tensor<8xf32>)
  // CHECK: rn.cbr_backward %{{.+}}, %[[C]], %{{.+}}, %[[C3]], %{{.+}}, %[[M3]], %[[S3]], %{{.+}}, %{{.+}}, %{{.+}} relu_recompute %{{.+}} prologue_mask input_prologue %[[SCALE]], %[[BIAS]] stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 plus %{{.+}} : (tensor<2x4x4x8xf16>, tensor<2x4x4x8xf16>, tensor<8x3x3x8xf16>, tensor<2x4x4x8xf16>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8x3x3x8xf16>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf16>, tensor<8xf16>, tensor<2x4x4x8xf16>) -> (tensor<2x4x4x8xf16>, tensor<2x4x4x8xf16>, tensor<8x3x3x8xf16>, tensor<8xf32>, tensor<8xf32>)
  %dc, %grads:4 = rn.cbr_backward %dy, %c, %w, %c3, %g, %m3, %s3, %w, %g, %b relu_recompute %b prologue_mask input_prologue %scale, %bias stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 plus %dy : (tensor<2x4x4x8xf16>, tensor<2x4x4x8xf16>, tensor<8x3x3x8xf16>, tensor<2x4x4x8xf16>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8x3x3x8xf16>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf16>, tensor<8xf16>, tensor<2x4x4x8xf16>) -> (tensor<2x4x4x8xf16>, tensor<2x4x4x8xf16>, tensor<8x3x3x8xf16>, tensor<8xf32>, tensor<8xf32>)
  // CHECK: rn.cbr_backward {{.+}} relu %[[Y]] input_prologue %[[SCALE]], %[[BIAS]] stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 : {{.+}} -> (tensor<2x4x4x8xf16>, tensor<8x3x3x8xf16>, tensor<8xf32>, tensor<8xf32>)
  %dc1, %grads1:3 = rn.cbr_backward %dy, %c, %w, %c3, %g, %m3, %s3, %w, %g, %b relu %y input_prologue %scale, %bias stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 : (tensor<2x4x4x8xf16>, tensor<2x4x4x8xf16>, tensor<8x3x3x8xf16>, tensor<2x4x4x8xf16>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8x3x3x8xf16>, tensor<8xf32>, tensor<8xf32>, tensor<2x4x4x8xf16>, tensor<8xf16>, tensor<8xf16>) -> (tensor<2x4x4x8xf16>, tensor<8x3x3x8xf16>, tensor<8xf32>, tensor<8xf32>)
  // CHECK: rn.cbr_backward {{.+}} relu_recompute %{{.+}} prologue_mask stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 : {{.+}} -> (tensor<2x4x4x8xf16>, tensor<2x4x4x8xf16>, tensor<8x3x3x8xf16>, tensor<8xf32>, tensor<8xf32>)
  %dc2, %grads2:4 = rn.cbr_backward %dy, %x, %w, %c, %g, %m, %s, %w, %g, %b relu_recompute %b prologue_mask stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 : (tensor<2x4x4x8xf16>, tensor<2x4x4x8xf16>, tensor<8x3x3x8xf16>, tensor<2x4x4x8xf16>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8x3x3x8xf16>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x4x4x8xf16>, tensor<2x4x4x8xf16>, tensor<8x3x3x8xf16>, tensor<8xf32>, tensor<8xf32>)
  return
}
