// RUN: rn-opt %s --rn-build-training --rn-partition --rn-assign-streams --rn-insert-barriers=report --rn-verify-schedule 2>&1 | FileCheck %s
// RUN: rn-opt %s --rn-build-training --rn-partition --rn-assign-streams=single-stream --rn-insert-barriers=report --rn-verify-schedule 2>&1 | FileCheck %s --check-prefix=SINGLE
// RUN: rn-opt %s --rn-build-training --rn-partition --rn-plan-memory --rn-assign-streams="policy=zero=comp3" --rn-insert-barriers=report --rn-verify-schedule 2>&1 | FileCheck %s --check-prefix=WORKSPACE
// RUN: rn-opt %s --rn-build-training --rn-partition --rn-plan-memory=workspace-mib=0 --rn-assign-streams="policy=zero=comp3" --rn-insert-barriers=report --rn-verify-schedule 2>&1 | FileCheck %s --check-prefix=NOWORKSPACE
// RUN: rn-opt %s --rn-build-training --rn-partition --rn-plan-memory --rn-assign-streams=single-stream --rn-insert-barriers=report --rn-verify-schedule 2>&1 | FileCheck %s --check-prefix=SINGLE

// Tests precise barriers on an MLP step (no memory plan: every value is its
// own memory): a wait only where a consumer's stream differs from its
// producer's and nothing orders them yet, fork/join events around
// multi-stream subgraphs, waits across subgraphs on the state carried from
// step to step, and nothing redundant (rn-verify-schedule proves the result
// and would report redundant waits as remarks).

// CHECK: remark: @train_step: 16 cross-stream waits ({{[0-9]+}} without transitive elision, {{[0-9]+}} with a barrier per op), 4 fork/join events; 0 of the waits order stream workspaces
// CHECK: remark: @eval_step: {{[0-9]+}} cross-stream waits
// CHECK-NOT: remark: redundant
// CHECK-LABEL: func.func @train_step
// TRANSFER rewrites the device inputs the previous step's first layer and
// optimizer read (write after read across steps).
// CHECK:      %[[X:.+]] = rn.host_to_device %{{.+}} {rn.stream = #rn.stream<trans>, rn.subgraph = @TRANSFER}
// CHECK-NEXT: rn.event_record external [[XREADY:[0-9]+]] on #rn.stream<trans> {rn.subgraph = @TRANSFER}
// The first layer waits for the batch and for last step's weight updates.
// CHECK:      rn.event_wait external [[XREADY]] on #rn.stream<comp1> {rn.subgraph = @FIRST_LAYER_FWD}
// CHECK:      %[[H:.+]] = rn.linear %[[X]]
// DEEP_FWD_BWD forks comp3 from comp1 for the ReLU, whose result the next
// linear layer (comp1) waits for.
// CHECK:      rn.event_record fork [[FORK:[0-9]+]] on #rn.stream<comp1> {rn.subgraph = @DEEP_FWD_BWD}
// CHECK-NEXT: rn.event_wait fork [[FORK]] on #rn.stream<comp3> {rn.subgraph = @DEEP_FWD_BWD}
// CHECK-NEXT: %[[R:.+]] = rn.relu %[[H]] {rn.stream = #rn.stream<comp3>
// CHECK-NEXT: rn.event_record internal [[RREADY:[0-9]+]] on #rn.stream<comp3> {rn.subgraph = @DEEP_FWD_BWD}
// CHECK-NEXT: rn.event_wait internal [[RREADY]] on #rn.stream<comp1> {rn.subgraph = @DEEP_FWD_BWD}
// The loss gradient (comp1) feeds the dX part (comp3) of the backward.
// CHECK:      rn.softmax_cross_entropy_backward
// CHECK-NEXT: rn.event_record internal [[DLREADY:[0-9]+]] on #rn.stream<comp1>
// CHECK:      rn.event_wait internal [[DLREADY]] on #rn.stream<comp3>
// CHECK-NEXT: rn.linear_backward {{.*}}
// CHECK:      rn.relu_backward
// CHECK-NEXT: rn.event_record join [[JOIN:[0-9]+]] on #rn.stream<comp3> {rn.subgraph = @DEEP_FWD_BWD}
// CHECK-NEXT: rn.event_wait join [[JOIN]] on #rn.stream<comp1> {rn.subgraph = @DEEP_FWD_BWD}
// The first-layer backward forks its dB part to comp2; the optimizer on
// update waits for dW (comp1) and dB (comp2) separately.
// CHECK:      rn.linear_backward %{{.+}}, %[[X]], {{.*}}rn.stream_map = {bias_grad = #rn.stream<comp2>, weight_grad = #rn.stream<comp1>}
// CHECK-NEXT: rn.event_record external [[DB:[0-9]+]] on #rn.stream<comp2> {rn.subgraph = @FIRST_LAYER_BWD}
// CHECK-NEXT: rn.event_record external [[DW:[0-9]+]] on #rn.stream<comp1> {rn.subgraph = @FIRST_LAYER_BWD}
// CHECK:      rn.event_wait external [[DW]] on #rn.stream<update> {rn.subgraph = @OPTIMIZER}
// CHECK:      rn.sgd_update
// CHECK:      rn.event_wait external [[DB]] on #rn.stream<update> {rn.subgraph = @OPTIMIZER}
// CHECK-NEXT: rn.sgd_update

