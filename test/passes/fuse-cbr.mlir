// RUN: rn-opt %s --split-input-file --verify-diagnostics --rn-fuse-cbr | FileCheck %s
// RUN: rn-opt %s --split-input-file --rn-fuse-cbr="enable=false" 2>&1 | FileCheck %s --check-prefix=OFF
// RUN: rn-opt %s --split-input-file --rn-fuse-cbr="prefer-residual-tails=false" 2>/dev/null | FileCheck %s --check-prefix=CONV-FIRST

// The whole pipeline on ResNet-18 (CIFAR): by default every batch norm is
// fused; the conv2d before each block's last batch norm stays unfused (its
// batch norm joins the residual tail), so each remaining conv2d_backward
// reads the input gradient of a bn_add_relu_backward.
// RUN: %python -m rn.models resnet18c --batch 2 | rn-opt --rn-build-training --rn-fuse-cbr | rn-opt | FileCheck %s --check-prefix=RESNET --implicit-check-not=rn.batch_norm_train --implicit-check-not=rn.batch_norm_backward --implicit-check-not=rn.batch_norm_inference --implicit-check-not="rn.relu " --implicit-check-not=rn.relu_backward --implicit-check-not="rn.conv2d_backward %{{[^i]}}"
// With the conv preferred, every conv2d and conv2d_backward is fused.
// RUN: %python -m rn.models resnet18c --batch 2 | rn-opt --rn-build-training="precision=f16" --rn-fuse-cbr="prefer-residual-tails=false" | rn-opt | FileCheck %s --check-prefix=RESNET-CONV --implicit-check-not="rn.conv2d " --implicit-check-not=rn.conv2d_backward --implicit-check-not=rn.batch_norm --implicit-check-not=rn.bn_add_relu

// RESNET-LABEL: func.func @train_step
// RESNET-SAME:    (%[[IMAGES:[a-z0-9]+]]: tensor<2x32x32x3xf32>
// RESNET:         %[[Y1:.+]], %[[C1:.+]], %[[MEAN1:.+]], %[[ISTD1:.+]] = rn.cbr_forward %[[IMAGES]], %{{.+}} stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 eps 1.000000e-05 relu
// RESNET:         rn.conv2d %{{.+}} stride [1, 1] pad [1, 1]
// RESNET:         rn.bn_add_relu %{{.+}} shortcut %[[Y1]] eps 1.000000e-05
// The projection shortcut of a downsampling block: conv + bn without relu.
// RESNET:         %[[PROJ:.+]], %{{.+}}, %{{.+}}, %{{.+}} = rn.cbr_forward %{{.+}} stride [2, 2] pad [0, 0] dilation [1, 1] groups 1 eps 1.000000e-05 :
// RESNET:         rn.bn_add_relu %{{.+}} shortcut %[[PROJ]]
// RESNET:         rn.bn_add_relu_backward
// RESNET:         rn.cbr_backward
// The first layer: no input gradient, running statistics from the fused op.
// RESNET:         rn.cbr_backward %{{.+}}, %[[IMAGES]], %{{.+}}, %[[C1]], %{{.+}}, %[[MEAN1]], %[[ISTD1]], %{{.+}}, %{{.+}}, %{{.+}} relu %[[Y1]] stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 :
// RESNET:         rn.update_running_stats %{{.+}}, %{{.+}}, %[[MEAN1]], %[[ISTD1]]
// RESNET-LABEL: func.func @eval_step
// RESNET:         rn.cbr_inference {{.*}} relu
// RESNET:         rn.bn_add_relu_inference

// RESNET-CONV-LABEL: func.func @train_step
// RESNET-CONV:         rn.cbr_forward {{.*}} relu : (tensor<2x32x32x3xf16>, tensor<64x3x3x3xf16>, tensor<64xf32>, tensor<64xf32>)
// RESNET-CONV:         rn.cbr_forward {{.*}} eps 1.000000e-05 :
// RESNET-CONV:         rn.add
// RESNET-CONV:         rn.relu
// RESNET-CONV:         rn.relu_backward
// RESNET-CONV:         rn.cbr_backward {{.*}} groups 1 : {{.*}} -> (tensor<2x32x32x64xf16>, tensor<64x3x3x3xf16>, tensor<64xf32>, tensor<64xf32>)
// RESNET-CONV-LABEL: func.func @eval_step
// RESNET-CONV:         rn.cbr_inference

// Tests a chain of two conv-bn-relu layers, forward and backward: the
// first layer's backward has no input gradient; the second layer's conv
// attributes (stride, padding, groups) and epsilon are kept; the running
// statistics update reads the fused op's batch statistics.

