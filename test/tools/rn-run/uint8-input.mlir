// REQUIRES: rn-run
// RUN: rm -rf %t.d && mkdir -p %t.d
// RUN: %python %S/Inputs/write_cifar.py %t.d/cifar 64 64
// RUN: %python -m rn.models fashion_cnn --channels 3 --image 32 --batch 32 -o %t.d/f32.mlir
// RUN: %python -m rn.models fashion_cnn --channels 3 --image 32 --batch 32 --input-dtype uint8 --mean 0.5,0.5,0.5 --std 0.25,0.25,0.25 -o %t.d/u8.mlir
// RUN: rn-compile %t.d/f32.mlir -o %t.d/f32.rnx --quiet
// RUN: rn-compile %t.d/u8.mlir -o %t.d/u8.rnx --quiet

// Tests uint8 images on the wire: the same model with f32 images
// (normalized on the host) and with uint8 images (normalized on the device
// with the data's mean and std, which rn-run writes over the compiled
// defaults) trains the same, bit for bit, on CIFAR-format data with
// crop-flip augmentation: identical loss and accuracy lines, and checkpoints
// that differ only by the uint8 model's two normalization buffers.
// RUN: rn-run %t.d/f32.rnx --data %t.d/cifar --mean 0.25,0.3,0.35 --std 0.31,0.32,0.33 --augment crop-flip --epochs 2 --executor cpu --no-progress --checkpoint %t.d/f32.ck > %t.d/f32.txt
// RUN: rn-run %t.d/u8.rnx --data %t.d/cifar --mean 0.25,0.3,0.35 --std 0.31,0.32,0.33 --augment crop-flip --epochs 2 --executor cpu --no-progress --checkpoint %t.d/u8.ck > %t.d/u8.txt
// RUN: FileCheck %s --check-prefix=DATA < %t.d/u8.txt
// RUN: grep -E "train loss|test loss" %t.d/f32.txt > %t.d/f32.loss
// RUN: grep -E "train loss|test loss" %t.d/u8.txt > %t.d/u8.loss
// RUN: diff %t.d/f32.loss %t.d/u8.loss
// RUN: FileCheck %s --check-prefix=LOSS < %t.d/u8.loss
// RUN: %python %S/Inputs/compare_checkpoints.py %t.d/f32.ck %t.d/u8.ck | FileCheck %s --check-prefix=CHECKPOINT
// DATA: data: CIFAR-10 in {{.*}}cifar: 320 training and 64 test examples, 32x32x3, 10 classes, mean 0.2500,0.3000,0.3500 std 0.3100,0.3200,0.3300 (given); augmentation crop-flip
// DATA-NEXT: images uint8, normalized on the device with mean 0.2500,0.3000,0.3500 std 0.3100,0.3200,0.3300
// LOSS: epoch 1/2 train loss
// LOSS: epoch 2/2 test loss {{.*}} accuracy
// CHECKPOINT: only in {{.*}}u8.ck: input.mean (buffer) = 0.2500,0.3000,0.3500
// CHECKPOINT-NEXT: only in {{.*}}u8.ck: input.std (buffer) = 0.3100,0.3200,0.3300
// CHECKPOINT-NEXT: 34 tensors in both, 0 differ

