// RUN: rn-opt %s --rn-training-pipeline="momentum=0.9 nesterov=true weight-decay=5e-4" | FileCheck %s
// RUN: rn-opt %s --rn-training-pipeline="momentum=0.9 nesterov=true weight-decay=5e-4 group-updates=false" | FileCheck %s --check-prefix=OFF
// RUN: rn-opt %s --rn-training-pipeline="precision=f16 loss-scaling=dynamic" | FileCheck %s --check-prefix=AMP
// RUN: rn-opt %s --rn-training-pipeline="optimizer=adamw weight-decay=1e-2" | FileCheck %s --check-prefix=ADAMW
// RUN: rn-opt %s --rn-training-pipeline="optimizer=lars weight-decay=1e-4" | FileCheck %s --check-prefix=LARS
// RUN: rn-opt %s --rn-build-training="optimizer=lars" --rn-partition --rn-group-updates=report -o /dev/null 2>&1 | FileCheck %s --check-prefix=LARS-REPORT

// Tests rn-group-updates inside rn-training-pipeline on an MLP with the
// benchmark's optimizer (and AdamW, below): the first layer's weight and bias (read by the
// next step's FIRST_LAYER_FWD) form the first group and the second
// layer's (read by DEEP_FWD_BWD) the second; each result takes its
// operand's slot (in place), the op runs on the update stream, and the
// next step's first layer waits for the event after the first group only
// (distance 1), not for the second: the overlap of the per-parameter
// schedule is kept. The schedule verifies (rn-verify-schedule ends the
// pipeline).

// CHECK-LABEL: func.func @train_step
// CHECK-SAME:  %[[W1:[a-z0-9]+]]: tensor<8x4xf32> {rn.slot = #rn.slot<weights, 0, 128>, rn.state = @fc1.weight}, %[[B1:[a-z0-9]+]]: tensor<8xf32> {rn.slot = #rn.slot<weights, 256, 32>, rn.state = @fc1.bias}, %[[W2:[a-z0-9]+]]: tensor<3x8xf32> {{.*}}rn.state = @fc2.weight}, %[[B2:[a-z0-9]+]]: tensor<3xf32> {{.*}}rn.state = @fc2.bias}
// CHECK:      rn.event_wait external [[FIRST:[0-9]+]] on #rn.stream<comp1> distance 1 {rn.subgraph = @FIRST_LAYER_FWD}
// CHECK-NEXT: rn.linear %{{.+}}, %[[W1]], %[[B1]] {{.*}}rn.subgraph = @FIRST_LAYER_FWD
// CHECK:      rn.multi_sgd_update params(%[[W1]], %[[B1]]) {{.*}} momentum 9.000000e-01 weight_decay 5.000000e-04 nesterov {rn.slots = [#rn.slot<weights, 0, 128>, #rn.slot<weights, 256, 32>, #rn.slot<optimizer_state, 0, 128>, #rn.slot<optimizer_state, 256, 32>], rn.stream = #rn.stream<update>, rn.subgraph = @OPTIMIZER}
// CHECK-NEXT: rn.event_record external [[FIRST]] on #rn.stream<update> {rn.subgraph = @OPTIMIZER}
// CHECK-NEXT: rn.multi_sgd_update params(%[[W2]], %[[B2]]) {{.*}}rn.subgraph = @OPTIMIZER}
// CHECK-NEXT: rn.event_record external {{[0-9]+}} on #rn.stream<update> {rn.subgraph = @OPTIMIZER}
// CHECK-NOT:  rn.sgd_update
// CHECK:      func.func @eval_step

// group-updates=false keeps one update per parameter.
// OFF-LABEL: func.func @train_step
// OFF-COUNT-4: rn.sgd_update
// OFF-NOT:     rn.multi_sgd_update

// Mixed precision with dynamic loss scaling: both groups skip on the same
// non-finite flag.
// AMP-LABEL: func.func @train_step
// AMP:       %[[FOUND:.+]] = rn.check_finite
// AMP:       rn.multi_sgd_update params({{.*}}) lr %{{.+}} skip_if %[[FOUND]] momentum 9.000000e-01
// AMP-NEXT:  rn.event_record
// AMP-NEXT:  rn.multi_sgd_update params({{.*}}) lr %{{.+}} skip_if %[[FOUND]] momentum 9.000000e-01
// AMP-NOT:   rn.sgd_update

