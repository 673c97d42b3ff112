// RUN: rn-opt %s --split-input-file --verify-diagnostics --rn-build-training

// Option errors are reported on the module, whatever it holds.
// RUN: not rn-opt %s --split-input-file --rn-build-training="optimizer=rmsprop" 2>&1 | FileCheck %s --check-prefix=OPTIMIZER
// OPTIMIZER: error: unknown optimizer 'rmsprop'; expected sgd, adamw or lars
// RUN: not rn-opt %s --split-input-file --rn-build-training="precision=f8" 2>&1 | FileCheck %s --check-prefix=PRECISION
// PRECISION: error: unknown precision 'f8'; expected f32, f16 or bf16
// RUN: not rn-opt %s --split-input-file --rn-build-training="loss-scaling=auto" 2>&1 | FileCheck %s --check-prefix=SCALING
// SCALING: error: unknown loss scaling 'auto'; expected none, static or dynamic
// RUN: not rn-opt %s --split-input-file --rn-build-training="precision=bf16 loss-scaling=dynamic" 2>&1 | FileCheck %s --check-prefix=BF16
// BF16: error: loss scaling is not needed with bf16, which has the exponent range of f32; use loss-scaling=none
// RUN: not rn-opt %s --split-input-file --rn-build-training="precision=f16 loss-scaling=static loss-scale=0" 2>&1 | FileCheck %s --check-prefix=SCALE
// SCALE: error: loss-scale must be positive, got 0
// RUN: not rn-opt %s --split-input-file --rn-build-training="momentum=1.5" 2>&1 | FileCheck %s --check-prefix=MOMENTUM
// MOMENTUM: error: momentum must be in [0, 1), got 1.5
// RUN: not rn-opt %s --split-input-file --rn-build-training="momentum=0 nesterov=true" 2>&1 | FileCheck %s --check-prefix=NESTEROV
// NESTEROV: error: nesterov needs optimizer=sgd with momentum > 0
// RUN: not rn-opt %s --split-input-file --rn-build-training="optimizer=lars momentum=0" 2>&1 | FileCheck %s --check-prefix=LARS
// LARS: error: lars needs momentum > 0
// RUN: not rn-opt %s --split-input-file --rn-build-training="weight-decay=-1" 2>&1 | FileCheck %s --check-prefix=DECAY
// DECAY: error: weight-decay must be non-negative, got -1
// RUN: not rn-opt %s --split-input-file --rn-build-training="ema-decay=1" 2>&1 | FileCheck %s --check-prefix=EMA
// EMA: error: ema-decay must be in [0, 1), got 1
// RUN: not rn-opt %s --split-input-file --rn-build-training="forward=main" 2>&1 | FileCheck %s --check-prefix=FORWARD
// FORWARD: error: no function @main to build a training step from
// RUN: not rn-opt %s --split-input-file --rn-build-training="precision=f16" 2>&1 | FileCheck %s --check-prefix=AMP
// AMP: error: mixed precision needs an f32 model (the master weights); the images are 'tensor<4x8xf16>'

// Tests that a forward function returning logits instead of a loss is rejected.
module {
  rn.parameter @fc.weight : tensor<10x8xf32> = #rn.init<uniform, 3.535533845e-01>
  func.func @forward(%images: tensor<4x8xf32>, %labels: tensor<4xi32>) -> tensor<4x10xf32> {
    %0 = rn.param @fc.weight : tensor<10x8xf32>
    %1 = rn.linear %images, %0 : (tensor<4x8xf32>, tensor<10x8xf32>) -> tensor<4x10xf32>
    // expected-error@+1 {{the model has no loss: @forward must return the result of rn.softmax_cross_entropy}}
    return %1 : tensor<4x10xf32>
  }
}

// -----