// Tests the fused stem under f16 (the pad of the first convolution reads
// the bytes and writes normalized, padded f16 values): it trains, and equals
// the f32-images model compiled the same way (whose pad converts the host's
// normalized floats to f16 with the same one rounding).
// RUN: rn-compile %t.d/u8.mlir -o %t.d/u8-f16.rnx --quiet --pipeline "precision=f16 loss-scaling=dynamic" --step-output %t.d/u8-f16.mlir
// RUN: FileCheck %s --check-prefix=FUSED < %t.d/u8-f16.mlir
// RUN: rn-compile %t.d/f32.mlir -o %t.d/f32-f16.rnx --quiet --pipeline "precision=f16 loss-scaling=dynamic"
// RUN: rn-run %t.d/u8-f16.rnx --data %t.d/cifar --augment crop-flip --epochs 2 --executor cpu --no-progress --checkpoint %t.d/u8-f16.ck > %t.d/u8-f16.txt
// RUN: rn-run %t.d/f32-f16.rnx --data %t.d/cifar --augment crop-flip --epochs 2 --executor cpu --no-progress --checkpoint %t.d/f32-f16.ck > %t.d/f32-f16.txt
// RUN: FileCheck %s --check-prefix=F16 < %t.d/u8-f16.txt
// RUN: grep -E "train loss|test loss" %t.d/f32-f16.txt > %t.d/f32-f16.loss
// RUN: grep -E "train loss|test loss" %t.d/u8-f16.txt > %t.d/u8-f16.loss
// RUN: diff %t.d/f32-f16.loss %t.d/u8-f16.loss
// RUN: %python %S/Inputs/compare_checkpoints.py %t.d/f32-f16.ck %t.d/u8-f16.ck | FileCheck %s --check-prefix=CHECKPOINT-F16
// FUSED: rn.pad_channels %{{.+}} normalize %{{.+}}, %{{.+}} {{.+}} : tensor<32x32x32x3xui8>, tensor<3xf32>, tensor<3xf32> -> tensor<32x32x32x8xf16>
// F16: images uint8, normalized on the device with mean {{.*}} std
// F16: epoch 2/2 test loss {{[0-9.]+}} accuracy
// CHECKPOINT-F16: only in {{.*}}: input.mean (buffer)
// CHECKPOINT-F16: tensors in both, 0 differ

// Tests a run resumed after epoch 1: it ends in the uninterrupted run's
// state, normalization buffers included.
// RUN: rn-run %t.d/u8.rnx --data %t.d/cifar --mean 0.25,0.3,0.35 --std 0.31,0.32,0.33 --augment crop-flip --epochs 2 --stop-after-epoch 1 --executor cpu --no-progress --checkpoint %t.d/half.ck
// RUN: rn-run %t.d/u8.rnx --data %t.d/cifar --mean 0.25,0.3,0.35 --std 0.31,0.32,0.33 --augment crop-flip --epochs 2 --resume %t.d/half.ck --executor cpu --no-progress --checkpoint %t.d/resumed.ck
// RUN: cmp %t.d/u8.ck %t.d/resumed.ck

// Tests the interleaved CPU executor's hazard checks on a uint8 model (its
// byte slots share the arena with float ones).
// RUN: rn-run %t.d/u8-f16.rnx --data %t.d/cifar --epochs 1 --executor cpu --interleave --no-progress | FileCheck %s --check-prefix=INTERLEAVE
// INTERLEAVE: epoch 1/1 test loss

// Tests --synthetic and --benchmark on a uint8 model (random bytes).
// RUN: rn-run %t.d/u8.rnx --synthetic --steps 2 --executor cpu | FileCheck %s --check-prefix=SYNTHETIC
// SYNTHETIC: model fashion_cnn: batch 32, 3072 features (uint8, normalized on the device), 10 classes, 2 steps
// SYNTHETIC: loss first
// RUN: rn-run %t.d/u8.rnx --benchmark --steps 2 --warmup 1 --executor cpu | FileCheck %s --check-prefix=BENCHMARK
// BENCHMARK: {"model": "fashion_cnn", "executor": "cpu", "batch": 32,

// Tests that a uint8 model refuses float images (an .npz of float32 arrays)
// with what to do instead.
// RUN: %python -c "import numpy as np; x = np.zeros((64, 32, 32, 3), np.float32); y = np.zeros(64, np.int64); np.savez('%t.d/floats.npz', x_train=x, y_train=y, x_test=x, y_test=y)"
// RUN: not rn-run %t.d/u8.rnx --data %t.d/floats.npz --mean 0.5,0.5,0.5 --std 0.2,0.2,0.2 --executor cpu 2>&1 | FileCheck %s --check-prefix=FLOATS
// FLOATS: rn-run: error: {{.*}}u8.rnx: the model takes uint8 images (normalized on the device), and {{.*}}floats.npz holds float images: give it data with pixels (uint8 .npz, IDX, CIFAR or an image folder), or compile the model with float images
