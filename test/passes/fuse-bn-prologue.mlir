// RUN: rn-opt %s --split-input-file --verify-diagnostics --rn-fuse-bn-prologue | FileCheck %s

// The pipeline (fuse-bn-prologue=true, off by default): ResNet-50's 16
// bottleneck blocks each move their first CBR's apply into the 3x3
// convolution's prologue (the second CBR feeds a plain conv2d, the stem a
// max pool: both kept), VGG-11's three pairs of convolutions without a pool
// between them do, and the schedules verify; the result parses again.
// RUN: %python -m rn.models resnet50 --batch 2 | rn-opt --rn-training-pipeline="precision=f16 fuse-bn-prologue=true" 2>/dev/null > %t.resnet50
// RUN: rn-opt %t.resnet50 | FileCheck %s --check-prefix=RESNET50
// RUN: grep -c "rn.bn_scale_bias" %t.resnet50 | FileCheck %s --check-prefix=SIXTEEN
// RUN: grep -c "rn.cbr_forward .* prologue %" %t.resnet50 | FileCheck %s --check-prefix=SIXTEEN
// RUN: grep -c "input_prologue %" %t.resnet50 | FileCheck %s --check-prefix=SIXTEEN
// RUN: grep -c "relu_recompute %[^ ]* prologue_mask" %t.resnet50 | FileCheck %s --check-prefix=SIXTEEN
// RUN: %python -m rn.models vgg11c --batch 2 | rn-opt --rn-training-pipeline="precision=f16 fuse-bn-prologue=true" 2>/dev/null | rn-opt | FileCheck %s --check-prefix=VGG11
// RUN: %python -m rn.models vgg11c --batch 2 | rn-opt --rn-training-pipeline="precision=f16" | FileCheck %s --check-prefix=OFF

// Tests a CBR read by the next CBR: it becomes conv_bn_stats + bn_scale_bias
// (f16, from its statistics, gamma and beta), the reader and the reader's
// backward take its conv_output with the prologue, and its own backward
// recomputes its mask from beta in the prologue's rounding.

func.func @chain(%x: tensor<2x4x4x8xf16>, %w1: tensor<8x3x3x8xf16>, %g1: tensor<8xf32>, %b1: tensor<8xf32>,
                 %w2: tensor<16x1x1x8xf16>, %g2: tensor<16xf32>, %b2: tensor<16xf32>,
                 %dy: tensor<2x4x4x16xf16>, %gw1: tensor<8x3x3x8xf16>, %gg1: tensor<8xf32>, %gb1: tensor<8xf32>,
                 %gw2: tensor<16x1x1x8xf16>, %gg2: tensor<16xf32>, %gb2: tensor<16xf32>)
    -> (tensor<2x4x4x16xf16>, tensor<8x3x3x8xf16>, tensor<16x1x1x8xf16>) {
  %y1, %c1, %m1, %s1 = rn.cbr_forward %x, %w1, %g1, %b1 stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 eps 1.000000e-05 relu : (tensor<2x4x4x8xf16>, tensor<8x3x3x8xf16>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x4x4x8xf16>, tensor<2x4x4x8xf16>, tensor<8xf32>, tensor<8xf32>)
  %y2, %c2, %m2, %s2 = rn.cbr_forward %y1, %w2, %g2, %b2 stride [1, 1] pad [0, 0] dilation [1, 1] groups 1 eps 1.000000e-05 : (tensor<2x4x4x8xf16>, tensor<16x1x1x8xf16>, tensor<16xf32>, tensor<16xf32>) -> (tensor<2x4x4x16xf16>, tensor<2x4x4x16xf16>, tensor<16xf32>, tensor<16xf32>)
  %dc2, %r2:4 = rn.cbr_backward %dy, %y1, %w2, %c2, %g2, %m2, %s2, %gw2, %gg2, %gb2 stride [1, 1] pad [0, 0] dilation [1, 1] groups 1 : (tensor<2x4x4x16xf16>, tensor<2x4x4x8xf16>, tensor<16x1x1x8xf16>, tensor<2x4x4x16xf16>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16x1x1x8xf16>, tensor<16xf32>, tensor<16xf32>) -> (tensor<2x4x4x16xf16>, tensor<2x4x4x8xf16>, tensor<16x1x1x8xf16>, tensor<16xf32>, tensor<16xf32>)
  %dc1, %r1:3 = rn.cbr_backward %r2#0, %x, %w1, %c1, %g1, %m1, %s1, %gw1, %gg1, %gb1 relu %y1 stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 : (tensor<2x4x4x8xf16>, tensor<2x4x4x8xf16>, tensor<8x3x3x8xf16>, tensor<2x4x4x8xf16>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8x3x3x8xf16>, tensor<8xf32>, tensor<8xf32>, tensor<2x4x4x8xf16>) -> (tensor<2x4x4x8xf16>, tensor<8x3x3x8xf16>, tensor<8xf32>, tensor<8xf32>)
  return %y2, %r1#0, %r2#1 : tensor<2x4x4x16xf16>, tensor<8x3x3x8xf16>, tensor<16x1x1x8xf16>
}

