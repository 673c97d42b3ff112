// REQUIRES: rn-run, fashion-mnist
// RUN: %python -m rn.models fashion_cnn --batch 32 -o %t.mlir
// RUN: rn-compile %t.mlir -o %t.rnx --quiet
// RUN: %python %S/Inputs/fashion_to_png.py /usr/share/datasets/fashion-mnist %t 64 32

// The first 64 training and 32 test examples of Fashion-MNIST as a folder
// of grayscale PNGs (train/<label>/<index>.png, val/...) and as an .npz of
// the same examples in the folder's order (class by class): with
// Fashion-MNIST's mean and std given, they train to the same state bit for
// bit (every state entry and the run's metadata).
// RUN: rn-run %t.rnx --data %t/png --mean 0.2860 --std 0.3530 --executor cpu --no-progress --checkpoint %t.png.ck | FileCheck %s
// RUN: rn-run %t.rnx --data %t.npz --mean 0.2860 --std 0.3530 --executor cpu --no-progress --checkpoint %t.npz.ck
// RUN: cmp %t.png.ck %t.npz.ck
// CHECK: data: image folder {{.*}}/png: 64 training and 32 val examples, NHWC, 28x28x1 uint8 images, 10 classes, mean 0.2860 std 0.3530 (given)

// Without --mean/--std, the training split's statistics: every training
// image decoded once, the same values as the .npz's, the same state.
// RUN: rn-run %t.rnx --data %t/png --executor cpu --no-progress --checkpoint %t.png-stats.ck > %t.png-stats.txt
// RUN: rn-run %t.rnx --data %t.npz --executor cpu --no-progress --checkpoint %t.npz-stats.ck > %t.npz-stats.txt
// RUN: cat %t.png-stats.txt %t.npz-stats.txt | FileCheck %s --check-prefix=STATS
// RUN: cmp %t.png-stats.ck %t.npz-stats.ck
// STATS: data: image folder {{.*}}/png: 64 training and 32 val examples, NHWC, 28x28x1 uint8 images, 10 classes, mean [[MEAN:0\.[0-9]+]] std [[STD:0\.[0-9]+]] (computed from the training split, its 64 images decoded once)
// STATS: data: NPZ {{.*}}.npz: 64 training and 32 test examples, NHWC, 28x28x1 uint8, 10 classes, mean [[MEAN]] std [[STD]] (computed from the training split)

// Every problem is an error naming the file or folder; an image whose
// header reads but whose pixels do not stops the run (exit 1).
// RUN: not rn-run %t.rnx --data %t/corrupt --mean 0.2860 --std 0.3530 --executor cpu --no-progress 2>&1 | FileCheck %s --check-prefix=CORRUPT
// CORRUPT: rn-run: error: epoch 1: {{.*}}/corrupt/train/0/00001.png: the PNG does not decode: IDAT:
// RUN: not rn-run %t.rnx --data %t/size --mean 0.2860 --std 0.3530 --executor cpu 2>&1 | FileCheck %s --check-prefix=SIZE
// SIZE: rn-run: error: {{.*}}/size/val/9/00028.png: 27x28x1 (HxWxC), but {{.*}}/size/train/0/00001.png is 28x28x1: all images of a folder must have one size
// RUN: not rn-run %t.rnx --data %t/mismatch --executor cpu 2>&1 | FileCheck %s --check-prefix=MISMATCH
// MISMATCH: rn-run: error: {{.*}}/mismatch: the class folders of val differ from train's: val lacks '9'; val has '10', which train has not
// RUN: not rn-run %t.rnx --data %t/empty --executor cpu 2>&1 | FileCheck %s --check-prefix=EMPTY
// EMPTY: rn-run: error: {{.*}}/empty/train/3: no images in the class folder (.png, .jpg or .jpeg files)
// RUN: not rn-run %t.rnx --data %t/noclasses --executor cpu 2>&1 | FileCheck %s --check-prefix=NOCLASSES
// NOCLASSES: rn-run: error: {{.*}}/noclasses/train: no class folders
// RUN: not rn-run %t.rnx --data %t/noval --executor cpu 2>&1 | FileCheck %s --check-prefix=NOVAL
// NOVAL: rn-run: error: {{.*}}/noval: no val or test folder beside train
// RUN: not rn-run %t.rnx --data %t/png --mean 0.5,0.5,0.5 --std 0.2,0.2,0.2 --executor cpu 2>&1 | FileCheck %s --check-prefix=CHANNELS
// CHANNELS: png: its images have 1 channel; give --mean and --std with 1 value each
