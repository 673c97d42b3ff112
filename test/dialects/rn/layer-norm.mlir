// RUN: rn-opt %s --split-input-file | rn-opt --split-input-file | FileCheck %s
// RUN: rn-opt %s --split-input-file --mlir-print-op-generic | rn-opt --split-input-file | FileCheck %s

// Tests that ConvNeXt's ops round-trip: layer_norm over the channels (NHWC
// and [N, C], f32 parameters of f16 activations), channel_scale, and their
// backward ops.

// CHECK-LABEL: func.func @convnext_ops
func.func @convnext_ops(%x: tensor<2x4x4x8xf32>, %v: tensor<8xf32>, %h: tensor<2x4x4x8xf16>,
                        %f: tensor<2x8xf32>) {
  // CHECK: rn.layer_norm %{{.+}}, %{{.+}}, %{{.+}} eps 9.9999999999999995E-7 : (tensor<2x4x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x4x4x8xf32>
  %0 = rn.layer_norm %x, %v, %v eps 1.0e-06 : (tensor<2x4x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x4x4x8xf32>
  // CHECK: rn.layer_norm %{{.+}}, %{{.+}}, %{{.+}} eps 1.000000e-05 : (tensor<2x4x4x8xf16>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x4x4x8xf16>
  %1 = rn.layer_norm %h, %v, %v eps 1.000000e-05 : (tensor<2x4x4x8xf16>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x4x4x8xf16>
  // CHECK: rn.layer_norm %{{.+}}, %{{.+}}, %{{.+}} eps 1.000000e-05 : (tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  %2 = rn.layer_norm %f, %v, %v eps 1.000000e-05 : (tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  // CHECK: %{{.+}}, %{{.+}}, %{{.+}} = rn.layer_norm_backward %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} eps 1.000000e-05 : (tensor<2x4x4x8xf16>, tensor<2x4x4x8xf16>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x4x4x8xf16>, tensor<8xf32>, tensor<8xf32>)
  %3:3 = rn.layer_norm_backward %h, %h, %v, %v, %v eps 1.000000e-05 : (tensor<2x4x4x8xf16>, tensor<2x4x4x8xf16>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x4x4x8xf16>, tensor<8xf32>, tensor<8xf32>)
  // CHECK: rn.channel_scale %{{.+}}, %{{.+}} : tensor<2x4x4x8xf32>, tensor<8xf32>
  %4 = rn.channel_scale %x, %v : tensor<2x4x4x8xf32>, tensor<8xf32>
  // CHECK: %{{.+}}, %{{.+}} = rn.channel_scale_backward %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} : tensor<2x4x4x8xf32>, tensor<8xf32>
  %5:2 = rn.channel_scale_backward %x, %x, %v, %v : tensor<2x4x4x8xf32>, tensor<8xf32>
  return
}
