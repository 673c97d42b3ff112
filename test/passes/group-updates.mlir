// RUN: rn-opt %s --split-input-file --rn-group-updates | FileCheck %s
// RUN: rn-opt %s --split-input-file --rn-group-updates="max-tensors=2" | FileCheck %s --check-prefix=TENSORS
// RUN: rn-opt %s --split-input-file --rn-group-updates="max-elements=20" | FileCheck %s --check-prefix=ELEMENTS
// RUN: rn-opt %s --split-input-file --rn-group-updates="min-tensors=1" | FileCheck %s --check-prefix=ONE
// RUN: rn-opt %s --split-input-file --rn-group-updates=report -o /dev/null 2>&1 | FileCheck %s --check-prefix=REPORT

// The input is what rn-partition leaves: every op in a subgraph, the
// subgraphs contiguous in launch order.

// Tests that updates are grouped by the first subgraph that reads their
// parameter: w1 is read by FIRST_LAYER_FWD, w2, w3 and w4 by DEEP_FWD_BWD.
// The first layer's group (a single update, which stays an rn.sgd_update)
// is issued first although its update came last; the deeper group keeps
// the order of its updates, and the results replace theirs.

// CHECK-LABEL: func.func @by_first_reader
// CHECK-SAME:  %[[LR:[a-z0-9]+]]: tensor<f32>, %[[W1:[a-z0-9]+]]: tensor<4x4xf32> {rn.state = @w1}, %[[W2:[a-z0-9]+]]: tensor<4x4xf32> {rn.state = @w2}, %[[W3:[a-z0-9]+]]: tensor<4x4xf32> {rn.state = @w3}, %[[W4:[a-z0-9]+]]: tensor<4xf32> {rn.state = @w4}, %[[G1:[a-z0-9]+]]: tensor<4x4xf32>, %[[G2:[a-z0-9]+]]: tensor<4x4xf32>, %[[G3:[a-z0-9]+]]: tensor<4x4xf32>, %[[G4:[a-z0-9]+]]: tensor<4xf32>)
// CHECK:      %[[C:.+]] = rn.linear %{{.+}}, %[[W3]], %[[W4]] {rn.subgraph = @DEEP_FWD_BWD}
// CHECK-NEXT: %[[N1:.+]] = rn.sgd_update %[[W1]], %[[G1]] lr %[[LR]] momentum 0.000000e+00 weight_decay 0.000000e+00 {rn.subgraph = @OPTIMIZER}
// CHECK-NEXT: %[[N:.+]]:3 = rn.multi_sgd_update params(%[[W3]], %[[W2]], %[[W4]]) grads(%[[G3]], %[[G2]], %[[G4]]) lr %[[LR]] momentum 0.000000e+00 weight_decay 0.000000e+00 {rn.subgraph = @OPTIMIZER} : (tensor<4x4xf32>, tensor<4x4xf32>, tensor<4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4xf32>, tensor<f32>) -> (tensor<4x4xf32>, tensor<4x4xf32>, tensor<4xf32>)
// CHECK-NOT:  rn.sgd_update
// CHECK:      return %[[C]], %[[N1]], %[[N]]#1, %[[N]]#0, %[[N]]#2
// A group is cut after two tensors.
// TENSORS-LABEL: func.func @by_first_reader
// TENSORS:       rn.sgd_update
// TENSORS-NEXT:  rn.multi_sgd_update params(%{{.+}}, %{{.+}}) grads
// TENSORS-NEXT:  rn.sgd_update
// Or before it exceeds 20 elements: w3 (16) alone, then w2 (16) and w4 (4).
// ELEMENTS-LABEL: func.func @by_first_reader
// ELEMENTS:       rn.sgd_update %{{.+}}, %{{.+}} lr
// ELEMENTS-NEXT:  rn.sgd_update %{{.+}}, %{{.+}} lr
// ELEMENTS-NEXT:  rn.multi_sgd_update params(%{{.+}}, %{{.+}}) grads
// With min-tensors=1 the single first-layer update is a group too.
// ONE-LABEL: func.func @by_first_reader
// ONE:       rn.multi_sgd_update params(%{{.+}}) grads
// ONE-NEXT:  rn.multi_sgd_update params(%{{.+}}, %{{.+}}, %{{.+}}) grads
// REPORT: remark: rn-group-updates: 3 per-parameter updates in 1 multi-tensor updates (3 for DEEP_FWD_BWD), 1 left per parameter

