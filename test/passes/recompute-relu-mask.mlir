// RUN: rn-opt %s --split-input-file --rn-recompute-relu-mask | FileCheck %s

// The pipeline: ResNet-18's 9 CBR backward ops with a ReLU (the stem and
// each block's first convolution) recompute their masks, and the schedule
// still verifies; on by default (recompute-relu-mask=false reads the ReLU
// results).
// RUN: %python -m rn.models resnet18c --batch 2 | rn-opt --rn-training-pipeline="precision=f16" | FileCheck %s --check-prefix=PIPELINE
// RUN: %python -m rn.models resnet18c --batch 2 | rn-opt --rn-training-pipeline="precision=f16 recompute-relu-mask=false" | FileCheck %s --check-prefix=PIPELINE-OFF

// Tests the rewrite: the backward of a cbr_forward with a ReLU takes that
// forward's beta instead of its result (`relu_recompute`).

func.func @recomputed(%x: tensor<2x4x4x8xf32>, %w: tensor<8x3x3x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>,
                      %dy: tensor<2x4x4x8xf32>, %gw: tensor<8x3x3x8xf32>, %gg: tensor<8xf32>, %gb: tensor<8xf32>)
    -> (tensor<2x4x4x8xf32>, tensor<2x4x4x8xf32>, tensor<8x3x3x8xf32>, tensor<8xf32>, tensor<8xf32>) {
  %y, %c, %m, %s = rn.cbr_forward %x, %w, %g, %b stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 eps 1.000000e-05 relu : (tensor<2x4x4x8xf32>, tensor<8x3x3x8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x4x4x8xf32>, tensor<2x4x4x8xf32>, tensor<8xf32>, tensor<8xf32>)
  %dc, %grads:4 = rn.cbr_backward %dy, %x, %w, %c, %g, %m, %s, %gw, %gg, %gb relu %y stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 : (tensor<2x4x4x8xf32>, tensor<2x4x4x8xf32>, tensor<8x3x3x8xf32>, tensor<2x4x4x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8x3x3x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<2x4x4x8xf32>) -> (tensor<2x4x4x8xf32>, tensor<2x4x4x8xf32>, tensor<8x3x3x8xf32>, tensor<8xf32>, tensor<8xf32>)
  return %dc, %grads#0, %grads#1, %grads#2, %grads#3 : tensor<2x4x4x8xf32>, tensor<2x4x4x8xf32>, tensor<8x3x3x8xf32>, tensor<8xf32>, tensor<8xf32>
}

// CHECK-LABEL: func.func @recomputed
// CHECK-SAME:    %[[BETA:[a-z0-9]+]]: tensor<8xf32>, %{{[a-z0-9]+}}: tensor<2x4x4x8xf32>
// CHECK:         rn.cbr_forward
// CHECK-NEXT:    rn.cbr_backward {{.+}} relu_recompute %[[BETA]] stride [1, 1]
// CHECK-NOT:     relu %

// -----

// Tests the backward ops left alone: a ReLU result that no cbr_forward
// produced, one whose forward normalized with other statistics than the
// backward reads, and a backward without a ReLU.

func.func @kept(%x: tensor<2x4x4x8xf32>, %w: tensor<8x3x3x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>,
                %dy: tensor<2x4x4x8xf32>, %gw: tensor<8x3x3x8xf32>, %gg: tensor<8xf32>, %gb: tensor<8xf32>,
                %stored: tensor<2x4x4x8xf32>, %other_mean: tensor<8xf32>)
    -> (tensor<2x4x4x8xf32>, tensor<2x4x4x8xf32>, tensor<2x4x4x8xf32>) {
  %y, %c, %m, %s = rn.cbr_forward %x, %w, %g, %b stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 eps 1.000000e-05 relu : (tensor<2x4x4x8xf32>, tensor<8x3x3x8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x4x4x8xf32>, tensor<2x4x4x8xf32>, tensor<8xf32>, tensor<8xf32>)
  %dc1, %g1:4 = rn.cbr_backward %dy, %x, %w, %c, %g, %m, %s, %gw, %gg, %gb relu %stored stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 : (tensor<2x4x4x8xf32>, tensor<2x4x4x8xf32>, tensor<8x3x3x8xf32>, tensor<2x4x4x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8x3x3x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<2x4x4x8xf32>) -> (tensor<2x4x4x8xf32>, tensor<2x4x4x8xf32>, tensor<8x3x3x8xf32>, tensor<8xf32>, tensor<8xf32>)
  %dc2, %g2:4 = rn.cbr_backward %dy, %x, %w, %c, %g, %other_mean, %s, %gw, %gg, %gb relu %y stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 : (tensor<2x4x4x8xf32>, tensor<2x4x4x8xf32>, tensor<8x3x3x8xf32>, tensor<2x4x4x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8x3x3x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<2x4x4x8xf32>) -> (tensor<2x4x4x8xf32>, tensor<2x4x4x8xf32>, tensor<8x3x3x8xf32>, tensor<8xf32>, tensor<8xf32>)
  %dc3, %g3:4 = rn.cbr_backward %dy, %x, %w, %c, %g, %m, %s, %gw, %gg, %gb stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 : (tensor<2x4x4x8xf32>, tensor<2x4x4x8xf32>, tensor<8x3x3x8xf32>, tensor<2x4x4x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8x3x3x8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x4x4x8xf32>, tensor<2x4x4x8xf32>, tensor<8x3x3x8xf32>, tensor<8xf32>, tensor<8xf32>)
  return %dc1, %dc2, %dc3 : tensor<2x4x4x8xf32>, tensor<2x4x4x8xf32>, tensor<2x4x4x8xf32>
}

// CHECK-LABEL: func.func @kept
// CHECK-SAME:    %[[STORED:[a-z0-9_]+]]: tensor<2x4x4x8xf32>, %{{[a-z0-9_]+}}: tensor<8xf32>)
// CHECK:         %[[Y:.+]], %{{.+}}, %{{.+}}, %{{.+}} = rn.cbr_forward
// CHECK-NEXT:    rn.cbr_backward {{.+}} relu %[[STORED]] stride
// CHECK-NEXT:    rn.cbr_backward {{.+}} relu %[[Y]] stride
// CHECK-NEXT:    rn.cbr_backward {{.+}} %{{[a-z0-9_]+}} stride [1, 1]
// CHECK-NOT:     relu_recompute

// PIPELINE-LABEL: func.func @train_step
// PIPELINE-COUNT-9: rn.cbr_backward {{.+}} relu_recompute %{{[^ ]+}} stride
// PIPELINE-NOT:     rn.cbr_backward {{.+}} relu %
// PIPELINE-LABEL: func.func @eval_step
// PIPELINE-OFF-LABEL: func.func @train_step
// PIPELINE-OFF-NOT:   relu_recompute
// PIPELINE-OFF-COUNT-9: rn.cbr_backward {{.+}} relu %{{[^ ]+}} stride
// PIPELINE-OFF-LABEL: func.func @eval_step
