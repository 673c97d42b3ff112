// RUN: rn-opt %s --cse | FileCheck %s

// Tests that CSE merges two identical pure ops but keeps both dropouts of one
// value: each execution draws its own mask.

// CHECK-LABEL: func.func @dropout_not_merged
// CHECK-COUNT-1: rn.relu
// CHECK-NOT: rn.relu
func.func @dropout_not_merged(%x: tensor<2x8xf32>) -> (tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>) {
  // CHECK: %[[D0:.+]] = rn.dropout
  // CHECK: %[[D1:.+]] = rn.dropout
  // CHECK: return %{{.+}}, %{{.+}}, %[[D0]], %[[D1]]
  %0 = rn.relu %x : tensor<2x8xf32>
  %1 = rn.relu %x : tensor<2x8xf32>
  %2 = rn.dropout %x p 5.000000e-01 : tensor<2x8xf32>
  %3 = rn.dropout %x p 5.000000e-01 : tensor<2x8xf32>
  return %0, %1, %2, %3 : tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>
}

// Tests that CSE keeps both stochastic depths of one value: each execution
// draws its own per-sample mask.

// CHECK-LABEL: func.func @stochastic_depth_not_merged
func.func @stochastic_depth_not_merged(%x: tensor<2x8xf32>) -> (tensor<2x8xf32>, tensor<2x8xf32>) {
  // CHECK: %[[S0:.+]] = rn.stochastic_depth
  // CHECK: %[[S1:.+]] = rn.stochastic_depth
  // CHECK: return %[[S0]], %[[S1]]
  %0 = rn.stochastic_depth %x p 2.000000e-01 : tensor<2x8xf32>
  %1 = rn.stochastic_depth %x p 2.000000e-01 : tensor<2x8xf32>
  return %0, %1 : tensor<2x8xf32>, tensor<2x8xf32>
}