// CHECK-LABEL: func.func @chain
// CHECK-SAME:    %[[X:[a-z0-9]+]]: tensor<2x4x4x8xf16>, %[[W1:[a-z0-9]+]]: tensor<8x3x3x8xf16>, %[[G1:[a-z0-9]+]]: tensor<8xf32>, %[[B1:[a-z0-9]+]]: tensor<8xf32>,
// CHECK-SAME:    %[[W2:[a-z0-9]+]]: tensor<16x1x1x8xf16>
// CHECK:         %[[C1:.+]], %[[M1:.+]], %[[S1:.+]] = rn.conv_bn_stats %[[X]], %[[W1]] stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 eps 1.000000e-05 : (tensor<2x4x4x8xf16>, tensor<8x3x3x8xf16>) -> (tensor<2x4x4x8xf16>, tensor<8xf32>, tensor<8xf32>)
// CHECK-NEXT:    %[[SCALE:.+]], %[[BIAS:.+]] = rn.bn_scale_bias %[[M1]], %[[S1]], %[[G1]], %[[B1]] : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<8xf16>, tensor<8xf16>)
// CHECK-NEXT:    rn.cbr_forward %[[C1]], %[[W2]], %{{.+}}, %{{.+}} prologue %[[SCALE]], %[[BIAS]] stride [1, 1] pad [0, 0] dilation [1, 1] groups 1 eps 1.000000e-05 : (tensor<2x4x4x8xf16>, tensor<16x1x1x8xf16>, tensor<16xf32>, tensor<16xf32>, tensor<8xf16>, tensor<8xf16>) ->
// CHECK-NEXT:    rn.cbr_backward %{{.+}}, %[[C1]], %[[W2]], {{.+}} input_prologue %[[SCALE]], %[[BIAS]] stride [1, 1] pad [0, 0] dilation [1, 1] groups 1 :
// CHECK-NEXT:    rn.cbr_backward %{{.+}}, %[[X]], %[[W1]], %[[C1]], %[[G1]], %[[M1]], %[[S1]], %{{.+}}, %{{.+}}, %{{.+}} relu_recompute %[[B1]] prologue_mask stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 :

// -----

// Tests a chain of three CBRs: the second, given the first one's prologue,
// becomes a conv_bn_stats with that prologue and gives its own to the
// third, which keeps its apply (its result is returned); each backward
// takes its forward's prologue and mask.

