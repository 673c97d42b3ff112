// RUN: rn-opt %s --split-input-file --rn-fold-gradient-adds=max-stride=0 | FileCheck %s
// RUN: rn-opt %s --split-input-file --rn-fold-gradient-adds | FileCheck %s --check-prefix=STRIDE1

// The pipeline: ResNet-18's 8 junction adds fold into the cbr_backward of
// each block's first convolution (or of its downsampling shortcut) and the
// schedule still verifies; on by default (fold-gradient-adds=false keeps
// the adds).
// RUN: %python -m rn.models resnet18c --batch 2 | rn-opt --rn-training-pipeline="precision=f16" | FileCheck %s --check-prefix=PIPELINE
// RUN: %python -m rn.models resnet18c --batch 2 | rn-opt --rn-training-pipeline="precision=f16 fold-gradient-adds=false" | FileCheck %s --check-prefix=PIPELINE-OFF
// RUN: %python -m rn.models resnet18c --batch 2 | rn-opt --rn-training-pipeline="precision=f16 fold-gradient-adds-max-stride=0" | FileCheck %s --check-prefix=PIPELINE-ANY

// Tests the identity shortcut's junction: the add of the shortcut's
// gradient and a cbr_backward's input gradient becomes that input
// gradient's addend (`plus`), and its users read the cbr_backward's result.

func.func @identity(%dy: tensor<2x4x4x8xf32>, %x: tensor<2x4x4x8xf32>, %w: tensor<8x3x3x8xf32>, %c: tensor<2x4x4x8xf32>,
                    %g: tensor<8xf32>, %m: tensor<8xf32>, %s: tensor<8xf32>, %gw: tensor<8x3x3x8xf32>, %gg: tensor<8xf32>,
                    %gb: tensor<8xf32>, %shortcut: tensor<2x4x4x8xf32>) -> tensor<2x4x4x8xf32> {
  %dc, %grads:4 = rn.cbr_backward %dy, %x, %w, %c, %g, %m, %s, %gw, %gg, %gb stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 : (tensor<2x4x4x8xf32>, tensor<2x4x4x8xf32>, tensor<8x3x3x8xf32>, tensor<2x4x4x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8x3x3x8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x4x4x8xf32>, tensor<2x4x4x8xf32>, tensor<8x3x3x8xf32>, tensor<8xf32>, tensor<8xf32>)
  %sum = rn.add %shortcut, %grads#0 : tensor<2x4x4x8xf32>
  %r = rn.relu %sum : tensor<2x4x4x8xf32>
  return %r : tensor<2x4x4x8xf32>
}

// CHECK-LABEL: func.func @identity
// CHECK-SAME:    %[[SHORTCUT:[a-z0-9]+]]: tensor<2x4x4x8xf32>)
// CHECK-NEXT:    %{{.+}}, %[[GRADS_0:.+]], %[[GRADS_1:.+]], %[[GRADS_2:.+]], %[[GRADS_3:.+]] = rn.cbr_backward {{.+}} groups 1 plus %[[SHORTCUT]] :
// CHECK-NEXT:    rn.relu %[[GRADS_0]]
// CHECK-NOT:     rn.add

// -----

// Tests a downsampling junction, the sum of two input gradients: the add
// folds into the later producer, with the earlier one's gradient as the
// addend; and a conv2d_backward takes an addend too.

func.func @downsample(%dy: tensor<2x4x4x8xf32>, %x: tensor<2x4x4x8xf32>, %w1: tensor<8x1x1x8xf32>, %w2: tensor<8x3x3x8xf32>,
                      %gw1: tensor<8x1x1x8xf32>, %gw2: tensor<8x3x3x8xf32>) -> tensor<2x4x4x8xf32> {
  %dx1, %dw1 = rn.conv2d_backward %dy, %x, %w1, %gw1 stride [1, 1] pad [0, 0] dilation [1, 1] groups 1 : (tensor<2x4x4x8xf32>, tensor<2x4x4x8xf32>, tensor<8x1x1x8xf32>, tensor<8x1x1x8xf32>) -> (tensor<2x4x4x8xf32>, tensor<8x1x1x8xf32>)
  %dx2, %dw2 = rn.conv2d_backward %dy, %x, %w2, %gw2 stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 : (tensor<2x4x4x8xf32>, tensor<2x4x4x8xf32>, tensor<8x3x3x8xf32>, tensor<8x3x3x8xf32>) -> (tensor<2x4x4x8xf32>, tensor<8x3x3x8xf32>)
  %sum = rn.add %dx2, %dx1 : tensor<2x4x4x8xf32>
  return %sum : tensor<2x4x4x8xf32>
}

