// RUN: rn-opt %s --split-input-file --rn-group-elementwise | FileCheck %s
// RUN: rn-opt %s --split-input-file --rn-group-elementwise="min-tensors=3" | FileCheck %s --check-prefix=MIN
// RUN: rn-opt %s --split-input-file --rn-group-elementwise=report -o /dev/null 2>&1 | FileCheck %s --check-prefix=REPORT

// The input is what rn-partition leaves: every op in a subgraph.

// Tests that the zeroes of a subgraph become one rn.multi_zero per element
// type, placed where the first zero was, and that the unscales by one
// scale become one rn.multi_unscale; the results replace theirs in order.

// CHECK-LABEL: func.func @zero_and_unscale
// CHECK-SAME:  %[[A:[a-z0-9]+]]: tensor<4x4xf32>, %[[B:[a-z0-9]+]]: tensor<4xf32>, %[[H:[a-z0-9]+]]: tensor<4xf16>, %[[C:[a-z0-9]+]]: tensor<4xf32>, %[[S:[a-z0-9]+]]: tensor<f32>, %[[G1:[a-z0-9]+]]: tensor<4x4xf32>, %[[G2:[a-z0-9]+]]: tensor<4xf32>
// CHECK:      %[[Z:.+]]:3 = rn.multi_zero %[[A]], %[[B]], %[[C]] {rn.subgraph = @ZERO_GRAD} : (tensor<4x4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<4x4xf32>, tensor<4xf32>, tensor<4xf32>)
// CHECK-NEXT: %[[ZH:.+]] = rn.zero %[[H]] {rn.subgraph = @ZERO_GRAD} : tensor<4xf16>
// CHECK-NEXT: %[[U:.+]]:2 = rn.multi_unscale grads(%[[G1]], %[[G2]]) scale %[[S]] {rn.subgraph = @NAN_CHECK_AND_GRAD_SCALING} : (tensor<4x4xf32>, tensor<4xf32>, tensor<f32>) -> (tensor<4x4xf32>, tensor<4xf32>)
// CHECK-NOT:  rn.unscale
// CHECK:      return %[[Z]]#0, %[[Z]]#1, %[[ZH]], %[[Z]]#2, %[[U]]#0, %[[U]]#1
// With min-tensors=3 the two unscales stay per tensor.
// MIN-LABEL: func.func @zero_and_unscale
// MIN:       rn.multi_zero
// MIN-COUNT-2: rn.unscale
// REPORT: remark: rn-group-elementwise: 5 per-tensor ops in 2 multi-tensor ops, 1 left per tensor
// REPORT: remark: rn-group-elementwise: 2 per-tensor ops in 1 multi-tensor ops, 2 left per tensor
// REPORT: remark: rn-group-elementwise: 2 per-tensor ops in 1 multi-tensor ops, 1 left per tensor
// REPORT: remark: rn-group-elementwise: 2 per-tensor ops in 1 multi-tensor ops, 1 left per tensor
// REPORT: remark: rn-group-elementwise: 2 per-tensor ops in 1 multi-tensor ops, 1 left per tensor
// REPORT: remark: rn-group-elementwise: 2 per-tensor ops in 1 multi-tensor ops, 1 left per tensor

module {
  rn.subgraph @ZERO_GRAD in @zero_and_unscale on #rn.stream<update>
  rn.subgraph @NAN_CHECK_AND_GRAD_SCALING in @zero_and_unscale on #rn.stream<update>
  func.func @zero_and_unscale(%a: tensor<4x4xf32>, %b: tensor<4xf32>, %h: tensor<4xf16>,
      %c: tensor<4xf32>, %s: tensor<f32>, %g1: tensor<4x4xf32>, %g2: tensor<4xf32>)
      -> (tensor<4x4xf32>, tensor<4xf32>, tensor<4xf16>, tensor<4xf32>, tensor<4x4xf32>, tensor<4xf32>) {
    %za = rn.zero %a {rn.subgraph = @ZERO_GRAD} : tensor<4x4xf32>
    %zb = rn.zero %b {rn.subgraph = @ZERO_GRAD} : tensor<4xf32>
    %zh = rn.zero %h {rn.subgraph = @ZERO_GRAD} : tensor<4xf16>
    %zc = rn.zero %c {rn.subgraph = @ZERO_GRAD} : tensor<4xf32>
    %u1 = rn.unscale %g1, %s {rn.subgraph = @NAN_CHECK_AND_GRAD_SCALING} : (tensor<4x4xf32>, tensor<f32>) -> tensor<4x4xf32>
    %u2 = rn.unscale %g2, %s {rn.subgraph = @NAN_CHECK_AND_GRAD_SCALING} : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
    return %za, %zb, %zh, %zc, %u1, %u2 : tensor<4x4xf32>, tensor<4xf32>, tensor<4xf16>, tensor<4xf32>, tensor<4x4xf32>, tensor<4xf32>
  }
}

