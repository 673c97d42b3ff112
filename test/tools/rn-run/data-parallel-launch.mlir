// REQUIRES: rn-run
// RUN: rn-compile %S/bucket-all-reduce.mlir -o %t.dp.rnx --quiet --pipeline "precision=f16 loss-scaling=dynamic momentum=0.9 data-parallel=true"
// RUN: rn-compile %S/bucket-all-reduce.mlir -o %t.plain.rnx --quiet --pipeline "precision=f16 loss-scaling=dynamic momentum=0.9"
// RUN: env WORLD_SIZE=1 RANK=0 rn-run %t.dp.rnx --synthetic --steps 2 --executor cpu | FileCheck %s --check-prefix=ONE
// RUN: env WORLD_SIZE=2 RANK=0 not rn-run %t.dp.rnx --synthetic --steps 1 --executor cpu 2>&1 | FileCheck %s --check-prefix=NOADDR
// RUN: env WORLD_SIZE=2 RANK=0 MASTER_ADDR=127.0.0.1 not rn-run %t.dp.rnx --synthetic --steps 1 --executor cpu 2>&1 | FileCheck %s --check-prefix=NOPORT
// RUN: env WORLD_SIZE=2 RANK=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=29500 not rn-run %t.dp.rnx --synthetic --steps 1 --executor cpu 2>&1 | FileCheck %s --check-prefix=RANK
// RUN: env RANK=0 not rn-run %t.dp.rnx --synthetic --steps 1 --executor cpu 2>&1 | FileCheck %s --check-prefix=HALF
// RUN: env WORLD_SIZE=2 RANK=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=29500 not rn-run %t.dp.rnx --synthetic --steps 1 --executor cpu 2>&1 | FileCheck %s --check-prefix=CPU
// RUN: env WORLD_SIZE=2 RANK=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=29500 not rn-run %t.plain.rnx --synthetic --steps 1 --executor cpu 2>&1 | FileCheck %s --check-prefix=PLAIN
// RUN: env RN_DIST_TIMEOUT_S=soon not rn-run %t.dp.rnx --synthetic --steps 1 --executor cpu 2>&1 | FileCheck %s --check-prefix=TIMEOUT
// RUN: not rn-run %t.dp.rnx --synthetic --steps 1 --executor cpu --gpus 2 2>&1 | FileCheck %s --check-prefix=GPUS

// Tests rn-run's data-parallel launch checks, which need no GPU: one rank
// (WORLD_SIZE=1) trains with the CPU executor, which runs one replica;
// torchrun's variables are checked and named when missing or out of range;
// several ranks need a GPU executor and an artifact compiled data-parallel;
// --gpus (one process driving several GPUs) needs a GPU executor.

// ONE: rn-run: executor cpu, data-parallel rank 0 of 1
// ONE: step 2

// NOADDR: rn-run: error: WORLD_SIZE=2 needs MASTER_ADDR (the host of rank 0)
// NOPORT: rn-run: error: WORLD_SIZE=2 needs MASTER_PORT
// RANK: rn-run: error: WORLD_SIZE=2: RANK=2 is out of range [0, 1]
// HALF: rn-run: error: RANK is set but WORLD_SIZE is not (set both, as torchrun does)
// CPU: rn-run: error: rank 1 of 2: data-parallel training needs a GPU executor
// PLAIN: rn-run: error: rank 1 of 2: {{.*}}plain.rnx was not compiled data-parallel (no all_reduce_mean)
// TIMEOUT: rn-run: error: RN_DIST_TIMEOUT_S='soon' is not a positive number of seconds
// GPUS: rn-run: error: --gpus {{.*}}
