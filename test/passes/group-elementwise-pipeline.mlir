// RUN: rn-opt %s --rn-training-pipeline="precision=f16 loss-scaling=dynamic" | FileCheck %s
// RUN: rn-opt %s --rn-training-pipeline="precision=f16 loss-scaling=dynamic group-elementwise=false" | FileCheck %s --check-prefix=OFF

// Tests rn-group-elementwise inside rn-training-pipeline on an f16 MLP
// with dynamic loss scaling: the four gradient accumulators are zeroed by
// one rn.multi_zero, cast to their f32 masters by one rn.multi_cast and
// unscaled by one rn.multi_unscale (each result in its operand's slot, in
// place), the weights cast to their f16 copies by one rn.multi_cast, all
// on the update stream; the images' cast stays. The schedule verifies
// (rn-verify-schedule ends the pipeline). On by default; with
// group-elementwise=false, one op per tensor.

// CHECK-LABEL: func.func @train_step
// CHECK:     rn.multi_zero %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} {rn.slots = [#rn.slot<gradients, 0, 128>, #rn.slot<gradients, 512, 32>, #rn.slot<gradients, 1024, 96>, #rn.slot<gradients, 1536, 6>], rn.stream = #rn.stream<update>, rn.subgraph = @ZERO_GRAD} : (tensor<16x4xf16>, tensor<16xf16>, tensor<3x16xf16>, tensor<3xf16>)
// CHECK-NOT: rn.zero
// CHECK:     rn.cast %{{.+}} {{.+}}rn.subgraph = @FIRST_LAYER_FWD} : tensor<8x4xf32> -> tensor<8x4xf16>
// CHECK:     rn.multi_cast %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} {rn.slots = [#rn.slot<gradients, 256, 256>, #rn.slot<gradients, 768, 64>, #rn.slot<gradients, 1280, 192>, #rn.slot<gradients, 1792, 12>], rn.stream = #rn.stream<update>, rn.subgraph = @CAST_GRAD} : (tensor<16x4xf16>, tensor<16xf16>, tensor<3x16xf16>, tensor<3xf16>) -> (tensor<16x4xf32>, tensor<16xf32>, tensor<3x16xf32>, tensor<3xf32>)
// CHECK:     rn.multi_unscale grads(%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}) scale %{{.+}} {rn.slots = [#rn.slot<gradients, 256, 256>, #rn.slot<gradients, 768, 64>, #rn.slot<gradients, 1280, 192>, #rn.slot<gradients, 1792, 12>], rn.stream = #rn.stream<update>, rn.subgraph = @NAN_CHECK_AND_GRAD_SCALING}
// CHECK-NOT: rn.unscale
// CHECK:     rn.multi_cast {{.+}}rn.stream = #rn.stream<update>, rn.subgraph = @CAST_WEIGHTS} : (tensor<16x4xf32>, tensor<16xf32>, tensor<3x16xf32>, tensor<3xf32>) -> (tensor<16x4xf16>, tensor<16xf16>, tensor<3x16xf16>, tensor<3xf16>)
// CHECK-NOT: rn.cast
// CHECK:     func.func @eval_step

// OFF-LABEL: func.func @train_step
// OFF-COUNT-4: rn.zero
// OFF-COUNT-4: rn.unscale
// OFF-NOT:     rn.multi_zero

module attributes {rn.model = "tiny_mlp"} {
  rn.parameter @fc1.weight : tensor<16x4xf32> = #rn.init<uniform, 5.000000e-01>
  rn.parameter @fc1.bias : tensor<16xf32> = #rn.init<uniform, 5.000000e-01>
  rn.parameter @fc2.weight : tensor<3x16xf32> = #rn.init<uniform, 2.500000e-01>
  rn.parameter @fc2.bias : tensor<3xf32> = #rn.init<uniform, 2.500000e-01>
  func.func @forward(%images: tensor<8x4xf32>, %labels: tensor<8xi32>) -> tensor<f32> {
    %0 = rn.param @fc1.weight : tensor<16x4xf32>
    %1 = rn.param @fc1.bias : tensor<16xf32>
    %2 = rn.linear %images, %0, %1 : (tensor<8x4xf32>, tensor<16x4xf32>, tensor<16xf32>) -> tensor<8x16xf32>
    %3 = rn.relu %2 : tensor<8x16xf32>
    %4 = rn.param @fc2.weight : tensor<3x16xf32>
    %5 = rn.param @fc2.bias : tensor<3xf32>
    %6 = rn.linear %3, %4, %5 : (tensor<8x16xf32>, tensor<3x16xf32>, tensor<3xf32>) -> tensor<8x3xf32>
    %7 = rn.softmax_cross_entropy %6, %labels label_smoothing 0.000000e+00 : (tensor<8x3xf32>, tensor<8xi32>) -> tensor<f32>
    return %7 : tensor<f32>
  }
}
