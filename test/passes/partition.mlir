// RUN: rn-opt %s --split-input-file --rn-build-training --rn-partition | FileCheck %s
// RUN: rn-opt %s --split-input-file --rn-build-training="precision=f16 loss-scaling=dynamic ema-decay=0.99" --rn-partition | FileCheck %s --check-prefix=AMP
// RUN: rn-opt %s --split-input-file --rn-build-training="data-parallel=true" --rn-partition | FileCheck %s --check-prefix=DATAPAR

// Tests the subgraphs of an f32 MLP: the inputs are copied by TRANSFER;
// the first linear layer forms FIRST_LAYER_FWD and its backward, which reads
// the batch, FIRST_LAYER_BWD; everything reading the input buffers (the
// loss reads the labels, the optimizer the learning rate) is double-buffered.

// CHECK-LABEL: rn.model = "tiny"
// CHECK:      rn.subgraph @TRANSFER in @train_step on #rn.stream<trans> double_buffered
// CHECK-NEXT: rn.subgraph @ZERO_GRAD in @train_step on #rn.stream<update>{{$}}
// CHECK-NEXT: rn.subgraph @FIRST_LAYER_FWD in @train_step on #rn.stream<comp1> double_buffered
// CHECK-NEXT: rn.subgraph @DEEP_FWD_BWD in @train_step on #rn.stream<comp1> double_buffered
// CHECK-NEXT: rn.subgraph @FIRST_LAYER_BWD in @train_step on #rn.stream<comp1> double_buffered
// CHECK-NEXT: rn.subgraph @OPTIMIZER in @train_step on #rn.stream<update> double_buffered
// The prologue fills buffer A; even steps compute on A and prefetch into B
// once the previous copy (which the host staging buffer fed) is done.
// CHECK:      rn.step_schedule @train_prologue {
// CHECK-NEXT:   rn.launch @TRANSFER variant a
// CHECK:      rn.step_schedule @train_even {
// CHECK-NEXT:   rn.host_wait @TRANSFER variant a
// CHECK-NEXT:   rn.launch @TRANSFER variant b
// CHECK-NEXT:   rn.launch @ZERO_GRAD{{$}}
// CHECK-NEXT:   rn.launch @FIRST_LAYER_FWD variant a
// CHECK-NEXT:   rn.launch @DEEP_FWD_BWD variant a
// CHECK-NEXT:   rn.launch @FIRST_LAYER_BWD variant a
// CHECK-NEXT:   rn.launch @OPTIMIZER variant a
// CHECK-NEXT: }
// The last step prefetches nothing and the host waits for it.
// CHECK:      rn.step_schedule @train_last_even {
// CHECK-NEXT:   rn.launch @ZERO_GRAD
// CHECK:        rn.launch @OPTIMIZER variant a
// CHECK-NEXT:   rn.host_wait @OPTIMIZER variant a
// CHECK-NEXT: }
// CHECK:      rn.step_schedule @train_odd {
// CHECK-NEXT:   rn.host_wait @TRANSFER variant b
// CHECK-NEXT:   rn.launch @TRANSFER variant a
// CHECK:        rn.launch @FIRST_LAYER_FWD variant b
// CHECK:      rn.step_schedule @train_last_odd {
// CHECK:      rn.subgraph @EVAL_TRANSFER in @eval_step on #rn.stream<trans> double_buffered
// CHECK-NEXT: rn.subgraph @EVAL_INFERENCE in @eval_step on #rn.stream<comp1> double_buffered
// Evaluation waits for every batch: the host reads loss and accuracy.
// CHECK:      rn.step_schedule @eval_even {
// CHECK-NEXT:   rn.host_wait @EVAL_TRANSFER variant a
// CHECK-NEXT:   rn.launch @EVAL_TRANSFER variant b
// CHECK-NEXT:   rn.launch @EVAL_INFERENCE variant a
// CHECK-NEXT:   rn.host_wait @EVAL_INFERENCE variant a
// The per-step inputs become host staging buffers copied to the device,
// except the step number, which SGD does not read: no copy.
// CHECK: func.func @train_step(%[[IMAGES:[a-z0-9]+]]: tensor<2x4xf32> {rn.input = "images"}, %[[LABELS:[a-z0-9]+]]: tensor<2xi32> {rn.input = "labels"}, %[[LR:[a-z0-9]+]]: tensor<f32> {rn.input = "lr"}, %[[STEP:[a-z0-9]+]]: tensor<i32> {rn.input = "step"}
// CHECK-NEXT:  %[[X:.+]] = rn.host_to_device %[[IMAGES]] {rn.subgraph = @TRANSFER} : tensor<2x4xf32>
// CHECK-NEXT:  rn.host_to_device %[[LABELS]] {rn.subgraph = @TRANSFER}
// CHECK-NEXT:  %[[LRD:.+]] = rn.host_to_device %[[LR]] {rn.subgraph = @TRANSFER}
// CHECK-NOT:   rn.host_to_device %[[STEP]]
// CHECK-NEXT:  rn.zero {{.*}}{rn.subgraph = @ZERO_GRAD}
// CHECK:       rn.linear %[[X]], {{.*}}{rn.subgraph = @FIRST_LAYER_FWD}
// CHECK-NEXT:  rn.relu {{.*}}{rn.subgraph = @DEEP_FWD_BWD}
// CHECK:       rn.linear_backward {{.*}} {rn.subgraph = @DEEP_FWD_BWD}
// CHECK:       rn.relu_backward {{.*}}{rn.subgraph = @DEEP_FWD_BWD}
// CHECK-NEXT:  rn.linear_backward %{{.+}}, %[[X]], {{.*}}{rn.subgraph = @FIRST_LAYER_BWD}
// CHECK-NEXT:  rn.sgd_update {{.*}} lr %[[LRD]] {{.*}}{rn.subgraph = @OPTIMIZER}
// CHECK:       func.func @eval_step
// CHECK:       rn.host_to_device {{.*}}{rn.subgraph = @EVAL_TRANSFER}
// CHECK:       rn.linear {{.*}}{rn.subgraph = @EVAL_INFERENCE}

