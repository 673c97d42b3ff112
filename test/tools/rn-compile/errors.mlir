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
// PIPELINE: rn-training-pipeline has no option 'no-such-option' (rn-compile --pipeline-help lists them)
// PIPELINE: rn-compile: error: bad --pipeline options: no-such-option=1

// A pass option the pipeline renamed is refused under the pass's name.
// RUN: not rn-compile %s -o %t.rnx --pipeline "max-stride=0" 2>&1 | FileCheck %s --check-prefix=ALIAS
// ALIAS: rn-training-pipeline takes rn-fold-gradient-adds's option 'max-stride' as 'fold-gradient-adds-max-stride'

// RUN: not rn-compile %s -o %t.rnx --pipeline "verify=maybe" 2>&1 | FileCheck %s --check-prefix=SWITCH
// SWITCH: bad rn-training-pipeline switch in 'verify=maybe'

// RUN: not rn-compile %s 2>&1 | FileCheck %s --check-prefix=USAGE
// USAGE: rn-compile: error: expected a model and an output: rn-compile <model.mlir> -o <artifact.rnx>

// A compiled artifact, a checkpoint-like file and other binary input given
// as the model: one line saying what the file is, not its bytes as a
// "source line".
// RUN: rn-compile %s -o %t.compiled.rnx --quiet
// RUN: not rn-compile %t.compiled.rnx -o %t.rnx 2>&1 | FileCheck %s --check-prefix=ARTIFACT
// ARTIFACT: rn-compile: error: {{.*}}compiled.rnx is an RN artifact (already compiled), not a model: run it with rn-run {{.*}}compiled.rnx
// ARTIFACT-NOT: rn.program
// RUN: printf '\x00\x01\x02binary' > %t.binary.mlir
// RUN: not rn-compile %t.binary.mlir -o %t.rnx 2>&1 | FileCheck %s --check-prefix=BINARY
// BINARY: rn-compile: error: {{.*}}binary.mlir is a binary file, not a model: rn-compile takes a model in MLIR text (.mlir)
// RUN: not rn-compile %S -o %t.rnx 2>&1 | FileCheck %s --check-prefix=DIRECTORY
// DIRECTORY: rn-compile: error: {{.*}} is a directory; expected a model (.mlir)

// RUN: not rn-compile %s -o %t.no-such-dir/out.rnx 2>&1 | FileCheck %s --check-prefix=OUTPUT
// OUTPUT-NOT: running rn-training-pipeline
// OUTPUT: rn-compile: error: cannot open output file '{{.*}}out.rnx': no such directory

module attributes {rn.model = "tiny"} {
  rn.parameter @fc.weight : tensor<3x4xf32> = #rn.init<uniform, 5.000000e-01>
  func.func @forward(%images: tensor<2x4xf32>, %labels: tensor<2xi32>) -> tensor<f32> {
    %0 = rn.param @fc.weight : tensor<3x4xf32>
    %1 = rn.linear %images, %0 : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<2x3xf32>
    %2 = rn.softmax_cross_entropy %1, %labels label_smoothing 0.000000e+00 : (tensor<2x3xf32>, tensor<2xi32>) -> tensor<f32>
    return %2 : tensor<f32>
  }
}