func.func @chain(%x: tensor<2x4x4x3xf32>, %w1: tensor<4x3x3x3xf32>, %g1: tensor<4xf32>, %b1: tensor<4xf32>,
                 %w2: tensor<8x3x3x2xf32>, %g2: tensor<8xf32>, %b2: tensor<8xf32>,
                 %gw1: tensor<4x3x3x3xf32>, %gg1: tensor<4xf32>, %gb1: tensor<4xf32>,
                 %gw2: tensor<8x3x3x2xf32>, %gg2: tensor<8xf32>, %gb2: tensor<8xf32>,
                 %m1: tensor<4xf32>, %v1: tensor<4xf32>, %dy: tensor<2x2x2x8xf32>)
    -> (tensor<2x2x2x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>, tensor<4xf32>, tensor<8x3x3x2xf32>, tensor<8xf32>, tensor<8xf32>, tensor<4xf32>, tensor<4xf32>) {
  %c1 = rn.conv2d %x, %w1 stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 : (tensor<2x4x4x3xf32>, tensor<4x3x3x3xf32>) -> tensor<2x4x4x4xf32>
  %n1, %mean1, %istd1 = rn.batch_norm_train %c1, %g1, %b1 eps 1.000000e-05 : (tensor<2x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>)
  %r1 = rn.relu %n1 : tensor<2x4x4x4xf32>
  %c2 = rn.conv2d %r1, %w2 stride [2, 2] pad [1, 1] dilation [1, 1] groups 2 : (tensor<2x4x4x4xf32>, tensor<8x3x3x2xf32>) -> tensor<2x2x2x8xf32>
  %n2, %mean2, %istd2 = rn.batch_norm_train %c2, %g2, %b2 eps 1.000000e-03 : (tensor<2x2x2x8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x2x2x8xf32>, tensor<8xf32>, tensor<8xf32>)
  %r2 = rn.relu %n2 : tensor<2x2x2x8xf32>
  %d2 = rn.relu_backward %dy, %r2 : tensor<2x2x2x8xf32>
  %dc2, %dg2, %db2 = rn.batch_norm_backward %d2, %c2, %g2, %mean2, %istd2, %gg2, %gb2 : (tensor<2x2x2x8xf32>, tensor<2x2x2x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x2x2x8xf32>, tensor<8xf32>, tensor<8xf32>)
  %dx2, %dw2 = rn.conv2d_backward %dc2, %r1, %w2, %gw2 stride [2, 2] pad [1, 1] dilation [1, 1] groups 2 : (tensor<2x2x2x8xf32>, tensor<2x4x4x4xf32>, tensor<8x3x3x2xf32>, tensor<8x3x3x2xf32>) -> (tensor<2x4x4x4xf32>, tensor<8x3x3x2xf32>)
  %d1 = rn.relu_backward %dx2, %r1 : tensor<2x4x4x4xf32>
  %dc1, %dg1, %db1 = rn.batch_norm_backward %d1, %c1, %g1, %mean1, %istd1, %gg1, %gb1 : (tensor<2x4x4x4xf32>, tensor<2x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>)
  %dw1 = rn.conv2d_backward %dc1, %x, %w1, %gw1 stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 : (tensor<2x4x4x4xf32>, tensor<2x4x4x3xf32>, tensor<4x3x3x3xf32>, tensor<4x3x3x3xf32>) -> tensor<4x3x3x3xf32>
  %rm, %rv = rn.update_running_stats %m1, %v1, %mean1, %istd1 eps 1.000000e-05 momentum 1.000000e-01 count 32 : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
  return %r2, %dw1, %dg1, %db1, %dw2, %dg2, %db2, %rm, %rv : tensor<2x2x2x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>, tensor<4xf32>, tensor<8x3x3x2xf32>, tensor<8xf32>, tensor<8xf32>, tensor<4xf32>, tensor<4xf32>
}

// CHECK-LABEL: func.func @chain
// CHECK-SAME:    (%[[X:[a-z0-9]+]]: tensor<2x4x4x3xf32>, %[[W1:[a-z0-9]+]]: tensor<4x3x3x3xf32>, %[[G1:[a-z0-9]+]]: tensor<4xf32>, %[[B1:[a-z0-9]+]]: tensor<4xf32>, %[[W2:[a-z0-9]+]]: tensor<8x3x3x2xf32>, %[[G2:[a-z0-9]+]]: tensor<8xf32>, %[[B2:[a-z0-9]+]]: tensor<8xf32>, %[[GW1:[a-z0-9]+]]: tensor<4x3x3x3xf32>, %[[GG1:[a-z0-9]+]]: tensor<4xf32>, %[[GB1:[a-z0-9]+]]: tensor<4xf32>, %[[GW2:[a-z0-9]+]]: tensor<8x3x3x2xf32>, %[[GG2:[a-z0-9]+]]: tensor<8xf32>, %[[GB2:[a-z0-9]+]]: tensor<8xf32>, %[[M1:[a-z0-9]+]]: tensor<4xf32>, %[[V1:[a-z0-9]+]]: tensor<4xf32>, %[[DY:[a-z0-9]+]]: tensor<2x2x2x8xf32>)
// CHECK-NEXT:    %[[R1:.+]], %[[C1:.+]], %[[MEAN1:.+]], %[[ISTD1:.+]] = rn.cbr_forward %[[X]], %[[W1]], %[[G1]], %[[B1]] stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 eps 1.000000e-05 relu : (tensor<2x4x4x3xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x4x4x4xf32>, tensor<2x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>)
// CHECK-NEXT:    %[[R2:.+]], %[[C2:.+]], %[[MEAN2:.+]], %[[ISTD2:.+]] = rn.cbr_forward %[[R1]], %[[W2]], %[[G2]], %[[B2]] stride [2, 2] pad [1, 1] dilation [1, 1] groups 2 eps 1.000000e-03 relu : (tensor<2x4x4x4xf32>, tensor<8x3x3x2xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x2x2x8xf32>, tensor<2x2x2x8xf32>, tensor<8xf32>, tensor<8xf32>)
// CHECK-NEXT:    %[[DC2:.+]], %[[G2S_0:.+]], %[[G2S_1:.+]], %[[G2S_2:.+]], %[[G2S_3:.+]] = rn.cbr_backward %[[DY]], %[[R1]], %[[W2]], %[[C2]], %[[G2]], %[[MEAN2]], %[[ISTD2]], %[[GW2]], %[[GG2]], %[[GB2]] relu %[[R2]] stride [2, 2] pad [1, 1] dilation [1, 1] groups 2 : (tensor<2x2x2x8xf32>, tensor<2x4x4x4xf32>, tensor<8x3x3x2xf32>, tensor<2x2x2x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8x3x3x2xf32>, tensor<8xf32>, tensor<8xf32>, tensor<2x2x2x8xf32>) -> (tensor<2x2x2x8xf32>, tensor<2x4x4x4xf32>, tensor<8x3x3x2xf32>, tensor<8xf32>, tensor<8xf32>)
// CHECK-NEXT:    %{{.+}}, %[[G1S_0:.+]], %[[G1S_1:.+]], %[[G1S_2:.+]] = rn.cbr_backward %[[G2S_0]], %[[X]], %[[W1]], %[[C1]], %[[G1]], %[[MEAN1]], %[[ISTD1]], %[[GW1]], %[[GG1]], %[[GB1]] relu %[[R1]] stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 : (tensor<2x4x4x4xf32>, tensor<2x4x4x3xf32>, tensor<4x3x3x3xf32>, tensor<2x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>, tensor<4xf32>, tensor<2x4x4x4xf32>) -> (tensor<2x4x4x4xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>, tensor<4xf32>)
// CHECK-NEXT:    %[[RM:.+]], %[[RV:.+]] = rn.update_running_stats %[[M1]], %[[V1]], %[[MEAN1]], %[[ISTD1]] eps 1.000000e-05 momentum 1.000000e-01 count 32
// CHECK-NEXT:    return %[[R2]], %[[G1S_0]], %[[G1S_1]], %[[G1S_2]], %[[G2S_1]], %[[G2S_2]], %[[G2S_3]], %[[RM]], %[[RV]] :

