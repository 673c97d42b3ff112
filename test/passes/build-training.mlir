// RUN: rn-opt %s --split-input-file --rn-build-training | FileCheck %s
// RUN: rn-opt %s --split-input-file --rn-build-training="optimizer=adamw weight-decay=0.05 no-decay-bn-bias=true" | FileCheck %s --check-prefix=ADAMW
// RUN: rn-opt %s --split-input-file --rn-build-training="optimizer=lars weight-decay=1.0e-4" | FileCheck %s --check-prefix=LARS
// RUN: rn-opt %s --split-input-file --rn-build-training="momentum=0" | FileCheck %s --check-prefix=PLAIN
// RUN: rn-opt %s --split-input-file --rn-build-training="precision=f16 loss-scaling=static loss-scale=1024" | FileCheck %s --check-prefix=STATIC
// RUN: rn-opt %s --split-input-file --rn-build-training="precision=f16 loss-scaling=dynamic growth-interval=100" | FileCheck %s --check-prefix=DYNAMIC
// RUN: rn-opt %s --split-input-file --rn-build-training="precision=bf16" | FileCheck %s --check-prefix=BF16
// RUN: rn-opt %s --split-input-file --rn-build-training="ema-decay=0.999 nesterov=true" | FileCheck %s --check-prefix=EMA
// RUN: rn-opt %s --split-input-file --rn-build-training="precision=f16 loss-scaling=dynamic data-parallel=true" | FileCheck %s --check-prefix=DATAPAR

// Tests an MLP: linear layers with bias and ReLU.

module attributes {rn.model = "mlp"} {
  rn.parameter @fc1.weight : tensor<16x8xf32> = #rn.init<uniform, 3.535533845e-01>
  rn.parameter @fc1.bias : tensor<16xf32> = #rn.init<uniform, 3.535533845e-01>
  rn.parameter @fc2.weight : tensor<10x16xf32> = #rn.init<uniform, 2.500000000e-01>
  rn.parameter @fc2.bias : tensor<10xf32> = #rn.init<uniform, 2.500000000e-01>
  func.func @forward(%images: tensor<4x8xf32>, %labels: tensor<4xi32>) -> tensor<f32> {
    %0 = rn.param @fc1.weight : tensor<16x8xf32>
    %1 = rn.param @fc1.bias : tensor<16xf32>
    %2 = rn.linear %images, %0, %1 : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<4x16xf32>
    %3 = rn.relu %2 : tensor<4x16xf32>
    %4 = rn.param @fc2.weight : tensor<10x16xf32>
    %5 = rn.param @fc2.bias : tensor<10xf32>
    %6 = rn.linear %3, %4, %5 : (tensor<4x16xf32>, tensor<10x16xf32>, tensor<10xf32>) -> tensor<4x10xf32>
    %7 = rn.softmax_cross_entropy %6, %labels label_smoothing 1.000000000e-01 : (tensor<4x10xf32>, tensor<4xi32>) -> tensor<f32>
    return %7 : tensor<f32>
  }
}

// The default: SGD with momentum 0.9, f32, no loss scaling.
// CHECK-LABEL: rn.model = "mlp"
// CHECK-SAME:    rn.training = {{{.*}}optimizer = "sgd", precision = "f32"
// CHECK:       rn.state gradient @grad.fc1.weight of @fc1.weight : tensor<16x8xf32> = #rn.init<zeros>
// CHECK:       rn.state momentum @momentum.fc1.weight of @fc1.weight : tensor<16x8xf32> = #rn.init<zeros>
// CHECK:       func.func @train_step(%[[X:.+]]: tensor<4x8xf32> {rn.input = "images"}, %[[Y:.+]]: tensor<4xi32> {rn.input = "labels"}, %[[LR:.+]]: tensor<f32> {rn.input = "lr"}, %{{.+}}: tensor<i32> {rn.input = "step"}, %[[W1:.+]]: tensor<16x8xf32> {rn.state = @fc1.weight}, %[[B1:.+]]: tensor<16xf32> {rn.state = @fc1.bias}, %[[W2:.+]]: tensor<10x16xf32> {rn.state = @fc2.weight}, %[[B2:.+]]: tensor<10xf32> {rn.state = @fc2.bias}, %[[GW1:.+]]: tensor<16x8xf32> {rn.state = @grad.fc1.weight}, %[[MW1:.+]]: tensor<16x8xf32> {rn.state = @momentum.fc1.weight}
// CHECK-SAME:    -> (tensor<f32> {rn.output = "loss"}, tensor<16x8xf32> {rn.state = @fc1.weight}
// CHECK:       %[[Z:.+]] = rn.zero %[[GW1]] : tensor<16x8xf32>
// CHECK:       %[[H:.+]] = rn.linear %[[X]], %[[W1]], %[[B1]]
// CHECK:       %[[R:.+]] = rn.relu %[[H]]
// CHECK:       %[[L:.+]] = rn.linear %[[R]], %[[W2]], %[[B2]]
// CHECK:       %[[LOSS:.+]] = rn.softmax_cross_entropy %[[L]], %[[Y]] label_smoothing 1.000000e-01
// CHECK:       %[[DL:.+]] = rn.softmax_cross_entropy_backward %[[L]], %[[Y]] label_smoothing 1.000000e-01
// CHECK:       %[[G2_0:.+]], %[[G2_1:.+]], %[[G2_2:.+]] = rn.linear_backward %[[DL]], %[[R]], %[[W2]], %{{.+}}, %{{.+}}
// CHECK:       %[[DR:.+]] = rn.relu_backward %[[G2_0]], %[[R]]
// The first layer's input is the batch: no input gradient.
// CHECK:       %[[G1_0:.+]], %[[G1_1:.+]] = rn.linear_backward %[[DR]], %[[X]], %[[W1]], %[[Z]], %{{.+}} :
// CHECK-SAME:    -> (tensor<16x8xf32>, tensor<16xf32>)
// CHECK:       %[[NW1:.+]], %[[NM1:.+]] = rn.sgd_update %[[W1]], %[[G1_0]], %[[MW1]] lr %[[LR]] momentum 9.000000e-01 weight_decay 0.000000e+00 :
// CHECK:       return %[[LOSS]], %[[NW1]], {{.+}}, %[[G1_0]], %[[NM1]],
// CHECK-LABEL: func.func @eval_step
// CHECK-SAME:    -> (tensor<f32> {rn.output = "loss"}, tensor<i32> {rn.output = "correct"}, tensor<4x10xf32> {rn.output = "logits"})
// CHECK:       %[[EL:[0-9]+]] = rn.linear {{.*}} -> tensor<4x10xf32>
// CHECK:       rn.count_correct %[[EL]]

// Without momentum SGD keeps no buffer.
// PLAIN-LABEL: rn.model = "mlp"
// PLAIN-NOT:   rn.state momentum
// PLAIN:       rn.sgd_update %{{.+}}, %{{.+}} lr %{{.+}} momentum 0.000000e+00 weight_decay 0.000000e+00 : (tensor<16x8xf32>, tensor<16x8xf32>, tensor<f32>) -> tensor<16x8xf32>

