// REQUIRES: rn-run, fashion-mnist
// RUN: %python -m rn.models fashion_cnn --batch 32 -o %t.mlir
// RUN: rn-compile %t.mlir -o %t.rnx --quiet
// RUN: %python %S/Inputs/fashion_to_npz.py /usr/share/datasets/fashion-mnist %t 256 96

// The same examples from the IDX files and from an .npz archive (stored,
// NHW, int64 labels; deflated, NHWC, uint8 labels), with Fashion-MNIST's
// mean and std given, train to the same state bit for bit: the
// checkpoints (every state entry and the run's metadata) are identical.
// RUN: rn-run %t.rnx --data /usr/share/datasets/fashion-mnist --limit-train 256 --limit-test 96 --executor cpu --no-progress --checkpoint %t.idx.ck > %t.idx.txt
// RUN: rn-run %t.rnx --data %t.npz --mean 0.2860 --std 0.3530 --executor cpu --no-progress --checkpoint %t.npz.ck | FileCheck %s
// RUN: rn-run %t.rnx --data %t.nhwc.npz --mean 0.2860 --std 0.3530 --executor cpu --no-progress --checkpoint %t.nhwc.ck
// RUN: cmp %t.idx.ck %t.npz.ck
// RUN: rn-run %t.rnx --data /usr/share/datasets/fashion-mnist --mean 0.2860 --std 0.3530 --limit-train 256 --limit-test 96 --executor cpu --no-progress --checkpoint %t.idx-given.ck | FileCheck %s --check-prefix=IDX
// RUN: cmp %t.idx.ck %t.idx-given.ck
// IDX: data: IDX (Fashion-MNIST) in /usr/share/datasets/fashion-mnist: 256 training and 96 test examples, NHWC, 28x28 grayscale, mean 0.2860 std 0.3530 (given)
// RUN: not rn-run %t.rnx --data /usr/share/datasets/fashion-mnist --mean 0.5,0.5,0.5 --std 0.2,0.2,0.2 --executor cpu 2>&1 | FileCheck %s --check-prefix=IDX3
// IDX3: IDX images have one channel: give --mean and --std with one value each
// RUN: cmp %t.idx.ck %t.nhwc.ck
// CHECK: data: NPZ {{.*}}.npz: 256 training and 96 test examples, NHWC, 28x28x1 uint8, 10 classes, mean 0.2860 std 0.3530 (given)

// Without --mean/--std, the training split's statistics, printed.
// RUN: rn-run %t.rnx --data %t.npz --limit-train 64 --limit-test 32 --executor cpu --no-progress | FileCheck %s --check-prefix=STATS
// STATS: data: NPZ {{.*}}: 64 training and 32 test examples, NHWC, 28x28x1 uint8, 10 classes, mean 0.{{[0-9]+}} std 0.{{[0-9]+}} (computed from the training split)

// Every problem is an error naming the file and what is wrong.
// RUN: not rn-run %t.rnx --data %t.bad-key.npz --executor cpu 2>&1 | FileCheck %s --check-prefix=KEY
// KEY: bad-key.npz: no array 'y_test' (an image .npz holds x_train, y_train, x_test, y_test as Keras' mnist.npz; this one holds x_test, x_train, y_train)
// RUN: not rn-run %t.rnx --data %t.nchw.npz --executor cpu 2>&1 | FileCheck %s --check-prefix=NCHW
// NCHW: nchw.npz: x_train has 28 channels in its last dimension (shape [256, 1, 28, 28]): images are NHWC; transpose NCHW arrays with x.transpose(0, 2, 3, 1)
// RUN: not rn-run %t.rnx --data %t.f64.npz --executor cpu 2>&1 | FileCheck %s --check-prefix=F64
// F64: f64.npz: x_train has dtype '<f8'; images are uint8 or float32
// RUN: not rn-run %t.rnx --data %t.truncated.npz --executor cpu 2>&1 | FileCheck %s --check-prefix=CUT
// CUT: truncated.npz: not a zip archive (no end of central directory record)
// RUN: not rn-run %t.rnx --data %t.npz --mean 0.1,0.2,0.3 --std 0.3,0.3,0.3 --executor cpu 2>&1 | FileCheck %s --check-prefix=CHANNELS
// CHANNELS: npz: its images have 1 channel; give --mean and --std with 1 value each
