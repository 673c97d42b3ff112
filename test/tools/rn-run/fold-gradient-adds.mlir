// REQUIRES: rn-run
// RUN: %python -m rn.models resnet18c --batch 2 -o %t.mlir
// RUN: rn-compile %t.mlir -o %t.plain.rnx --quiet --no-weights --pipeline "momentum=0.9 fold-gradient-adds=false"
// RUN: rn-compile %t.mlir -o %t.fold.rnx --quiet --no-weights --pipeline "momentum=0.9"
// RUN: rn-run %t.plain.rnx --synthetic --steps 2 --lr 0.1 --executor cpu --state-digest %t.plain.json > %t.plain.log
// RUN: rn-run %t.fold.rnx --synthetic --steps 2 --lr 0.1 --executor cpu --state-digest %t.fold.json > %t.fold.log
// RUN: %python %S/../../../scripts/compare-digests.py --losses %t.plain.log %t.fold.log --tol 1e-6 | FileCheck %s --check-prefix=LOSSES
// RUN: %python %S/../../../scripts/compare-digests.py %t.plain.json %t.fold.json --tol 1e-5 | FileCheck %s --check-prefix=STATE
// RUN: rn-run %t.fold.rnx --synthetic --steps 1 --executor cpu --interleave | FileCheck %s --check-prefix=INTERLEAVE
// RUN: rn-compile %t.mlir -o %t.unfused-plain.rnx --quiet --no-weights --pipeline "momentum=0.9 fuse=false fold-gradient-adds=false"
// RUN: rn-compile %t.mlir -o %t.unfused-fold.rnx --quiet --no-weights --pipeline "momentum=0.9 fuse=false"
// RUN: rn-run %t.unfused-plain.rnx --synthetic --steps 2 --lr 0.1 --executor cpu --state-digest %t.unfused-plain.json > %t.unfused-plain.log
// RUN: rn-run %t.unfused-fold.rnx --synthetic --steps 2 --lr 0.1 --executor cpu --state-digest %t.unfused-fold.json > %t.unfused-fold.log
// RUN: %python %S/../../../scripts/compare-digests.py %t.unfused-plain.json %t.unfused-fold.json --tol 1e-5 | FileCheck %s --check-prefix=STATE
// RUN: rn-run %t.unfused-fold.rnx --synthetic --steps 1 --executor cpu --interleave | FileCheck %s --check-prefix=INTERLEAVE

// Tests rn-fold-gradient-adds end to end on the CPU executor, the oracle:
// ResNet-18 (CIFAR) in f32 with its 8 residual junctions' gradient sums
// folded into the data gradients (`plus`, the sum rounded once instead of
// twice) trains as the unfolded program does, losses and every state entry
// within f32 rounding, and the folded schedule runs under the randomized
// interleaving that checks every cross-stream access against the events.
// The same unfused (fuse=false), where the addends go to conv2d_backward
// (after its accumulators among the operands) instead of cbr_backward.

// LOSSES: 2/2 step losses agree within 1e-06
// STATE: 226/226 state entries agree within 1e-05
// INTERLEAVE: step 1 loss