// Fusion off: the IR is unchanged.
// OFF-LABEL: func.func @chain
// OFF-NOT:     rn.cbr
// OFF:         rn.conv2d
// OFF-NEXT:    rn.batch_norm_train
// OFF-NEXT:    rn.relu
// OFF:         rn.relu_backward
// OFF-NEXT:    rn.batch_norm_backward
// OFF-NEXT:    rn.conv2d_backward
// OFF-NOT:     rn.cbr

// -----

// Tests conv + batch norm without a ReLU (the batch norm result feeds a
// pooling op), forward and backward.

func.func @no_relu(%x: tensor<2x4x4x4xf32>, %w: tensor<4x1x1x4xf32>, %g: tensor<4xf32>, %b: tensor<4xf32>,
                   %gw: tensor<4x1x1x4xf32>, %gg: tensor<4xf32>, %gb: tensor<4xf32>, %dy: tensor<2x4x4x4xf32>)
    -> (tensor<2x2x2x4xf32>, tensor<2x4x4x4xf32>, tensor<4x1x1x4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %c = rn.conv2d %x, %w stride [1, 1] pad [0, 0] dilation [1, 1] groups 1 : (tensor<2x4x4x4xf32>, tensor<4x1x1x4xf32>) -> tensor<2x4x4x4xf32>
  %n, %mean, %istd = rn.batch_norm_train %c, %g, %b eps 1.000000e-05 : (tensor<2x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>)
  %p = rn.max_pool2d %n kernel [2, 2] stride [2, 2] pad [0, 0] : tensor<2x4x4x4xf32> -> tensor<2x2x2x4xf32>
  %dc, %dg, %db = rn.batch_norm_backward %dy, %c, %g, %mean, %istd, %gg, %gb : (tensor<2x4x4x4xf32>, tensor<2x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>)
  %dx, %dw = rn.conv2d_backward %dc, %x, %w, %gw stride [1, 1] pad [0, 0] dilation [1, 1] groups 1 : (tensor<2x4x4x4xf32>, tensor<2x4x4x4xf32>, tensor<4x1x1x4xf32>, tensor<4x1x1x4xf32>) -> (tensor<2x4x4x4xf32>, tensor<4x1x1x4xf32>)
  return %p, %dx, %dw, %dg, %db : tensor<2x2x2x4xf32>, tensor<2x4x4x4xf32>, tensor<4x1x1x4xf32>, tensor<4xf32>, tensor<4xf32>
}

// CHECK-LABEL: func.func @no_relu
// CHECK-SAME:    (%[[X:[a-z0-9]+]]: tensor<2x4x4x4xf32>, %[[W:[a-z0-9]+]]: tensor<4x1x1x4xf32>, %[[G:[a-z0-9]+]]: tensor<4xf32>, %[[B:[a-z0-9]+]]: tensor<4xf32>, %[[GW:[a-z0-9]+]]: tensor<4x1x1x4xf32>, %[[GG:[a-z0-9]+]]: tensor<4xf32>, %[[GB:[a-z0-9]+]]: tensor<4xf32>, %[[DY:[a-z0-9]+]]: tensor<2x4x4x4xf32>)
// CHECK-NEXT:    %[[N:.+]], %[[C:.+]], %[[MEAN:.+]], %[[ISTD:.+]] = rn.cbr_forward %[[X]], %[[W]], %[[G]], %[[B]] stride [1, 1] pad [0, 0] dilation [1, 1] groups 1 eps 1.000000e-05 :
// CHECK-NEXT:    %[[P:.+]] = rn.max_pool2d %[[N]]
// CHECK-NEXT:    %{{.+}}, %[[GRADS_0:.+]], %[[GRADS_1:.+]], %[[GRADS_2:.+]], %[[GRADS_3:.+]] = rn.cbr_backward %[[DY]], %[[X]], %[[W]], %[[C]], %[[G]], %[[MEAN]], %[[ISTD]], %[[GW]], %[[GG]], %[[GB]] stride [1, 1] pad [0, 0] dilation [1, 1] groups 1 :
// CHECK-NEXT:    return %[[P]], %[[GRADS_0]], %[[GRADS_1]], %[[GRADS_2]], %[[GRADS_3]] :

// -----

// Tests the residual tail of a ResNet basic block with an identity
// shortcut: batch norm + add + relu and its backward fuse; the conv before
// that batch norm stays unfused, and the ReLU gradient reaches the shortcut
// as shortcut_grad. With prefer-residual-tails=false the conv takes the
// batch norm and add, relu and relu_backward stay.