// AdamW keeps two moments and reads the step count; biases are excluded
// from weight decay on request.
// ADAMW-LABEL: rn.model = "mlp"
// ADAMW:       rn.state adam_m @adam_m.fc1.weight of @fc1.weight : tensor<16x8xf32>
// ADAMW:       rn.state adam_v @adam_v.fc1.weight of @fc1.weight : tensor<16x8xf32>
// ADAMW:       func.func @train_step({{.*}}%[[STEP:[a-z0-9]+]]: tensor<i32> {rn.input = "step"}
// ADAMW:       rn.adamw_update %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} lr %{{.+}} step %[[STEP]] betas(9.000000e-01, {{0.99899999.*|9.990000e-01}}) eps 1.000000e-08 weight_decay 5.000000e-02 : (tensor<16x8xf32>
// ADAMW:       rn.adamw_update {{.*}} weight_decay 0.000000e+00 : (tensor<16xf32>

// LARS keeps a momentum buffer and applies the trust ratio.
// LARS-LABEL: rn.model = "mlp"
// LARS:       rn.lars_update %{{.+}}, %{{.+}}, %{{.+}} lr %{{.+}} momentum 9.000000e-01 weight_decay 1.000000e-04 trust 1.000000e-03 eps 1.000000e-09 : (tensor<16x8xf32>

// EMA of every weight after its update; Nesterov momentum.
// EMA-LABEL: rn.model = "mlp"
// EMA:       rn.state ema @ema.fc1.weight of @fc1.weight : tensor<16x8xf32> = #rn.init<derived>
// EMA:       %[[NEW:.+]], %{{.+}} = rn.sgd_update {{.*}} nesterov : (tensor<16x8xf32>
// EMA:       rn.ema_update %{{.+}}, %[[NEW]] decay {{0.99899999.*|9.990000e-01}} : tensor<16x8xf32>

// -----

// Tests a conv-bn-relu chain with pooling, dropout and a classifier.