// Tests that a parameter the loss does not depend on is reported.
module {
  rn.parameter @fc.weight : tensor<10x8xf32> = #rn.init<uniform, 3.535533845e-01>
  // expected-error@+1 {{trainable parameter @unused.weight does not contribute to the loss, so it would get no gradient; remove it or declare it 'buffer'}}
  rn.parameter @unused.weight : tensor<10x8xf32> = #rn.init<uniform, 3.535533845e-01>
  func.func @forward(%images: tensor<4x8xf32>, %labels: tensor<4xi32>) -> tensor<f32> {
    %0 = rn.param @fc.weight : tensor<10x8xf32>
    %1 = rn.linear %images, %0 : (tensor<4x8xf32>, tensor<10x8xf32>) -> tensor<4x10xf32>
    %2 = rn.softmax_cross_entropy %1, %labels label_smoothing 0.000000e+00 : (tensor<4x10xf32>, tensor<4xi32>) -> tensor<f32>
    return %2 : tensor<f32>
  }
}

// -----

// Tests that a forward function needs exactly (images, labels).
module {
  rn.parameter @loss : tensor<f32> = #rn.init<zeros>
  // expected-error@+1 {{@forward must take (images, labels), got 1 arguments}}
  func.func @forward(%images: tensor<4x8xf32>) -> tensor<f32> {
    %0 = rn.param @loss : tensor<f32>
    return %0 : tensor<f32>
  }
}

// -----

// Tests that ops without a gradient rule are named.
module {
  rn.parameter @fc.weight : tensor<10x8xf32> = #rn.init<uniform, 3.535533845e-01>
  func.func @forward(%images: tensor<4x8xf32>, %labels: tensor<4xi32>) -> tensor<f32> {
    %0 = rn.param @fc.weight : tensor<10x8xf32>
    // expected-error@+1 {{rn-build-training has no gradient rule for 'rn.reshape'}}
    %r = rn.reshape %images : tensor<4x8xf32> -> tensor<4x8xf32>
    %1 = rn.linear %r, %0 : (tensor<4x8xf32>, tensor<10x8xf32>) -> tensor<4x10xf32>
    %2 = rn.softmax_cross_entropy %1, %labels label_smoothing 0.000000e+00 : (tensor<4x10xf32>, tensor<4xi32>) -> tensor<f32>
    return %2 : tensor<f32>
  }
}

// -----

// Tests that a second loss is rejected.
module {
  rn.parameter @fc.weight : tensor<10x8xf32> = #rn.init<uniform, 3.535533845e-01>
  func.func @forward(%images: tensor<4x8xf32>, %labels: tensor<4xi32>) -> tensor<f32> {
    %0 = rn.param @fc.weight : tensor<10x8xf32>
    %1 = rn.linear %images, %0 : (tensor<4x8xf32>, tensor<10x8xf32>) -> tensor<4x10xf32>
    // expected-error@+1 {{the model has more than one loss}}
    %2 = rn.softmax_cross_entropy %1, %labels label_smoothing 0.000000e+00 : (tensor<4x10xf32>, tensor<4xi32>) -> tensor<f32>
    %3 = rn.softmax_cross_entropy %1, %labels label_smoothing 1.000000e-01 : (tensor<4x10xf32>, tensor<4xi32>) -> tensor<f32>
    return %3 : tensor<f32>
  }
}

// -----

// Tests that a trainable parameter must be a weight or bias operand.
module {
  rn.parameter @shift : tensor<4x8xf32> = #rn.init<zeros>
  rn.parameter @fc.weight : tensor<10x8xf32> = #rn.init<uniform, 3.535533845e-01>
  func.func @forward(%images: tensor<4x8xf32>, %labels: tensor<4xi32>) -> tensor<f32> {
    %s = rn.param @shift : tensor<4x8xf32>
    // expected-error@+1 {{rn-build-training supports trainable parameters only as weights, biases and normalization parameters; @shift is operand #1 of 'rn.add'}}
    %x = rn.add %images, %s : tensor<4x8xf32>
    %0 = rn.param @fc.weight : tensor<10x8xf32>
    %1 = rn.linear %x, %0 : (tensor<4x8xf32>, tensor<10x8xf32>) -> tensor<4x10xf32>
    %2 = rn.softmax_cross_entropy %1, %labels label_smoothing 0.000000e+00 : (tensor<4x10xf32>, tensor<4xi32>) -> tensor<f32>
    return %2 : tensor<f32>
  }
}

// -----