// -----

// Tests that unscales by different scales, or in different subgraphs, are
// not grouped together.

// CHECK-LABEL: func.func @scales_and_subgraphs
// CHECK:      rn.multi_unscale grads(%{{.+}}, %{{.+}}) scale %[[S1:[a-z0-9]+]] {rn.subgraph = @A}
// CHECK-NEXT: rn.unscale %{{.+}}, %{{.+}} {rn.subgraph = @A}
// CHECK-NEXT: rn.unscale %{{.+}}, %[[S1]] {rn.subgraph = @B}
// CHECK-NOT:  rn.multi_unscale

module {
  rn.subgraph @A in @scales_and_subgraphs on #rn.stream<update>
  rn.subgraph @B in @scales_and_subgraphs on #rn.stream<update>
  func.func @scales_and_subgraphs(%s1: tensor<f32>, %s2: tensor<f32>, %g1: tensor<4xf32>,
      %g2: tensor<4xf32>, %g3: tensor<4xf32>, %g4: tensor<4xf32>)
      -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
    %u1 = rn.unscale %g1, %s1 {rn.subgraph = @A} : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
    %u2 = rn.unscale %g2, %s2 {rn.subgraph = @A} : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
    %u3 = rn.unscale %g3, %s1 {rn.subgraph = @A} : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
    %u4 = rn.unscale %g4, %s1 {rn.subgraph = @B} : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
    return %u1, %u2, %u3, %u4 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
  }
}

// -----

// Tests that a member whose operand is defined after the group's place
// stays per tensor where it is: the group moves no use above its def.

// CHECK-LABEL: func.func @late_operand
// CHECK:      %[[U:.+]]:2 = rn.multi_unscale grads(%{{.+}}, %{{.+}}) scale
// CHECK-NEXT: %[[R:.+]] = rn.relu
// CHECK-NEXT: rn.unscale %[[R]],

module {
  rn.subgraph @A in @late_operand on #rn.stream<update>
  func.func @late_operand(%s: tensor<f32>, %g1: tensor<4xf32>, %g2: tensor<4xf32>, %g3: tensor<4xf32>)
      -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
    %u1 = rn.unscale %g1, %s {rn.subgraph = @A} : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
    %u2 = rn.unscale %g2, %s {rn.subgraph = @A} : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
    %r = rn.relu %g3 {rn.subgraph = @A} : tensor<4xf32>
    %u3 = rn.unscale %r, %s {rn.subgraph = @A} : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
    return %u1, %u2, %u3 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
  }
}

// -----

// Tests that the casts of a subgraph with one source and one target
// element type become one rn.multi_cast; a cast to another type stays.

// CHECK-LABEL: func.func @casts
// CHECK:      %[[C:.+]]:2 = rn.multi_cast %{{.+}}, %{{.+}} {rn.subgraph = @CAST_GRAD} : (tensor<4x4xf16>, tensor<4xf16>) -> (tensor<4x4xf32>, tensor<4xf32>)
// CHECK-NEXT: %[[B:.+]] = rn.cast %{{.+}} {rn.subgraph = @CAST_GRAD} : tensor<4xf16> -> tensor<4xbf16>
// CHECK-NEXT: return %[[C]]#0, %[[B]], %[[C]]#1