module {
  rn.parameter @w1 : tensor<4x4xf32> = #rn.init<uniform, 5.000000e-01>
  rn.parameter @w2 : tensor<4x4xf32> = #rn.init<uniform, 5.000000e-01>
  rn.parameter @w3 : tensor<4x4xf32> = #rn.init<uniform, 5.000000e-01>
  rn.parameter @w4 : tensor<4xf32> = #rn.init<uniform, 5.000000e-01>
  rn.subgraph @FIRST_LAYER_FWD in @by_first_reader on #rn.stream<comp1>
  rn.subgraph @DEEP_FWD_BWD in @by_first_reader on #rn.stream<comp1>
  rn.subgraph @OPTIMIZER in @by_first_reader on #rn.stream<update>
  func.func @by_first_reader(%x: tensor<2x4xf32>, %lr: tensor<f32>,
      %w1: tensor<4x4xf32> {rn.state = @w1}, %w2: tensor<4x4xf32> {rn.state = @w2},
      %w3: tensor<4x4xf32> {rn.state = @w3}, %w4: tensor<4xf32> {rn.state = @w4},
      %g1: tensor<4x4xf32>, %g2: tensor<4x4xf32>, %g3: tensor<4x4xf32>, %g4: tensor<4xf32>)
      -> (tensor<2x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4xf32>) {
    %a = rn.linear %x, %w1 {rn.subgraph = @FIRST_LAYER_FWD} : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
    %b = rn.linear %a, %w2 {rn.subgraph = @DEEP_FWD_BWD} : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
    %c = rn.linear %b, %w3, %w4 {rn.subgraph = @DEEP_FWD_BWD} : (tensor<2x4xf32>, tensor<4x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
    %n3 = rn.sgd_update %w3, %g3 lr %lr momentum 0.000000e+00 weight_decay 0.000000e+00 {rn.subgraph = @OPTIMIZER} : (tensor<4x4xf32>, tensor<4x4xf32>, tensor<f32>) -> tensor<4x4xf32>
    %n2 = rn.sgd_update %w2, %g2 lr %lr momentum 0.000000e+00 weight_decay 0.000000e+00 {rn.subgraph = @OPTIMIZER} : (tensor<4x4xf32>, tensor<4x4xf32>, tensor<f32>) -> tensor<4x4xf32>
    %n4 = rn.sgd_update %w4, %g4 lr %lr momentum 0.000000e+00 weight_decay 0.000000e+00 {rn.subgraph = @OPTIMIZER} : (tensor<4xf32>, tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
    %n1 = rn.sgd_update %w1, %g1 lr %lr momentum 0.000000e+00 weight_decay 0.000000e+00 {rn.subgraph = @OPTIMIZER} : (tensor<4x4xf32>, tensor<4x4xf32>, tensor<f32>) -> tensor<4x4xf32>
    return %c, %n1, %n2, %n3, %n4 : tensor<2x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4xf32>
  }
}

// -----

// Tests that updates with different attributes are not merged: the
// benchmark recipe (momentum 0.9, Nesterov, weight decay 5e-4 except on
// BatchNorm and biases) gives one group per weight decay, each with its
// momentum buffers; buffers and params map to results in group order.

// CHECK-LABEL: func.func @by_attributes
// CHECK-SAME:  %[[LR:[a-z0-9]+]]: tensor<f32>, %[[W:[a-z0-9]+]]: tensor<4x4xf32> {rn.state = @fc1.weight}, %[[B:[a-z0-9]+]]: tensor<4xf32> {rn.state = @fc1.bias}, %[[W2:[a-z0-9]+]]: tensor<4x4xf32> {rn.state = @fc2.weight}, %[[B2:[a-z0-9]+]]: tensor<4xf32> {rn.state = @fc2.bias}, %[[GW:[a-z0-9]+]]: tensor<4x4xf32>, %[[GB:[a-z0-9]+]]: tensor<4xf32>, %[[GW2:[a-z0-9]+]]: tensor<4x4xf32>, %[[GB2:[a-z0-9]+]]: tensor<4xf32>, %[[MW:[a-z0-9]+]]: tensor<4x4xf32> {rn.state = @momentum.fc1.weight}, %[[MB:[a-z0-9]+]]: tensor<4xf32> {rn.state = @momentum.fc1.bias}, %[[MW2:[a-z0-9]+]]: tensor<4x4xf32> {rn.state = @momentum.fc2.weight}, %[[MB2:[a-z0-9]+]]: tensor<4xf32> {rn.state = @momentum.fc2.bias})
// CHECK:      %[[D:.+]]:4 = rn.multi_sgd_update params(%[[W]], %[[W2]]) grads(%[[GW]], %[[GW2]]) momentum_buffers(%[[MW]], %[[MW2]]) lr %[[LR]] momentum 9.000000e-01 weight_decay 5.000000e-04 nesterov {rn.subgraph = @OPTIMIZER}
// CHECK-NEXT: %[[N:.+]]:4 = rn.multi_sgd_update params(%[[B]], %[[B2]]) grads(%[[GB]], %[[GB2]]) momentum_buffers(%[[MB]], %[[MB2]]) lr %[[LR]] momentum 9.000000e-01 weight_decay 0.000000e+00 nesterov {rn.subgraph = @OPTIMIZER}
// CHECK-NEXT: return %[[D]]#0, %[[N]]#0, %[[D]]#1, %[[N]]#1, %[[D]]#2, %[[N]]#2, %[[D]]#3, %[[N]]#3
// REPORT: remark: rn-group-updates: 4 per-parameter updates in 2 multi-tensor updates (2 for DEEP_FWD_BWD, 2 for DEEP_FWD_BWD), 0 left per parameter

module {
  rn.parameter @fc1.weight : tensor<4x4xf32> = #rn.init<uniform, 5.000000e-01>
  rn.parameter @fc1.bias : tensor<4xf32> = #rn.init<uniform, 5.000000e-01>
  rn.parameter @fc2.weight : tensor<4x4xf32> = #rn.init<uniform, 5.000000e-01>
  rn.parameter @fc2.bias : tensor<4xf32> = #rn.init<uniform, 5.000000e-01>
  rn.state momentum @momentum.fc1.weight of @fc1.weight : tensor<4x4xf32> = #rn.init<zeros>
  rn.state momentum @momentum.fc1.bias of @fc1.bias : tensor<4xf32> = #rn.init<zeros>
  rn.state momentum @momentum.fc2.weight of @fc2.weight : tensor<4x4xf32> = #rn.init<zeros>
  rn.state momentum @momentum.fc2.bias of @fc2.bias : tensor<4xf32> = #rn.init<zeros>
  rn.subgraph @DEEP_FWD_BWD in @by_attributes on #rn.stream<comp1>
  rn.subgraph @OPTIMIZER in @by_attributes on #rn.stream<update>
  func.func @by_attributes(%x: tensor<2x4xf32>, %lr: tensor<f32>,
      %w: tensor<4x4xf32> {rn.state = @fc1.weight}, %b: tensor<4xf32> {rn.state = @fc1.bias},
      %w2: tensor<4x4xf32> {rn.state = @fc2.weight}, %b2: tensor<4xf32> {rn.state = @fc2.bias},
      %gw: tensor<4x4xf32>, %gb: tensor<4xf32>, %gw2: tensor<4x4xf32>, %gb2: tensor<4xf32>,
      %mw: tensor<4x4xf32> {rn.state = @momentum.fc1.weight}, %mb: tensor<4xf32> {rn.state = @momentum.fc1.bias},
      %mw2: tensor<4x4xf32> {rn.state = @momentum.fc2.weight}, %mb2: tensor<4xf32> {rn.state = @momentum.fc2.bias})
      -> (tensor<4x4xf32>, tensor<4xf32>, tensor<4x4xf32>, tensor<4xf32>, tensor<4x4xf32>, tensor<4xf32>, tensor<4x4xf32>, tensor<4xf32>) {
    %h = rn.linear %x, %w, %b {rn.subgraph = @DEEP_FWD_BWD} : (tensor<2x4xf32>, tensor<4x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
    %y = rn.linear %h, %w2, %b2 {rn.subgraph = @DEEP_FWD_BWD} : (tensor<2x4xf32>, tensor<4x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
    %nw, %nmw = rn.sgd_update %w, %gw, %mw lr %lr momentum 9.000000e-01 weight_decay 5.000000e-04 nesterov {rn.subgraph = @OPTIMIZER} : (tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<f32>) -> (tensor<4x4xf32>, tensor<4x4xf32>)
    %nb, %nmb = rn.sgd_update %b, %gb, %mb lr %lr momentum 9.000000e-01 weight_decay 0.000000e+00 nesterov {rn.subgraph = @OPTIMIZER} : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>) -> (tensor<4xf32>, tensor<4xf32>)
    %nw2, %nmw2 = rn.sgd_update %w2, %gw2, %mw2 lr %lr momentum 9.000000e-01 weight_decay 5.000000e-04 nesterov {rn.subgraph = @OPTIMIZER} : (tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<f32>) -> (tensor<4x4xf32>, tensor<4x4xf32>)
    %nb2, %nmb2 = rn.sgd_update %b2, %gb2, %mb2 lr %lr momentum 9.000000e-01 weight_decay 0.000000e+00 nesterov {rn.subgraph = @OPTIMIZER} : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>) -> (tensor<4xf32>, tensor<4xf32>)
    return %nw, %nb, %nw2, %nb2, %nmw, %nmb, %nmw2, %nmb2 : tensor<4x4xf32>, tensor<4xf32>, tensor<4x4xf32>, tensor<4xf32>, tensor<4x4xf32>, tensor<4xf32>, tensor<4x4xf32>, tensor<4xf32>
  }
}

// -----

// Tests mixed precision: the f32 master weights are read by nothing but
// their updates (the casts in CAST_WEIGHTS read the new values), so the
// first reader is that of the low-precision copy (rn.state
// low_precision_weight of the parameter): FIRST_LAYER_FWD for fc1, whose
// group comes first. Both groups share the skip_if flag of dynamic loss
// scaling.

// CHECK-LABEL: func.func @low_precision
// CHECK-SAME:  %[[LR:[a-z0-9]+]]: tensor<f32>, %[[SKIP:[a-z0-9]+]]: tensor<i1>, %[[W:[a-z0-9]+]]: tensor<4x4xf32> {rn.state = @fc1.weight}, %[[B:[a-z0-9]+]]: tensor<4xf32> {rn.state = @fc1.bias}, %[[W2:[a-z0-9]+]]: tensor<4x4xf32> {rn.state = @fc2.weight}, %[[B2:[a-z0-9]+]]: tensor<4xf32> {rn.state = @fc2.bias}
// CHECK:      %[[FIRST:.+]]:2 = rn.multi_sgd_update params(%[[W]], %[[B]]) grads({{.*}}) lr %[[LR]] skip_if %[[SKIP]] momentum 0.000000e+00 weight_decay 0.000000e+00 {rn.subgraph = @OPTIMIZER}
// CHECK-NEXT: %[[DEEP:.+]]:2 = rn.multi_sgd_update params(%[[W2]], %[[B2]]) grads({{.*}}) lr %[[LR]] skip_if %[[SKIP]] momentum 0.000000e+00 weight_decay 0.000000e+00 {rn.subgraph = @OPTIMIZER}
// CHECK-NEXT: rn.cast %[[FIRST]]#0 {rn.subgraph = @CAST_WEIGHTS}
// CHECK-NEXT: rn.cast %[[FIRST]]#1 {rn.subgraph = @CAST_WEIGHTS}
// CHECK-NEXT: rn.cast %[[DEEP]]#0 {rn.subgraph = @CAST_WEIGHTS}
// REPORT: remark: rn-group-updates: 4 per-parameter updates in 2 multi-tensor updates (2 for FIRST_LAYER_FWD, 2 for DEEP_FWD_BWD), 0 left per parameter

module {
  rn.parameter @fc1.weight : tensor<4x4xf32> = #rn.init<uniform, 5.000000e-01>
  rn.parameter @fc1.bias : tensor<4xf32> = #rn.init<uniform, 5.000000e-01>
  rn.parameter @fc2.weight : tensor<4x4xf32> = #rn.init<uniform, 5.000000e-01>
  rn.parameter @fc2.bias : tensor<4xf32> = #rn.init<uniform, 5.000000e-01>
  rn.state low_precision_weight @f16.fc1.weight of @fc1.weight : tensor<4x4xf16> = #rn.init<derived>
  rn.state low_precision_weight @f16.fc1.bias of @fc1.bias : tensor<4xf16> = #rn.init<derived>
  rn.state low_precision_weight @f16.fc2.weight of @fc2.weight : tensor<4x4xf16> = #rn.init<derived>
  rn.state low_precision_weight @f16.fc2.bias of @fc2.bias : tensor<4xf16> = #rn.init<derived>
  rn.subgraph @FIRST_LAYER_FWD in @low_precision on #rn.stream<comp1>
  rn.subgraph @DEEP_FWD_BWD in @low_precision on #rn.stream<comp1>
  rn.subgraph @OPTIMIZER in @low_precision on #rn.stream<update>
  rn.subgraph @CAST_WEIGHTS in @low_precision on #rn.stream<update>
  func.func @low_precision(%x: tensor<2x4xf16>, %lr: tensor<f32>, %skip: tensor<i1>,
      %w: tensor<4x4xf32> {rn.state = @fc1.weight}, %b: tensor<4xf32> {rn.state = @fc1.bias},
      %w2: tensor<4x4xf32> {rn.state = @fc2.weight}, %b2: tensor<4xf32> {rn.state = @fc2.bias},
      %lw: tensor<4x4xf16> {rn.state = @f16.fc1.weight}, %lb: tensor<4xf16> {rn.state = @f16.fc1.bias},
      %lw2: tensor<4x4xf16> {rn.state = @f16.fc2.weight}, %lb2: tensor<4xf16> {rn.state = @f16.fc2.bias},
      %gw: tensor<4x4xf32>, %gb: tensor<4xf32>, %gw2: tensor<4x4xf32>, %gb2: tensor<4xf32>)
      -> (tensor<2x4xf16>, tensor<4x4xf32>, tensor<4xf32>, tensor<4x4xf32>, tensor<4xf32>, tensor<4x4xf16>, tensor<4xf16>, tensor<4x4xf16>, tensor<4xf16>) {
    %h = rn.linear %x, %lw, %lb {rn.subgraph = @FIRST_LAYER_FWD} : (tensor<2x4xf16>, tensor<4x4xf16>, tensor<4xf16>) -> tensor<2x4xf16>
    %y = rn.linear %h, %lw2, %lb2 {rn.subgraph = @DEEP_FWD_BWD} : (tensor<2x4xf16>, tensor<4x4xf16>, tensor<4xf16>) -> tensor<2x4xf16>
    %nw2 = rn.sgd_update %w2, %gw2 lr %lr skip_if %skip momentum 0.000000e+00 weight_decay 0.000000e+00 {rn.subgraph = @OPTIMIZER} : (tensor<4x4xf32>, tensor<4x4xf32>, tensor<f32>, tensor<i1>) -> tensor<4x4xf32>
    %nw = rn.sgd_update %w, %gw lr %lr skip_if %skip momentum 0.000000e+00 weight_decay 0.000000e+00 {rn.subgraph = @OPTIMIZER} : (tensor<4x4xf32>, tensor<4x4xf32>, tensor<f32>, tensor<i1>) -> tensor<4x4xf32>
    %nb = rn.sgd_update %b, %gb lr %lr skip_if %skip momentum 0.000000e+00 weight_decay 0.000000e+00 {rn.subgraph = @OPTIMIZER} : (tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<i1>) -> tensor<4xf32>
    %nb2 = rn.sgd_update %b2, %gb2 lr %lr skip_if %skip momentum 0.000000e+00 weight_decay 0.000000e+00 {rn.subgraph = @OPTIMIZER} : (tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<i1>) -> tensor<4xf32>
    %cw = rn.cast %nw {rn.subgraph = @CAST_WEIGHTS} : tensor<4x4xf32> -> tensor<4x4xf16>
    %cb = rn.cast %nb {rn.subgraph = @CAST_WEIGHTS} : tensor<4xf32> -> tensor<4xf16>
    %cw2 = rn.cast %nw2 {rn.subgraph = @CAST_WEIGHTS} : tensor<4x4xf32> -> tensor<4x4xf16>
    %cb2 = rn.cast %nb2 {rn.subgraph = @CAST_WEIGHTS} : tensor<4xf32> -> tensor<4xf16>
    return %y, %nw, %nb, %nw2, %nb2, %cw, %cb, %cw2, %cb2 : tensor<2x4xf16>, tensor<4x4xf32>, tensor<4xf32>, tensor<4x4xf32>, tensor<4xf32>, tensor<4x4xf16>, tensor<4xf16>, tensor<4x4xf16>, tensor<4xf16>
  }
}

// -----

// Tests that an update whose operands are computed after the subgraph's
// first update stays where it is (the groups take the first update's
// place), that different element types make different groups, that
// different learning rates do too, and that SGD and AdamW updates are never
// merged (the lone AdamW update is a group of one and stays an
// rn.adamw_update, at its group's place).

// CHECK-LABEL: func.func @not_merged
// CHECK-SAME:  %[[LR:[a-z0-9]+]]: tensor<f32>, %[[LR2:[a-z0-9]+]]: tensor<f32>, %[[A:[a-z0-9]+]]: tensor<4xf32>, %[[B:[a-z0-9]+]]: tensor<4xf32>, %[[C:[a-z0-9]+]]: tensor<4xf32>, %[[D:[a-z0-9]+]]: tensor<4xf32>, %[[H:[a-z0-9]+]]: tensor<4xf16>, %[[H2:[a-z0-9]+]]: tensor<4xf16>, %[[G:[a-z0-9]+]]: tensor<4xf32>, %[[GH:[a-z0-9]+]]: tensor<4xf16>
// CHECK:      rn.multi_sgd_update params(%[[A]], %[[C]]) grads(%[[G]], %[[G]]) lr %[[LR]]
// CHECK-NEXT: rn.multi_sgd_update params(%[[H]], %[[H2]]) grads(%[[GH]], %[[GH]]) lr %[[LR]]
// CHECK-NEXT: rn.sgd_update %[[D]], %[[G]] lr %[[LR2]]
// CHECK-NEXT: rn.adamw_update
// CHECK-NEXT: %[[LATE:.+]] = rn.relu %[[G]] {rn.subgraph = @OPTIMIZER}
// CHECK-NEXT: rn.sgd_update %[[B]], %[[LATE]] lr %[[LR]]
// CHECK-NEXT: return
// REPORT: remark: rn-group-updates: 4 per-parameter updates in 2 multi-tensor updates (2 read by no subgraph, 2 read by no subgraph), 3 left per parameter

module {
  rn.subgraph @OPTIMIZER in @not_merged on #rn.stream<update>
  func.func @not_merged(%lr: tensor<f32>, %lr2: tensor<f32>, %a: tensor<4xf32>, %b: tensor<4xf32>,
      %c: tensor<4xf32>, %d: tensor<4xf32>, %h: tensor<4xf16>, %h2: tensor<4xf16>,
      %g: tensor<4xf32>, %gh: tensor<4xf16>, %step: tensor<i32>,
      %e: tensor<4xf32>, %em: tensor<4xf32>, %ev: tensor<4xf32>)
      -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf16>, tensor<4xf16>, tensor<4xf32>) {
    %na = rn.sgd_update %a, %g lr %lr momentum 0.000000e+00 weight_decay 0.000000e+00 {rn.subgraph = @OPTIMIZER} : (tensor<4xf32>, tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
    %late = rn.relu %g {rn.subgraph = @OPTIMIZER} : tensor<4xf32>
    %nb = rn.sgd_update %b, %late lr %lr momentum 0.000000e+00 weight_decay 0.000000e+00 {rn.subgraph = @OPTIMIZER} : (tensor<4xf32>, tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
    %nh = rn.sgd_update %h, %gh lr %lr momentum 0.000000e+00 weight_decay 0.000000e+00 {rn.subgraph = @OPTIMIZER} : (tensor<4xf16>, tensor<4xf16>, tensor<f32>) -> tensor<4xf16>
    %nc = rn.sgd_update %c, %g lr %lr momentum 0.000000e+00 weight_decay 0.000000e+00 {rn.subgraph = @OPTIMIZER} : (tensor<4xf32>, tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
    %nd = rn.sgd_update %d, %g lr %lr2 momentum 0.000000e+00 weight_decay 0.000000e+00 {rn.subgraph = @OPTIMIZER} : (tensor<4xf32>, tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
    %nh2 = rn.sgd_update %h2, %gh lr %lr momentum 0.000000e+00 weight_decay 0.000000e+00 {rn.subgraph = @OPTIMIZER} : (tensor<4xf16>, tensor<4xf16>, tensor<f32>) -> tensor<4xf16>
    %p, %m, %v = rn.adamw_update %e, %g, %em, %ev lr %lr step %step betas(9.000000e-01, 9.990000e-01) eps 1.000000e-08 weight_decay 0.000000e+00 {rn.subgraph = @OPTIMIZER} : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<i32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
    return %na, %nb, %nc, %nd, %nh, %nh2, %p : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf16>, tensor<4xf16>, tensor<4xf32>
  }
}

// -----

// Tests AdamW: updates with the same betas, epsilon, weight decay, lr and
// step form one rn.multi_adamw_update whose results (new params, then new
// first moments, then new second moments) replace theirs; one with another
// weight decay stays per parameter.

// CHECK-LABEL: func.func @adamw
// CHECK-SAME:  %[[LR:[a-z0-9]+]]: tensor<f32>, %[[STEP:[a-z0-9]+]]: tensor<i32>, %[[A:[a-z0-9]+]]: tensor<4xf32>, %[[B:[a-z0-9]+]]: tensor<8xf32>, %[[C:[a-z0-9]+]]: tensor<4xf32>, %[[GA:[a-z0-9]+]]: tensor<4xf32>, %[[GB:[a-z0-9]+]]: tensor<8xf32>, %[[MA:[a-z0-9]+]]: tensor<4xf32>, %[[MB:[a-z0-9]+]]: tensor<8xf32>, %[[VA:[a-z0-9]+]]: tensor<4xf32>, %[[VB:[a-z0-9]+]]: tensor<8xf32>
// CHECK:      %[[N:.+]]:6 = rn.multi_adamw_update params(%[[A]], %[[B]]) grads(%[[GA]], %[[GB]]) exp_avgs(%[[MA]], %[[MB]]) exp_avg_sqs(%[[VA]], %[[VB]]) lr %[[LR]] step %[[STEP]] betas(9.000000e-01, {{.+}}) eps 1.000000e-08 weight_decay 1.000000e-02 {rn.subgraph = @OPTIMIZER} : (tensor<4xf32>, tensor<8xf32>, tensor<4xf32>, tensor<8xf32>, tensor<4xf32>, tensor<8xf32>, tensor<4xf32>, tensor<8xf32>, tensor<f32>, tensor<i32>) -> (tensor<4xf32>, tensor<8xf32>, tensor<4xf32>, tensor<8xf32>, tensor<4xf32>, tensor<8xf32>)
// CHECK-NEXT: %[[C1:.+]], %[[C2:.+]], %[[C3:.+]] = rn.adamw_update %[[C]], {{.*}} weight_decay 0.000000e+00
// CHECK-NEXT: return %[[N]]#0, %[[N]]#2, %[[N]]#4, %[[C1]], %[[N]]#1, %[[N]]#3, %[[N]]#5
// REPORT: remark: rn-group-updates: 2 per-parameter updates in 1 multi-tensor updates (2 read by no subgraph), 1 left per parameter

module {
  rn.subgraph @OPTIMIZER in @adamw on #rn.stream<update>
  func.func @adamw(%lr: tensor<f32>, %step: tensor<i32>, %a: tensor<4xf32>, %b: tensor<8xf32>,
      %c: tensor<4xf32>, %ga: tensor<4xf32>, %gb: tensor<8xf32>, %ma: tensor<4xf32>,
      %mb: tensor<8xf32>, %va: tensor<4xf32>, %vb: tensor<8xf32>)
      -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) {
    %pa, %nma, %nva = rn.adamw_update %a, %ga, %ma, %va lr %lr step %step betas(9.000000e-01, 9.990000e-01) eps 1.000000e-08 weight_decay 1.000000e-02 {rn.subgraph = @OPTIMIZER} : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<i32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
    %pc, %nmc, %nvc = rn.adamw_update %c, %ga, %ma, %va lr %lr step %step betas(9.000000e-01, 9.990000e-01) eps 1.000000e-08 weight_decay 0.000000e+00 {rn.subgraph = @OPTIMIZER} : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<i32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
    %pb, %nmb, %nvb = rn.adamw_update %b, %gb, %mb, %vb lr %lr step %step betas(9.000000e-01, 9.990000e-01) eps 1.000000e-08 weight_decay 1.000000e-02 {rn.subgraph = @OPTIMIZER} : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<f32>, tensor<i32>) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>)
    return %pa, %nma, %nva, %pc, %pb, %nmb, %nvb : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
  }
}

// -----

// Tests LARS: updates with the same momentum, weight decay, trust
// coefficient, epsilon, lr and skip_if form one rn.multi_lars_update per
// first reader (fc1, read by FIRST_LAYER_FWD, first although its updates
// came last), whose results (new params, then new momentum buffers)
// replace theirs; one with another trust coefficient is a group of one
// and stays an rn.lars_update, after the groups.

// CHECK-LABEL: func.func @lars
// CHECK-SAME:  %[[LR:[a-z0-9]+]]: tensor<f32>, %[[SKIP:[a-z0-9]+]]: tensor<i1>, %[[W1:[a-z0-9]+]]: tensor<4x4xf32> {rn.state = @fc1.weight}, %[[B1:[a-z0-9]+]]: tensor<4xf32> {rn.state = @fc1.bias}, %[[W2:[a-z0-9]+]]: tensor<4x4xf32> {rn.state = @fc2.weight}, %[[B2:[a-z0-9]+]]: tensor<4xf32> {rn.state = @fc2.bias}, %[[W3:[a-z0-9]+]]: tensor<4x4xf32> {rn.state = @fc3.weight}, %[[G1:[a-z0-9]+]]: tensor<4x4xf32>, %[[GB1:[a-z0-9]+]]: tensor<4xf32>, %[[G2:[a-z0-9]+]]: tensor<4x4xf32>, %[[GB2:[a-z0-9]+]]: tensor<4xf32>, %[[G3:[a-z0-9]+]]: tensor<4x4xf32>, %[[M1:[a-z0-9]+]]: tensor<4x4xf32>, %[[MB1:[a-z0-9]+]]: tensor<4xf32>, %[[M2:[a-z0-9]+]]: tensor<4x4xf32>, %[[MB2:[a-z0-9]+]]: tensor<4xf32>, %[[M3:[a-z0-9]+]]: tensor<4x4xf32>)
// CHECK:      %[[FIRST:.+]]:4 = rn.multi_lars_update params(%[[W1]], %[[B1]]) grads(%[[G1]], %[[GB1]]) momentum_buffers(%[[M1]], %[[MB1]]) lr %[[LR]] skip_if %[[SKIP]] momentum 9.000000e-01 weight_decay 1.000000e-04 trust 1.000000e-03 eps 1.000000e-09 {rn.subgraph = @OPTIMIZER} : (tensor<4x4xf32>, tensor<4xf32>, tensor<4x4xf32>, tensor<4xf32>, tensor<4x4xf32>, tensor<4xf32>, tensor<f32>, tensor<i1>) -> (tensor<4x4xf32>, tensor<4xf32>, tensor<4x4xf32>, tensor<4xf32>)
// CHECK-NEXT: %[[DEEP:.+]]:4 = rn.multi_lars_update params(%[[W2]], %[[B2]]) grads(%[[G2]], %[[GB2]]) momentum_buffers(%[[M2]], %[[MB2]]) lr %[[LR]] skip_if %[[SKIP]] momentum 9.000000e-01 weight_decay 1.000000e-04 trust 1.000000e-03 eps 1.000000e-09 {rn.subgraph = @OPTIMIZER}
// CHECK-NEXT: %[[N3:.+]], %[[NM3:.+]] = rn.lars_update %[[W3]], %[[G3]], %[[M3]] lr %[[LR]] skip_if %[[SKIP]] momentum 9.000000e-01 weight_decay 1.000000e-04 trust 2.000000e-02 eps 1.000000e-09 {rn.subgraph = @OPTIMIZER}
// CHECK-NEXT: return %[[FIRST]]#0, %[[FIRST]]#1, %[[DEEP]]#0, %[[DEEP]]#1, %[[N3]], %[[FIRST]]#2, %[[FIRST]]#3, %[[DEEP]]#2, %[[DEEP]]#3, %[[NM3]]
// A group is cut after two tensors (both are two already).
// TENSORS-LABEL: func.func @lars
// TENSORS:       rn.multi_lars_update params(%{{.+}}, %{{.+}}) grads
// TENSORS-NEXT:  rn.multi_lars_update params(%{{.+}}, %{{.+}}) grads
// TENSORS-NEXT:  rn.lars_update
// With min-tensors=1 the single update is a group too.
// ONE-LABEL: func.func @lars
// ONE:       rn.multi_lars_update params(%{{.+}}, %{{.+}}) grads
// ONE-NEXT:  rn.multi_lars_update params(%{{.+}}, %{{.+}}) grads
// ONE-NEXT:  rn.multi_lars_update params(%{{.+}}) grads
// ONE-NOT:   rn.lars_update
// REPORT: remark: rn-group-updates: 4 per-parameter updates in 2 multi-tensor updates (2 for FIRST_LAYER_FWD, 2 for DEEP_FWD_BWD), 1 left per parameter

module {
  rn.parameter @fc1.weight : tensor<4x4xf32> = #rn.init<uniform, 5.000000e-01>
  rn.parameter @fc1.bias : tensor<4xf32> = #rn.init<uniform, 5.000000e-01>
  rn.parameter @fc2.weight : tensor<4x4xf32> = #rn.init<uniform, 5.000000e-01>
  rn.parameter @fc2.bias : tensor<4xf32> = #rn.init<uniform, 5.000000e-01>
  rn.parameter @fc3.weight : tensor<4x4xf32> = #rn.init<uniform, 5.000000e-01>
  rn.subgraph @FIRST_LAYER_FWD in @lars on #rn.stream<comp1>
  rn.subgraph @DEEP_FWD_BWD in @lars on #rn.stream<comp1>
  rn.subgraph @OPTIMIZER in @lars on #rn.stream<update>
  func.func @lars(%x: tensor<2x4xf32>, %lr: tensor<f32>, %skip: tensor<i1>,
      %w1: tensor<4x4xf32> {rn.state = @fc1.weight}, %b1: tensor<4xf32> {rn.state = @fc1.bias},
      %w2: tensor<4x4xf32> {rn.state = @fc2.weight}, %b2: tensor<4xf32> {rn.state = @fc2.bias},
      %w3: tensor<4x4xf32> {rn.state = @fc3.weight},
      %g1: tensor<4x4xf32>, %gb1: tensor<4xf32>, %g2: tensor<4x4xf32>, %gb2: tensor<4xf32>, %g3: tensor<4x4xf32>,
      %m1: tensor<4x4xf32>, %mb1: tensor<4xf32>, %m2: tensor<4x4xf32>, %mb2: tensor<4xf32>, %m3: tensor<4x4xf32>)
      -> (tensor<4x4xf32>, tensor<4xf32>, tensor<4x4xf32>, tensor<4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4xf32>, tensor<4x4xf32>, tensor<4xf32>, tensor<4x4xf32>) {
    %h = rn.linear %x, %w1, %b1 {rn.subgraph = @FIRST_LAYER_FWD} : (tensor<2x4xf32>, tensor<4x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
    %y = rn.linear %h, %w2, %b2 {rn.subgraph = @DEEP_FWD_BWD} : (tensor<2x4xf32>, tensor<4x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
    %z = rn.linear %y, %w3 {rn.subgraph = @DEEP_FWD_BWD} : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
    %nw2, %nm2 = rn.lars_update %w2, %g2, %m2 lr %lr skip_if %skip momentum 9.000000e-01 weight_decay 1.000000e-04 trust 1.000000e-03 eps 1.000000e-09 {rn.subgraph = @OPTIMIZER} : (tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<f32>, tensor<i1>) -> (tensor<4x4xf32>, tensor<4x4xf32>)
    %nw3, %nm3 = rn.lars_update %w3, %g3, %m3 lr %lr skip_if %skip momentum 9.000000e-01 weight_decay 1.000000e-04 trust 2.000000e-02 eps 1.000000e-09 {rn.subgraph = @OPTIMIZER} : (tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<f32>, tensor<i1>) -> (tensor<4x4xf32>, tensor<4x4xf32>)
    %nb2, %nmb2 = rn.lars_update %b2, %gb2, %mb2 lr %lr skip_if %skip momentum 9.000000e-01 weight_decay 1.000000e-04 trust 1.000000e-03 eps 1.000000e-09 {rn.subgraph = @OPTIMIZER} : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<i1>) -> (tensor<4xf32>, tensor<4xf32>)
    %nw1, %nm1 = rn.lars_update %w1, %g1, %m1 lr %lr skip_if %skip momentum 9.000000e-01 weight_decay 1.000000e-04 trust 1.000000e-03 eps 1.000000e-09 {rn.subgraph = @OPTIMIZER} : (tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<f32>, tensor<i1>) -> (tensor<4x4xf32>, tensor<4x4xf32>)
    %nb1, %nmb1 = rn.lars_update %b1, %gb1, %mb1 lr %lr skip_if %skip momentum 9.000000e-01 weight_decay 1.000000e-04 trust 1.000000e-03 eps 1.000000e-09 {rn.subgraph = @OPTIMIZER} : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<i1>) -> (tensor<4xf32>, tensor<4xf32>)
    return %nw1, %nb1, %nw2, %nb2, %nw3, %nm1, %nmb1, %nm2, %nmb2, %nm3 : tensor<4x4xf32>, tensor<4xf32>, tensor<4x4xf32>, tensor<4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4xf32>, tensor<4x4xf32>, tensor<4xf32>, tensor<4x4xf32>
  }
}
