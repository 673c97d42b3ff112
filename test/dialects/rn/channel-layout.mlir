// RUN: rn-opt %s --split-input-file | rn-opt --split-input-file | FileCheck %s
// RUN: rn-opt %s --split-input-file --mlir-print-op-generic | rn-opt --split-input-file | FileCheck %s

// Tests that the channel layout ops round-trip: concat of NHWC and [N, C]
// tensors, split into slices, and the channel shuffle.

// CHECK-LABEL: func.func @channel_layout_ops
func.func @channel_layout_ops(%a: tensor<2x4x4x3xf16>, %b: tensor<2x4x4x5xf16>,
                              %c: tensor<2x4xf32>, %d: tensor<2x2xf32>) {
  // CHECK: %[[J:.+]] = rn.concat %{{.+}}, %{{.+}} : (tensor<2x4x4x3xf16>, tensor<2x4x4x5xf16>) -> tensor<2x4x4x8xf16>
  %0 = rn.concat %a, %b : (tensor<2x4x4x3xf16>, tensor<2x4x4x5xf16>) -> tensor<2x4x4x8xf16>
  // CHECK: rn.concat %{{.+}}, %{{.+}}, %{{.+}} : (tensor<2x4xf32>, tensor<2x2xf32>, tensor<2x4xf32>) -> tensor<2x10xf32>
  %1 = rn.concat %c, %d, %c : (tensor<2x4xf32>, tensor<2x2xf32>, tensor<2x4xf32>) -> tensor<2x10xf32>
  // CHECK: %{{.+}}:2 = rn.split %[[J]] : tensor<2x4x4x8xf16> -> tensor<2x4x4x4xf16>, tensor<2x4x4x4xf16>
  %2:2 = rn.split %0 : tensor<2x4x4x8xf16> -> tensor<2x4x4x4xf16>, tensor<2x4x4x4xf16>
  // CHECK: rn.channel_shuffle %[[J]] groups 2 : tensor<2x4x4x8xf16>
  %3 = rn.channel_shuffle %0 groups 2 : tensor<2x4x4x8xf16>
  return
}
