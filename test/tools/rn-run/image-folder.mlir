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

// Tests JPEGs that libjpeg decodes only with a warning: one cut to half its
// bytes (its header reads, its pixels end early) and one cut before its
// scan (its header does not read). Both are bad images: the run stops at
// load naming the second; --skip-bad-images leaves it out at load (named)
// and skips the first whenever an epoch reads it (counted); rn-data's show
// and to-jpeg refuse the first.
// RUN: rm -rf %t/jpg && rn-data to-jpeg %t/png %t/jpg --quality 90 > /dev/null
// RUN: %python -c "import glob; p=sorted(glob.glob('%t/jpg/train/0/*.jpg'))[0]; b=open(p,'rb').read(); open(p,'wb').write(b[:len(b) // 2])"
// RUN: %python -c "import glob; p=sorted(glob.glob('%t/jpg/train/1/*.jpg'))[0]; b=open(p,'rb').read(); open(p,'wb').write(b[:b.find(bytes([0xff, 0xda]))])"
// RUN: not rn-run %t.rnx --data %t/jpg --mean 0.2860 --std 0.3530 --executor cpu --no-progress 2>&1 | FileCheck %s --check-prefix=JPEGHEADER
// JPEGHEADER: rn-run: error: {{.*}}/jpg/train/1/{{[0-9]+}}.jpg: not a readable JPEG: the data is damaged or cut short (Premature end of JPEG file)
// RUN: rn-run %t.rnx --data %t/jpg --mean 0.2860 --std 0.3530 --executor cpu --no-progress --skip-bad-images | FileCheck %s --check-prefix=JPEGSKIP
// JPEGSKIP: data: image folder {{.*}}/jpg: 63 training and 32 val examples
// JPEGSKIP: skipped 1 images that did not read at load (--skip-bad-images):
// JPEGSKIP-NEXT: {{.*}}/jpg/train/1/{{[0-9]+}}.jpg: not a readable JPEG: the data is damaged or cut short
// JPEGSKIP: epoch 1/1 skipped 1 images that did not read (--skip-bad-images), the first: {{.*}}/jpg/train/0/{{[0-9]+}}.jpg: not a readable JPEG: the data is damaged or cut short (Premature end of JPEG file)
// RUN: not rn-run %t.rnx --data %t/jpg --executor cpu --no-progress 2>&1 | FileCheck %s --check-prefix=JPEGSTATS
// JPEGSTATS: rn-run: error: {{.*}}/jpg/train/1/{{[0-9]+}}.jpg: not a readable JPEG
// RUN: %python -c "import glob, os; os.remove(sorted(glob.glob('%t/jpg/train/1/*.jpg'))[0])"
// RUN: not rn-run %t.rnx --data %t/jpg --executor cpu --no-progress 2>&1 | FileCheck %s --check-prefix=JPEGDATA
// JPEGDATA: rn-run: error: {{.*}}/jpg/train/0/{{[0-9]+}}.jpg: not a readable JPEG: the data is damaged or cut short (Premature end of JPEG file)
// RUN: not rn-data to-jpeg %t/jpg %t/jpg2 2>&1 | FileCheck %s --check-prefix=TOJPEGBAD
// TOJPEGBAD: rn-data: error: {{.*}}/jpg/train/0/{{[0-9]+}}.jpg: not a readable JPEG: the data is damaged or cut short