module attributes {rn.model = "tiny"} {
  rn.parameter @fc1.weight : tensor<8x4xf32> = #rn.init<uniform, 5.000000e-01>
  rn.parameter @fc1.bias : tensor<8xf32> = #rn.init<uniform, 5.000000e-01>
  rn.parameter @fc2.weight : tensor<3x8xf32> = #rn.init<uniform, 3.535533845e-01>
  func.func @forward(%images: tensor<2x4xf32>, %labels: tensor<2xi32>) -> tensor<f32> {
    %0 = rn.param @fc1.weight : tensor<8x4xf32>
    %1 = rn.param @fc1.bias : tensor<8xf32>
    %2 = rn.linear %images, %0, %1 : (tensor<2x4xf32>, tensor<8x4xf32>, tensor<8xf32>) -> tensor<2x8xf32>
    %3 = rn.relu %2 : tensor<2x8xf32>
    %4 = rn.param @fc2.weight : tensor<3x8xf32>
    %5 = rn.linear %3, %4 : (tensor<2x8xf32>, tensor<3x8xf32>) -> tensor<2x3xf32>
    %6 = rn.softmax_cross_entropy %5, %labels label_smoothing 0.000000e+00 : (tensor<2x3xf32>, tensor<2xi32>) -> tensor<f32>
    return %6 : tensor<f32>
  }
}

// -----

// Tests every training subgraph under f16 mixed precision with dynamic loss
// scaling and EMA: the image cast belongs to the first layer, whose backward
// then reads the cast copy and needs no B variant; gradient casts, loss
// scaling, the optimizer, BatchNorm statistics, weight casts and EMA each
// form their own subgraph on the update stream, in launch order.

// Data parallelism adds the gradient all-reduce between the gradient casts
// and loss scaling, on the update stream.
// DATAPAR-LABEL: rn.model = "cnn"
// DATAPAR:      rn.subgraph @FIRST_LAYER_BWD in @train_step on #rn.stream<comp1> double_buffered
// DATAPAR-NEXT: rn.subgraph @ALL_REDUCE in @train_step on #rn.stream<update>{{$}}
// DATAPAR-NEXT: rn.subgraph @OPTIMIZER
// DATAPAR:      rn.launch @FIRST_LAYER_BWD variant a
// DATAPAR-NEXT: rn.launch @ALL_REDUCE{{$}}
// DATAPAR:      rn.all_reduce_mean {{.*}}{rn.subgraph = @ALL_REDUCE}