func.func @three(%x: tensor<2x4x4x8xf16>, %w: tensor<8x3x3x8xf16>, %g: tensor<8xf32>, %b1: tensor<8xf32>, %b2: tensor<8xf32>, %b3: tensor<8xf32>,
                 %dy: tensor<2x4x4x8xf16>, %gw: tensor<8x3x3x8xf16>, %gg: tensor<8xf32>, %gb: tensor<8xf32>)
    -> (tensor<2x4x4x8xf16>, tensor<8x3x3x8xf16>) {
  %y1, %c1, %m1, %s1 = rn.cbr_forward %x, %w, %g, %b1 stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 eps 1.000000e-05 relu : (tensor<2x4x4x8xf16>, tensor<8x3x3x8xf16>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x4x4x8xf16>, tensor<2x4x4x8xf16>, tensor<8xf32>, tensor<8xf32>)
  %y2, %c2, %m2, %s2 = rn.cbr_forward %y1, %w, %g, %b2 stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 eps 1.000000e-05 relu : (tensor<2x4x4x8xf16>, tensor<8x3x3x8xf16>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x4x4x8xf16>, tensor<2x4x4x8xf16>, tensor<8xf32>, tensor<8xf32>)
  // expected-remark@+1 {{not moving the batch norm apply into a prologue: the ReLU result is also read by 'func.return'}}
  %y3, %c3, %m3, %s3 = rn.cbr_forward %y2, %w, %g, %b3 stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 eps 1.000000e-05 relu : (tensor<2x4x4x8xf16>, tensor<8x3x3x8xf16>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x4x4x8xf16>, tensor<2x4x4x8xf16>, tensor<8xf32>, tensor<8xf32>)
  %dc3, %r3:4 = rn.cbr_backward %dy, %y2, %w, %c3, %g, %m3, %s3, %gw, %gg, %gb relu %y3 stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 : (tensor<2x4x4x8xf16>, tensor<2x4x4x8xf16>, tensor<8x3x3x8xf16>, tensor<2x4x4x8xf16>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8x3x3x8xf16>, tensor<8xf32>, tensor<8xf32>, tensor<2x4x4x8xf16>) -> (tensor<2x4x4x8xf16>, tensor<2x4x4x8xf16>, tensor<8x3x3x8xf16>, tensor<8xf32>, tensor<8xf32>)
  %dc2, %r2:4 = rn.cbr_backward %r3#0, %y1, %w, %c2, %g, %m2, %s2, %r3#1, %r3#2, %r3#3 relu %y2 stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 : (tensor<2x4x4x8xf16>, tensor<2x4x4x8xf16>, tensor<8x3x3x8xf16>, tensor<2x4x4x8xf16>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8x3x3x8xf16>, tensor<8xf32>, tensor<8xf32>, tensor<2x4x4x8xf16>) -> (tensor<2x4x4x8xf16>, tensor<2x4x4x8xf16>, tensor<8x3x3x8xf16>, tensor<8xf32>, tensor<8xf32>)
  %dc1, %r1:3 = rn.cbr_backward %r2#0, %x, %w, %c1, %g, %m1, %s1, %r2#1, %r2#2, %r2#3 relu %y1 stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 : (tensor<2x4x4x8xf16>, tensor<2x4x4x8xf16>, tensor<8x3x3x8xf16>, tensor<2x4x4x8xf16>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8x3x3x8xf16>, tensor<8xf32>, tensor<8xf32>, tensor<2x4x4x8xf16>) -> (tensor<2x4x4x8xf16>, tensor<8x3x3x8xf16>, tensor<8xf32>, tensor<8xf32>)
  return %y3, %r1#0 : tensor<2x4x4x8xf16>, tensor<8x3x3x8xf16>
}

// CHECK-LABEL: func.func @three
// CHECK-SAME:    %[[X:[a-z0-9]+]]: tensor<2x4x4x8xf16>, %{{[a-z0-9]+}}: tensor<8x3x3x8xf16>, %{{[a-z0-9]+}}: tensor<8xf32>, %[[B1:[a-z0-9]+]]: tensor<8xf32>, %[[B2:[a-z0-9]+]]: tensor<8xf32>, %[[B3:[a-z0-9]+]]: tensor<8xf32>
// CHECK:         %[[C1:.+]], %[[M1:.+]], %[[S1:.+]] = rn.conv_bn_stats %[[X]], %{{[a-z0-9]+}} stride
// CHECK-NEXT:    %[[SCALE1:.+]], %[[BIAS1:.+]] = rn.bn_scale_bias %[[M1]], %[[S1]], %{{[a-z0-9]+}}, %[[B1]] :
// CHECK-NEXT:    %[[C2:.+]], %[[M2:.+]], %[[S2:.+]] = rn.conv_bn_stats %[[C1]], %{{[a-z0-9]+}} prologue %[[SCALE1]], %[[BIAS1]] stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 eps 1.000000e-05 : (tensor<2x4x4x8xf16>, tensor<8x3x3x8xf16>, tensor<8xf16>, tensor<8xf16>) -> (tensor<2x4x4x8xf16>, tensor<8xf32>, tensor<8xf32>)
// CHECK-NEXT:    %[[SCALE2:.+]], %[[BIAS2:.+]] = rn.bn_scale_bias %[[M2]], %[[S2]], %{{[a-z0-9]+}}, %[[B2]] :
// CHECK-NEXT:    %[[Y3:.+]], %{{.+}}, %{{.+}}, %{{.+}} = rn.cbr_forward %[[C2]], {{.+}} prologue %[[SCALE2]], %[[BIAS2]] stride {{.+}} relu :
// CHECK-NEXT:    rn.cbr_backward %{{.+}}, %[[C2]], {{.+}} relu %[[Y3]] input_prologue %[[SCALE2]], %[[BIAS2]] stride
// CHECK-NEXT:    rn.cbr_backward %{{.+}}, %[[C1]], {{.+}} relu_recompute %[[B2]] prologue_mask input_prologue %[[SCALE1]], %[[BIAS1]] stride
// CHECK-NEXT:    rn.cbr_backward %{{.+}}, %[[X]], {{.+}} relu_recompute %[[B1]] prologue_mask stride
// CHECK-NEXT:    return %[[Y3]]

