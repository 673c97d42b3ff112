// Tests that rn-compile reports bad input and bad options with a clear
// message and a non-zero exit.

// RUN: not rn-compile %t.missing.mlir -o %t.rnx 2>&1 | FileCheck %s --check-prefix=MISSING
// MISSING: rn-compile: error: cannot open input file '{{.*}}missing.mlir'

// RUN: printf '' > %t.empty.mlir
// RUN: not rn-compile %t.empty.mlir -o %t.rnx 2>&1 | FileCheck %s --check-prefix=EMPTY
// EMPTY: rn-compile: error: {{.*}}empty.mlir: input is empty; expected a model

// RUN: not rn-compile %s -o %t.rnx --pipeline "optimizer=rmsprop" 2>&1 | FileCheck %s --check-prefix=OPTION
// OPTION: error: unknown optimizer 'rmsprop'; expected sgd, adamw or lars

// RUN: not rn-compile %s -o %t.rnx --pipeline "no-such-option=1" 2>&1 | FileCheck %s --check-prefix=PIPELINE
// PIPELINE: rn-compile: error: bad --pipeline options: no-such-option=1

// RUN: not rn-compile %s -o %t.no-such-dir/out.rnx 2>&1 | FileCheck %s --check-prefix=OUTPUT
// OUTPUT: rn-compile: error: cannot open output file

module attributes {rn.model = "tiny"} {
  rn.parameter @fc.weight : tensor<3x4xf32> = #rn.init<uniform, 5.000000e-01>
  func.func @forward(%images: tensor<2x4xf32>, %labels: tensor<2xi32>) -> tensor<f32> {
    %0 = rn.param @fc.weight : tensor<3x4xf32>
    %1 = rn.linear %images, %0 : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<2x3xf32>
    %2 = rn.softmax_cross_entropy %1, %labels label_smoothing 0.000000e+00 : (tensor<2x3xf32>, tensor<2xi32>) -> tensor<f32>
    return %2 : tensor<f32>
  }
}
