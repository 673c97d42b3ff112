// Tests that rn-compile --pipeline takes the options docs/training.md lists
// (every option of every pass the pipeline runs) and that they reach the
// artifact: AdamW's, LARS's and the dynamic loss scaler's.

// RUN: rn-compile %s -o %t.adamw.rnx --quiet --pipeline "optimizer=adamw beta1=0.95 beta2=0.98 adam-eps=1e-6 weight-decay=0.01"
// RUN: %python %S/Inputs/dump-artifact.py %t.adamw.rnx | FileCheck %s --check-prefix=ADAMW
// ADAMW: training {{.*}}"optimizer": "adamw"
// ADAMW: op adamw_update update {{.*}} {"beta1": 0.95, "beta2": 0.98, "epsilon": 1e-06, {{.*}}"weight_decay": 0.01}

// RUN: rn-compile %s -o %t.lars.rnx --quiet --pipeline "optimizer=lars lars-trust=0.002 lars-eps=1e-7 momentum=0.8"
// RUN: %python %S/Inputs/dump-artifact.py %t.lars.rnx | FileCheck %s --check-prefix=LARS
// LARS: training {{.*}}"optimizer": "lars"
// LARS: op lars_update update {{.*}} {"epsilon": 1e-07, "momentum": 0.8, {{.*}}"trust_coefficient": 0.002

// RUN: rn-compile %s -o %t.scaler.rnx --quiet --pipeline "precision=f16 loss-scaling=dynamic loss-scale=1024 growth-interval=100 growth-factor=4 backoff-factor=0.25"
// RUN: %python %S/Inputs/dump-artifact.py %t.scaler.rnx | FileCheck %s --check-prefix=SCALER
// SCALER: training {{.*}}"loss_scaling": "dynamic"
// SCALER: state loss_scale loss_scale f32 [] scalars constant 1024
// SCALER: op update_loss_scale update {{.*}} {"backoff": 0.25, "growth": 4, "growth_interval": 100}

// The options of the passes after rn-build-training reach them too, under
// the pipeline's names for the four it renamed.
// RUN: rn-compile %s -o %t.plain.rnx --quiet --step-output %t.plain.mlir --pipeline "fuse=false alignment=512 single-stream=true"
// RUN: FileCheck %s --input-file %t.plain.mlir --check-prefix=PASSES
// RUN: FileCheck %s --input-file %t.plain.mlir --check-prefix=ONE-STREAM
// PASSES: rn.memory_plan {{.*}} alignment 512
// ONE-STREAM-NOT: #rn.stream<comp2>
// ONE-STREAM-NOT: #rn.stream<comp3>
// ONE-STREAM-NOT: #rn.stream<update>

// The list rn-compile --pipeline-help documents is the one it takes, in
// declaration order, with each option's type, help and (where its
// declaration's value description lists them) choices: rn.TrainingOptions
// is made from it.
// RUN: rn-compile --list-pipeline-options | FileCheck %s --check-prefix=LIST
// LIST: "choices": [{{$}}
// LIST-NEXT: "sgd",
// LIST-NEXT: "adamw",
// LIST-NEXT: "lars"
// LIST-NEXT: ],
// LIST-NEXT: "default": "sgd",
// LIST-NEXT: "help": "sgd, adamw or lars",
// LIST-NEXT: "name": "optimizer",
// LIST-NEXT: "pass": "rn-build-training",
// LIST-NEXT: "pass_option": "optimizer",
// LIST-NEXT: "type": "string"
// LIST: "default": "9.000000e-01",
// LIST-NEXT: "help": "SGD/LARS momentum {{.*}}",
// LIST-NEXT: "name": "momentum",
// LIST: "type": "float"
// LIST: "name": "beta1",
// LIST-NEXT: "pass": "rn-build-training",
// LIST: "default": "1",
// LIST-NEXT: "help": "fold only into data gradients {{.*}}",
// LIST-NEXT: "name": "fold-gradient-adds-max-stride",
// LIST-NEXT: "pass": "rn-fold-gradient-adds",
// LIST-NEXT: "pass_option": "max-stride",
// LIST-NEXT: "type": "int"

module attributes {rn.model = "tiny"} {
  rn.parameter @fc.weight : tensor<3x4xf32> = #rn.init<uniform, 5.000000e-01>
  func.func @forward(%images: tensor<2x4xf32>, %labels: tensor<2xi32>) -> tensor<f32> {
    %0 = rn.param @fc.weight : tensor<3x4xf32>
    %1 = rn.linear %images, %0 : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<2x3xf32>
    %2 = rn.softmax_cross_entropy %1, %labels label_smoothing 0.000000e+00 : (tensor<2x3xf32>, tensor<2xi32>) -> tensor<f32>
    return %2 : tensor<f32>
  }
}