// -----

// Tests a backward whose mask rn-recompute-relu-mask already recomputes
// from beta: it gains prologue_mask.

func.func @recomputed(%x: tensor<2x4x4x8xf16>, %w: tensor<8x3x3x8xf16>, %g: tensor<8xf32>, %b1: tensor<8xf32>, %b2: tensor<8xf32>,
                      %dy: tensor<2x4x4x8xf16>, %gw: tensor<8x3x3x8xf16>, %gg: tensor<8xf32>, %gb: tensor<8xf32>)
    -> (tensor<2x4x4x8xf16>, tensor<8x3x3x8xf16>) {
  %y1, %c1, %m1, %s1 = rn.cbr_forward %x, %w, %g, %b1 stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 eps 1.000000e-05 relu : (tensor<2x4x4x8xf16>, tensor<8x3x3x8xf16>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x4x4x8xf16>, tensor<2x4x4x8xf16>, tensor<8xf32>, tensor<8xf32>)
  %y2, %c2, %m2, %s2 = rn.cbr_forward %y1, %w, %g, %b2 stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 eps 1.000000e-05 : (tensor<2x4x4x8xf16>, tensor<8x3x3x8xf16>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x4x4x8xf16>, tensor<2x4x4x8xf16>, tensor<8xf32>, tensor<8xf32>)
  %dc2, %r2:4 = rn.cbr_backward %dy, %y1, %w, %c2, %g, %m2, %s2, %gw, %gg, %gb stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 : (tensor<2x4x4x8xf16>, tensor<2x4x4x8xf16>, tensor<8x3x3x8xf16>, tensor<2x4x4x8xf16>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8x3x3x8xf16>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x4x4x8xf16>, tensor<2x4x4x8xf16>, tensor<8x3x3x8xf16>, tensor<8xf32>, tensor<8xf32>)
  %dc1, %r1:4 = rn.cbr_backward %r2#0, %x, %w, %c1, %g, %m1, %s1, %r2#1, %r2#2, %r2#3 relu_recompute %b1 stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 : (tensor<2x4x4x8xf16>, tensor<2x4x4x8xf16>, tensor<8x3x3x8xf16>, tensor<2x4x4x8xf16>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8x3x3x8xf16>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x4x4x8xf16>, tensor<2x4x4x8xf16>, tensor<8x3x3x8xf16>, tensor<8xf32>, tensor<8xf32>)
  return %y2, %r1#1 : tensor<2x4x4x8xf16>, tensor<8x3x3x8xf16>
}

// CHECK-LABEL: func.func @recomputed
// CHECK-SAME:    %[[B1:[a-z0-9]+]]: tensor<8xf32>, %{{[a-z0-9]+}}: tensor<8xf32>, %{{[a-z0-9]+}}: tensor<2x4x4x8xf16>
// CHECK:         rn.conv_bn_stats
// CHECK-NEXT:    rn.bn_scale_bias
// CHECK-NEXT:    rn.cbr_forward {{.+}} prologue
// CHECK-NEXT:    rn.cbr_backward {{.+}} input_prologue
// CHECK-NEXT:    rn.cbr_backward {{.+}} relu_recompute %[[B1]] prologue_mask stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 :

// -----

// Tests a CBR whose ReLU result an add also reads: it keeps its apply, and
// its reader its input.