module attributes {rn.model = "cbr"} {
  rn.parameter @conv.weight : tensor<8x3x3x3xf32> = #rn.init<normal, 1.000000000e-01>
  rn.parameter @bn.weight : tensor<8xf32> = #rn.init<ones>
  rn.parameter @bn.bias : tensor<8xf32> = #rn.init<zeros>
  rn.parameter buffer @bn.running_mean : tensor<8xf32> = #rn.init<zeros>
  rn.parameter buffer @bn.running_var : tensor<8xf32> = #rn.init<ones>
  rn.parameter @fc.weight : tensor<10x8xf32> = #rn.init<uniform, 3.535533845e-01>
  func.func @forward(%images: tensor<2x8x8x3xf32>, %labels: tensor<2xi32>) -> tensor<f32> {
    %w = rn.param @conv.weight : tensor<8x3x3x3xf32>
    %c = rn.conv2d %images, %w stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 : (tensor<2x8x8x3xf32>, tensor<8x3x3x3xf32>) -> tensor<2x8x8x8xf32>
    %g = rn.param @bn.weight : tensor<8xf32>
    %b = rn.param @bn.bias : tensor<8xf32>
    %m = rn.param @bn.running_mean : tensor<8xf32>
    %v = rn.param @bn.running_var : tensor<8xf32>
    %n = rn.batch_norm %c, %g, %b, %m, %v eps 1.000000000e-05 momentum 1.000000000e-01 : (tensor<2x8x8x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x8x8x8xf32>
    %r = rn.relu %n : tensor<2x8x8x8xf32>
    %p = rn.max_pool2d %r kernel [2, 2] stride [2, 2] pad [0, 0] : tensor<2x8x8x8xf32> -> tensor<2x4x4x8xf32>
    %a = rn.global_avg_pool %p : tensor<2x4x4x8xf32> -> tensor<2x1x1x8xf32>
    %f = rn.flatten %a : tensor<2x1x1x8xf32> -> tensor<2x8xf32>
    %d = rn.dropout %f p 5.000000000e-01 : tensor<2x8xf32>
    %fw = rn.param @fc.weight : tensor<10x8xf32>
    %l = rn.linear %d, %fw : (tensor<2x8xf32>, tensor<10x8xf32>) -> tensor<2x10xf32>
    %loss = rn.softmax_cross_entropy %l, %labels label_smoothing 0.000000000e+00 : (tensor<2x10xf32>, tensor<2xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// CHECK-LABEL: rn.model = "cbr"
// CHECK:       func.func @train_step(%[[X:[a-z0-9]+]]: tensor<2x8x8x3xf32>{{.*}}, %[[STEP:[a-z0-9]+]]: tensor<i32> {rn.input = "step"}
// CHECK:       %[[C:.+]] = rn.conv2d %[[X]], %[[W:[a-z0-9]+]]
// CHECK:       %[[N:.+]], %[[MEAN:.+]], %[[ISTD:.+]] = rn.batch_norm_train %[[C]], %[[G:[a-z0-9]+]], %[[B:[a-z0-9]+]] eps 1.000000e-05 : (tensor<2x8x8x8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x8x8x8xf32>, tensor<8xf32>, tensor<8xf32>)
// CHECK:       %[[R:.+]] = rn.relu %[[N]]
// CHECK:       %[[P:.+]] = rn.max_pool2d %[[R]]
// The only dropout of the step: random stream step * 1 + 0.
// CHECK:       %[[D:.+]], %[[MASK:.+]] = rn.dropout_train %{{.+}} step %[[STEP]] p 5.000000e-01 index 0 of 1 : tensor<2x8xf32>, tensor<i32> ->
// CHECK:       rn.dropout_backward %{{.+}}, %[[MASK]]
// CHECK:       rn.reshape %{{.+}} : tensor<2x8xf32> -> tensor<2x1x1x8xf32>
// CHECK:       rn.global_avg_pool_backward %{{.+}} : tensor<2x1x1x8xf32> -> tensor<2x4x4x8xf32>
// CHECK:       %[[DP:.+]] = rn.max_pool2d_backward %{{.+}}, %[[R]] kernel [2, 2] stride [2, 2] pad [0, 0]
// CHECK:       %[[DR:.+]] = rn.relu_backward %[[DP]], %[[R]]
// CHECK:       %[[DX:.+]], %[[DG:.+]], %[[DB:.+]] = rn.batch_norm_backward %[[DR]], %[[C]], %[[G]], %[[MEAN]], %[[ISTD]], %{{.+}}, %{{.+}} :
// First layer: only the filter gradient.
// CHECK:       %[[DW:.+]] = rn.conv2d_backward %[[DX]], %[[X]], %[[W]], %{{.+}} stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 : {{.*}} -> tensor<8x3x3x3xf32>
// CHECK:       %[[RM:.+]], %[[RV:.+]] = rn.update_running_stats %{{.+}}, %{{.+}}, %[[MEAN]], %[[ISTD]] eps 1.000000e-05 momentum 1.000000e-01 count 128
// CHECK:       return {{.*}}%[[RM]], %[[RV]]
// CHECK-LABEL: func.func @eval_step
// CHECK:       rn.batch_norm_inference
// CHECK-NOT:   rn.dropout

// Mixed precision f16 with a static loss scale: f16 compute and weight
// copies, f32 BatchNorm parameters, f32 master gradients, unscaled before
// SGD, and weights cast back to f16 after the update.
// STATIC-LABEL: rn.model = "cbr"
// STATIC:       rn.state gradient @grad.conv.weight of @conv.weight : tensor<8x3x3x3xf16>
// STATIC:       rn.state master_gradient @grad_f32.conv.weight of @conv.weight : tensor<8x3x3x3xf32>
// STATIC:       rn.state low_precision_weight @f16.conv.weight of @conv.weight : tensor<8x3x3x3xf16> = #rn.init<derived>
// STATIC:       rn.state gradient @grad.bn.weight of @bn.weight : tensor<8xf32>
// STATIC-NOT:   rn.state low_precision_weight @f16.bn
// STATIC:       rn.state loss_scale @loss_scale : tensor<f32> = #rn.init<constant, 1.024000e+03>
// STATIC-NOT:   loss_scale_good_steps
// STATIC:       func.func @train_step(%[[X:[a-z0-9]+]]: tensor<2x8x8x3xf32>
// STATIC-SAME:    %[[SCALE:[a-z0-9]+]]: tensor<f32> {rn.state = @loss_scale}
// STATIC:       %[[XH:.+]] = rn.cast %[[X]] : tensor<2x8x8x3xf32> -> tensor<2x8x8x3xf16>
// STATIC:       rn.conv2d %[[XH]], %{{.+}} : (tensor<2x8x8x3xf16>, tensor<8x3x3x3xf16>) -> tensor<2x8x8x8xf16>
// STATIC:       rn.batch_norm_train {{.*}} : (tensor<2x8x8x8xf16>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x8x8x8xf16>, tensor<8xf32>, tensor<8xf32>)
// STATIC:       rn.softmax_cross_entropy_backward %{{.+}}, %{{.+}} scale %[[SCALE]]
// STATIC:       %[[GH:.+]] = rn.conv2d_backward {{.*}} -> tensor<8x3x3x3xf16>
// STATIC:       %[[G32:.+]] = rn.cast %[[GH]] : tensor<8x3x3x3xf16> -> tensor<8x3x3x3xf32>
// STATIC-NOT:   rn.check_finite
// STATIC:       %[[U:.+]] = rn.unscale %[[G32]], %[[SCALE]]
// STATIC:       %[[NW:.+]], %{{.+}} = rn.sgd_update %{{.+}}, %[[U]], %{{.+}} lr
// STATIC:       rn.cast %[[NW]] : tensor<8x3x3x3xf32> -> tensor<8x3x3x3xf16>
// STATIC-NOT:   rn.update_loss_scale
// STATIC-LABEL: func.func @eval_step
// STATIC-SAME:    tensor<8x3x3x3xf16> {rn.state = @f16.conv.weight}

// Dynamic loss scaling: one finiteness check over all gradients, updates
// skipped on overflow, and the scale adjusted.
// DYNAMIC-LABEL: rn.model = "cbr"
// DYNAMIC:       rn.state loss_scale_good_steps @loss_scale.good_steps : tensor<i32> = #rn.init<zeros>
// DYNAMIC:       %[[INF:.+]] = rn.check_finite %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} : tensor<8x3x3x3xf32>, tensor<8xf32>, tensor<8xf32>, tensor<10x8xf32> -> tensor<i1>
// DYNAMIC-COUNT-4: rn.unscale
// DYNAMIC:       rn.sgd_update {{.*}} skip_if %[[INF]]
// DYNAMIC:       rn.update_loss_scale %{{.+}}, %{{.+}}, %[[INF]] growth 2.000000e+00 backoff 5.000000e-01 interval 100

// Data parallelism averages the f32 gradients over the replicas in one
// all-reduce, before the finiteness check and unscaling.
// DATAPAR-LABEL: rn.model = "cbr"
// DATAPAR:       %[[G:.+]] = rn.cast %{{.+}} : tensor<8x3x3x3xf16> -> tensor<8x3x3x3xf32>
// DATAPAR:       %[[R:.+]]:4 = rn.all_reduce_mean %[[G]], %{{.+}}, %{{.+}}, %{{.+}} : (tensor<8x3x3x3xf32>, tensor<8xf32>, tensor<8xf32>, tensor<10x8xf32>) -> (tensor<8x3x3x3xf32>, tensor<8xf32>, tensor<8xf32>, tensor<10x8xf32>)
// DATAPAR-NEXT:  rn.check_finite %[[R]]#0, %[[R]]#1, %[[R]]#2, %[[R]]#3
// DATAPAR-NEXT:  rn.unscale %[[R]]#0

// bf16: no loss scaling, bf16 compute.
// BF16-LABEL: rn.model = "cbr"
// BF16:       rn.state low_precision_weight @bf16.conv.weight of @conv.weight : tensor<8x3x3x3xbf16>
// BF16-NOT:   rn.state loss_scale
// BF16:       rn.softmax_cross_entropy_backward %{{.+}}, %{{.+}} label_smoothing
// BF16:       rn.conv2d_backward {{.*}} -> tensor<8x3x3x3xbf16>

// -----

// Tests a residual basic block: the identity path and the residual path
// both receive the gradient of the add, which is summed at the fork.

module attributes {rn.model = "residual"} {
  rn.parameter @stem.weight : tensor<4x3x3x3xf32> = #rn.init<normal, 1.000000000e-01>
  rn.parameter @conv1.weight : tensor<4x3x3x4xf32> = #rn.init<normal, 1.000000000e-01>
  rn.parameter @conv2.weight : tensor<4x3x3x4xf32> = #rn.init<normal, 1.000000000e-01>
  rn.parameter @fc.weight : tensor<10x4xf32> = #rn.init<uniform, 5.000000000e-01>
  rn.parameter @fc.bias : tensor<10xf32> = #rn.init<uniform, 5.000000000e-01>
  func.func @forward(%images: tensor<2x4x4x3xf32>, %labels: tensor<2xi32>) -> tensor<f32> {
    %w0 = rn.param @stem.weight : tensor<4x3x3x3xf32>
    %x = rn.conv2d %images, %w0 stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 : (tensor<2x4x4x3xf32>, tensor<4x3x3x3xf32>) -> tensor<2x4x4x4xf32>
    %w1 = rn.param @conv1.weight : tensor<4x3x3x4xf32>
    %y1 = rn.conv2d %x, %w1 stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 : (tensor<2x4x4x4xf32>, tensor<4x3x3x4xf32>) -> tensor<2x4x4x4xf32>
    %r1 = rn.relu %y1 : tensor<2x4x4x4xf32>
    %w2 = rn.param @conv2.weight : tensor<4x3x3x4xf32>
    %y2 = rn.conv2d %r1, %w2 stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 : (tensor<2x4x4x4xf32>, tensor<4x3x3x4xf32>) -> tensor<2x4x4x4xf32>
    %s = rn.add %y2, %x : tensor<2x4x4x4xf32>
    %r2 = rn.relu %s : tensor<2x4x4x4xf32>
    %a = rn.global_avg_pool %r2 : tensor<2x4x4x4xf32> -> tensor<2x1x1x4xf32>
    %f = rn.flatten %a : tensor<2x1x1x4xf32> -> tensor<2x4xf32>
    %fw = rn.param @fc.weight : tensor<10x4xf32>
    %fb = rn.param @fc.bias : tensor<10xf32>
    %l = rn.linear %f, %fw, %fb : (tensor<2x4xf32>, tensor<10x4xf32>, tensor<10xf32>) -> tensor<2x10xf32>
    %loss = rn.softmax_cross_entropy %l, %labels label_smoothing 0.000000000e+00 : (tensor<2x10xf32>, tensor<2xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// The gradient of the add reaches both branches; the stem output gets the
// sum of the shortcut gradient and the residual branch's input gradient.
// CHECK-LABEL: rn.model = "residual"
// CHECK:       %[[STEM:.+]] = rn.conv2d %{{.+}}, %{{.+}} stride
// CHECK:       %[[Y1:.+]] = rn.conv2d %[[STEM]], %{{.+}} stride
// CHECK:       %[[R1:.+]] = rn.relu %[[Y1]]
// CHECK:       %[[Y2:.+]] = rn.conv2d %[[R1]], %{{.+}} stride
// CHECK:       %[[SUM:.+]] = rn.add %[[Y2]], %[[STEM]]
// CHECK:       %[[OUT:.+]] = rn.relu %[[SUM]]
// CHECK:       %[[DSUM:.+]] = rn.relu_backward %{{.+}}, %[[OUT]]
// CHECK:       %[[B2_0:.+]], %[[B2_1:.+]] = rn.conv2d_backward %[[DSUM]], %[[R1]], {{.*}}
// CHECK:       %[[DR1:.+]] = rn.relu_backward %[[B2_0]], %[[R1]]
// CHECK:       %[[B1_0:.+]], %[[B1_1:.+]] = rn.conv2d_backward %[[DR1]], %[[STEM]], {{.*}}
// CHECK:       %[[DSTEM:.+]] = rn.add %[[DSUM]], %[[B1_0]]
// CHECK:       rn.conv2d_backward %[[DSTEM]], %{{.+}}, %{{.+}}, %{{.+}} stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 : {{.*}} -> tensor<4x3x3x3xf32>

// -----

// Tests a bottleneck block with a downsampling shortcut: 1x1, 3x3 (stride
// 2), 1x1 convolutions with BatchNorm, and a strided 1x1 conv + BatchNorm
// on the shortcut; both paths read the block input.

module attributes {rn.model = "bottleneck"} {
  rn.parameter @conv1.weight : tensor<2x1x1x4xf32> = #rn.init<normal, 1.000000000e-01>
  rn.parameter @bn1.weight : tensor<2xf32> = #rn.init<ones>
  rn.parameter @bn1.bias : tensor<2xf32> = #rn.init<zeros>
  rn.parameter buffer @bn1.running_mean : tensor<2xf32> = #rn.init<zeros>
  rn.parameter buffer @bn1.running_var : tensor<2xf32> = #rn.init<ones>
  rn.parameter @conv2.weight : tensor<2x3x3x2xf32> = #rn.init<normal, 1.000000000e-01>
  rn.parameter @bn2.weight : tensor<2xf32> = #rn.init<ones>
  rn.parameter @bn2.bias : tensor<2xf32> = #rn.init<zeros>
  rn.parameter buffer @bn2.running_mean : tensor<2xf32> = #rn.init<zeros>
  rn.parameter buffer @bn2.running_var : tensor<2xf32> = #rn.init<ones>
  rn.parameter @conv3.weight : tensor<8x1x1x2xf32> = #rn.init<normal, 1.000000000e-01>
  rn.parameter @bn3.weight : tensor<8xf32> = #rn.init<ones>
  rn.parameter @bn3.bias : tensor<8xf32> = #rn.init<zeros>
  rn.parameter buffer @bn3.running_mean : tensor<8xf32> = #rn.init<zeros>
  rn.parameter buffer @bn3.running_var : tensor<8xf32> = #rn.init<ones>
  rn.parameter @down.weight : tensor<8x1x1x4xf32> = #rn.init<normal, 1.000000000e-01>
  rn.parameter @down_bn.weight : tensor<8xf32> = #rn.init<ones>
  rn.parameter @down_bn.bias : tensor<8xf32> = #rn.init<zeros>
  rn.parameter buffer @down_bn.running_mean : tensor<8xf32> = #rn.init<zeros>
  rn.parameter buffer @down_bn.running_var : tensor<8xf32> = #rn.init<ones>
  rn.parameter @fc.weight : tensor<10x8xf32> = #rn.init<uniform, 3.535533845e-01>
  func.func @forward(%images: tensor<2x4x4x4xf32>, %labels: tensor<2xi32>) -> tensor<f32> {
    %w1 = rn.param @conv1.weight : tensor<2x1x1x4xf32>
    %c1 = rn.conv2d %images, %w1 stride [1, 1] pad [0, 0] dilation [1, 1] groups 1 : (tensor<2x4x4x4xf32>, tensor<2x1x1x4xf32>) -> tensor<2x4x4x2xf32>
    %g1 = rn.param @bn1.weight : tensor<2xf32>
    %b1 = rn.param @bn1.bias : tensor<2xf32>
    %m1 = rn.param @bn1.running_mean : tensor<2xf32>
    %v1 = rn.param @bn1.running_var : tensor<2xf32>
    %n1 = rn.batch_norm %c1, %g1, %b1, %m1, %v1 eps 1.000000000e-05 momentum 1.000000000e-01 : (tensor<2x4x4x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<2x4x4x2xf32>
    %r1 = rn.relu %n1 : tensor<2x4x4x2xf32>
    %w2 = rn.param @conv2.weight : tensor<2x3x3x2xf32>
    %c2 = rn.conv2d %r1, %w2 stride [2, 2] pad [1, 1] dilation [1, 1] groups 1 : (tensor<2x4x4x2xf32>, tensor<2x3x3x2xf32>) -> tensor<2x2x2x2xf32>
    %g2 = rn.param @bn2.weight : tensor<2xf32>
    %b2 = rn.param @bn2.bias : tensor<2xf32>
    %m2 = rn.param @bn2.running_mean : tensor<2xf32>
    %v2 = rn.param @bn2.running_var : tensor<2xf32>
    %n2 = rn.batch_norm %c2, %g2, %b2, %m2, %v2 eps 1.000000000e-05 momentum 1.000000000e-01 : (tensor<2x2x2x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<2x2x2x2xf32>
    %r2 = rn.relu %n2 : tensor<2x2x2x2xf32>
    %w3 = rn.param @conv3.weight : tensor<8x1x1x2xf32>
    %c3 = rn.conv2d %r2, %w3 stride [1, 1] pad [0, 0] dilation [1, 1] groups 1 : (tensor<2x2x2x2xf32>, tensor<8x1x1x2xf32>) -> tensor<2x2x2x8xf32>
    %g3 = rn.param @bn3.weight : tensor<8xf32>
    %b3 = rn.param @bn3.bias : tensor<8xf32>
    %m3 = rn.param @bn3.running_mean : tensor<8xf32>
    %v3 = rn.param @bn3.running_var : tensor<8xf32>
    %n3 = rn.batch_norm %c3, %g3, %b3, %m3, %v3 eps 1.000000000e-05 momentum 1.000000000e-01 : (tensor<2x2x2x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x2x2x8xf32>
    %wd = rn.param @down.weight : tensor<8x1x1x4xf32>
    %cd = rn.conv2d %images, %wd stride [2, 2] pad [0, 0] dilation [1, 1] groups 1 : (tensor<2x4x4x4xf32>, tensor<8x1x1x4xf32>) -> tensor<2x2x2x8xf32>
    %gd = rn.param @down_bn.weight : tensor<8xf32>
    %bd = rn.param @down_bn.bias : tensor<8xf32>
    %md = rn.param @down_bn.running_mean : tensor<8xf32>
    %vd = rn.param @down_bn.running_var : tensor<8xf32>
    %nd = rn.batch_norm %cd, %gd, %bd, %md, %vd eps 1.000000000e-05 momentum 1.000000000e-01 : (tensor<2x2x2x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x2x2x8xf32>
    %s = rn.add %n3, %nd : tensor<2x2x2x8xf32>
    %r3 = rn.relu %s : tensor<2x2x2x8xf32>
    %a = rn.global_avg_pool %r3 : tensor<2x2x2x8xf32> -> tensor<2x1x1x8xf32>
    %f = rn.flatten %a : tensor<2x1x1x8xf32> -> tensor<2x8xf32>
    %fw = rn.param @fc.weight : tensor<10x8xf32>
    %l = rn.linear %f, %fw : (tensor<2x8xf32>, tensor<10x8xf32>) -> tensor<2x10xf32>
    %loss = rn.softmax_cross_entropy %l, %labels label_smoothing 0.000000000e+00 : (tensor<2x10xf32>, tensor<2xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// Both paths read the block input: the 1x1 reduce conv and the strided
// shortcut conv; it is the batch, so neither computes an input gradient.
// Every BatchNorm updates its running statistics.
// CHECK-LABEL: rn.model = "bottleneck"
// CHECK:       func.func @train_step(%[[X:[a-z0-9]+]]: tensor<2x4x4x4xf32>
// CHECK:       %[[DOWN:.+]] = rn.conv2d %[[X]], %{{.+}} stride [2, 2] pad [0, 0] {{.*}} -> tensor<2x2x2x8xf32>
// CHECK:       %[[SUM:.+]] = rn.add
// CHECK:       %[[DSUM:.+]] = rn.relu_backward %{{.+}}, %{{.+}} : tensor<2x2x2x8xf32>
// CHECK:       %{{.+}}, %{{.+}}, %{{.+}} = rn.batch_norm_backward %[[DSUM]], %[[DOWN]]
// CHECK:       rn.conv2d_backward %{{.+}}, %[[X]], {{.*}} stride [2, 2] pad [0, 0] {{.*}} -> tensor<8x1x1x4xf32>
// CHECK:       rn.batch_norm_backward %[[DSUM]]
// CHECK:       rn.conv2d_backward {{.*}} stride [1, 1] pad [0, 0] {{.*}}
// CHECK:       rn.conv2d_backward {{.*}} stride [2, 2] pad [1, 1] {{.*}}
// CHECK:       rn.conv2d_backward %{{.+}}, %[[X]], {{.*}} stride [1, 1] pad [0, 0] {{.*}} -> tensor<2x1x1x4xf32>
// CHECK-COUNT-4: rn.update_running_stats {{.*}} count
// CHECK:       func.func @eval_step
// CHECK-COUNT-4: rn.batch_norm_inference

// AdamW with BatchNorm parameters excluded from decay.
// ADAMW-LABEL: rn.model = "bottleneck"
// ADAMW:       rn.adamw_update {{.*}} weight_decay 5.000000e-02 : (tensor<2x1x1x4xf32>
// ADAMW:       rn.adamw_update {{.*}} weight_decay 0.000000e+00 : (tensor<2xf32>

// -----

// Tests that every dropout reads the step input and gets its own index of
// the function's dropout count, in forward order (random stream
// step * 2 + index), and that the AdamW update reads the same step.

module attributes {rn.model = "two_dropouts"} {
  rn.parameter @fc1.weight : tensor<8x4xf32> = #rn.init<uniform, 5.000000e-01>
  rn.parameter @fc2.weight : tensor<3x8xf32> = #rn.init<uniform, 3.535533845e-01>
  func.func @forward(%images: tensor<2x4xf32>, %labels: tensor<2xi32>) -> tensor<f32> {
    %0 = rn.param @fc1.weight : tensor<8x4xf32>
    %1 = rn.linear %images, %0 : (tensor<2x4xf32>, tensor<8x4xf32>) -> tensor<2x8xf32>
    %2 = rn.dropout %1 p 2.500000e-01 : tensor<2x8xf32>
    %3 = rn.relu %2 : tensor<2x8xf32>
    %4 = rn.dropout %3 p 5.000000e-01 : tensor<2x8xf32>
    %5 = rn.param @fc2.weight : tensor<3x8xf32>
    %6 = rn.linear %4, %5 : (tensor<2x8xf32>, tensor<3x8xf32>) -> tensor<2x3xf32>
    %7 = rn.softmax_cross_entropy %6, %labels label_smoothing 0.000000e+00 : (tensor<2x3xf32>, tensor<2xi32>) -> tensor<f32>
    return %7 : tensor<f32>
  }
}

// CHECK-LABEL: rn.model = "two_dropouts"
// CHECK:       func.func @train_step({{.*}}, %[[STEP:[a-z0-9]+]]: tensor<i32> {rn.input = "step"}
// CHECK:       rn.dropout_train %{{.+}} step %[[STEP]] p 2.500000e-01 index 0 of 2 :
// CHECK:       rn.dropout_train %{{.+}} step %[[STEP]] p 5.000000e-01 index 1 of 2 :
// CHECK-LABEL: func.func @eval_step
// CHECK-NOT:   rn.dropout

// ADAMW-LABEL: rn.model = "two_dropouts"
// ADAMW:       func.func @train_step({{.*}}, %[[STEP:[a-z0-9]+]]: tensor<i32> {rn.input = "step"}
// ADAMW:       rn.dropout_train %{{.+}} step %[[STEP]] {{.*}} index 0 of 2
// ADAMW:       rn.dropout_train %{{.+}} step %[[STEP]] {{.*}} index 1 of 2
// ADAMW:       rn.adamw_update {{.*}} step %[[STEP]]

// -----

// Tests the gradient rules of the mobile activations: hardtanh (ReLU6) and
// sigmoid differentiate from their results, hardswish and hardsigmoid from
// their inputs; hardtanh's backward keeps the bounds; mixed precision
// converts them like every activation.

module attributes {rn.model = "mobile_activations"} {
  rn.parameter @fc1.weight : tensor<8x4xf32> = #rn.init<uniform, 5.000000e-01>
  rn.parameter @fc2.weight : tensor<3x8xf32> = #rn.init<uniform, 3.535533845e-01>
  func.func @forward(%images: tensor<2x4xf32>, %labels: tensor<2xi32>) -> tensor<f32> {
    %0 = rn.param @fc1.weight : tensor<8x4xf32>
    %1 = rn.linear %images, %0 : (tensor<2x4xf32>, tensor<8x4xf32>) -> tensor<2x8xf32>
    %2 = rn.hardtanh %1 min 0.000000e+00 max 6.000000e+00 : tensor<2x8xf32>
    %3 = rn.hardswish %2 : tensor<2x8xf32>
    %4 = rn.hardsigmoid %3 : tensor<2x8xf32>
    %5 = rn.sigmoid %4 : tensor<2x8xf32>
    %6 = rn.param @fc2.weight : tensor<3x8xf32>
    %7 = rn.linear %5, %6 : (tensor<2x8xf32>, tensor<3x8xf32>) -> tensor<2x3xf32>
    %8 = rn.softmax_cross_entropy %7, %labels label_smoothing 0.000000e+00 : (tensor<2x3xf32>, tensor<2xi32>) -> tensor<f32>
    return %8 : tensor<f32>
  }
}

// CHECK-LABEL: rn.model = "mobile_activations"
// CHECK:       func.func @train_step
// CHECK:       %[[L:.+]] = rn.linear
// CHECK:       %[[R6:.+]] = rn.hardtanh %[[L]] min 0.000000e+00 max 6.000000e+00 : tensor<2x8xf32>
// CHECK:       %[[HS:.+]] = rn.hardswish %[[R6]] : tensor<2x8xf32>
// CHECK:       %[[HG:.+]] = rn.hardsigmoid %[[HS]] : tensor<2x8xf32>
// CHECK:       %[[SG:.+]] = rn.sigmoid %[[HG]] : tensor<2x8xf32>
// CHECK:       %[[G:.+]], %{{.+}} = rn.linear_backward %{{.+}}, %[[SG]],
// CHECK:       %[[DSG:.+]] = rn.sigmoid_backward %[[G]], %[[SG]] : tensor<2x8xf32>
// CHECK:       %[[DHG:.+]] = rn.hardsigmoid_backward %[[DSG]], %[[HS]] : tensor<2x8xf32>
// CHECK:       %[[DHS:.+]] = rn.hardswish_backward %[[DHG]], %[[R6]] : tensor<2x8xf32>
// CHECK:       %[[DR6:.+]] = rn.hardtanh_backward %[[DHS]], %[[R6]] min 0.000000e+00 max 6.000000e+00 : tensor<2x8xf32>
// CHECK:       rn.linear_backward %[[DR6]], %{{.+}}, %{{.+}}, %{{.+}} :
// CHECK-LABEL: func.func @eval_step
// CHECK:       rn.hardtanh %{{.+}} min 0.000000e+00 max 6.000000e+00 : tensor<2x8xf32>
// CHECK:       rn.hardswish
// CHECK:       rn.hardsigmoid
// CHECK:       rn.sigmoid

// BF16-LABEL: rn.model = "mobile_activations"
// BF16:       rn.hardtanh %{{.+}} min 0.000000e+00 max 6.000000e+00 : tensor<2x8xbf16>
// BF16:       rn.hardswish %{{.+}} : tensor<2x8xbf16>
// BF16:       rn.hardsigmoid %{{.+}} : tensor<2x8xbf16>
// BF16:       rn.sigmoid %{{.+}} : tensor<2x8xbf16>
// BF16:       rn.sigmoid_backward %{{.+}}, %{{.+}} : tensor<2x8xbf16>
// BF16:       rn.hardsigmoid_backward %{{.+}}, %{{.+}} : tensor<2x8xbf16>
// BF16:       rn.hardswish_backward %{{.+}}, %{{.+}} : tensor<2x8xbf16>
// BF16:       rn.hardtanh_backward %{{.+}}, %{{.+}} min 0.000000e+00 max 6.000000e+00 : tensor<2x8xbf16>

// -----

// Tests GELU's gradient rule: rn.gelu_backward reads the forward input and
// keeps the form (exact or tanh); the evaluation step keeps the op as is.

module attributes {rn.model = "gelu"} {
  rn.parameter @fc1.weight : tensor<8x4xf32> = #rn.init<uniform, 5.000000e-01>
  rn.parameter @fc2.weight : tensor<3x8xf32> = #rn.init<uniform, 3.535533845e-01>
  func.func @forward(%images: tensor<2x4xf32>, %labels: tensor<2xi32>) -> tensor<f32> {
    %0 = rn.param @fc1.weight : tensor<8x4xf32>
    %1 = rn.linear %images, %0 : (tensor<2x4xf32>, tensor<8x4xf32>) -> tensor<2x8xf32>
    %2 = rn.gelu %1 approximate none : tensor<2x8xf32>
    %3 = rn.gelu %2 approximate tanh : tensor<2x8xf32>
    %4 = rn.param @fc2.weight : tensor<3x8xf32>
    %5 = rn.linear %3, %4 : (tensor<2x8xf32>, tensor<3x8xf32>) -> tensor<2x3xf32>
    %6 = rn.softmax_cross_entropy %5, %labels label_smoothing 0.000000e+00 : (tensor<2x3xf32>, tensor<2xi32>) -> tensor<f32>
    return %6 : tensor<f32>
  }
}

// CHECK-LABEL: rn.model = "gelu"
// CHECK:       func.func @train_step
// CHECK:       %[[L:.+]] = rn.linear
// CHECK:       %[[G:.+]] = rn.gelu %[[L]] approximate none : tensor<2x8xf32>
// CHECK:       %[[GT:.+]] = rn.gelu %[[G]] approximate tanh : tensor<2x8xf32>
// CHECK:       %[[D:.+]], %{{.+}} = rn.linear_backward %{{.+}}, %[[GT]],
// CHECK:       %[[DGT:.+]] = rn.gelu_backward %[[D]], %[[G]] approximate tanh : tensor<2x8xf32>
// CHECK:       %[[DG:.+]] = rn.gelu_backward %[[DGT]], %[[L]] approximate none : tensor<2x8xf32>
// CHECK:       rn.linear_backward %[[DG]], %{{.+}}, %{{.+}}, %{{.+}} :
// CHECK-LABEL: func.func @eval_step
// CHECK:       rn.gelu %{{.+}} approximate none
// CHECK:       rn.gelu %{{.+}} approximate tanh

// -----

// Tests the gradient rule of a squeeze-and-excitation gate: channel_mul's
// backward takes the input and the scale and returns both gradients; the
// input's gradient sums with the one through the gate's global average pool.

module attributes {rn.model = "squeeze_excitation"} {
  rn.parameter @conv.weight : tensor<4x3x3x3xf32> = #rn.init<uniform, 1.924500897e-01>
  rn.parameter @fc.weight : tensor<3x4xf32> = #rn.init<uniform, 5.000000e-01>
  func.func @forward(%images: tensor<2x4x4x3xf32>, %labels: tensor<2xi32>) -> tensor<f32> {
    %w = rn.param @conv.weight : tensor<4x3x3x3xf32>
    %c = rn.conv2d %images, %w stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 : (tensor<2x4x4x3xf32>, tensor<4x3x3x3xf32>) -> tensor<2x4x4x4xf32>
    %p = rn.global_avg_pool %c : tensor<2x4x4x4xf32> -> tensor<2x1x1x4xf32>
    %s = rn.hardsigmoid %p : tensor<2x1x1x4xf32>
    %y = rn.channel_mul %c, %s : tensor<2x4x4x4xf32>, tensor<2x1x1x4xf32>
    %g = rn.global_avg_pool %y : tensor<2x4x4x4xf32> -> tensor<2x1x1x4xf32>
    %f = rn.flatten %g : tensor<2x1x1x4xf32> -> tensor<2x4xf32>
    %fw = rn.param @fc.weight : tensor<3x4xf32>
    %l = rn.linear %f, %fw : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<2x3xf32>
    %loss = rn.softmax_cross_entropy %l, %labels label_smoothing 0.000000e+00 : (tensor<2x3xf32>, tensor<2xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// CHECK-LABEL: rn.model = "squeeze_excitation"
// CHECK:       func.func @train_step
// CHECK:       %[[C:.+]] = rn.conv2d
// CHECK:       %[[P:.+]] = rn.global_avg_pool %[[C]]
// CHECK:       %[[S:.+]] = rn.hardsigmoid %[[P]]
// CHECK:       %[[Y:.+]] = rn.channel_mul %[[C]], %[[S]] : tensor<2x4x4x4xf32>, tensor<2x1x1x4xf32>
// CHECK:       %[[DG:.+]] = rn.global_avg_pool_backward %{{.+}} : tensor<2x1x1x4xf32> -> tensor<2x4x4x4xf32>
// CHECK:       %[[DX:.+]], %[[DS:.+]] = rn.channel_mul_backward %[[DG]], %[[C]], %[[S]] : tensor<2x4x4x4xf32>, tensor<2x1x1x4xf32>
// CHECK:       %[[DP:.+]] = rn.hardsigmoid_backward %[[DS]], %[[P]]
// CHECK:       %[[DC:.+]] = rn.global_avg_pool_backward %[[DP]]
// CHECK:       %[[SUM:.+]] = rn.add %[[DX]], %[[DC]]
// CHECK:       rn.conv2d_backward %[[SUM]], %{{.+}}

// BF16-LABEL: rn.model = "squeeze_excitation"
// BF16:       rn.channel_mul %{{.+}}, %{{.+}} : tensor<2x4x4x4xbf16>, tensor<2x1x1x4xbf16>
// BF16:       rn.channel_mul_backward %{{.+}}, %{{.+}}, %{{.+}} : tensor<2x4x4x4xbf16>, tensor<2x1x1x4xbf16>

// -----

// Tests the gradient rule of adaptive average pooling (an output that does
// not divide the input): its backward maps the output gradient's type to
// the input's.

module attributes {rn.model = "adaptive_pool"} {
  rn.parameter @conv.weight : tensor<4x3x3x3xf32> = #rn.init<uniform, 1.924500897e-01>
  rn.parameter @fc.weight : tensor<3x36xf32> = #rn.init<uniform, 1.666666716e-01>
  func.func @forward(%images: tensor<2x5x5x3xf32>, %labels: tensor<2xi32>) -> tensor<f32> {
    %w = rn.param @conv.weight : tensor<4x3x3x3xf32>
    %c = rn.conv2d %images, %w stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 : (tensor<2x5x5x3xf32>, tensor<4x3x3x3xf32>) -> tensor<2x5x5x4xf32>
    %p = rn.adaptive_avg_pool2d %c : tensor<2x5x5x4xf32> -> tensor<2x3x3x4xf32>
    %f = rn.flatten %p : tensor<2x3x3x4xf32> -> tensor<2x36xf32>
    %fw = rn.param @fc.weight : tensor<3x36xf32>
    %l = rn.linear %f, %fw : (tensor<2x36xf32>, tensor<3x36xf32>) -> tensor<2x3xf32>
    %loss = rn.softmax_cross_entropy %l, %labels label_smoothing 0.000000e+00 : (tensor<2x3xf32>, tensor<2xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// CHECK-LABEL: rn.model = "adaptive_pool"
// CHECK:       func.func @train_step
// CHECK:       rn.adaptive_avg_pool2d %{{.+}} : tensor<2x5x5x4xf32> -> tensor<2x3x3x4xf32>
// CHECK:       %[[DF:.+]] = rn.reshape %{{.+}} : tensor<2x36xf32> -> tensor<2x3x3x4xf32>
// CHECK:       %[[DC:.+]] = rn.adaptive_avg_pool2d_backward %[[DF]] : tensor<2x3x3x4xf32> -> tensor<2x5x5x4xf32>
// CHECK:       rn.conv2d_backward %[[DC]], %{{.+}}
// CHECK-LABEL: func.func @eval_step
// CHECK:       rn.adaptive_avg_pool2d %{{.+}} : tensor<2x5x5x4xf32> -> tensor<2x3x3x4xf32>

// BF16-LABEL: rn.model = "adaptive_pool"
// BF16:       rn.adaptive_avg_pool2d_backward %{{.+}} : tensor<2x3x3x4xbf16> -> tensor<2x5x5x4xbf16>

// -----

// Tests the gradient rule of stochastic depth on a residual branch: the
// training step draws its per-sample mask (tensor<N x f32>, f32 under mixed
// precision too) with rn.stochastic_depth_train, numbered together with the
// dropout after it in forward order (index 0 and 1 of 2: one stream each),
// and its backward scales the branch's gradient by that mask; the residual
// input sums the gradient through the branch with the one around it. The
// evaluation step is the identity.

module attributes {rn.model = "stochastic_depth"} {
  rn.parameter @fc1.weight : tensor<8x4xf32> = #rn.init<uniform, 5.000000e-01>
  rn.parameter @block.weight : tensor<8x8xf32> = #rn.init<uniform, 3.535533845e-01>
  rn.parameter @fc2.weight : tensor<3x8xf32> = #rn.init<uniform, 3.535533845e-01>
  func.func @forward(%images: tensor<2x4xf32>, %labels: tensor<2xi32>) -> tensor<f32> {
    %0 = rn.param @fc1.weight : tensor<8x4xf32>
    %1 = rn.linear %images, %0 : (tensor<2x4xf32>, tensor<8x4xf32>) -> tensor<2x8xf32>
    %2 = rn.relu %1 : tensor<2x8xf32>
    %3 = rn.param @block.weight : tensor<8x8xf32>
    %4 = rn.linear %2, %3 : (tensor<2x8xf32>, tensor<8x8xf32>) -> tensor<2x8xf32>
    %5 = rn.stochastic_depth %4 p 2.000000e-01 : tensor<2x8xf32>
    %6 = rn.add %2, %5 : tensor<2x8xf32>
    %7 = rn.dropout %6 p 5.000000e-01 : tensor<2x8xf32>
    %8 = rn.param @fc2.weight : tensor<3x8xf32>
    %9 = rn.linear %7, %8 : (tensor<2x8xf32>, tensor<3x8xf32>) -> tensor<2x3xf32>
    %10 = rn.softmax_cross_entropy %9, %labels label_smoothing 0.000000e+00 : (tensor<2x3xf32>, tensor<2xi32>) -> tensor<f32>
    return %10 : tensor<f32>
  }
}

// CHECK-LABEL: rn.model = "stochastic_depth"
// CHECK:       func.func @train_step({{.*}}, %[[STEP:[a-z0-9]+]]: tensor<i32> {rn.input = "step"}
// CHECK:       %[[H:.+]] = rn.relu
// CHECK:       %[[B:.+]] = rn.linear %[[H]], %{{.+}}
// CHECK:       %[[S:.+]], %[[MASK:.+]] = rn.stochastic_depth_train %[[B]] step %[[STEP]] p 2.000000e-01 index 0 of 2 : tensor<2x8xf32>, tensor<i32> -> tensor<2x8xf32>, tensor<2xf32>
// CHECK:       %[[R:.+]] = rn.add %[[H]], %[[S]]
// CHECK:       rn.dropout_train %[[R]] step %[[STEP]] p 5.000000e-01 index 1 of 2 :
// CHECK:       %[[DR:.+]] = rn.dropout_backward
// CHECK:       %[[DB:.+]] = rn.stochastic_depth_backward %[[DR]], %[[MASK]] : tensor<2x8xf32>, tensor<2xf32>
// CHECK:       %[[DH:.+]], %{{.+}} = rn.linear_backward %[[DB]], %[[H]]
// CHECK:       %[[SUM:.+]] = rn.add %[[DR]], %[[DH]]
// CHECK:       rn.relu_backward %[[SUM]], %[[H]]
// CHECK-LABEL: func.func @eval_step
// CHECK:       %[[EH:.+]] = rn.relu
// CHECK:       %[[EB:.+]] = rn.linear %[[EH]], %{{.+}}
// CHECK-NOT:   rn.stochastic_depth
// CHECK:       %[[ER:.+]] = rn.add %[[EH]], %[[EB]]
// CHECK-NOT:   rn.dropout
// CHECK:       rn.linear %[[ER]], %{{.+}}

// BF16-LABEL: rn.model = "stochastic_depth"
// BF16:       rn.stochastic_depth_train %{{.+}} step %{{.+}} p 2.000000e-01 index 0 of 2 : tensor<2x8xbf16>, tensor<i32> -> tensor<2x8xbf16>, tensor<2xf32>
// BF16:       rn.stochastic_depth_backward %{{.+}}, %{{.+}} : tensor<2x8xbf16>, tensor<2xf32>

// -----

// Tests uint8 images normalized on the device: normalize_images has no
// gradient (it reads the batch and two buffers), so the first convolution
// computes no input gradient and no backward op reads the bytes; both steps
// normalize, the buffers are state of both and never updated. Under mixed
// precision the normalization writes the compute type itself (no cast of
// the images).

module attributes {rn.model = "bytes"} {
  rn.parameter buffer @input.mean : tensor<3xf32> = #rn.init<values, [5.000000e-01, 4.000000e-01, 3.000000e-01]>
  rn.parameter buffer @input.std : tensor<3xf32> = #rn.init<values, [2.500000e-01, 2.000000e-01, 1.250000e-01]>
  rn.parameter @conv.weight : tensor<4x3x3x3xf32> = #rn.init<uniform, 1.924500897e-01>
  rn.parameter @fc.weight : tensor<3x100xf32> = #rn.init<uniform, 1.000000e-01>
  func.func @forward(%images: tensor<2x5x5x3xui8>, %labels: tensor<2xi32>) -> tensor<f32> {
    %m = rn.param @input.mean : tensor<3xf32>
    %s = rn.param @input.std : tensor<3xf32>
    %x = rn.normalize_images %images, %m, %s : tensor<2x5x5x3xui8>, tensor<3xf32>, tensor<3xf32> -> tensor<2x5x5x3xf32>
    %w = rn.param @conv.weight : tensor<4x3x3x3xf32>
    %c = rn.conv2d %x, %w stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 : (tensor<2x5x5x3xf32>, tensor<4x3x3x3xf32>) -> tensor<2x5x5x4xf32>
    %f = rn.flatten %c : tensor<2x5x5x4xf32> -> tensor<2x100xf32>
    %fw = rn.param @fc.weight : tensor<3x100xf32>
    %l = rn.linear %f, %fw : (tensor<2x100xf32>, tensor<3x100xf32>) -> tensor<2x3xf32>
    %loss = rn.softmax_cross_entropy %l, %labels label_smoothing 0.000000e+00 : (tensor<2x3xf32>, tensor<2xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// CHECK-LABEL: rn.model = "bytes"
// CHECK-NOT:   rn.state {{.+}} of @input.
// CHECK:       func.func @train_step(%[[B:.+]]: tensor<2x5x5x3xui8> {rn.input = "images"}, {{.+}}, %[[M:.+]]: tensor<3xf32> {rn.state = @input.mean}, %[[S:.+]]: tensor<3xf32> {rn.state = @input.std},
// CHECK:       %[[X:.+]] = rn.normalize_images %[[B]], %[[M]], %[[S]] : tensor<2x5x5x3xui8>, tensor<3xf32>, tensor<3xf32> -> tensor<2x5x5x3xf32>
// CHECK:       rn.conv2d %[[X]]
// CHECK-NOT:   rn.normalize_images
// CHECK:       %[[DW:.+]] = rn.conv2d_backward %{{.+}}, %[[X]], %{{.+}}, %{{.+}} stride {{.+}} : {{.+}} -> tensor<4x3x3x3xf32>
// CHECK-NOT:   %[[B]]
// CHECK:       return
// CHECK-LABEL: func.func @eval_step
// CHECK-SAME:    (%[[EB:.+]]: tensor<2x5x5x3xui8> {rn.input = "images"}, {{.+}}, %[[EM:.+]]: tensor<3xf32> {rn.state = @input.mean}, %[[ES:.+]]: tensor<3xf32> {rn.state = @input.std},
// CHECK:       %[[EX:.+]] = rn.normalize_images %[[EB]], %[[EM]], %[[ES]] : {{.+}} -> tensor<2x5x5x3xf32>
// CHECK:       rn.conv2d %[[EX]]

// BF16-LABEL: rn.model = "bytes"
// BF16:       func.func @train_step(%[[B:.+]]: tensor<2x5x5x3xui8> {rn.input = "images"}
// BF16-NOT:   rn.cast %[[B]]
// BF16:       %[[X:.+]] = rn.normalize_images %[[B]], {{.+}} -> tensor<2x5x5x3xbf16>
// BF16:       rn.conv2d %[[X]], {{.+}} -> tensor<2x5x5x4xbf16>
// BF16-LABEL: func.func @eval_step
// BF16:       rn.normalize_images {{.+}} -> tensor<2x5x5x3xbf16>