// AMP-LABEL: rn.model = "cnn"
// AMP:      rn.subgraph @TRANSFER in @train_step on #rn.stream<trans> double_buffered
// AMP-NEXT: rn.subgraph @ZERO_GRAD in @train_step on #rn.stream<update>{{$}}
// AMP-NEXT: rn.subgraph @FIRST_LAYER_FWD in @train_step on #rn.stream<comp1> double_buffered
// AMP-NEXT: rn.subgraph @DEEP_FWD_BWD in @train_step on #rn.stream<comp1> double_buffered
// AMP-NEXT: rn.subgraph @FIRST_LAYER_BWD in @train_step on #rn.stream<comp1>{{$}}
// AMP-NEXT: rn.subgraph @CAST_GRAD in @train_step on #rn.stream<update>{{$}}
// AMP-NEXT: rn.subgraph @NAN_CHECK_AND_GRAD_SCALING in @train_step on #rn.stream<update>{{$}}
// AMP-NEXT: rn.subgraph @OPTIMIZER in @train_step on #rn.stream<update> double_buffered
// AMP-NEXT: rn.subgraph @UPDATE_BN_STATS in @train_step on #rn.stream<update>{{$}}
// AMP-NEXT: rn.subgraph @CAST_WEIGHTS in @train_step on #rn.stream<update>{{$}}
// AMP-NEXT: rn.subgraph @EMA_UPDATE in @train_step on #rn.stream<update>{{$}}
// AMP-LABEL: func.func @train_step
// AMP:      %[[X:.+]] = rn.host_to_device
// AMP:      %[[XH:.+]] = rn.cast %[[X]] {rn.subgraph = @FIRST_LAYER_FWD} : tensor<2x4x4x3xf32> -> tensor<2x4x4x3xf16>
// AMP-NEXT: rn.conv2d %[[XH]], {{.*}}{rn.subgraph = @FIRST_LAYER_FWD}
// AMP-NEXT: rn.batch_norm_train {{.*}}{rn.subgraph = @DEEP_FWD_BWD}
// AMP:      rn.conv2d_backward %{{.+}}, %[[XH]], {{.*}}{rn.subgraph = @FIRST_LAYER_BWD}
// AMP-NEXT: rn.cast {{.*}}{rn.subgraph = @CAST_GRAD} : tensor<4x3x3x3xf16> -> tensor<4x3x3x3xf32>
// AMP-NEXT: rn.cast {{.*}}{rn.subgraph = @CAST_GRAD} : tensor<3x4xf16> -> tensor<3x4xf32>
// AMP-NEXT: rn.check_finite {{.*}}{rn.subgraph = @NAN_CHECK_AND_GRAD_SCALING}
// AMP-COUNT-4: rn.unscale {{.*}}{rn.subgraph = @NAN_CHECK_AND_GRAD_SCALING}
// AMP-NEXT: rn.update_loss_scale {{.*}}{rn.subgraph = @NAN_CHECK_AND_GRAD_SCALING}
// AMP-COUNT-4: rn.sgd_update {{.*}}{rn.subgraph = @OPTIMIZER}
// AMP-NEXT: rn.update_running_stats {{.*}}{rn.subgraph = @UPDATE_BN_STATS}
// AMP-NEXT: rn.cast {{.*}}{rn.subgraph = @CAST_WEIGHTS} : tensor<4x3x3x3xf32> -> tensor<4x3x3x3xf16>
// AMP-NEXT: rn.cast {{.*}}{rn.subgraph = @CAST_WEIGHTS} : tensor<3x4xf32> -> tensor<3x4xf16>
// AMP-NEXT: rn.ema_update {{.*}}{rn.subgraph = @EMA_UPDATE}

