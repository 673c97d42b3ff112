// REQUIRES: rn-run
// RUN: rn-compile %s -o %t.rnx --quiet --pipeline "momentum=0.9"
// RUN: rn-run %t.rnx --synthetic --steps 5 --lr 0.1 --executor cpu --state-digest %t.a.json --state-digest-every 2 | FileCheck %s
// RUN: rn-run %t.rnx --synthetic --steps 5 --lr 0.1 --executor cpu --state-digest %t.b.json --state-digest-every 2
// RUN: rn-run %t.rnx --synthetic --steps 5 --lr 0.1 --executor cpu --state-digest %t.c.json --state-digest-every 2 --perturb-state 1e-7 3
// RUN: %python %S/../../../scripts/compare-digests.py %t.a.json %t.b.json --tol 0 | FileCheck %s --check-prefix=SAME
// RUN: not %python %S/../../../scripts/compare-digests.py %t.a.json %t.c.json --tol 0 | FileCheck %s --check-prefix=DIFFER
// RUN: %python -c "import json; print([s['step'] for s in json.load(open('%t.a.json'))['steps']])" | FileCheck %s --check-prefix=STEPS
// RUN: not rn-run %t.rnx --synthetic --steps 2 --state-digest-every 1 2>&1 | FileCheck %s --check-prefix=NO-FILE
// RUN: not rn-run %t.rnx --synthetic --steps 2 --state-digest %t.d.json --state-digest-every 0 2>&1 | FileCheck %s --check-prefix=ZERO

// rn-run --state-digest F --state-digest-every K writes the state's digest
// after every K steps and after the last one; compare-digests.py --tol 0
// compares every step's entries by the hash of their bits (how the GPU
// round checks cuda-eager against cuda-graph after every step). Two runs of
// the CPU executor agree bit for bit at every step; a perturbation below
// the momentum's print precision is caught at the first digest.

// CHECK: step 5 loss
// CHECK: state digest written to
// SAME: 3/3 steps (5 the last), 36 state entries, agree within 0 (bit for bit)
// DIFFER: step 2: {{[0-9]+}}/12 state entries beyond 0; 0 earlier steps agreed
// STEPS: [2, 4, 5]
// NO-FILE: rn-run: error: --state-digest-every needs --state-digest FILE
// ZERO: rn-run: error: --state-digest-every must be an integer >= 1, got '0'

module attributes {rn.model = "tiny_mlp"} {
  rn.parameter @fc1.weight : tensor<16x4xf32> = #rn.init<uniform, 5.000000e-01>
  rn.parameter @fc1.bias : tensor<16xf32> = #rn.init<uniform, 5.000000e-01>
  rn.parameter @fc2.weight : tensor<3x16xf32> = #rn.init<uniform, 2.500000e-01>
  rn.parameter @fc2.bias : tensor<3xf32> = #rn.init<uniform, 2.500000e-01>
  func.func @forward(%images: tensor<8x4xf32>, %labels: tensor<8xi32>) -> tensor<f32> {
    %0 = rn.param @fc1.weight : tensor<16x4xf32>
    %1 = rn.param @fc1.bias : tensor<16xf32>
    %2 = rn.linear %images, %0, %1 : (tensor<8x4xf32>, tensor<16x4xf32>, tensor<16xf32>) -> tensor<8x16xf32>
    %3 = rn.relu %2 : tensor<8x16xf32>
    %4 = rn.param @fc2.weight : tensor<3x16xf32>
    %5 = rn.param @fc2.bias : tensor<3xf32>
    %6 = rn.linear %3, %4, %5 : (tensor<8x16xf32>, tensor<3x16xf32>, tensor<3xf32>) -> tensor<8x3xf32>
    %7 = rn.softmax_cross_entropy %6, %labels label_smoothing 0.000000e+00 : (tensor<8x3xf32>, tensor<8xi32>) -> tensor<f32>
    return %7 : tensor<f32>
  }
}
