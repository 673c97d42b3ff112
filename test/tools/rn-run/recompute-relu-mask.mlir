// REQUIRES: rn-run
// RUN: %python -m rn.models resnet18c --batch 2 -o %t.mlir
// RUN: rn-compile %t.mlir -o %t.stored.rnx --quiet --no-weights --pipeline "momentum=0.9 recompute-relu-mask=false"
// RUN: rn-compile %t.mlir -o %t.recomputed.rnx --quiet --no-weights --pipeline "momentum=0.9"
// RUN: rn-run %t.stored.rnx --synthetic --steps 2 --lr 0.1 --executor cpu --state-digest %t.stored.json > %t.stored.log
// RUN: rn-run %t.recomputed.rnx --synthetic --steps 2 --lr 0.1 --executor cpu --state-digest %t.recomputed.json > %t.recomputed.log
// RUN: %python %S/../../../scripts/compare-digests.py --losses %t.stored.log %t.recomputed.log --tol 1e-6 | FileCheck %s --check-prefix=LOSSES
// RUN: %python %S/../../../scripts/compare-digests.py %t.stored.json %t.recomputed.json --tol 1e-5 | FileCheck %s --check-prefix=STATE
// RUN: rn-run %t.recomputed.rnx --synthetic --steps 1 --executor cpu --interleave | FileCheck %s --check-prefix=INTERLEAVE
// RUN: rn-compile %t.mlir -o %t.f16-stored.rnx --quiet --no-weights --pipeline "momentum=0.9 precision=f16 recompute-relu-mask=false"
// RUN: rn-compile %t.mlir -o %t.f16-recomputed.rnx --quiet --no-weights --pipeline "momentum=0.9 precision=f16"
// RUN: rn-run %t.f16-stored.rnx --synthetic --steps 2 --lr 0.1 --executor cpu --state-digest %t.f16-stored.json > %t.f16-stored.log
// RUN: rn-run %t.f16-recomputed.rnx --synthetic --steps 2 --lr 0.1 --executor cpu --state-digest %t.f16-recomputed.json > %t.f16-recomputed.log
// RUN: %python %S/../../../scripts/compare-digests.py --losses %t.f16-stored.log %t.f16-recomputed.log --tol 1e-3 | FileCheck %s --check-prefix=LOSSES-F16

// Tests rn-recompute-relu-mask end to end on the CPU executor, the oracle:
// ResNet-18 (CIFAR) with its 9 CBR backward ops' ReLU masks recomputed
// from the convolution outputs trains as the program that reads the ReLU
// results does (in f32, losses and every state entry within rounding: the
// CPU's forward normalizes in double, the recomputation in f32, so a value
// within rounding of zero may fall on the other side), and the recomputed
// schedule runs under the randomized interleaving that checks every
// cross-stream access (beta is now read by the backward) against the
// events. In f16 the losses agree too.

// LOSSES: 2/2 step losses agree within 1e-06
// STATE: 226/226 state entries agree within 1e-05
// INTERLEAVE: step 1 loss
// LOSSES-F16: 2/2 step losses agree within 0.001