// Tests that a buffer cannot serve as a weight.
module {
  rn.parameter buffer @fc.weight : tensor<10x8xf32> = #rn.init<uniform, 3.535533845e-01>
  func.func @forward(%images: tensor<4x8xf32>, %labels: tensor<4xi32>) -> tensor<f32> {
    %0 = rn.param @fc.weight : tensor<10x8xf32>
    // expected-error@+1 {{the buffer @fc.weight is used as a weight; declare it without 'buffer' to train it}}
    %1 = rn.linear %images, %0 : (tensor<4x8xf32>, tensor<10x8xf32>) -> tensor<4x10xf32>
    %2 = rn.softmax_cross_entropy %1, %labels label_smoothing 0.000000e+00 : (tensor<4x10xf32>, tensor<4xi32>) -> tensor<f32>
    return %2 : tensor<f32>
  }
}

// -----

// Tests that a symbol colliding with generated state is reported.
module {
  rn.parameter @fc.weight : tensor<10x8xf32> = #rn.init<uniform, 3.535533845e-01>
  // expected-error@+1 {{@grad.fc.weight collides with training state rn-build-training declares; rename it}}
  rn.parameter buffer @grad.fc.weight : tensor<10x8xf32> = #rn.init<zeros>
  func.func @forward(%images: tensor<4x8xf32>, %labels: tensor<4xi32>) -> tensor<f32> {
    %0 = rn.param @fc.weight : tensor<10x8xf32>
    %1 = rn.linear %images, %0 : (tensor<4x8xf32>, tensor<10x8xf32>) -> tensor<4x10xf32>
    %2 = rn.softmax_cross_entropy %1, %labels label_smoothing 0.000000e+00 : (tensor<4x10xf32>, tensor<4xi32>) -> tensor<f32>
    return %2 : tensor<f32>
  }
}

// -----

// Tests (with precision=f16, see the AMP line above) that mixed precision
// needs f32 master weights; without it an f16 model trains in f16.
module {
  rn.parameter @fc.weight : tensor<10x8xf16> = #rn.init<uniform, 3.535533845e-01>
  func.func @forward(%images: tensor<4x8xf16>, %labels: tensor<4xi32>) -> tensor<f32> {
    %0 = rn.param @fc.weight : tensor<10x8xf16>
    %1 = rn.linear %images, %0 : (tensor<4x8xf16>, tensor<10x8xf16>) -> tensor<4x10xf16>
    %2 = rn.softmax_cross_entropy %1, %labels label_smoothing 0.000000e+00 : (tensor<4x10xf16>, tensor<4xi32>) -> tensor<f32>
    return %2 : tensor<f32>
  }
}

// -----

// Tests that uint8 images are read by their normalization alone: another
// reader would compute on bytes.
module {
  rn.parameter buffer @input.mean : tensor<3xf32> = #rn.init<values, [5.000000e-01, 5.000000e-01, 5.000000e-01]>
  rn.parameter buffer @input.std : tensor<3xf32> = #rn.init<values, [2.500000e-01, 2.500000e-01, 2.500000e-01]>
  func.func @forward(%images: tensor<2x2x2x3xui8>, %labels: tensor<2xi32>) -> tensor<f32> {
    %m = rn.param @input.mean : tensor<3xf32>
    %s = rn.param @input.std : tensor<3xf32>
    %x = rn.normalize_images %images, %m, %s : tensor<2x2x2x3xui8>, tensor<3xf32>, tensor<3xf32> -> tensor<2x2x2x3xf32>
    // expected-error@+1 {{the uint8 images of @forward may be read by exactly one rn.normalize_images (which makes them floats on the device), but 2 ops read them, among them 'rn.normalize_images'}}
    %y = rn.normalize_images %images, %m, %s : tensor<2x2x2x3xui8>, tensor<3xf32>, tensor<3xf32> -> tensor<2x2x2x3xf32>
    %sum = rn.add %x, %y : tensor<2x2x2x3xf32>
    %f = rn.flatten %sum : tensor<2x2x2x3xf32> -> tensor<2x12xf32>
    %loss = rn.softmax_cross_entropy %f, %labels label_smoothing 0.000000e+00 : (tensor<2x12xf32>, tensor<2xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}