func.func @residual(%x: tensor<2x4x4x4xf32>, %w1: tensor<4x3x3x4xf32>, %g1: tensor<4xf32>, %b1: tensor<4xf32>,
                    %w2: tensor<4x3x3x4xf32>, %g2: tensor<4xf32>, %b2: tensor<4xf32>,
                    %gw1: tensor<4x3x3x4xf32>, %gg1: tensor<4xf32>, %gb1: tensor<4xf32>,
                    %gw2: tensor<4x3x3x4xf32>, %gg2: tensor<4xf32>, %gb2: tensor<4xf32>,
                    %m2: tensor<4xf32>, %v2: tensor<4xf32>, %dy: tensor<2x4x4x4xf32>)
    -> (tensor<2x4x4x4xf32>, tensor<2x4x4x4xf32>, tensor<4x3x3x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4x3x3x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %c1 = rn.conv2d %x, %w1 stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 : (tensor<2x4x4x4xf32>, tensor<4x3x3x4xf32>) -> tensor<2x4x4x4xf32>
  %n1, %mean1, %istd1 = rn.batch_norm_train %c1, %g1, %b1 eps 1.000000e-05 : (tensor<2x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>)
  %r1 = rn.relu %n1 : tensor<2x4x4x4xf32>
  %c2 = rn.conv2d %r1, %w2 stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 : (tensor<2x4x4x4xf32>, tensor<4x3x3x4xf32>) -> tensor<2x4x4x4xf32>
  %n2, %mean2, %istd2 = rn.batch_norm_train %c2, %g2, %b2 eps 1.000000e-05 : (tensor<2x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>)
  %s = rn.add %n2, %x : tensor<2x4x4x4xf32>
  %y = rn.relu %s : tensor<2x4x4x4xf32>
  %ds = rn.relu_backward %dy, %y : tensor<2x4x4x4xf32>
  %dc2, %dg2, %db2 = rn.batch_norm_backward %ds, %c2, %g2, %mean2, %istd2, %gg2, %gb2 : (tensor<2x4x4x4xf32>, tensor<2x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>)
  %dr1, %dw2 = rn.conv2d_backward %dc2, %r1, %w2, %gw2 stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 : (tensor<2x4x4x4xf32>, tensor<2x4x4x4xf32>, tensor<4x3x3x4xf32>, tensor<4x3x3x4xf32>) -> (tensor<2x4x4x4xf32>, tensor<4x3x3x4xf32>)
  %dn1 = rn.relu_backward %dr1, %r1 : tensor<2x4x4x4xf32>
  %dc1, %dg1, %db1 = rn.batch_norm_backward %dn1, %c1, %g1, %mean1, %istd1, %gg1, %gb1 : (tensor<2x4x4x4xf32>, tensor<2x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>)
  %dx1, %dw1 = rn.conv2d_backward %dc1, %x, %w1, %gw1 stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 : (tensor<2x4x4x4xf32>, tensor<2x4x4x4xf32>, tensor<4x3x3x4xf32>, tensor<4x3x3x4xf32>) -> (tensor<2x4x4x4xf32>, tensor<4x3x3x4xf32>)
  %dx = rn.add %ds, %dx1 : tensor<2x4x4x4xf32>
  %rm, %rv = rn.update_running_stats %m2, %v2, %mean2, %istd2 eps 1.000000e-05 momentum 1.000000e-01 count 32 : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
  return %y, %dx, %dw1, %dg1, %db1, %dw2, %dg2, %db2, %rm, %rv : tensor<2x4x4x4xf32>, tensor<2x4x4x4xf32>, tensor<4x3x3x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4x3x3x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// CHECK-LABEL: func.func @residual
// CHECK-SAME:    (%[[X:[a-z0-9]+]]: tensor<2x4x4x4xf32>, %[[W1:[a-z0-9]+]]: tensor<4x3x3x4xf32>, %[[G1:[a-z0-9]+]]: tensor<4xf32>, %[[B1:[a-z0-9]+]]: tensor<4xf32>, %[[W2:[a-z0-9]+]]: tensor<4x3x3x4xf32>, %[[G2:[a-z0-9]+]]: tensor<4xf32>, %[[B2:[a-z0-9]+]]: tensor<4xf32>, %{{.+}}: tensor<4x3x3x4xf32>, %{{.+}}: tensor<4xf32>, %{{.+}}: tensor<4xf32>, %[[GW2:[a-z0-9]+]]: tensor<4x3x3x4xf32>, %[[GG2:[a-z0-9]+]]: tensor<4xf32>, %[[GB2:[a-z0-9]+]]: tensor<4xf32>, %[[M2:[a-z0-9]+]]: tensor<4xf32>, %[[V2:[a-z0-9]+]]: tensor<4xf32>, %[[DY:[a-z0-9]+]]: tensor<2x4x4x4xf32>)
// CHECK-NEXT:    %[[R1:.+]], %[[C1:.+]], %{{.+}}, %{{.+}} = rn.cbr_forward %[[X]], %[[W1]], %[[G1]], %[[B1]] {{.*}} relu
// CHECK-NEXT:    %[[C2:.+]] = rn.conv2d %[[R1]], %[[W2]]
// CHECK-NEXT:    %[[Y:.+]], %[[MEAN2:.+]], %[[ISTD2:.+]] = rn.bn_add_relu %[[C2]], %[[G2]], %[[B2]] shortcut %[[X]] eps 1.000000e-05 : (tensor<2x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<2x4x4x4xf32>) -> (tensor<2x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>)
// CHECK-NEXT:    %[[DC2:.+]], %[[DS:.+]], %[[DG2:.+]], %[[DB2:.+]] = rn.bn_add_relu_backward %[[DY]], %[[Y]], %[[C2]], %[[G2]], %[[MEAN2]], %[[ISTD2]], %[[GG2]], %[[GB2]] : (tensor<2x4x4x4xf32>, tensor<2x4x4x4xf32>, tensor<2x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x4x4x4xf32>, tensor<2x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>)
// CHECK-NEXT:    %[[DR1_0:.+]], %[[DR1_1:.+]] = rn.conv2d_backward %[[DC2]], %[[R1]], %[[W2]], %[[GW2]]
// CHECK-NEXT:    %{{.+}}, %[[G1S_0:.+]], %[[G1S_1:.+]], %[[G1S_2:.+]], %[[G1S_3:.+]] = rn.cbr_backward %[[DR1_0]], %[[X]], %[[W1]], %[[C1]], {{.*}} relu %[[R1]] {{.*}}
// CHECK-NEXT:    %[[DX:.+]] = rn.add %[[DS]], %[[G1S_0]]
// CHECK-NEXT:    %[[RM:.+]], %[[RV:.+]] = rn.update_running_stats %[[M2]], %[[V2]], %[[MEAN2]], %[[ISTD2]]
// CHECK-NEXT:    return %[[Y]], %[[DX]], %[[G1S_1]], %[[G1S_2]], %[[G1S_3]], %[[DR1_1]], %[[DG2]], %[[DB2]], %[[RM]], %[[RV]] :

// CONV-FIRST-LABEL: func.func @residual
// CONV-FIRST:         rn.cbr_forward {{.*}} relu
// CONV-FIRST-NEXT:    %[[N2:.+]], %{{.+}}, %{{.+}}, %{{.+}} = rn.cbr_forward {{.*}} eps 1.000000e-05 :
// CONV-FIRST-NEXT:    %[[S:.+]] = rn.add %[[N2]], %{{.+}}
// CONV-FIRST-NEXT:    %[[Y:.+]] = rn.relu %[[S]]
// CONV-FIRST-NEXT:    %[[DS:.+]] = rn.relu_backward %{{.+}}, %[[Y]]
// CONV-FIRST-NEXT:    rn.cbr_backward %[[DS]], {{.*}} groups 1
// CONV-FIRST-NEXT:    rn.cbr_backward {{.*}} relu {{.*}}
// CONV-FIRST-NEXT:    rn.add %[[DS]],
// CONV-FIRST-NOT:     rn.bn_add_relu

// -----

// Tests a downsampling block, whose add joins two batch norms: the left one
// forms the tail and the projection (conv + batch norm) is the shortcut.
// The projection's backward comes first and reads the ReLU gradient, so the
// tail's backward takes the place of the relu_backward, not of the
// batch_norm_backward.

func.func @downsample(%x: tensor<2x4x4x4xf32>, %w: tensor<8x3x3x4xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>,
                      %ws: tensor<8x1x1x4xf32>, %gs: tensor<8xf32>, %bs: tensor<8xf32>,
                      %gg: tensor<8xf32>, %gb: tensor<8xf32>, %gws: tensor<8x1x1x4xf32>, %ggs: tensor<8xf32>, %gbs: tensor<8xf32>,
                      %dy: tensor<2x2x2x8xf32>)
    -> (tensor<2x2x2x8xf32>, tensor<2x2x2x8xf32>, tensor<2x4x4x4xf32>, tensor<8xf32>, tensor<8xf32>) {
  %c = rn.conv2d %x, %w stride [2, 2] pad [1, 1] dilation [1, 1] groups 1 : (tensor<2x4x4x4xf32>, tensor<8x3x3x4xf32>) -> tensor<2x2x2x8xf32>
  %n, %mean, %istd = rn.batch_norm_train %c, %g, %b eps 1.000000e-05 : (tensor<2x2x2x8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x2x2x8xf32>, tensor<8xf32>, tensor<8xf32>)
  %cs = rn.conv2d %x, %ws stride [2, 2] pad [0, 0] dilation [1, 1] groups 1 : (tensor<2x4x4x4xf32>, tensor<8x1x1x4xf32>) -> tensor<2x2x2x8xf32>
  %ns, %means, %istds = rn.batch_norm_train %cs, %gs, %bs eps 1.000000e-05 : (tensor<2x2x2x8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x2x2x8xf32>, tensor<8xf32>, tensor<8xf32>)
  %s = rn.add %n, %ns : tensor<2x2x2x8xf32>
  %y = rn.relu %s : tensor<2x2x2x8xf32>
  %ds = rn.relu_backward %dy, %y : tensor<2x2x2x8xf32>
  %dcs, %dgs, %dbs = rn.batch_norm_backward %ds, %cs, %gs, %means, %istds, %ggs, %gbs : (tensor<2x2x2x8xf32>, tensor<2x2x2x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x2x2x8xf32>, tensor<8xf32>, tensor<8xf32>)
  %dxs, %dws = rn.conv2d_backward %dcs, %x, %ws, %gws stride [2, 2] pad [0, 0] dilation [1, 1] groups 1 : (tensor<2x2x2x8xf32>, tensor<2x4x4x4xf32>, tensor<8x1x1x4xf32>, tensor<8x1x1x4xf32>) -> (tensor<2x4x4x4xf32>, tensor<8x1x1x4xf32>)
  %dc, %dg, %db = rn.batch_norm_backward %ds, %c, %g, %mean, %istd, %gg, %gb : (tensor<2x2x2x8xf32>, tensor<2x2x2x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x2x2x8xf32>, tensor<8xf32>, tensor<8xf32>)
  return %y, %dc, %dxs, %dg, %db : tensor<2x2x2x8xf32>, tensor<2x2x2x8xf32>, tensor<2x4x4x4xf32>, tensor<8xf32>, tensor<8xf32>
}

// CHECK-LABEL: func.func @downsample
// CHECK-SAME:    (%[[X:[a-z0-9]+]]: tensor<2x4x4x4xf32>, %[[W:[a-z0-9]+]]: tensor<8x3x3x4xf32>
// CHECK-NEXT:    %[[C:.+]] = rn.conv2d %[[X]], %[[W]]
// CHECK-NEXT:    %[[NS:.+]], %[[CS:.+]], %{{.+}}, %{{.+}} = rn.cbr_forward %[[X]], {{.*}} stride [2, 2] pad [0, 0] dilation [1, 1] groups 1 eps 1.000000e-05 :
// CHECK-NEXT:    %[[Y:.+]], %{{.+}}, %{{.+}} = rn.bn_add_relu %[[C]], %{{.+}}, %{{.+}} shortcut %[[NS]]
// CHECK-NEXT:    %[[DC:.+]], %[[DS:.+]], %[[DG:.+]], %[[DB:.+]] = rn.bn_add_relu_backward %{{.+}}, %[[Y]], %[[C]],
// CHECK-NEXT:    %{{.+}}, %[[GS_0:.+]], %[[GS_1:.+]], %[[GS_2:.+]], %[[GS_3:.+]] = rn.cbr_backward %[[DS]], %[[X]], %{{.+}}, %[[CS]], {{.*}} stride [2, 2] pad [0, 0] dilation [1, 1] groups 1
// CHECK-NEXT:    return %[[Y]], %[[DC]], %[[GS_0]], %[[DG]], %[[DB]] :

// -----

// Tests the evaluation step: conv + batch norm + relu, and the residual
// tail, in inference form.

func.func @eval(%x: tensor<2x4x4x4xf32>, %w1: tensor<4x3x3x4xf32>, %g1: tensor<4xf32>, %b1: tensor<4xf32>, %m1: tensor<4xf32>, %v1: tensor<4xf32>,
                %w2: tensor<4x3x3x4xf32>, %g2: tensor<4xf32>, %b2: tensor<4xf32>, %m2: tensor<4xf32>, %v2: tensor<4xf32>) -> tensor<2x4x4x4xf32> {
  %c1 = rn.conv2d %x, %w1 stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 : (tensor<2x4x4x4xf32>, tensor<4x3x3x4xf32>) -> tensor<2x4x4x4xf32>
  %n1 = rn.batch_norm_inference %c1, %g1, %b1, %m1, %v1 eps 1.000000e-05 : (tensor<2x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x4x4x4xf32>
  %r1 = rn.relu %n1 : tensor<2x4x4x4xf32>
  %c2 = rn.conv2d %r1, %w2 stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 : (tensor<2x4x4x4xf32>, tensor<4x3x3x4xf32>) -> tensor<2x4x4x4xf32>
  %n2 = rn.batch_norm_inference %c2, %g2, %b2, %m2, %v2 eps 1.000000e-05 : (tensor<2x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x4x4x4xf32>
  %s = rn.add %x, %n2 : tensor<2x4x4x4xf32>
  %y = rn.relu %s : tensor<2x4x4x4xf32>
  return %y : tensor<2x4x4x4xf32>
}

// CHECK-LABEL: func.func @eval
// CHECK-SAME:    (%[[X:[a-z0-9]+]]: tensor<2x4x4x4xf32>, %[[W1:[a-z0-9]+]]: tensor<4x3x3x4xf32>, %[[G1:[a-z0-9]+]]: tensor<4xf32>, %[[B1:[a-z0-9]+]]: tensor<4xf32>, %[[M1:[a-z0-9]+]]: tensor<4xf32>, %[[V1:[a-z0-9]+]]: tensor<4xf32>, %[[W2:[a-z0-9]+]]: tensor<4x3x3x4xf32>, %[[G2:[a-z0-9]+]]: tensor<4xf32>, %[[B2:[a-z0-9]+]]: tensor<4xf32>, %[[M2:[a-z0-9]+]]: tensor<4xf32>, %[[V2:[a-z0-9]+]]: tensor<4xf32>)
// CHECK-NEXT:    %[[R1:.+]] = rn.cbr_inference %[[X]], %[[W1]], %[[G1]], %[[B1]], %[[M1]], %[[V1]] stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 eps 1.000000e-05 relu : (tensor<2x4x4x4xf32>, tensor<4x3x3x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x4x4x4xf32>
// CHECK-NEXT:    %[[C2:.+]] = rn.conv2d %[[R1]], %[[W2]]
// CHECK-NEXT:    %[[Y:.+]] = rn.bn_add_relu_inference %[[C2]], %[[G2]], %[[B2]], %[[M2]], %[[V2]] shortcut %[[X]] eps 1.000000e-05 : (tensor<2x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<2x4x4x4xf32>) -> tensor<2x4x4x4xf32>
// CHECK-NEXT:    return %[[Y]]

// CONV-FIRST-LABEL: func.func @eval
// CONV-FIRST:         rn.cbr_inference {{.*}} relu
// CONV-FIRST-NEXT:    %[[N2:.+]] = rn.cbr_inference {{.*}} eps 1.000000e-05 :
// CONV-FIRST-NEXT:    %[[S:.+]] = rn.add %{{.+}}, %[[N2]]
// CONV-FIRST-NEXT:    rn.relu %[[S]]

// -----

// Tests f16 mixed precision: f16 activations, filters and filter gradients
// with f32 batch norm parameters, statistics and gradients.

func.func @mixed(%x: tensor<2x4x4x3xf16>, %w: tensor<4x3x3x3xf16>, %g: tensor<4xf32>, %b: tensor<4xf32>,
                 %gw: tensor<4x3x3x3xf16>, %gg: tensor<4xf32>, %gb: tensor<4xf32>, %dy: tensor<2x4x4x4xf16>)
    -> (tensor<2x4x4x4xf16>, tensor<4x3x3x3xf16>, tensor<4xf32>, tensor<4xf32>) {
  %c = rn.conv2d %x, %w stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 : (tensor<2x4x4x3xf16>, tensor<4x3x3x3xf16>) -> tensor<2x4x4x4xf16>
  %n, %mean, %istd = rn.batch_norm_train %c, %g, %b eps 1.000000e-05 : (tensor<2x4x4x4xf16>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x4x4x4xf16>, tensor<4xf32>, tensor<4xf32>)
  %r = rn.relu %n : tensor<2x4x4x4xf16>
  %d = rn.relu_backward %dy, %r : tensor<2x4x4x4xf16>
  %dc, %dg, %db = rn.batch_norm_backward %d, %c, %g, %mean, %istd, %gg, %gb : (tensor<2x4x4x4xf16>, tensor<2x4x4x4xf16>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x4x4x4xf16>, tensor<4xf32>, tensor<4xf32>)
  %dw = rn.conv2d_backward %dc, %x, %w, %gw stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 : (tensor<2x4x4x4xf16>, tensor<2x4x4x3xf16>, tensor<4x3x3x3xf16>, tensor<4x3x3x3xf16>) -> tensor<4x3x3x3xf16>
  return %r, %dw, %dg, %db : tensor<2x4x4x4xf16>, tensor<4x3x3x3xf16>, tensor<4xf32>, tensor<4xf32>
}

// CHECK-LABEL: func.func @mixed
// CHECK-NEXT:    rn.cbr_forward {{.*}} relu : (tensor<2x4x4x3xf16>, tensor<4x3x3x3xf16>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x4x4x4xf16>, tensor<2x4x4x4xf16>, tensor<4xf32>, tensor<4xf32>)
// CHECK-NEXT:    rn.cbr_backward {{.*}} : (tensor<2x4x4x4xf16>, tensor<2x4x4x3xf16>, tensor<4x3x3x3xf16>, tensor<2x4x4x4xf16>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4x3x3x3xf16>, tensor<4xf32>, tensor<4xf32>, tensor<2x4x4x4xf16>) -> (tensor<2x4x4x4xf16>, tensor<4x3x3x3xf16>, tensor<4xf32>, tensor<4xf32>)
// CHECK-NEXT:    return

// -----

// Tests that a conv output with another user is not fused at inference,
// where the fused op does not return it.

func.func @eval_conv_output_used(%x: tensor<2x4x4x4xf32>, %w: tensor<4x3x3x4xf32>, %g: tensor<4xf32>, %b: tensor<4xf32>, %m: tensor<4xf32>, %v: tensor<4xf32>) -> (tensor<2x4x4x4xf32>, tensor<2x4x4x4xf32>) {
  // expected-remark@+1 {{not fusing: the conv2d result has another user}}
  %c = rn.conv2d %x, %w stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 : (tensor<2x4x4x4xf32>, tensor<4x3x3x4xf32>) -> tensor<2x4x4x4xf32>
  %n = rn.batch_norm_inference %c, %g, %b, %m, %v eps 1.000000e-05 : (tensor<2x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x4x4x4xf32>
  %r = rn.relu %n : tensor<2x4x4x4xf32>
  return %r, %c : tensor<2x4x4x4xf32>, tensor<2x4x4x4xf32>
}

// CHECK-LABEL: func.func @eval_conv_output_used
// CHECK-NEXT:    rn.conv2d
// CHECK-NEXT:    rn.batch_norm_inference
// CHECK-NEXT:    rn.relu

// -----

// Tests that a training conv output with another user still fuses (the
// fused op returns it), but its gradient then reaches the conv2d_backward
// through a sum, which leaves the backward unfused.

func.func @conv_output_used(%x: tensor<2x4x4x4xf32>, %w: tensor<4x3x3x4xf32>, %g: tensor<4xf32>, %b: tensor<4xf32>,
                            %gw: tensor<4x3x3x4xf32>, %gg: tensor<4xf32>, %gb: tensor<4xf32>, %dy: tensor<2x4x4x4xf32>, %dy2: tensor<2x4x4x4xf32>)
    -> (tensor<2x4x4x4xf32>, tensor<2x4x4x4xf32>, tensor<4x3x3x4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %c = rn.conv2d %x, %w stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 : (tensor<2x4x4x4xf32>, tensor<4x3x3x4xf32>) -> tensor<2x4x4x4xf32>
  %n, %mean, %istd = rn.batch_norm_train %c, %g, %b eps 1.000000e-05 : (tensor<2x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>)
  %r = rn.relu %n : tensor<2x4x4x4xf32>
  %d = rn.relu_backward %dy, %r : tensor<2x4x4x4xf32>
  // expected-remark@+1 {{not fusing the backward: no rn.conv2d_backward of the fused convolution reads the batch_norm_backward input gradient}}
  %dc, %dg, %db = rn.batch_norm_backward %d, %c, %g, %mean, %istd, %gg, %gb : (tensor<2x4x4x4xf32>, tensor<2x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>)
  %sum = rn.add %dc, %dy2 : tensor<2x4x4x4xf32>
  %dw = rn.conv2d_backward %sum, %x, %w, %gw stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 : (tensor<2x4x4x4xf32>, tensor<2x4x4x4xf32>, tensor<4x3x3x4xf32>, tensor<4x3x3x4xf32>) -> tensor<4x3x3x4xf32>
  return %r, %c, %dw, %dg, %db : tensor<2x4x4x4xf32>, tensor<2x4x4x4xf32>, tensor<4x3x3x4xf32>, tensor<4xf32>, tensor<4xf32>
}

// CHECK-LABEL: func.func @conv_output_used
// CHECK-NEXT:    %[[R:.+]], %[[C:.+]], %{{.+}}, %{{.+}} = rn.cbr_forward {{.*}} relu
// CHECK-NEXT:    rn.relu_backward %{{.+}}, %[[R]]
// CHECK-NEXT:    rn.batch_norm_backward %{{.+}}, %[[C]]
// CHECK-NEXT:    rn.add
// CHECK-NEXT:    rn.conv2d_backward
// CHECK-NEXT:    return %[[R]], %[[C]],

// -----

// Tests that a batch norm result used besides the relu fuses without the
// relu, and that a relu gradient used besides the batch norm backward
// leaves the relu_backward out of the fused backward.

func.func @relu_input_used(%x: tensor<2x4x4x4xf32>, %w: tensor<4x3x3x4xf32>, %g: tensor<4xf32>, %b: tensor<4xf32>,
                           %gw: tensor<4x3x3x4xf32>, %gg: tensor<4xf32>, %gb: tensor<4xf32>, %dy: tensor<2x4x4x4xf32>)
    -> (tensor<2x4x4x4xf32>, tensor<2x4x4x4xf32>) {
  %c = rn.conv2d %x, %w stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 : (tensor<2x4x4x4xf32>, tensor<4x3x3x4xf32>) -> tensor<2x4x4x4xf32>
  // expected-remark@+1 {{fusing without the relu: the batch_norm_train result has another user}}
  %n, %mean, %istd = rn.batch_norm_train %c, %g, %b eps 1.000000e-05 : (tensor<2x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>)
  %r = rn.relu %n : tensor<2x4x4x4xf32>
  return %r, %n : tensor<2x4x4x4xf32>, tensor<2x4x4x4xf32>
}

// CHECK-LABEL: func.func @relu_input_used
// CHECK-NEXT:    %[[N:.+]], %{{.+}}, %{{.+}}, %{{.+}} = rn.cbr_forward {{.*}} eps 1.000000e-05 :
// CHECK-NEXT:    %[[R:.+]] = rn.relu %[[N]]
// CHECK-NEXT:    return %[[R]], %[[N]]

func.func @relu_grad_used(%x: tensor<2x4x4x4xf32>, %w: tensor<4x3x3x4xf32>, %g: tensor<4xf32>, %b: tensor<4xf32>,
                          %gw: tensor<4x3x3x4xf32>, %gg: tensor<4xf32>, %gb: tensor<4xf32>, %dy: tensor<2x4x4x4xf32>)
    -> (tensor<2x4x4x4xf32>, tensor<2x4x4x4xf32>, tensor<4x3x3x4xf32>) {
  %c = rn.conv2d %x, %w stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 : (tensor<2x4x4x4xf32>, tensor<4x3x3x4xf32>) -> tensor<2x4x4x4xf32>
  %n, %mean, %istd = rn.batch_norm_train %c, %g, %b eps 1.000000e-05 : (tensor<2x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>)
  %r = rn.relu %n : tensor<2x4x4x4xf32>
  // expected-remark@+1 {{fusing the backward without the relu_backward: its result has another user}}
  %d = rn.relu_backward %dy, %r : tensor<2x4x4x4xf32>
  %dc, %dg, %db = rn.batch_norm_backward %d, %c, %g, %mean, %istd, %gg, %gb : (tensor<2x4x4x4xf32>, tensor<2x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>)
  %dw = rn.conv2d_backward %dc, %x, %w, %gw stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 : (tensor<2x4x4x4xf32>, tensor<2x4x4x4xf32>, tensor<4x3x3x4xf32>, tensor<4x3x3x4xf32>) -> tensor<4x3x3x4xf32>
  return %r, %d, %dw : tensor<2x4x4x4xf32>, tensor<2x4x4x4xf32>, tensor<4x3x3x4xf32>
}

// CHECK-LABEL: func.func @relu_grad_used
// CHECK-NEXT:    %[[R:.+]], %{{.+}}, %{{.+}}, %{{.+}} = rn.cbr_forward {{.*}} relu
// CHECK-NEXT:    %[[D:.+]] = rn.relu_backward %{{.+}}, %[[R]]
// CHECK-NEXT:    %{{.+}}, %[[G_0:.+]], %[[G_1:.+]], %[[G_2:.+]] = rn.cbr_backward %[[D]], {{.*}} groups 1 :
// CHECK-NEXT:    return %[[R]], %[[D]], %[[G_0]]

// -----

// Tests that a conv with a bias is not fused (the CBR ops take none).

func.func @conv_bias(%x: tensor<2x4x4x4xf32>, %w: tensor<4x3x3x4xf32>, %cb: tensor<4xf32>, %g: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<2x4x4x4xf32> {
  // expected-remark@+1 {{not fusing: the conv2d has a bias, which CBR ops do not take (the batch norm cancels it)}}
  %c = rn.conv2d %x, %w, %cb stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 : (tensor<2x4x4x4xf32>, tensor<4x3x3x4xf32>, tensor<4xf32>) -> tensor<2x4x4x4xf32>
  %n, %mean, %istd = rn.batch_norm_train %c, %g, %b eps 1.000000e-05 : (tensor<2x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>)
  %r = rn.relu %n : tensor<2x4x4x4xf32>
  return %r : tensor<2x4x4x4xf32>
}

// CHECK-LABEL: func.func @conv_bias
// CHECK-NEXT:    rn.conv2d
// CHECK-NEXT:    rn.batch_norm_train
// CHECK-NEXT:    rn.relu

// -----

// Tests that a residual sum with another user keeps the tail unfused; its
// batch norm then fuses with the conv.

func.func @sum_used(%x: tensor<2x4x4x4xf32>, %w: tensor<4x3x3x4xf32>, %g: tensor<4xf32>, %b: tensor<4xf32>) -> (tensor<2x4x4x4xf32>, tensor<2x4x4x4xf32>) {
  %c = rn.conv2d %x, %w stride [1, 1] pad [1, 1] dilation [1, 1] groups 1 : (tensor<2x4x4x4xf32>, tensor<4x3x3x4xf32>) -> tensor<2x4x4x4xf32>
  %n, %mean, %istd = rn.batch_norm_train %c, %g, %b eps 1.000000e-05 : (tensor<2x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>)
  // expected-remark@+1 {{not fusing the residual tail: the add result has another user}}
  %s = rn.add %n, %x : tensor<2x4x4x4xf32>
  %y = rn.relu %s : tensor<2x4x4x4xf32>
  return %y, %s : tensor<2x4x4x4xf32>, tensor<2x4x4x4xf32>
}

// CHECK-LABEL: func.func @sum_used
// CHECK-NEXT:    %[[N:.+]], %{{.+}}, %{{.+}}, %{{.+}} = rn.cbr_forward {{.*}} eps 1.000000e-05 :
// CHECK-NEXT:    %[[S:.+]] = rn.add %[[N]], %{{.+}}
// CHECK-NEXT:    rn.relu %[[S]]

// -----

// Tests that a batch norm result with another user keeps the tail unfused.

func.func @tail_bn_used(%c: tensor<2x4x4x4xf32>, %x: tensor<2x4x4x4xf32>, %g: tensor<4xf32>, %b: tensor<4xf32>) -> (tensor<2x4x4x4xf32>, tensor<2x4x4x4xf32>) {
  // expected-remark@+1 {{not fusing the residual tail: the batch_norm_train result has another user}}
  %n, %mean, %istd = rn.batch_norm_train %c, %g, %b eps 1.000000e-05 : (tensor<2x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>)
  %s = rn.add %n, %x : tensor<2x4x4x4xf32>
  %y = rn.relu %s : tensor<2x4x4x4xf32>
  return %y, %n : tensor<2x4x4x4xf32>, tensor<2x4x4x4xf32>
}

// CHECK-LABEL: func.func @tail_bn_used
// CHECK-NEXT:    rn.batch_norm_train
// CHECK-NEXT:    rn.add
// CHECK-NEXT:    rn.relu

// -----

// Tests a residual tail without a conv (the batch norm reads an argument),
// and a relu gradient that no batch norm backward of the tail reads.

func.func @tail_without_bn_backward(%c: tensor<2x4x4x4xf32>, %x: tensor<2x4x4x4xf32>, %g: tensor<4xf32>, %b: tensor<4xf32>, %dy: tensor<2x4x4x4xf32>) -> (tensor<2x4x4x4xf32>, tensor<2x4x4x4xf32>) {
  %n, %mean, %istd = rn.batch_norm_train %c, %g, %b eps 1.000000e-05 : (tensor<2x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>)
  %s = rn.add %x, %n : tensor<2x4x4x4xf32>
  %y = rn.relu %s : tensor<2x4x4x4xf32>
  // expected-remark@+1 {{not fusing the residual tail backward: no rn.batch_norm_backward of the fused batch norm reads the relu_backward result}}
  %d = rn.relu_backward %dy, %y : tensor<2x4x4x4xf32>
  return %y, %d : tensor<2x4x4x4xf32>, tensor<2x4x4x4xf32>
}

// CHECK-LABEL: func.func @tail_without_bn_backward
// CHECK-SAME:    (%[[C:[a-z0-9]+]]: tensor<2x4x4x4xf32>, %[[X:[a-z0-9]+]]: tensor<2x4x4x4xf32>
// CHECK-NEXT:    %[[Y:.+]], %{{.+}}, %{{.+}} = rn.bn_add_relu %[[C]], %{{.+}}, %{{.+}} shortcut %[[X]]
// CHECK-NEXT:    rn.relu_backward %{{.+}}, %[[Y]]

// -----

// Tests a chain that no single position can replace: the batch mean is
// used before the shortcut is defined.

func.func @no_position(%c: tensor<2x4x4x4xf32>, %g: tensor<4xf32>, %b: tensor<4xf32>, %m: tensor<4xf32>, %v: tensor<4xf32>)
    -> (tensor<2x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %n, %mean, %istd = rn.batch_norm_train %c, %g, %b eps 1.000000e-05 : (tensor<2x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>)
  %rm, %rv = rn.update_running_stats %m, %v, %mean, %istd eps 1.000000e-05 momentum 1.000000e-01 count 32 : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
  %x = rn.relu %c : tensor<2x4x4x4xf32>
  %s = rn.add %n, %x : tensor<2x4x4x4xf32>
  // expected-remark@+1 {{not fusing: no position in the block has every operand defined before it and every use of a result after it}}
  %y = rn.relu %s : tensor<2x4x4x4xf32>
  return %y, %rm, %rv : tensor<2x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>
}

// CHECK-LABEL: func.func @no_position
// CHECK-NEXT:    rn.batch_norm_train
// CHECK-NEXT:    rn.update_running_stats
// CHECK-NEXT:    rn.relu
// CHECK-NEXT:    rn.add
// CHECK-NEXT:    rn.relu
