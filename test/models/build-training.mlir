// Tests that rn-build-training succeeds on every zoo model, in f32 with SGD
// and in mixed precision with the other optimizers, and that the result
// verifies again.

// RUN: %python -m rn.models mlp --batch 4 | rn-opt --rn-build-training | rn-opt | FileCheck %s --check-prefix=MLP
// MLP: func.func @train_step
// MLP: rn.linear_backward
// MLP: func.func @eval_step

// RUN: %python -m rn.models lenet5 --batch 4 | rn-opt --rn-build-training="optimizer=adamw precision=f16 loss-scaling=dynamic" | rn-opt | FileCheck %s --check-prefix=LENET
// LENET: func.func @train_step
// LENET: rn.tanh_backward
// LENET: rn.avg_pool2d_backward
// LENET: rn.update_loss_scale

// RUN: %python -m rn.models fashion_cnn --batch 4 | rn-opt --rn-build-training="weight-decay=5e-4 no-decay-bn-bias=true" | rn-opt | FileCheck %s --check-prefix=CNN
// CNN: rn.dropout_train
// CNN: rn.max_pool2d_backward
// CNN: rn.update_running_stats

// RUN: %python -m rn.models vgg11c --batch 2 | rn-opt --rn-build-training="precision=bf16 optimizer=lars" | rn-opt | FileCheck %s --check-prefix=VGG
// RUN: %python -m rn.models vgg16c --batch 2 | rn-opt --rn-build-training="precision=f16 loss-scaling=static" | rn-opt | FileCheck %s --check-prefix=VGG
// RUN: %python -m rn.models vgg11 --batch 2 | rn-opt --rn-build-training="ema-decay=0.9999" | rn-opt | FileCheck %s --check-prefix=VGG
// RUN: %python -m rn.models vgg16 --batch 2 | rn-opt --rn-build-training | rn-opt | FileCheck %s --check-prefix=VGG
// VGG: func.func @train_step
// VGG: rn.conv2d_backward
// VGG: func.func @eval_step
// VGG: rn.batch_norm_inference

// RUN: %python -m rn.models resnet18c --batch 2 | rn-opt --rn-build-training="precision=f16 loss-scaling=dynamic nesterov=true weight-decay=5e-4" | rn-opt | FileCheck %s --check-prefix=RESNET
// RUN: %python -m rn.models resnet34c --batch 2 | rn-opt --rn-build-training | rn-opt | FileCheck %s --check-prefix=RESNET
// RUN: %python -m rn.models resnet50c --batch 2 | rn-opt --rn-build-training="optimizer=adamw" | rn-opt | FileCheck %s --check-prefix=RESNET
// RUN: %python -m rn.models resnet18 --batch 2 | rn-opt --rn-build-training="precision=bf16" | rn-opt | FileCheck %s --check-prefix=RESNET
// RUN: %python -m rn.models resnet34 --batch 2 | rn-opt --rn-build-training="optimizer=lars" | rn-opt | FileCheck %s --check-prefix=RESNET
// RUN: %python -m rn.models resnet50 --batch 2 | rn-opt --rn-build-training="precision=f16 loss-scaling=dynamic ema-decay=0.999" | rn-opt | FileCheck %s --check-prefix=RESNET
// RESNET: func.func @train_step
// The residual joins sum their gradients.
// RESNET: rn.batch_norm_backward
// RESNET: rn.add
// RESNET: func.func @eval_step
