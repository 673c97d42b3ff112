// Tests that bad input files give a located diagnostic and a non-zero exit.

// An empty file and empty standard input.
// RUN: printf '' > %t.empty.mlir
// RUN: not rn-opt %t.empty.mlir 2>&1 | FileCheck %s --check-prefix=EMPTY
// RUN: printf '  \n\n' | not rn-opt 2>&1 | FileCheck %s --check-prefix=EMPTY-STDIN
// EMPTY: rn-opt: error: {{.*}}.empty.mlir:1:1: input is empty; expected a module
// EMPTY-STDIN: rn-opt: error: <stdin>:1:1: input is empty; expected a module

// A model cut off in the middle of a type.
// RUN: head -c -200 %s > %t.truncated.mlir
// RUN: not rn-opt %t.truncated.mlir 2>&1 | FileCheck %s --check-prefix=TRUNCATED
// TRUNCATED: truncated.mlir:{{[0-9]+}}:{{[0-9]+}}: error:

// A missing file and an unwritable output.
// RUN: not rn-opt %t.does-not-exist.mlir 2>&1 | FileCheck %s --check-prefix=MISSING
// MISSING: rn-opt: error: cannot open input file '{{.*}}does-not-exist.mlir'
// RUN: not rn-opt %s -o %t.no-such-dir/out.mlir 2>&1 | FileCheck %s --check-prefix=OUTPUT
// OUTPUT: rn-opt: error: cannot open output file

// Bytes that are not MLIR at all.
// RUN: printf '\x01\x02\xff garbage {{{' | not rn-opt 2>&1 | FileCheck %s --check-prefix=GARBAGE
// GARBAGE: <stdin>:1:1: error:

// The whole file is a valid model, which is what makes the truncation above
// land inside it.
// RUN: rn-opt %s | FileCheck %s --check-prefix=WHOLE
// WHOLE: rn.softmax_cross_entropy

module attributes {rn.model = "tiny"} {
  rn.parameter @fc.weight : tensor<10x8xf32> = #rn.init<uniform, 3.535533845e-01>
  rn.parameter @fc.bias : tensor<10xf32> = #rn.init<uniform, 3.535533845e-01>
  func.func @forward(%images: tensor<4x8xf32>, %labels: tensor<4xi32>) -> tensor<f32> {
    %0 = rn.param @fc.weight : tensor<10x8xf32>
    %1 = rn.param @fc.bias : tensor<10xf32>
    %2 = rn.linear %images, %0, %1 : (tensor<4x8xf32>, tensor<10x8xf32>, tensor<10xf32>) -> tensor<4x10xf32>
    %3 = rn.softmax_cross_entropy %2, %labels label_smoothing 0.000000000e+00 : (tensor<4x10xf32>, tensor<4xi32>) -> tensor<f32>
    return %3 : tensor<f32>
  }
}
