// REQUIRES: rn-run
// RUN: rn-compile %s -o %t.rnx --quiet --pipeline "momentum=0.9"
// RUN: rn-run %t.rnx --synthetic --steps 1 --lr 0 --executor cpu --state-digest %t.ref.json
// RUN: rn-run %t.rnx --synthetic --steps 1 --lr 0 --executor cpu --perturb-state 1e-6 7 --state-digest %t.p7.json | FileCheck %s
// RUN: rn-run %t.rnx --synthetic --steps 1 --lr 0 --executor cpu --perturb-state 1e-6 7 --state-digest %t.p7b.json
// RUN: rn-run %t.rnx --synthetic --steps 1 --lr 0 --executor cpu --perturb-state 1e-6 8 --state-digest %t.p8.json
// RUN: %python %S/../../../scripts/compare-digests.py %t.p7.json %t.p7b.json --tol 0 | FileCheck %s --check-prefix=SAME
// RUN: not %python %S/../../../scripts/compare-digests.py %t.p7.json %t.p8.json --tol 0 | FileCheck %s --check-prefix=SEED
// RUN: %python %S/../../../scripts/compare-digests.py %t.ref.json %t.p7.json --tol 2e-6 | FileCheck %s --check-prefix=SMALL
// RUN: not %python %S/../../../scripts/compare-digests.py %t.ref.json %t.p7.json --tol 1e-7 | FileCheck %s --check-prefix=MOVED
// RUN: %python %S/../../../scripts/compare-digests.py %t.ref.json %t.p7.json --tol 0 --noise %t.p8.json | FileCheck %s --check-prefix=NOISE
// RUN: not rn-run %t.rnx --synthetic --steps 1 --perturb-state 1 7 2>&1 | FileCheck %s --check-prefix=BAD-EPS
// RUN: not rn-run %t.rnx --synthetic --steps 1 --perturb-state 1e-6 x 2>&1 | FileCheck %s --check-prefix=BAD-SEED
// RUN: not rn-run %t.rnx --synthetic --steps 1 --perturb-state 1e-6 2>&1 | FileCheck %s --check-prefix=NO-SEED
// RUN: not rn-run %t.rnx --data %t.none --resume %t.ckpt --perturb-state 1e-6 7 2>&1 | FileCheck %s --check-prefix=RESUME

// rn-run --perturb-state EPS SEED multiplies every parameter element by
// (1 + EPS u), u uniform in [-1, 1] from SEED, after initialization: the
// noise digests of scripts/zoo-digests.sh, which measure how much an
// ulp-scale change moves one training step (docs/gpu-tests.md). With lr 0
// the parameters after the step are the perturbed initial ones: within
// 1e-6 of the unperturbed run, not within 1e-7 (the bound 2e-6 leaves room
// for the f32 rounding and for the gradients, which this well-conditioned
// MLP moves by about as much). The same seed gives the same bits, another
// seed other ones; and compare-digests.py with a noise digest accepts a
// difference of the noise's size where --tol 0 alone would not.

// CHECK: parameters perturbed by a relative 1e-06 (seed 7)
// CHECK: model tiny_mlp: batch 8
// SAME: 12/12 state entries agree within 0
// SEED: /12 state entries agree within 0
// SMALL: 12/12 state entries agree within 2e-06
// MOVED: fc{{[12]}}.{{weight|bias}} (parameter):
// NOISE: 12/12 state entries agree within max(0, 4 x noise) (1 noise digests; {{[0-9]+}} beyond 0 within their noise, 0 without a significant digit)
// BAD-EPS: rn-run: error: --perturb-state EPS must be a number in [0, 1), got '1'
// BAD-SEED: rn-run: error: --perturb-state SEED must be an integer >= 0, got 'x'
// NO-SEED: rn-run: error: --perturb-state needs a value
// RESUME: rn-run: error: --perturb-state and --resume exclude each other

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