// CHECK-LABEL: func.func @downsample
// CHECK-NEXT:    %[[DX1_0:.+]], %[[DX1_1:.+]] = rn.conv2d_backward {{.+}} :
// CHECK-NEXT:    %[[DX2_0:.+]], %[[DX2_1:.+]] = rn.conv2d_backward {{.+}} plus %[[DX1_0]] :
// CHECK-NEXT:    return %[[DX2_0]]

// -----

// Tests a strided data gradient: it takes the addend with max-stride=0, and
// by default (max-stride=1) the add stays (cuDNN's strided dgrad-with-addend
// plans cost more than the add, docs/scheduling.md).

func.func @strided(%dy: tensor<2x4x4x8xf32>, %x: tensor<2x8x8x8xf32>, %w: tensor<8x3x3x8xf32>, %gw: tensor<8x3x3x8xf32>,
                   %shortcut: tensor<2x8x8x8xf32>) -> tensor<2x8x8x8xf32> {
  %dx, %dw = rn.conv2d_backward %dy, %x, %w, %gw stride [2, 2] pad [1, 1] dilation [1, 1] groups 1 : (tensor<2x4x4x8xf32>, tensor<2x8x8x8xf32>, tensor<8x3x3x8xf32>, tensor<8x3x3x8xf32>) -> (tensor<2x8x8x8xf32>, tensor<8x3x3x8xf32>)
  %sum = rn.add %shortcut, %dx : tensor<2x8x8x8xf32>
  return %sum : tensor<2x8x8x8xf32>
}

// CHECK-LABEL: func.func @strided
// CHECK:         rn.conv2d_backward {{.+}} stride [2, 2] {{.+}} plus
// CHECK-NOT:     rn.add

// STRIDE1-LABEL: func.func @strided
// STRIDE1:         rn.conv2d_backward {{.+}} stride [2, 2] {{.+}} :
// STRIDE1-NEXT:    rn.add

// -----

// Tests the adds left alone: an input gradient with another reader, a
// term defined after the producer of the other, and a sum of two values
// no backward op produces.

func.func @kept(%dy: tensor<2x4x4x8xf32>, %x: tensor<2x4x4x8xf32>, %w: tensor<8x3x3x8xf32>, %gw: tensor<8x3x3x8xf32>,
                %y: tensor<2x4x4x8xf32>) -> (tensor<2x4x4x8xf32>, tensor<2x4x4x8xf32>, tensor<2x4x4x8xf32>, tensor<8x3x3x8xf32>) {
  %dx, %dw = rn.conv2d_backward %dy, %x, %w, %gw stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 : (tensor<2x4x4x8xf32>, tensor<2x4x4x8xf32>, tensor<8x3x3x8xf32>, tensor<8x3x3x8xf32>) -> (tensor<2x4x4x8xf32>, tensor<8x3x3x8xf32>)
  %other = rn.add %x, %dx : tensor<2x4x4x8xf32>
  %twice = rn.add %dx, %other : tensor<2x4x4x8xf32>
  %dx2, %dw2 = rn.conv2d_backward %dy, %x, %w, %gw stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 : (tensor<2x4x4x8xf32>, tensor<2x4x4x8xf32>, tensor<8x3x3x8xf32>, tensor<8x3x3x8xf32>) -> (tensor<2x4x4x8xf32>, tensor<8x3x3x8xf32>)
  %later = rn.relu %y : tensor<2x4x4x8xf32>
  %late = rn.add %dx2, %later : tensor<2x4x4x8xf32>
  %plain = rn.add %x, %y : tensor<2x4x4x8xf32>
  return %twice, %late, %plain, %dw2 : tensor<2x4x4x8xf32>, tensor<2x4x4x8xf32>, tensor<2x4x4x8xf32>, tensor<8x3x3x8xf32>
}

// CHECK-LABEL: func.func @kept
// CHECK-NOT:     plus
// CHECK-COUNT-4: rn.add

// PIPELINE-LABEL: func.func @train_step
// PIPELINE-COUNT-5: rn.cbr_backward {{.+}} plus %{{[^ ]+}} {
// PIPELINE-NOT:     rn.cbr_backward {{.+}} plus
// PIPELINE-LABEL: func.func @eval_step
// PIPELINE-OFF-LABEL: func.func @train_step
// PIPELINE-OFF-NOT:   plus
// PIPELINE-OFF-COUNT-8: rn.add
// The three downsampling junctions' main-path data gradients are strided:
// with fold-gradient-adds-max-stride=0 they fold too.
// PIPELINE-ANY-LABEL: func.func @train_step
// PIPELINE-ANY-COUNT-8: rn.cbr_backward {{.+}} plus %{{[^ ]+}} {
// PIPELINE-ANY-NOT:     rn.cbr_backward {{.+}} plus
// PIPELINE-ANY-LABEL: func.func @eval_step