func.func @add_reader(%x: tensor<2x4x4x8xf16>, %w: tensor<8x3x3x8xf16>, %g: tensor<8xf32>, %b: tensor<8xf32>)
    -> (tensor<2x4x4x8xf16>, tensor<2x4x4x8xf16>) {
  // expected-remark@+1 {{not moving the batch norm apply into a prologue: the ReLU result is also read by 'rn.add'}}
  %y1, %c1, %m1, %s1 = rn.cbr_forward %x, %w, %g, %b stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 eps 1.000000e-05 relu : (tensor<2x4x4x8xf16>, tensor<8x3x3x8xf16>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x4x4x8xf16>, tensor<2x4x4x8xf16>, tensor<8xf32>, tensor<8xf32>)
  %y2, %c2, %m2, %s2 = rn.cbr_forward %y1, %w, %g, %b stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 eps 1.000000e-05 : (tensor<2x4x4x8xf16>, tensor<8x3x3x8xf16>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x4x4x8xf16>, tensor<2x4x4x8xf16>, tensor<8xf32>, tensor<8xf32>)
  %sum = rn.add %y1, %y2 : tensor<2x4x4x8xf16>
  return %y2, %sum : tensor<2x4x4x8xf16>, tensor<2x4x4x8xf16>
}

// CHECK-LABEL: func.func @add_reader
// CHECK:         %[[Y1:.+]], %{{.+}}, %{{.+}}, %{{.+}} = rn.cbr_forward {{.+}} relu :
// CHECK-NEXT:    rn.cbr_forward %[[Y1]], %{{[a-z0-9]+}}, %{{[a-z0-9]+}}, %{{[a-z0-9]+}} stride
// CHECK-NOT:     rn.conv_bn_stats

// -----

// Tests a CBR with f32 activations: it keeps its apply (the prologue takes
// f16 scale and bias).