// AdamW is grouped the same way, with the step shared too.
// ADAMW-LABEL: func.func @train_step
// ADAMW-SAME:  %[[STEPARG:[a-z0-9]+]]: tensor<i32> {rn.input = "step"}
// ADAMW:       %[[STEP:.+]] = rn.host_to_device %[[STEPARG]]
// ADAMW:       rn.event_wait external [[FIRST:[0-9]+]] on #rn.stream<comp1> distance 1 {rn.subgraph = @FIRST_LAYER_FWD}
// ADAMW:       rn.multi_adamw_update params(%{{.+}}, %{{.+}}) {{.*}} step %[[STEP]] betas({{.*}}) eps 1.000000e-08 weight_decay 1.000000e-02 {{.*}}rn.subgraph = @OPTIMIZER}
// ADAMW-NEXT:  rn.event_record external [[FIRST]] on #rn.stream<update> {rn.subgraph = @OPTIMIZER}
// ADAMW-NEXT:  rn.multi_adamw_update params(%{{.+}}, %{{.+}})
// ADAMW-NOT:   rn.adamw_update

// LARS is grouped the same way (each tensor keeps its own norms and trust
// ratio): in place, on the update stream, the first layer's group
// recording the event the next step's FIRST_LAYER_FWD waits for.
// LARS-LABEL: func.func @train_step
// LARS-SAME:  %[[W1:[a-z0-9]+]]: tensor<8x4xf32> {rn.slot = #rn.slot<weights, 0, 128>, rn.state = @fc1.weight}, %[[B1:[a-z0-9]+]]: tensor<8xf32> {rn.slot = #rn.slot<weights, 256, 32>, rn.state = @fc1.bias}, %[[W2:[a-z0-9]+]]: tensor<3x8xf32> {{.*}}rn.state = @fc2.weight}, %[[B2:[a-z0-9]+]]: tensor<3xf32> {{.*}}rn.state = @fc2.bias}
// LARS:       rn.event_wait external [[FIRST:[0-9]+]] on #rn.stream<comp1> distance 1 {rn.subgraph = @FIRST_LAYER_FWD}
// LARS:       rn.multi_lars_update params(%[[W1]], %[[B1]]) {{.*}} momentum 9.000000e-01 weight_decay 1.000000e-04 trust 1.000000e-03 eps 1.000000e-09 {rn.slots = [#rn.slot<weights, 0, 128>, #rn.slot<weights, 256, 32>, #rn.slot<optimizer_state, 0, 128>, #rn.slot<optimizer_state, 256, 32>], rn.stream = #rn.stream<update>, rn.subgraph = @OPTIMIZER}
// LARS-NEXT:  rn.event_record external [[FIRST]] on #rn.stream<update> {rn.subgraph = @OPTIMIZER}
// LARS-NEXT:  rn.multi_lars_update params(%[[W2]], %[[B2]])
// LARS-NOT:   rn.lars_update
// LARS-REPORT: remark: rn-group-updates: 4 per-parameter updates in 2 multi-tensor updates (2 for FIRST_LAYER_FWD, 2 for DEEP_FWD_BWD), 0 left per parameter

module attributes {rn.model = "tiny_mlp"} {
  rn.parameter @fc1.weight : tensor<8x4xf32> = #rn.init<uniform, 5.000000e-01>
  rn.parameter @fc1.bias : tensor<8xf32> = #rn.init<uniform, 5.000000e-01>
  rn.parameter @fc2.weight : tensor<3x8xf32> = #rn.init<uniform, 3.535533845e-01>
  rn.parameter @fc2.bias : tensor<3xf32> = #rn.init<uniform, 3.535533845e-01>
  func.func @forward(%images: tensor<2x4xf32>, %labels: tensor<2xi32>) -> tensor<f32> {
    %0 = rn.param @fc1.weight : tensor<8x4xf32>
    %1 = rn.param @fc1.bias : tensor<8xf32>
    %2 = rn.linear %images, %0, %1 : (tensor<2x4xf32>, tensor<8x4xf32>, tensor<8xf32>) -> tensor<2x8xf32>
    %3 = rn.relu %2 : tensor<2x8xf32>
    %4 = rn.param @fc2.weight : tensor<3x8xf32>
    %5 = rn.param @fc2.bias : tensor<3xf32>
    %6 = rn.linear %3, %4, %5 : (tensor<2x8xf32>, tensor<3x8xf32>, tensor<3xf32>) -> tensor<2x3xf32>
    %7 = rn.softmax_cross_entropy %6, %labels label_smoothing 0.000000e+00 : (tensor<2x3xf32>, tensor<2xi32>) -> tensor<f32>
    return %7 : tensor<f32>
  }
}
