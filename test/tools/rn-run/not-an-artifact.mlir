// Tests that rn-run says what a file that is not an artifact is, before it
// asks for data, and exits 1: a model (this file, MLIR text) and other bytes.

// RUN: not rn-run %s 2>&1 | FileCheck %s --check-prefix=MODEL
// MODEL: rn-run: error: {{.*}}not-an-artifact.mlir: this is a model (MLIR text), not a compiled artifact; compile it with rn-compile first

// RUN: printf 'hello\n' > %t.txt
// RUN: not rn-run %t.txt --synthetic 2>&1 | FileCheck %s --check-prefix=OTHER
// OTHER: rn-run: error: {{.*}}.txt: not an RN artifact (it starts with the bytes 68 65 6c 6c 6f 0a)

// RUN: not rn-run %t.missing.rnx --synthetic 2>&1 | FileCheck %s --check-prefix=MISSING
// MISSING: rn-run: error: {{.*}}missing.rnx

// Tests a folder and an rn-run checkpoint given as the artifact: each is
// named for what it is.
// RUN: rm -rf %t.dir && mkdir -p %t.dir
// RUN: not rn-run %t.dir --synthetic 2>&1 | FileCheck %s --check-prefix=DIRECTORY
// DIRECTORY: rn-run: error: {{.*}}.dir is a directory, not an artifact: give the .rnx file rn-compile wrote (a data folder goes to --data)
// RUN: rn-compile %s -o %t.rnx --quiet
// RUN: %python -c "import rn; rn.Trainer('%t.rnx', executor='cpu').save('%t.ck')"
// RUN: not rn-run %t.ck --synthetic 2>&1 | FileCheck %s --check-prefix=CHECKPOINT
// CHECKPOINT: rn-run: error: {{.*}}.ck is an rn-run checkpoint, not an artifact: resume it with --resume {{.*}}.ck on the artifact it was trained from

// Tests a mistyped flag: one line with the closest one, not the whole help.
// RUN: not rn-run %t.rnx --epoch 2 2>&1 | FileCheck %s --check-prefix=TYPO --implicit-check-not=usage
// TYPO: rn-run: error: unknown option '--epoch'; did you mean '--epochs'?
// RUN: not rn-run %t.rnx --frobnicate 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// UNKNOWN: rn-run: error: unknown option '--frobnicate' (--help lists the options)
// RUN: not rn-data bench %t.dir --thread 2 2>&1 | FileCheck %s --check-prefix=DATATYPO
// DATATYPO: rn-data: error: unknown option '--thread'; did you mean '--threads'?

module attributes {rn.model = "tiny"} {
  rn.parameter @fc.weight : tensor<3x4xf32> = #rn.init<uniform, 5.000000e-01>
  func.func @forward(%images: tensor<2x4xf32>, %labels: tensor<2xi32>) -> tensor<f32> {
    %0 = rn.param @fc.weight : tensor<3x4xf32>
    %1 = rn.linear %images, %0 : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<2x3xf32>
    %2 = rn.softmax_cross_entropy %1, %labels label_smoothing 0.000000e+00 : (tensor<2x3xf32>, tensor<2xi32>) -> tensor<f32>
    return %2 : tensor<f32>
  }
}
