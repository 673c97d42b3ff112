// RUN: rn-compile %s -o %t.rnx --quiet --pipeline "momentum=0.9 weight-decay=5e-4"
// RUN: %python %S/Inputs/dump-artifact.py %t.rnx | FileCheck %s
// RUN: rn-compile %s -o %t.f16.rnx --quiet --pipeline "precision=f16 loss-scaling=dynamic"
// RUN: %python %S/Inputs/dump-artifact.py %t.f16.rnx | FileCheck %s --check-prefix=F16
// RUN: rn-compile %s -o %t.seed1.rnx --quiet --seed 1
// RUN: rn-compile %s -o %t.seed1b.rnx --quiet --seed 1
// RUN: cmp %t.seed1.rnx %t.seed1b.rnx
// RUN: not cmp -s %t.rnx %t.seed1.rnx

// Tests the artifact of a small MLP: a safetensors file holding the sampled
// parameters and, in its metadata, the program: memory plan, state with
// slots, tensors, subgraphs with their nodes and events, step schedules.
// The same seed gives the same file; another seed other parameters.

// CHECK: format rn-program version 2
// CHECK: tensor fc1.bias F32 [8] 32
// CHECK: tensor fc1.weight F32 [8, 4] 128
// CHECK: tensor fc2.weight F32 [3, 8] 96
// CHECK: program rn-program 2 tiny
// CHECK: training {{.*}}"optimizer": "sgd", "precision": "f32", "weight_decay": 0.0005}
// CHECK: region weights 0 768
// CHECK: region inputs_a
// CHECK: region inputs_b
// CHECK: state fc1.weight parameter f32 [8, 4] weights uniform
// CHECK: state grad.fc1.weight gradient f32 [8, 4] gradients zeros
// CHECK: state momentum.fc1.weight momentum f32 [8, 4] optimizer_state zeros
// CHECK: function train_step tensors
// CHECK-NEXT:   input images f32 [2, 4] host
// CHECK-NEXT:   input labels i32 [2] host
// CHECK-NEXT:   input lr f32 [] host
// CHECK-NEXT:   input step i32 [] host
// CHECK-NEXT:   output loss f32 [] scalars
// CHECK-NEXT:   subgraph TRANSFER trans double_buffered
// CHECK:          op host_to_device trans input=0 -> result={{[0-9]+}} {}
// CHECK:        subgraph FIRST_LAYER_FWD comp1 double_buffered
// CHECK:          op linear comp1
// CHECK:        subgraph DEEP_FWD_BWD comp1 double_buffered
// CHECK:          event_record {{[0-9]+}} fork comp1
// CHECK:          op linear_backward comp3 input={{[0-9]+}} output_grad={{[0-9]+}} weight={{[0-9]+}} weight_grad_acc={{[0-9]+}} -> input_grad={{[0-9]+}} weight_grad={{[0-9]+}} {} weight_grad@comp1 input_grad@comp3
// CHECK:        subgraph OPTIMIZER update double_buffered
// CHECK:          op sgd_update update {{.*}}"momentum": 0.9{{.*}}"weight_decay": 0.0005
// CHECK: function eval_step
// CHECK:   output correct i32 [] scalars
// CHECK:   output logits f32 [2, 3] activations
// CHECK: schedule train_even train_step wait:TRANSFER(a) TRANSFER(b) ZERO_GRAD FIRST_LAYER_FWD(a) DEEP_FWD_BWD(a) FIRST_LAYER_BWD(a) OPTIMIZER(a)
// CHECK: schedule eval_even eval_step wait:EVAL_TRANSFER(a) EVAL_TRANSFER(b) EVAL_INFERENCE(a) wait:EVAL_INFERENCE(a)
// CHECK: events {{[1-9][0-9]*}}

// Mixed precision adds low-precision copies and master gradients.
// F16: training {{.*}}"loss_scaling": "dynamic"{{.*}}"precision": "f16"
// F16: state grad_f32.fc1.weight master_gradient f32 [8, 4] gradients zeros
// F16: state f16.fc1.weight low_precision_weight f16 [8, 4] weights_low_precision derived
// F16: state loss_scale loss_scale f32 [] scalars constant
// F16: subgraph CAST_GRAD update single
// F16: op multi_cast update

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
