// Tests that the whole rn-training-pipeline (ending in rn-verify-schedule)
// succeeds on every zoo model, multi-stream with fusion and in the baseline
// configurations, and that its output verifies again.

// RUN: %python -m rn.models mlp --batch 4 | rn-opt --rn-training-pipeline | rn-opt | FileCheck %s
// RUN: %python -m rn.models lenet5 --batch 4 | rn-opt --rn-training-pipeline="optimizer=adamw precision=f16 loss-scaling=dynamic" | rn-opt | FileCheck %s
// RUN: %python -m rn.models fashion_cnn --batch 4 | rn-opt --rn-training-pipeline="ema-decay=0.99" | rn-opt | FileCheck %s
// RUN: %python -m rn.models vgg11c --batch 2 | rn-opt --rn-training-pipeline="precision=bf16 optimizer=lars" | rn-opt | FileCheck %s
// RUN: %python -m rn.models vgg16c --batch 2 | rn-opt --rn-training-pipeline="fuse=false reuse=false" | rn-opt | FileCheck %s
// RUN: %python -m rn.models vgg11 --batch 2 | rn-opt --rn-training-pipeline="precision=f16 loss-scaling=static" | rn-opt | FileCheck %s
// RUN: %python -m rn.models vgg16 --batch 2 | rn-opt --rn-training-pipeline | rn-opt | FileCheck %s
// RUN: %python -m rn.models resnet18c --batch 2 | rn-opt --rn-training-pipeline="precision=f16 loss-scaling=dynamic nesterov=true weight-decay=5e-4 no-decay-bn-bias=true" | rn-opt | FileCheck %s
// RUN: %python -m rn.models resnet34c --batch 2 | rn-opt --rn-training-pipeline="single-stream=true" | rn-opt | FileCheck %s --check-prefix=SINGLE
// RUN: %python -m rn.models resnet50c --batch 2 | rn-opt --rn-training-pipeline="optimizer=adamw data-parallel=true" | rn-opt | FileCheck %s
// RUN: %python -m rn.models resnet18 --batch 2 | rn-opt --rn-training-pipeline="precision=bf16" | rn-opt | FileCheck %s
// RUN: %python -m rn.models resnet34 --batch 2 | rn-opt --rn-training-pipeline="fuse=false" | rn-opt | FileCheck %s
// RUN: %python -m rn.models resnet50 --batch 2 | rn-opt --rn-training-pipeline="precision=f16 loss-scaling=dynamic ema-decay=0.999" | rn-opt | FileCheck %s
// With rn-fuse-bn-prologue (f16 only): ResNet-50 (CIFAR)'s stem gives its
// apply to two readers across the first layer's subgraph, VGG-16's
// convolutions form chains of three; test/passes/fuse-bn-prologue.mlir
// counts the rewrites.
// RUN: %python -m rn.models resnet50c --batch 2 | rn-opt --rn-training-pipeline="precision=f16 loss-scaling=dynamic fuse-bn-prologue=true" 2>/dev/null | rn-opt | FileCheck %s --check-prefixes=CHECK,PROLOGUE
// RUN: %python -m rn.models vgg16c --batch 2 | rn-opt --rn-training-pipeline="precision=f16 fuse-bn-prologue=true" 2>/dev/null | rn-opt | FileCheck %s --check-prefixes=CHECK,PROLOGUE

// CHECK: rn.step_schedule @train_even
// CHECK: rn.memory_plan arena
// CHECK: func.func @train_step
// PROLOGUE: rn.conv_bn_stats
// PROLOGUE: rn.bn_scale_bias
// PROLOGUE: rn.cbr_forward {{.+}} prologue %
// PROLOGUE: rn.cbr_backward {{.+}} input_prologue %
// CHECK: rn.event_wait
// CHECK: func.func @eval_step

// SINGLE: rn.memory_plan arena
// SINGLE-NOT: rn.event_wait