module {
  rn.subgraph @CAST_GRAD in @casts on #rn.stream<update>
  func.func @casts(%a: tensor<4x4xf16>, %b: tensor<4xf16>, %c: tensor<4xf16>)
      -> (tensor<4x4xf32>, tensor<4xbf16>, tensor<4xf32>) {
    %ca = rn.cast %a {rn.subgraph = @CAST_GRAD} : tensor<4x4xf16> -> tensor<4x4xf32>
    %cb = rn.cast %b {rn.subgraph = @CAST_GRAD} : tensor<4xf16> -> tensor<4xbf16>
    %cc = rn.cast %c {rn.subgraph = @CAST_GRAD} : tensor<4xf16> -> tensor<4xf32>
    return %ca, %cb, %cc : tensor<4x4xf32>, tensor<4xbf16>, tensor<4xf32>
  }
}

// -----

// Tests that an in-place member does not move above a read of the tensor
// it updates: the overflow check reads g2 before its unscale, so only the
// unscale of g1 (before the check) and of g3 (whose tensor nothing else
// reads) group, and g2's stays after the check.

// CHECK-LABEL: func.func @read_before_update
// CHECK:      rn.multi_unscale grads(%[[G1:[a-z0-9]+]], %[[G3:[a-z0-9]+]]) scale
// CHECK-NEXT: rn.check_finite %[[G2:[a-z0-9]+]]
// CHECK-NEXT: rn.unscale %[[G2]],

module {
  rn.subgraph @A in @read_before_update on #rn.stream<update>
  func.func @read_before_update(%s: tensor<f32>, %g1: tensor<4xf32>, %g2: tensor<4xf32>, %g3: tensor<4xf32>)
      -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<i1>) {
    %u1 = rn.unscale %g1, %s {rn.subgraph = @A} : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
    %f = rn.check_finite %g2 {rn.subgraph = @A} : tensor<4xf32> -> tensor<i1>
    %u2 = rn.unscale %g2, %s {rn.subgraph = @A} : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
    %u3 = rn.unscale %g3, %s {rn.subgraph = @A} : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
    return %u1, %u2, %u3, %f : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<i1>
  }
}

// -----

// Tests that the EMA updates of a subgraph with one decay become one
// rn.multi_ema_update; one with another decay stays.

// CHECK-LABEL: func.func @emas
// CHECK-SAME:  %[[A1:[a-z0-9]+]]: tensor<4x4xf32>, %[[A2:[a-z0-9]+]]: tensor<4xf32>, %[[A3:[a-z0-9]+]]: tensor<4xf32>, %[[P1:[a-z0-9]+]]: tensor<4x4xf32>, %[[P2:[a-z0-9]+]]: tensor<4xf32>, %[[P3:[a-z0-9]+]]: tensor<4xf32>
// CHECK:      %[[E:.+]]:2 = rn.multi_ema_update averages(%[[A1]], %[[A3]]) params(%[[P1]], %[[P3]]) decay 0.98999999999999999 {rn.subgraph = @EMA_UPDATE} : (tensor<4x4xf32>, tensor<4xf32>, tensor<4x4xf32>, tensor<4xf32>) -> (tensor<4x4xf32>, tensor<4xf32>)
// CHECK-NEXT: %[[E2:.+]] = rn.ema_update %[[A2]], %[[P2]] decay 5.000000e-01
// CHECK-NEXT: return %[[E]]#0, %[[E2]], %[[E]]#1

module {
  rn.subgraph @EMA_UPDATE in @emas on #rn.stream<update>
  func.func @emas(%a1: tensor<4x4xf32>, %a2: tensor<4xf32>, %a3: tensor<4xf32>,
      %p1: tensor<4x4xf32>, %p2: tensor<4xf32>, %p3: tensor<4xf32>)
      -> (tensor<4x4xf32>, tensor<4xf32>, tensor<4xf32>) {
    %e1 = rn.ema_update %a1, %p1 decay 9.900000e-01 {rn.subgraph = @EMA_UPDATE} : tensor<4x4xf32>
    %e2 = rn.ema_update %a2, %p2 decay 5.000000e-01 {rn.subgraph = @EMA_UPDATE} : tensor<4xf32>
    %e3 = rn.ema_update %a3, %p3 decay 9.900000e-01 {rn.subgraph = @EMA_UPDATE} : tensor<4xf32>
    return %e1, %e2, %e3 : tensor<4x4xf32>, tensor<4xf32>, tensor<4xf32>
  }
}
