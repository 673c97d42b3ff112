// REQUIRES: rn-run
// RUN: %python -m rn.models fashion_cnn --channels 3 --image 32 --batch 32 -o %t.mlir
// RUN: rn-compile %t.mlir -o %t.rnx --quiet
// RUN: rm -rf %t.d && mkdir -p %t.d
// RUN: %python %S/Inputs/write_cifar.py %t.d/cifar 64 64

// Tests crop-flip on a CIFAR-10 folder: the data line says so, the steps'
// wait for data is reported, and the batches are a function of (seed,
// epoch, example): one loader thread and three train to the same state bit
// for bit.
// RUN: rn-run %t.rnx --data %t.d/cifar --augment crop-flip --loader-threads 1 --epochs 2 --executor cpu --no-progress --checkpoint %t.d/one.ck | FileCheck %s --check-prefix=CROP
// RUN: rn-run %t.rnx --data %t.d/cifar --augment crop-flip --loader-threads 3 --epochs 2 --executor cpu --no-progress --checkpoint %t.d/three.ck
// RUN: cmp %t.d/one.ck %t.d/three.ck
// CROP: data: CIFAR-10 in {{.*}}cifar: 320 training and 64 test examples, 32x32x3, 10 classes, mean {{.*}}; augmentation crop-flip (4-pixel zero padding, random crop, horizontal flip; evaluation unchanged)
// CROP: data loaded in {{.*}} s; 1 loader thread
// CROP: epoch 1/2 time {{.*}} s train ({{.*}} batches/s, {{.*}} images/s, {{.*}} s waiting for data), {{.*}} s test

// Tests that the augmentation changes training (another state than none)
// and that a run resumed after epoch 1 draws epoch 2's crops as the
// uninterrupted run did (the same loss lines).
// RUN: rn-run %t.rnx --data %t.d/cifar --augment none --epochs 2 --executor cpu --no-progress --checkpoint %t.d/none.ck
// RUN: not cmp -s %t.d/one.ck %t.d/none.ck
// RUN: rn-run %t.rnx --data %t.d/cifar --augment crop-flip --epochs 2 --stop-after-epoch 1 --executor cpu --no-progress --checkpoint %t.d/half.ck
// RUN: rn-run %t.rnx --data %t.d/cifar --augment crop-flip --epochs 2 --executor cpu --no-progress --resume %t.d/half.ck --checkpoint %t.d/resumed.ck
// RUN: cmp %t.d/one.ck %t.d/resumed.ck

// Tests that an unknown recipe is named with the choices.
// RUN: not rn-run %t.rnx --data %t.d/cifar --augment mixup --executor cpu 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// UNKNOWN: rn-run: error: --augment must be none, crop-flip (CIFAR: 4-pixel padded random crop + flip) or rrc-flip (ImageNet: random-resized crop + flip), got 'mixup'

// Tests an image folder of RGB PNGs of many sizes: refused without a
// resizing recipe (naming two files and the way out), trained with
// rrc-flip to the model's 32x32; the same folder re-encoded as JPEG trains
// too, at its size and shrunk to a shorter side of at most 30 (a
// pre-resized copy), and so does a copy with one grayscale image (read as
// RGB).
// RUN: %python %S/Inputs/write_image_folder.py %t.d/folder 16 4
// RUN: not rn-run %t.rnx --data %t.d/folder --executor cpu 2>&1 | FileCheck %s --check-prefix=SIZES
// SIZES: rn-run: error: {{.*}}folder/train/class0/0001.png: {{[0-9]+}}x{{[0-9]+}}x3 (HxWxC), but {{.*}}folder/train/class0/0000.png is {{[0-9]+}}x{{[0-9]+}}x3: all images of a folder must have one size (or be resized: --augment rrc-flip)
// RUN: rn-run %t.rnx --data %t.d/folder --augment rrc-flip --epochs 2 --executor cpu --no-progress | tee %t.d/rrc.txt | FileCheck %s --check-prefix=RRC
// RRC: data: image folder {{.*}}folder: 80 training and 20 val examples, NHWC, 3-channel uint8 images of varying sizes, 5 classes, mean {{.*}} (computed from the training split, its 80 images decoded once); augmentation rrc-flip (random-resized crop to 32x32, horizontal flip; evaluation: resize + center crop 0.8750)
// RRC: epoch 2/2 test loss {{.*}} accuracy {{.*}}% (20 examples)
// RUN: rn-data to-jpeg %t.d/folder %t.d/jpeg --quality 90 | FileCheck %s --check-prefix=TOJPEG
// TOJPEG: wrote 100 JPEG images (quality 90) to {{.*}}jpeg
// RUN: rn-run %t.rnx --data %t.d/jpeg --augment rrc-flip --executor cpu --no-progress | FileCheck %s --check-prefix=JPEG
// JPEG: data: image folder {{.*}}jpeg: 80 training and 20 val examples, NHWC, 3-channel uint8 images of varying sizes
// JPEG: epoch 1/1 test loss
// RUN: rn-data to-jpeg %t.d/folder %t.d/small --short-side 30 | FileCheck %s --check-prefix=SMALL
// SMALL: wrote 100 JPEG images (quality 90, shorter side at most 30) to {{.*}}small
// RUN: rn-run %t.rnx --data %t.d/small --augment rrc-flip --executor cpu --no-progress | FileCheck %s --check-prefix=SHRUNK
// SHRUNK: data: image folder {{.*}}small: 80 training and 20 val examples, NHWC, 3-channel uint8 images of varying sizes
// SHRUNK: epoch 1/1 test loss
// RUN: rn-run %t.rnx --data %t.d/folder-gray --augment rrc-flip --executor cpu --no-progress | FileCheck %s --check-prefix=GRAY
// GRAY: data: image folder {{.*}}folder-gray: 80 training and 20 val examples, NHWC, 3-channel uint8 images of varying sizes
// GRAY: epoch 1/1 test loss