// On one stream every subgraph runs in launch order: no event at all, with
// or without a memory plan (every graph is on comp1, whose workspace launch
// order then orders too).
// SINGLE: remark: @train_step: 0 cross-stream waits
// SINGLE-NOT: rn.event_wait
// SINGLE-NOT: rn.event_record

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

// Tests that a graph on another primary stream waits for the last use of a
// shared stream's workspace even without data in common: with the zeros on
// comp3 (ZERO_GRAD, primary update), DEEP_FWD_BWD's relu on comp3 waits for
// the record after the last zero, and that one wait also orders the
// gradients the backward accumulates into and the previous step's
// optimizer (ZERO_GRAD launches after it on update), so the step needs one
// wait fewer than its data alone (the NOWORKSPACE run: a plan without
// workspaces).
// WORKSPACE: remark: @train_step: 16 cross-stream waits ({{[0-9]+}} without transitive elision, {{[0-9]+}} with a barrier per op), 6 fork/join events; 1 of the waits order stream workspaces
// WORKSPACE: remark: @eval_step: {{[0-9]+}} cross-stream waits ({{.*}}; 0 of the waits order stream workspaces
// WORKSPACE-NOT: remark: redundant
// WORKSPACE-LABEL: func.func @train_step
// WORKSPACE:      rn.event_wait fork {{[0-9]+}} on #rn.stream<comp3> {rn.subgraph = @ZERO_GRAD}
// WORKSPACE-NEXT: rn.zero {{.*}}rn.stream = #rn.stream<comp3>
// WORKSPACE-NEXT: rn.zero
// WORKSPACE-NEXT: rn.zero
// WORKSPACE-NEXT: rn.event_record external [[ZEROED:[0-9]+]] on #rn.stream<comp3> {rn.subgraph = @ZERO_GRAD}
// WORKSPACE:      rn.event_wait fork {{[0-9]+}} on #rn.stream<comp3> {rn.subgraph = @DEEP_FWD_BWD}
// WORKSPACE-NEXT: rn.event_wait external [[ZEROED]] on #rn.stream<comp3> {rn.subgraph = @DEEP_FWD_BWD}
// WORKSPACE-NEXT: rn.relu
// WORKSPACE-NOT:  rn.event_wait external [[ZEROED]]
// WORKSPACE-LABEL: func.func @eval_step
// NOWORKSPACE: remark: @train_step: 17 cross-stream waits ({{[0-9]+}} without transitive elision, {{[0-9]+}} with a barrier per op), 6 fork/join events; 0 of the waits order stream workspaces
// NOWORKSPACE-LABEL: func.func @train_step
// NOWORKSPACE:      rn.event_wait fork {{[0-9]+}} on #rn.stream<comp3> {rn.subgraph = @DEEP_FWD_BWD}
// NOWORKSPACE-NEXT: rn.relu
