// RUN: rn-opt %s --split-input-file --rn-build-training="precision=f16 loss-scaling=dynamic data-parallel=true" --rn-fuse-cbr --rn-partition --rn-bucket-all-reduce="bucket-bytes=64" | FileCheck %s
// RUN: rn-opt %s --split-input-file --rn-build-training="precision=f16 loss-scaling=dynamic data-parallel=true" --rn-fuse-cbr --rn-partition --rn-bucket-all-reduce | FileCheck %s --check-prefix=ONE
// RUN: rn-opt %s --split-input-file --rn-build-training="data-parallel=true" --rn-fuse-cbr --rn-partition --rn-bucket-all-reduce="bucket-bytes=1" | FileCheck %s --check-prefix=F32

// Tests that with 64-byte buckets the gradients of a two-CBR f16 network
// are reduced in the backward in the order it finishes them: the linear
// layer's weight and bias (60 bytes) with the second convolution's weight,
// which the CBR backward finishes next (bucket 0, their f32 casts moved
// out of CAST_GRAD in front of it), then that CBR's BN gradients (bucket
// 1, already f32, after bucket 0); the first layer's gradients, finished
// in FIRST_LAYER_BWD, stay in ALL_REDUCE with their cast in CAST_GRAD.
// With the default 25 MiB (prefix ONE) one bucket holds every DEEP_FWD_BWD
// gradient; in f32 (prefix F32, no casts) one-byte buckets put each
// gradient in its own bucket.

// CHECK-LABEL: func.func @train_step
// CHECK:       %[[FC_0:.+]], %[[FC_1:.+]], %[[FC_2:.+]] = rn.linear_backward {{.+}}rn.subgraph = @DEEP_FWD_BWD
// CHECK:       %{{.+}}, %[[G2_0:.+]], %[[G2_1:.+]], %[[G2_2:.+]], %[[G2_3:.+]] = rn.cbr_backward {{.+}}rn.subgraph = @DEEP_FWD_BWD
// CHECK-NEXT:  %[[W:.+]] = rn.cast %[[FC_1]] {rn.bucket = 0 : i64, rn.subgraph = @DEEP_FWD_BWD} : tensor<3x4xf16> -> tensor<3x4xf32>
// CHECK-NEXT:  %[[B:.+]] = rn.cast %[[FC_2]] {rn.bucket = 0 : i64, rn.subgraph = @DEEP_FWD_BWD} : tensor<3xf16> -> tensor<3xf32>
// CHECK-NEXT:  %[[C2:.+]] = rn.cast %[[G2_1]] {rn.bucket = 0 : i64, rn.subgraph = @DEEP_FWD_BWD} : tensor<4x3x3x4xf16> -> tensor<4x3x3x4xf32>
// CHECK-NEXT:  %[[R0:.+]]:3 = rn.all_reduce_mean %[[W]], %[[B]], %[[C2]] {rn.bucket = 0 : i64, rn.subgraph = @DEEP_FWD_BWD}
// CHECK-NEXT:  %[[R1:.+]]:2 = rn.all_reduce_mean %[[G2_2]], %[[G2_3]] {rn.bucket = 1 : i64, rn.subgraph = @DEEP_FWD_BWD}
// CHECK-NEXT:  %{{.+}}, %[[G1_0:.+]], %[[G1_1:.+]], %[[G1_2:.+]] = rn.cbr_backward {{.+}}rn.subgraph = @FIRST_LAYER_BWD
// CHECK-NEXT:  %[[C1:.+]] = rn.cast %[[G1_0]] {rn.subgraph = @CAST_GRAD}
// CHECK-NEXT:  %[[R:.+]]:3 = rn.all_reduce_mean %[[C1]], %[[G1_1]], %[[G1_2]] {rn.subgraph = @ALL_REDUCE}
// CHECK-NEXT:  rn.check_finite %[[R]]#0, %[[R]]#1, %[[R]]#2, %[[R0]]#2, %[[R1]]#0, %[[R1]]#1, %[[R0]]#0, %[[R0]]#1

// ONE-LABEL: func.func @train_step
// ONE:       rn.all_reduce_mean %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} {rn.bucket = 0 : i64, rn.subgraph = @DEEP_FWD_BWD}
// ONE-NOT:   rn.bucket = 1
// ONE:       rn.all_reduce_mean %{{.+}}, %{{.+}}, %{{.+}} {rn.subgraph = @ALL_REDUCE}

// F32-LABEL: func.func @train_step
// F32:       %[[FC_0:.+]], %[[FC_1:.+]], %[[FC_2:.+]] = rn.linear_backward {{.+}}rn.subgraph = @DEEP_FWD_BWD
// F32-NEXT:  rn.all_reduce_mean %[[FC_1]] {rn.bucket = 0 : i64, rn.subgraph = @DEEP_FWD_BWD} : (tensor<3x4xf32>) -> tensor<3x4xf32>
// F32-NEXT:  rn.all_reduce_mean %[[FC_2]] {rn.bucket = 1 : i64, rn.subgraph = @DEEP_FWD_BWD} : (tensor<3xf32>) -> tensor<3xf32>
// F32:       rn.all_reduce_mean %{{.+}} {rn.bucket = 4 : i64, rn.subgraph = @DEEP_FWD_BWD}
// F32-NOT:   rn.bucket = 5
// F32:       rn.all_reduce_mean {{.+}}rn.subgraph = @ALL_REDUCE

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