// Tests the statistics of two data-parallel ranks (CPU replicas): each
// decodes only its half of the training images for them, and the sums of
// the two halves give the single rank's mean and std.
// RUN: %python -m rn.models fashion_cnn --channels 3 --image 32 --batch 16 -o %t.dp.mlir
// RUN: rn-compile %t.dp.mlir -o %t.dp.rnx --quiet --pipeline "data-parallel=true"
// RUN: rn-run %t.dp.rnx --data %t.d/folder --augment rrc-flip --executor cpu --cpu-replicas 2 --no-progress > %t.d/ranks.txt
// RUN: cat %t.d/rrc.txt %t.d/ranks.txt | FileCheck %s --check-prefix=RANKS
// RANKS: data: image folder {{.*}}folder: 80 training and 20 val examples, {{.*}} mean [[MEAN:[0-9.,]+]] std [[STD:[0-9.,]+]] (computed from the training split, its 80 images decoded once)
// RANKS: data: image folder {{.*}}folder: 80 training and 20 val examples, {{.*}} mean [[MEAN]] std [[STD]] (computed from the training split, its 80 images decoded once, shared among 2 ranks)
// RANKS: epoch 1/1 test loss

// Tests an image whose header reads but whose pixels do not (a validation
// image, which every epoch reads): the run stops naming it (exit 1), unless
// --skip-bad-images, which goes on and counts it.
// RUN: cp -r %t.d/folder %t.d/bad
// RUN: %python -c "p='%t.d/bad/val/class2/0001.png'; b=open(p,'rb').read(); open(p,'wb').write(b[:60] + bytes(len(b) - 60))"
// RUN: not rn-run %t.rnx --data %t.d/bad --augment rrc-flip --mean 0.5,0.5,0.5 --std 0.2,0.2,0.2 --executor cpu --no-progress 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: rn-run: error: epoch 1, {{.*}}bad/val/class2/0001.png: the PNG does not decode
// RUN: rn-run %t.rnx --data %t.d/bad --augment rrc-flip --mean 0.5,0.5,0.5 --std 0.2,0.2,0.2 --skip-bad-images --executor cpu --no-progress | FileCheck %s --check-prefix=SKIP
// SKIP: epoch 1/1 skipped 1 images that did not read (--skip-bad-images), the first: {{.*}}bad/val/class2/0001.png: the PNG does not decode

// Tests rn-data: the loader's images/s per thread count (one line and one
// JSON line each) and a grid of augmented samples.
// RUN: rn-data bench %t.d/cifar --augment crop-flip --threads 1,2 --batch 32 --batches 3 | FileCheck %s --check-prefix=BENCH
// BENCH: loader: NHWC, 32x32x3 after crop-flip of NHWC, 32x32 RGB, batch 32, 3 timed batches of epoch 0, normalized f32
// BENCH: threads 1: {{[0-9]+}} images/s, {{.*}} ms per batch of 32
// BENCH: {"threads": 1, "images_per_s": {{.*}}, "augment": "crop-flip", "pixels": false}
// BENCH: threads 2:
// RUN: rn-data bench %t.d/cifar --augment crop-flip --threads 1 --batch 32 --batches 3 --pixels | FileCheck %s --check-prefix=PIXELS
// PIXELS: batch 32, 3 timed batches of epoch 0, uint8 pixels (a uint8 model's input)
// PIXELS: {"threads": 1, "images_per_s": {{.*}}, "augment": "crop-flip", "pixels": true}
// RUN: rn-data show %t.d/folder --augment rrc-flip --size 24x32 --count 3 --draws 2 -o %t.d/grid.png | FileCheck %s --check-prefix=SHOW
// SHOW: wrote {{.*}}grid.png: 3 examples x (evaluation view + 2 training draws), 76x100x3
// RUN: not rn-data show %t.d/folder --augment rrc-flip -o %t.d/grid.png 2>&1 | FileCheck %s --check-prefix=NOSIZE
// NOSIZE: rn-data: error: {{.*}}folder: its images differ in size: give --size (the model's)
