// RUN: rn-opt %s --rn-build-training --rn-partition --rn-assign-streams | FileCheck %s
// RUN: rn-opt %s --rn-build-training --rn-partition --rn-assign-streams=single-stream | FileCheck %s --check-prefix=SINGLE
// RUN: rn-opt %s --rn-build-training --rn-partition --rn-assign-streams="policy=relu=comp2,weight_grad=comp3" | FileCheck %s --check-prefix=POLICY

// Tests the default policy (docs/design.md) on a small CNN: transfers on trans, GEMM work
// and the loss on comp1, BatchNorm and pooling on comp2, elementwise work on
// comp3, training logistics on update; conv/linear backward fork dW to
// comp1, dB to comp2 and dX to comp3, and the first layer (no dX) is
// represented by its dW part.

// CHECK-LABEL: func.func @train_step
// CHECK:     rn.host_to_device {{.*}}rn.stream = #rn.stream<trans>
// CHECK:     rn.zero {{.*}}rn.stream = #rn.stream<update>
// CHECK:     rn.conv2d {{.*}}rn.stream = #rn.stream<comp1>
// CHECK:     rn.batch_norm_train {{.*}}rn.stream = #rn.stream<comp2>
// CHECK:     rn.relu {{.*}}rn.stream = #rn.stream<comp3>
// CHECK:     rn.global_avg_pool {{.*}}rn.stream = #rn.stream<comp2>
// CHECK:     rn.flatten {{.*}}rn.stream = #rn.stream<comp3>
// CHECK:     rn.linear {{.*}}rn.stream = #rn.stream<comp1>
// CHECK:     rn.softmax_cross_entropy {{.*}}rn.stream = #rn.stream<comp1>
// CHECK:     rn.softmax_cross_entropy_backward {{.*}}rn.stream = #rn.stream<comp1>
// CHECK:     rn.linear_backward {{.*}} {rn.stream = #rn.stream<comp3>, rn.stream_map = {input_grad = #rn.stream<comp3>, weight_grad = #rn.stream<comp1>}
// CHECK:     rn.reshape {{.*}}rn.stream = #rn.stream<comp3>
// CHECK:     rn.global_avg_pool_backward {{.*}}rn.stream = #rn.stream<comp2>
// CHECK:     rn.relu_backward {{.*}}rn.stream = #rn.stream<comp3>
// CHECK:     rn.batch_norm_backward {{.*}}rn.stream = #rn.stream<comp2>
// CHECK:     rn.conv2d_backward {{.*}} {rn.stream = #rn.stream<comp1>, rn.stream_map = {weight_grad = #rn.stream<comp1>}
// CHECK:     rn.sgd_update {{.*}}rn.stream = #rn.stream<update>
// CHECK:     rn.update_running_stats {{.*}}rn.stream = #rn.stream<update>
// CHECK-LABEL: func.func @eval_step
// CHECK:     rn.batch_norm_inference {{.*}}rn.stream = #rn.stream<comp2>
// CHECK:     rn.count_correct {{.*}}rn.stream = #rn.stream<comp2>

// The baseline puts every op and every subgraph on comp1.
// SINGLE:     rn.subgraph @TRANSFER in @train_step on #rn.stream<comp1>
// SINGLE:     rn.subgraph @OPTIMIZER in @train_step on #rn.stream<comp1>
// SINGLE-NOT: #rn.stream<comp2>
// SINGLE-NOT: #rn.stream<comp3>
// SINGLE-NOT: #rn.stream<update>
// SINGLE-NOT: #rn.stream<trans>

// Overrides replace entries of the table.
// POLICY:     rn.relu {{.*}}rn.stream = #rn.stream<comp2>
// POLICY:     rn.linear_backward {{.*}}weight_grad = #rn.stream<comp3>

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
