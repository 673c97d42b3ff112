// REQUIRES: rn-run, fashion-mnist
// RUN: %python -m rn.models mlp --batch 64 -o %t.mlir
// RUN: rn-compile %t.mlir -o %t.rnx --quiet
// RUN: rn-run %t.rnx --data /usr/share/datasets/fashion-mnist --epochs 2 --limit-train 6400 --limit-test 2000 --lr 0.1 --no-progress > %t.train.txt
// RUN: FileCheck %s < %t.train.txt
// The mean training loss decreases from epoch 1 to epoch 2.
// RUN: awk '/train loss/ { loss[++n] = $5 } END { exit !(n == 2 && loss[2] < loss[1]) }' %t.train.txt

// The whole test set is scored: 80 test examples in batches of 64 (one
// batch padded, scored from the logits of its 16 real rows) give the same
// accuracy and loss as in batches of 16 (same seed, so the same initial
// parameters; lr 0 leaves them unchanged).
// RUN: %python -m rn.models mlp --batch 16 -o %t.b16.mlir
// RUN: rn-compile %t.b16.mlir -o %t.b16.rnx --quiet
// RUN: rn-run %t.b16.rnx --data /usr/share/datasets/fashion-mnist --limit-train 64 --limit-test 80 --lr 0 --no-progress | grep 'test loss' > %t.b16.txt
// RUN: rn-run %t.rnx --data /usr/share/datasets/fashion-mnist --limit-train 64 --limit-test 80 --lr 0 --no-progress | grep 'test loss' > %t.b64.txt
// RUN: FileCheck %s --check-prefix=PADDED < %t.b64.txt
// RUN: diff %t.b16.txt %t.b64.txt

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

// CHECK: data: IDX (Fashion-MNIST) in /usr/share/datasets/fashion-mnist: 6400 training and 2000 test examples, NHWC, 28x28 grayscale, mean 0.2860 std 0.3530 (Fashion-MNIST's published values)
// CHECK: model mlp: batch 64, 10 classes; train 6400 examples (100 steps/epoch), test 2000 examples; 2 epochs, lr 0.1
// CHECK: epoch 1/2 train loss {{[0-9]+\.[0-9]+}} (100 steps
// CHECK: epoch 1/2 test loss {{[0-9]+\.[0-9]+}} accuracy {{[0-9]+\.[0-9]+}}% (2000 examples)
// CHECK: epoch 1/2 time
// CHECK: epoch 2/2 train loss {{[0-9]+\.[0-9]+}} (100 steps
// CHECK: epoch 2/2 test loss {{[0-9]+\.[0-9]+}} accuracy {{(7[0-9]|8[0-9]|9[0-9])\.[0-9]+}}% (2000 examples)
// CHECK: done: 2 epochs

// PADDED: epoch 1/1 test loss {{[0-9]+\.[0-9]+}} accuracy {{[0-9]+\.[0-9]+}}% (80 examples)

// FIRST: epoch 1/2 checkpoint {{.*}}.ck
// FIRST: stopped after epoch 1 (--stop-after-epoch)
// FIRST-NOT: epoch 2/2

// RESUMED: resumed from {{.*}}.ck after epoch 1
// RESUMED-NOT: epoch 1/2
// RESUMED: epoch 2/2 train loss
// RESUMED: epoch 2/2 test loss

// NODIR: rn-run: error: {{.*}}nonexistent: no such file or folder (--data takes a folder of Fashion-MNIST's IDX files, CIFAR's binary files or images, or an .npz file)
// UNWRITABLE: rn-run: error: cannot write the checkpoint {{.*}}nodir/ck.safetensors