func.func @f32(%x: tensor<2x4x4x8xf32>, %w: tensor<8x3x3x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<2x4x4x8xf32> {
  // expected-remark@+1 {{not moving the batch norm apply into a prologue: the activations are f32 (the prologue takes f16 scale and bias)}}
  %y1, %c1, %m1, %s1 = rn.cbr_forward %x, %w, %g, %b stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 eps 1.000000e-05 relu : (tensor<2x4x4x8xf32>, tensor<8x3x3x8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x4x4x8xf32>, tensor<2x4x4x8xf32>, tensor<8xf32>, tensor<8xf32>)
  %y2, %c2, %m2, %s2 = rn.cbr_forward %y1, %w, %g, %b stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 eps 1.000000e-05 : (tensor<2x4x4x8xf32>, tensor<8x3x3x8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x4x4x8xf32>, tensor<2x4x4x8xf32>, tensor<8xf32>, tensor<8xf32>)
  return %y2 : tensor<2x4x4x8xf32>
}

// CHECK-LABEL: func.func @f32
// CHECK:         %[[Y1:.+]], %{{.+}}, %{{.+}}, %{{.+}} = rn.cbr_forward {{.+}} relu :
// CHECK-NEXT:    rn.cbr_forward %[[Y1]], %{{[a-z0-9]+}}, %{{[a-z0-9]+}}, %{{[a-z0-9]+}} stride
// CHECK-NOT:     rn.conv_bn_stats

// -----

// Tests a CBR read by a grouped CBR, which takes no prologue: it keeps its
// apply.

func.func @grouped_reader(%x: tensor<2x4x4x8xf16>, %w: tensor<8x3x3x8xf16>, %wg: tensor<8x3x3x4xf16>, %g: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<2x4x4x8xf16> {
  // expected-remark@+1 {{not moving the batch norm apply into a prologue: the ReLU result is also read by an 'rn.cbr_forward' with 2 groups (the prologue takes one)}}
  %y1, %c1, %m1, %s1 = rn.cbr_forward %x, %w, %g, %b stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 eps 1.000000e-05 relu : (tensor<2x4x4x8xf16>, tensor<8x3x3x8xf16>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x4x4x8xf16>, tensor<2x4x4x8xf16>, tensor<8xf32>, tensor<8xf32>)
  %y2, %c2, %m2, %s2 = rn.cbr_forward %y1, %wg, %g, %b stride [1, 1] pad [1, 1] dilation [1, 1] groups 2 eps 1.000000e-05 : (tensor<2x4x4x8xf16>, tensor<8x3x3x4xf16>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x4x4x8xf16>, tensor<2x4x4x8xf16>, tensor<8xf32>, tensor<8xf32>)
  return %y2 : tensor<2x4x4x8xf16>
}

// CHECK-LABEL: func.func @grouped_reader
// CHECK:         %[[Y1:.+]], %{{.+}}, %{{.+}}, %{{.+}} = rn.cbr_forward {{.+}} relu :
// CHECK-NEXT:    rn.cbr_forward %[[Y1]], %{{[a-z0-9]+}}, %{{[a-z0-9]+}}, %{{[a-z0-9]+}} stride [1, 1] pad [1, 1] dilation [1, 1] groups 2
// CHECK-NOT:     rn.conv_bn_stats

// -----

// Tests a CBR without relu, which is no candidate (no remark), and CBRs
// whose ReLU result no cbr_forward reads, whose readers include a
// cbr_backward of another convolution, or a cbr_forward that already has a
// prologue: all keep their apply.

func.func @no_relu(%x: tensor<2x4x4x8xf16>, %w: tensor<8x3x3x8xf16>, %g: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<2x4x4x8xf16> {
  %y1, %c1, %m1, %s1 = rn.cbr_forward %x, %w, %g, %b stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 eps 1.000000e-05 : (tensor<2x4x4x8xf16>, tensor<8x3x3x8xf16>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x4x4x8xf16>, tensor<2x4x4x8xf16>, tensor<8xf32>, tensor<8xf32>)
  %y2, %c2, %m2, %s2 = rn.cbr_forward %y1, %w, %g, %b stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 eps 1.000000e-05 : (tensor<2x4x4x8xf16>, tensor<8x3x3x8xf16>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x4x4x8xf16>, tensor<2x4x4x8xf16>, tensor<8xf32>, tensor<8xf32>)
  return %y2 : tensor<2x4x4x8xf16>
}

func.func @no_reader(%x: tensor<2x4x4x8xf16>, %w: tensor<8x3x3x8xf16>, %g: tensor<8xf32>, %b: tensor<8xf32>,
                     %dy: tensor<2x4x4x8xf16>) -> tensor<2x4x4x8xf16> {
  // expected-remark@+1 {{not moving the batch norm apply into a prologue: no 'rn.cbr_forward' reads the ReLU result}}
  %y1, %c1, %m1, %s1 = rn.cbr_forward %x, %w, %g, %b stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 eps 1.000000e-05 relu : (tensor<2x4x4x8xf16>, tensor<8x3x3x8xf16>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x4x4x8xf16>, tensor<2x4x4x8xf16>, tensor<8xf32>, tensor<8xf32>)
  %dc, %r:3 = rn.cbr_backward %dy, %x, %w, %c1, %g, %m1, %s1, %w, %g, %b relu %y1 stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 : (tensor<2x4x4x8xf16>, tensor<2x4x4x8xf16>, tensor<8x3x3x8xf16>, tensor<2x4x4x8xf16>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8x3x3x8xf16>, tensor<8xf32>, tensor<8xf32>, tensor<2x4x4x8xf16>) -> (tensor<2x4x4x8xf16>, tensor<8x3x3x8xf16>, tensor<8xf32>, tensor<8xf32>)
  return %dc : tensor<2x4x4x8xf16>
}

func.func @foreign_backward(%x: tensor<2x4x4x8xf16>, %w: tensor<8x3x3x8xf16>, %w2: tensor<8x3x3x8xf16>, %g: tensor<8xf32>, %b: tensor<8xf32>,
                            %dy: tensor<2x4x4x8xf16>) -> (tensor<2x4x4x8xf16>, tensor<2x4x4x8xf16>) {
  // expected-remark@+1 {{not moving the batch norm apply into a prologue: the ReLU result is also the input of an 'rn.cbr_backward' of no convolution that reads it}}
  %y1, %c1, %m1, %s1 = rn.cbr_forward %x, %w, %g, %b stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 eps 1.000000e-05 relu : (tensor<2x4x4x8xf16>, tensor<8x3x3x8xf16>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x4x4x8xf16>, tensor<2x4x4x8xf16>, tensor<8xf32>, tensor<8xf32>)
  %y2, %c2, %m2, %s2 = rn.cbr_forward %y1, %w, %g, %b stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 eps 1.000000e-05 : (tensor<2x4x4x8xf16>, tensor<8x3x3x8xf16>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x4x4x8xf16>, tensor<2x4x4x8xf16>, tensor<8xf32>, tensor<8xf32>)
  %dc, %r:3 = rn.cbr_backward %dy, %y1, %w2, %c2, %g, %m2, %s2, %w2, %g, %b stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 : (tensor<2x4x4x8xf16>, tensor<2x4x4x8xf16>, tensor<8x3x3x8xf16>, tensor<2x4x4x8xf16>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8x3x3x8xf16>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x4x4x8xf16>, tensor<8x3x3x8xf16>, tensor<8xf32>, tensor<8xf32>)
  return %y2, %dc : tensor<2x4x4x8xf16>, tensor<2x4x4x8xf16>
}

func.func @prologue_reader(%x: tensor<2x4x4x8xf16>, %w: tensor<8x3x3x8xf16>, %g: tensor<8xf32>, %b: tensor<8xf32>, %s: tensor<8xf16>) -> tensor<2x4x4x8xf16> {
  // expected-remark@+1 {{not moving the batch norm apply into a prologue: the ReLU result is also read by an 'rn.cbr_forward' that has a prologue}}
  %y1, %c1, %m1, %s1 = rn.cbr_forward %x, %w, %g, %b stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 eps 1.000000e-05 relu : (tensor<2x4x4x8xf16>, tensor<8x3x3x8xf16>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x4x4x8xf16>, tensor<2x4x4x8xf16>, tensor<8xf32>, tensor<8xf32>)
  %y2, %c2, %m2, %s2 = rn.cbr_forward %y1, %w, %g, %b prologue %s, %s stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 eps 1.000000e-05 : (tensor<2x4x4x8xf16>, tensor<8x3x3x8xf16>, tensor<8xf32>, tensor<8xf32>, tensor<8xf16>, tensor<8xf16>) -> (tensor<2x4x4x8xf16>, tensor<2x4x4x8xf16>, tensor<8xf32>, tensor<8xf32>)
  return %y2 : tensor<2x4x4x8xf16>
}

// CHECK-LABEL: func.func @no_relu
// CHECK-NOT:     rn.conv_bn_stats
// CHECK-LABEL: func.func @no_reader
// CHECK-NOT:     rn.conv_bn_stats
// CHECK:         rn.cbr_backward {{.+}} relu %{{[a-z0-9_]+}} stride
// CHECK-LABEL: func.func @foreign_backward
// CHECK-NOT:     rn.conv_bn_stats
// CHECK-NOT:     prologue
// CHECK-LABEL: func.func @prologue_reader
// CHECK-NOT:     rn.conv_bn_stats

// ResNet-50's training step has 16 conv_bn_stats and bn_scale_bias, 16
// cbr_forward ops with a prologue, as many backward ops with its scale and
// bias, and 16 with the prologue's mask; the evaluation step has none.
// RESNET50-LABEL:    func.func @train_step
// RESNET50-COUNT-16: rn.conv_bn_stats %{{[^ ]+}}, %{{[^ ]+}} stride
// RESNET50-NOT:      rn.conv_bn_stats
// RESNET50-LABEL:    func.func @eval_step
// RESNET50-NOT:      prologue
// RESNET50-NOT:      rn.bn_scale_bias
// SIXTEEN: {{^}}16{{$}}

// VGG11-LABEL:   func.func @train_step
// VGG11-COUNT-3: rn.cbr_forward %conv_output{{[_0-9]*}}, {{.+}} prologue %scale
// VGG11-NOT:     prologue %scale
// VGG11:         rn.cbr_backward {{.+}} input_prologue %scale
// VGG11:         rn.cbr_backward {{.+}} prologue_mask stride
// VGG11:         rn.cbr_backward {{.+}} input_prologue %scale
// VGG11:         rn.cbr_backward {{.+}} prologue_mask stride
// VGG11:         rn.cbr_backward {{.+}} input_prologue %scale
// VGG11:         rn.cbr_backward {{.+}} prologue_mask stride
// VGG11-NOT:     prologue
// VGG11-LABEL:   func.func @eval_step
// VGG11-NOT:     prologue

// OFF-NOT: rn.conv_bn_stats
// OFF-NOT: prologue %
// OFF-NOT: prologue_mask