module attributes {rn.model = "cnn"} {
  rn.parameter @conv.weight : tensor<4x3x3x3xf32> = #rn.init<normal, 1.000000000e-01>
  rn.parameter @bn.weight : tensor<4xf32> = #rn.init<ones>
  rn.parameter @bn.bias : tensor<4xf32> = #rn.init<zeros>
  rn.parameter buffer @bn.running_mean : tensor<4xf32> = #rn.init<zeros>
  rn.parameter buffer @bn.running_var : tensor<4xf32> = #rn.init<ones>
  rn.parameter @fc.weight : tensor<3x4xf32> = #rn.init<uniform, 5.000000000e-01>
  func.func @forward(%images: tensor<2x4x4x3xf32>, %labels: tensor<2xi32>) -> tensor<f32> {
    %w = rn.param @conv.weight : tensor<4x3x3x3xf32>
    %c = rn.conv2d %images, %w stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 : (tensor<2x4x4x3xf32>, tensor<4x3x3x3xf32>) -> tensor<2x4x4x4xf32>
    %g = rn.param @bn.weight : tensor<4xf32>
    %b = rn.param @bn.bias : tensor<4xf32>
    %m = rn.param @bn.running_mean : tensor<4xf32>
    %v = rn.param @bn.running_var : tensor<4xf32>
    %n = rn.batch_norm %c, %g, %b, %m, %v eps 1.000000000e-05 momentum 1.000000000e-01 : (tensor<2x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x4x4x4xf32>
    %r = rn.relu %n : tensor<2x4x4x4xf32>
    %a = rn.global_avg_pool %r : tensor<2x4x4x4xf32> -> tensor<2x1x1x4xf32>
    %f = rn.flatten %a : tensor<2x1x1x4xf32> -> tensor<2x4xf32>
    %fw = rn.param @fc.weight : tensor<3x4xf32>
    %l = rn.linear %f, %fw : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<2x3xf32>
    %loss = rn.softmax_cross_entropy %l, %labels label_smoothing 0.000000000e+00 : (tensor<2x3xf32>, tensor<2xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// Tests that a dropout makes the step a device input under SGD too: TRANSFER
// copies it and dropout_train, in DEEP_FWD_BWD, reads the device copy, so
// the copy orders it like any other read of a per-step input.

// CHECK-LABEL: rn.model = "dropout"
// CHECK:       func.func @train_step({{.*}}, %[[STEP:[a-z0-9]+]]: tensor<i32> {rn.input = "step"}
// CHECK:       %[[STEPD:.+]] = rn.host_to_device %[[STEP]] {rn.subgraph = @TRANSFER} : tensor<i32>
// CHECK:       rn.dropout_train %{{.+}} step %[[STEPD]] p 5.000000e-01 index 0 of 1 {rn.subgraph = @DEEP_FWD_BWD}

module attributes {rn.model = "dropout"} {
  rn.parameter @fc1.weight : tensor<8x4xf32> = #rn.init<uniform, 5.000000e-01>
  rn.parameter @fc2.weight : tensor<3x8xf32> = #rn.init<uniform, 3.535533845e-01>
  func.func @forward(%images: tensor<2x4xf32>, %labels: tensor<2xi32>) -> tensor<f32> {
    %0 = rn.param @fc1.weight : tensor<8x4xf32>
    %1 = rn.linear %images, %0 : (tensor<2x4xf32>, tensor<8x4xf32>) -> tensor<2x8xf32>
    %2 = rn.dropout %1 p 5.000000e-01 : tensor<2x8xf32>
    %3 = rn.param @fc2.weight : tensor<3x8xf32>
    %4 = rn.linear %2, %3 : (tensor<2x8xf32>, tensor<3x8xf32>) -> tensor<2x3xf32>
    %5 = rn.softmax_cross_entropy %4, %labels label_smoothing 0.000000e+00 : (tensor<2x3xf32>, tensor<2xi32>) -> tensor<f32>
    return %5 : tensor<f32>
  }
}

// -----

// Tests a residual around the first layer: the add reads the batch and the
// branch (the first layer's conv, then a relu, DEEP_FWD_BWD work), so it
// runs with the branch in DEEP_FWD_BWD, after the first layer's forward,
// not in FIRST_LAYER_FWD before the relu it reads; the conv's filter
// gradient, which reads the batch in the backward, stays FIRST_LAYER_BWD.

// CHECK-LABEL: rn.model = "stem_residual"
// CHECK:       func.func @train_step
// CHECK:       %[[X:.+]] = rn.host_to_device %{{.+}} {rn.subgraph = @TRANSFER}
// CHECK:       %[[C:.+]] = rn.conv2d %[[X]], {{.+}} {rn.subgraph = @FIRST_LAYER_FWD}
// CHECK:       %[[R:.+]] = rn.relu %[[C]] {rn.subgraph = @DEEP_FWD_BWD}
// CHECK:       rn.add %[[X]], %[[R]] {rn.subgraph = @DEEP_FWD_BWD}
// CHECK:       rn.conv2d_backward {{.+}} {rn.subgraph = @FIRST_LAYER_BWD}

module attributes {rn.model = "stem_residual"} {
  rn.parameter @conv.weight : tensor<3x3x3x3xf32> = #rn.init<uniform, 1.924500897e-01>
  rn.parameter @fc.weight : tensor<10x192xf32> = #rn.init<uniform, 7.216878365e-02>
  func.func @forward(%images: tensor<2x8x8x3xf32>, %labels: tensor<2xi32>) -> tensor<f32> {
    %w = rn.param @conv.weight : tensor<3x3x3x3xf32>
    %c = rn.conv2d %images, %w stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 : (tensor<2x8x8x3xf32>, tensor<3x3x3x3xf32>) -> tensor<2x8x8x3xf32>
    %r = rn.relu %c : tensor<2x8x8x3xf32>
    %s = rn.add %images, %r : tensor<2x8x8x3xf32>
    %f = rn.flatten %s : tensor<2x8x8x3xf32> -> tensor<2x192xf32>
    %fw = rn.param @fc.weight : tensor<10x192xf32>
    %l = rn.linear %f, %fw : (tensor<2x192xf32>, tensor<10x192xf32>) -> tensor<2x10xf32>
    %loss = rn.softmax_cross_entropy %l, %labels label_smoothing 0.000000e+00 : (tensor<2x10xf32>, tensor<2xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}
