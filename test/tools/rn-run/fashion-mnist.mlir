// REQUIRES: rn-run, fashion-mnist
// RUN: %python -m rn.models mlp --batch 64 -o %t.mlir
// RUN: rn-compile %t.mlir -o %t.rnx --quiet
// RUN: rn-run %t.rnx --data /usr/share/datasets/fashion-mnist --epochs 2 --limit-train 6400 --limit-test 2000 --lr 0.1 --no-progress | FileCheck %s

// Checkpoint and resume: 1 epoch + checkpoint, then --resume for epoch 2,
// whose train and test lines equal those of an uninterrupted 2-epoch run.
// RUN: rm -f %t.ck
// RUN: rn-run %t.rnx --data /usr/share/datasets/fashion-mnist --epochs 2 --limit-train 640 --limit-test 128 --lr 0.1 --seed 3 --no-progress > %t.full.txt
// RUN: rn-run %t.rnx --data /usr/share/datasets/fashion-mnist --epochs 2 --limit-train 640 --limit-test 128 --lr 0.1 --seed 3 --no-progress --checkpoint %t.ck --stop-after-epoch 1 > %t.first.txt
// RUN: FileCheck %s --check-prefix=FIRST < %t.first.txt
// RUN: rn-run %t.rnx --data /usr/share/datasets/fashion-mnist --epochs 2 --limit-train 640 --limit-test 128 --lr 0.1 --seed 3 --no-progress --resume %t.ck > %t.resumed.txt
// RUN: FileCheck %s --check-prefix=RESUMED < %t.resumed.txt
// RUN: grep 'epoch 2/2 t[a-z]* loss' %t.full.txt > %t.full2.txt
// RUN: grep 'epoch 2/2 t[a-z]* loss' %t.resumed.txt > %t.resumed2.txt
// RUN: diff %t.full2.txt %t.resumed2.txt

// Errors.
// RUN: not rn-run %t.rnx --data %t.nonexistent --epochs 1 2>&1 | FileCheck %s --check-prefix=NODIR
// RUN: not rn-run %t.rnx --data /usr/share/datasets/fashion-mnist --epochs 1 --checkpoint %t.nodir/ck.safetensors 2>&1 | FileCheck %s --check-prefix=UNWRITABLE

// CHECK: model mlp: batch 64, 10 classes; train 6400 examples (100 steps/epoch), test 2000 examples; 2 epochs, lr 0.1
// CHECK: epoch 1/2 train loss {{[0-9]+\.[0-9]+}} (100 steps
// CHECK: epoch 1/2 test loss {{[0-9]+\.[0-9]+}} accuracy {{[0-9]+\.[0-9]+}}% (1984 of 2000 examples evaluated, the last 16 do not fill a batch)
// CHECK: epoch 1/2 time
// CHECK: epoch 2/2 train loss {{[0-9]+\.[0-9]+}} (100 steps
// CHECK: epoch 2/2 test loss {{[0-9]+\.[0-9]+}} accuracy {{(7[0-9]|8[0-9]|9[0-9])\.[0-9]+}}% (1984 of 2000
// CHECK: done: 2 epochs

// FIRST: epoch 1/2 checkpoint {{.*}}.ck
// FIRST: stopped after epoch 1 (--stop-after-epoch)
// FIRST-NOT: epoch 2/2

// RESUMED: resumed from {{.*}}.ck after epoch 1
// RESUMED-NOT: epoch 1/2
// RESUMED: epoch 2/2 train loss
// RESUMED: epoch 2/2 test loss

// NODIR: rn-run: error: {{.*}}nonexistent: cannot open the data directory
// UNWRITABLE: rn-run: error: cannot write the checkpoint {{.*}}nodir/ck.safetensors
