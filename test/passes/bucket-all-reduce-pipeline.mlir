// RUN: rn-opt %s --rn-training-pipeline="precision=f16 loss-scaling=dynamic data-parallel=true all-reduce-bucket-bytes=64" | FileCheck %s
// RUN: rn-opt %s --rn-training-pipeline="precision=f16 loss-scaling=dynamic data-parallel=true all-reduce-bucket-bytes=0" | FileCheck %s --check-prefix=OFF
// RUN: rn-opt %s --rn-training-pipeline="precision=f16 loss-scaling=dynamic data-parallel=true all-reduce-bucket-bytes=64" | FileCheck %s --check-prefix=SLOTS

// Tests rn-bucket-all-reduce inside rn-training-pipeline (data-parallel,
// f16 with dynamic loss scaling, 64-byte buckets): each bucket's casts
// become one rn.multi_cast (rn-group-elementwise keeps buckets apart) and
// every bucket op runs on the update stream inside DEEP_FWD_BWD, with
// memory planned; the schedule verifies (rn-verify-schedule ends the
// pipeline). With all-reduce-bucket-bytes=0 one all-reduce stays in
// ALL_REDUCE.

// CHECK-LABEL: func.func @train_step
// CHECK:     rn.multi_cast {{.+}}rn.bucket = 0 : i64, rn.slots = {{.+}}, rn.stream = #rn.stream<update>, rn.subgraph = @DEEP_FWD_BWD}
// CHECK:     rn.all_reduce_mean {{.+}}rn.bucket = 0 : i64, rn.slots = {{.+}}, rn.stream = #rn.stream<update>, rn.subgraph = @DEEP_FWD_BWD}
// CHECK:     rn.all_reduce_mean {{.+}}rn.bucket = 1 : i64, rn.slots = {{.+}}, rn.stream = #rn.stream<update>, rn.subgraph = @DEEP_FWD_BWD}
// CHECK:     rn.all_reduce_mean {{.+}}rn.stream = #rn.stream<update>, rn.subgraph = @ALL_REDUCE}
// CHECK:     func.func @eval_step

// Tests that rn-plan-memory lays each bucket's gradients out back to back
// in the gradient region, bucket after bucket in the backward's order
// (every slot padded to the 256-byte alignment), so that a bucket is one
// range of the arena: one collective at run time.
// SLOTS-LABEL: func.func @train_step
// SLOTS:     rn.all_reduce_mean {{.+}}rn.slots = [#rn.slot<gradients, [[#B0:]], 48>
// SLOTS-SAME:  #rn.slot<gradients, [[#B0+256]], 12>, #rn.slot<gradients, [[#B0+512]], 576>]
// SLOTS:     rn.all_reduce_mean {{.+}}rn.slots = [#rn.slot<gradients, [[#B0+1280]], 16>, #rn.slot<gradients, [[#B0+1536]], 16>]
// SLOTS:     rn.all_reduce_mean {{.+}}rn.slots = [#rn.slot<gradients, [[#B0+1792]], 144>, #rn.slot<gradients, [[#B0+2048]], 16>, #rn.slot<gradients, [[#B0+2304]], 16>]

// OFF-LABEL: func.func @train_step
// OFF-NOT:   rn.bucket
// OFF:       rn.all_reduce_mean {{.+}}rn.subgraph = @ALL_REDUCE}
// OFF-NOT:   rn.bucket

module attributes {rn.model = "cbr_tiny"} {
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
  func.func @forward(%images: tensor<4x6x6x1xf32>, %labels: tensor<4xi32>) -> tensor<f32> {
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
