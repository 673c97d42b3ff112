// REQUIRES: rn-run
// RUN: rn-compile %s -o %t.rnx --quiet --pipeline "momentum=0.9"
// RUN: rn-run %t.rnx --synthetic --steps 20 --lr 0.1 | FileCheck %s
// RUN: rn-run %t.rnx --synthetic --steps 3 --interleave --seed 2 | FileCheck %s --check-prefix=INTERLEAVE
// RUN: not rn-run %t.missing.rnx --synthetic --steps 1 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: head -c 100 %t.rnx > %t.corrupt.rnx
// RUN: not rn-run %t.corrupt.rnx --synthetic --steps 1 2>&1 | FileCheck %s --check-prefix=CORRUPT
// RUN: not rn-run %t.rnx --steps 1 2>&1 | FileCheck %s --check-prefix=NODATA
// RUN: rn-run %t.rnx --synthetic --steps 1 | FileCheck %s --check-prefix=AUTO
// RUN: not rn-run %t.rnx --synthetic --steps 1 --executor gpu 2>&1 | FileCheck %s --check-prefix=BADEXECUTOR
// RUN: not rn-run %t.rnx --synthetic --steps 1 --executor cuda-eager 2>&1 | FileCheck %s --check-prefix=NOGPU
// RUN: not rn-run %t.rnx --synthetic --steps 1 --executor cuda-graph 2>&1 | FileCheck %s --check-prefix=NOGPU-GRAPH
// RUN: not rn-run %t.rnx --synthetic --steps 1 --executor cpu --dump-graphs %t.graphs 2>&1 | FileCheck %s --check-prefix=DUMP-CPU
// RUN: not rn-run %t.rnx --synthetic --steps 1 --executor cpu --profile 2>&1 | FileCheck %s --check-prefix=PROFILE-CPU
// RUN: rn-run %t.rnx --benchmark --steps 2 --warmup 1 --executor cpu | FileCheck %s --check-prefix=BENCH
// RUN: rn-run %t.rnx --synthetic --steps 2 --executor cpu --state-digest %t.digest.json
// RUN: rn-run %t.rnx --synthetic --steps 2 --executor cpu --state-digest %t.digest2.json
// RUN: %python %S/../../../scripts/compare-digests.py %t.digest.json %t.digest2.json --tol 0 | FileCheck %s --check-prefix=DIGEST
// RUN: rn-run %t.rnx --synthetic --steps 3 --executor cpu --state-digest %t.digest3.json
// RUN: not %python %S/../../../scripts/compare-digests.py %t.digest.json %t.digest3.json --tol 1e-6 | FileCheck %s --check-prefix=DIGEST-DIFF
// RUN: not rn-run %t.rnx --synthetic --steps 1 --autotune-candidates -1 2>&1 | FileCheck %s --check-prefix=BAD-CANDIDATES

// rn-run trains a tiny MLP from its artifact on the CPU executor with
// synthetic data: one loss per step, then the first and last loss and the
// speed. That the loss decreases is asserted in
// test/runtime/cpu_executor_test.cpp; here only the output format.

// CHECK: model tiny_mlp: batch 8, 4 features, 3 classes, 20 steps, lr 0.1
// CHECK: step 1 loss {{[0-9]+\.[0-9]+}}
// CHECK: step 20 loss {{[0-9]+\.[0-9]+}}
// CHECK: loss first {{[0-9]+\.[0-9]+}} last {{[0-9]+\.[0-9]+}}
// CHECK: {{[0-9.]+}} steps/s

// INTERLEAVE: interleaved
// INTERLEAVE: step 3 loss
// INTERLEAVE-NOT: error

// MISSING: rn-run: error: {{.*}}missing.rnx
// CORRUPT: rn-run: error: {{.*}}corrupt.rnx
// NODATA: rn-run: error: no data: give --data DIR or --synthetic

// Tests that the first line names the executor (auto: the CPU where no GPU
// answers, as in CI), that an unknown executor, a missing GPU and options
// of another executor are errors,
// the benchmark's JSON line, and that a state digest is reproducible and
// tells a third step from two.
// AUTO: rn-run: executor {{cpu|cuda-graph}} (auto)
// BADEXECUTOR: rn-run: error: --executor must be cpu, cuda-eager, cuda-graph or auto, got 'gpu'
// BAD-CANDIDATES: rn-run: error: --autotune-candidates must be an integer >= 0, got '-1'
// NOGPU: rn-run: error: --executor cuda-eager: {{no usable CUDA device|this rn-run was built without CUDA}}
// NOGPU-GRAPH: rn-run: error: --executor cuda-graph: {{no usable CUDA device|this rn-run was built without CUDA}}
// DUMP-CPU: rn-run: error: --dump-graphs needs --executor cuda-graph
// PROFILE-CPU: rn-run: error: --profile needs --executor cuda-eager
// BENCH: {"model": "tiny_mlp", "executor": "cpu", "batch": 8, "gpus": 1, "ms_per_step": {{[0-9.]+}}, "images_per_s": {{[0-9]+}}, "host_ms_per_step": {{[0-9.]+}}, "load_s": {{[0-9.]+}}, "first_step_s": {{[0-9.]+}}, "peak_memory_inproc_bytes": 0, "arena_bytes": {{[0-9]+}}, "conv_floor_ms": -1.000, "loss": {{[0-9.]+}}}
// DIGEST: 12/12 state entries agree within 0
// DIGEST-DIFF: fc1.weight (parameter): {{norm|sample}}
// DIGEST-DIFF: /12 state entries agree within 1e-06

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
