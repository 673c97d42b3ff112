#!/usr/bin/env bash
# Runs the GPU tests on the GPU machine from a bundle (scripts/bundle-gpu.sh):
# the kernel tests against the CPU references, the executor tests, the error
# paths, Fashion-MNIST training, the zoo against the CPU's digests, cuda-graph
# against cuda-eager bit for bit, and compute-sanitizer. Logs and a summary
# go to $OUT (or ./gpu-results).
#   RN_GPU_TESTS: which groups to run (default "unit errors fashion zoo dist dist2 observe
#   sanitizer"; dist2 needs two GPUs and says it skipped with one)
#   RN_FASHION_EXECUTORS: executors that train Fashion-MNIST (default cuda-graph)
set -uo pipefail
bundle=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$bundle/scripts/gpu-env.sh"
bin=$bundle/bin
models=$bundle/models
data=$bundle/data
groups=${RN_GPU_TESTS:-unit errors fashion zoo dist dist2 observe sanitizer}
summary=$out/summary.txt
: > "$summary"
say() { echo "$*" | tee -a "$summary"; }

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/gpu.txt"

has() { [[ " $groups " == *" $1 "* ]]; }

if has unit; then
  "$bin/rn-cuda-tests" --gtest_output=json:"$out/rn-cuda-tests.json" > "$out/rn-cuda-tests.log" 2>&1
  rc=$?
  say "rn-cuda-tests: exit $rc; $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$out/rn-cuda-tests.log" | tr '\n' ' ')"
  grep -E '^\[  FAILED  \]' "$out/rn-cuda-tests.log" | head -40 | tee -a "$summary"
fi

if has errors; then
  # Each error path once: a clear message and exit code 1.
  run_error() { # name expected-rc command...
    local name=$1 want=$2; shift 2
    "$@" > "$out/error-$name.log" 2>&1
    local rc=$?
    say "error path $name: exit $rc (want $want): $(grep -m1 -E 'error' "$out/error-$name.log")"
  }
  run_error no-gpu 1 env CUDA_VISIBLE_DEVICES= "$bin/rn-run" "$models/mlp.train.rnx" \
    --synthetic --steps 2 --executor cuda-eager
  run_error injected-call 1 env RN_CUDA_FAIL_CALL=40 "$bin/rn-run" "$models/mlp.train.rnx" \
    --synthetic --steps 2 --executor cuda-eager
  run_error injected-late 1 env RN_CUDA_FAIL_CALL=400 "$bin/rn-run" "$models/cnn.rnx" \
    --synthetic --steps 3 --executor cuda-eager
  # cuda-graph: a call failing during load (capture) and one during replay.
  run_error graph-injected-load 1 env RN_CUDA_FAIL_CALL=300 "$bin/rn-run" "$models/cnn.rnx" \
    --synthetic --steps 3 --executor cuda-graph
  run_error graph-injected-step 1 env RN_CUDA_FAIL_CALL=2000 "$bin/rn-run" "$models/cnn.rnx" \
    --synthetic --steps 200 --executor cuda-graph
  # An op configuration cuDNN cannot run: every convolution engine barred
  # (RN_CONV_ENGINES names none that exists), with cuda-graph.
  run_error unsupported-conv 1 env RN_CONV_ENGINES=no-such-engine "$bin/rn-run" "$models/cnn.rnx" \
    --synthetic --steps 2 --executor cuda-graph --plan-cache none
  # An arena larger than the GPU's memory (ResNet-50 at batch 4096: 168 GiB).
  run_error out-of-memory 1 "$bin/rn-run" "$models/resnet50.oom.rnx" --synthetic --steps 1 \
    --executor cuda-eager
fi

if has fashion; then
  for ex in ${RN_FASHION_EXECUTORS:-cuda-graph}; do
    for spec in "fashion_cnn 2 0.01" "mlp 1 0.1"; do
      set -- $spec
      "$bin/rn-run" "$models/$1.train.rnx" --data "$data" --epochs "$2" --lr "$3" \
        --executor "$ex" > "$out/fashion-$1-$ex.log" 2>&1
      say "fashion $1 ($ex, $2 epochs, lr $3): exit $?; $(grep -E 'test loss' "$out/fashion-$1-$ex.log" | tail -1)"
    done
  done
fi

if has zoo && [ -d "$bundle/zoo" ]; then
  # compare_build VARIANT LABEL: zoo/$name.VARIANT.rnx by cuda-graph in
  # deterministic mode (the plan cache of the default build's runs), its
  # state after every step against the default build's, bit for bit.
  compare_build() {
    local variant=$1 label=$2
    [ -f "$bundle/zoo/$name.$variant.rnx" ] || return 0
    "$bin/rn-run" "$bundle/zoo/$name.$variant.rnx" --synthetic --steps 20 --lr 0.02 \
      --executor cuda-graph --deterministic --plan-cache "$cache" \
      --state-digest "$out/zoo-$name.$variant.det.json" --state-digest-every 1 \
      > "$out/zoo-$name.$variant.det.log" 2>&1
    "$python" "$bundle/scripts/compare-digests.py" "$out/zoo-$name.cuda-graph.det.json" \
      "$out/zoo-$name.$variant.det.json" --tol 0 > "$out/zoo-$name.$variant.compare.log" 2>&1
    say "20 steps $name, $label cuda-graph deterministic (tol 0): exit $?; $(tail -1 "$out/zoo-$name.$variant.compare.log")"
  }
  # One step of every zoo model against the CPU executor's digest
  # (scripts/zoo-digests.sh made them on the development machine).
  # RN_ZOO_STEPS20=0 leaves out the 20-step runs.
  for ref in "$bundle"/zoo/*.steps20.cpu.log; do
    [ "${RN_ZOO_STEPS20:-1}" = 0 ] && break
    name=$(basename "$ref" .cpu.log)
    # cuda-eager and cuda-graph in deterministic mode with one plan cache:
    # the same state bit for bit after every one of 20 steps (each entry's
    # hash compared; fashion_cnn has dropout, f16 runs scale the loss).
    cache=$out/plans-$name.json
    for ex in cuda-eager cuda-graph; do
      "$bin/rn-run" "$bundle/zoo/$name.rnx" --synthetic --steps 20 --lr 0.02 --executor $ex \
        --deterministic --plan-cache "$cache" --state-digest "$out/zoo-$name.$ex.det.json" \
        --state-digest-every 1 \
        > "$out/zoo-$name.$ex.det.log" 2>&1
    done
    "$python" "$bundle/scripts/compare-digests.py" "$out/zoo-$name.cuda-eager.det.json" \
      "$out/zoo-$name.cuda-graph.det.json" --tol 0 > "$out/zoo-$name.det.compare.log" 2>&1
    say "20 steps $name, cuda-graph vs cuda-eager deterministic (tol 0): exit $?; $(tail -1 "$out/zoo-$name.det.compare.log")"
    # The same step built another way must leave the same bits after every
    # step as the default build: one zeroing, unscaling and cast node per
    # tensor (group-elementwise=false) instead of the multi-tensor kernels,
    # and data-parallel (one replica) with the all-reduce bucketed into the
    # backward.
    compare_build ungrouped "grouped vs ungrouped"
    compare_build buckets "data-parallel bucketed vs plain"
    "$bin/rn-run" "$bundle/zoo/$name.rnx" --synthetic --steps 20 --lr 0.02 --executor cuda-graph \
      > "$out/zoo-$name.gpu.log" 2>&1
    rc=$?
    tol=1e-3
    [[ $name == *f16* ]] && tol=3e-2
    # Within what the CPU's own losses move from perturbed parameters where
    # zoo-digests.sh wrote those logs (docs/gpu-tests.md, "The zoo criterion").
    noise=()
    for n in "$bundle"/zoo/"$name".noise.*.log; do
      [ -f "$n" ] && noise+=(--noise "$n" --noise-factor "${RN_ZOO_NOISE_FACTOR:-4}")
    done
    if [ $rc -eq 0 ]; then
      "$python" "$bundle/scripts/compare-digests.py" --losses "$ref" "$out/zoo-$name.gpu.log" \
        --tol "$tol" ${noise[@]+"${noise[@]}"} > "$out/zoo-$name.compare.log" 2>&1
      rc=$?
    fi
    say "20 steps $name (cuda-graph vs CPU): exit $rc; $(tail -1 "$out/zoo-$name.compare.log" 2>/dev/null)"
    # The unfolded build (fold-gradient-adds=false: the junctions' separate
    # gradient adds) and the stored-mask one (recompute-relu-mask=false: the
    # CBR backward reads the ReLU results) against the same CPU losses; the
    # BN-prologue build (fuse-bn-prologue=true) against its own.
    for variant in unfolded storedmask bnprologue; do
      [ -f "$bundle/zoo/$name.$variant.rnx" ] || continue
      variantRef=$ref variantNoise=(${noise[@]+"${noise[@]}"})
      if [ -f "$bundle/zoo/$name.$variant.cpu.log" ]; then
        variantRef=$bundle/zoo/$name.$variant.cpu.log variantNoise=()
        for n in "$bundle"/zoo/"$name.$variant".noise.*.log; do
          [ -f "$n" ] && variantNoise+=(--noise "$n" --noise-factor "${RN_ZOO_NOISE_FACTOR:-4}")
        done
      fi
      "$bin/rn-run" "$bundle/zoo/$name.$variant.rnx" --synthetic --steps 20 --lr 0.02 \
        --executor cuda-graph > "$out/zoo-$name.$variant.gpu.log" 2>&1
      rc=$?
      if [ $rc -eq 0 ]; then
        "$python" "$bundle/scripts/compare-digests.py" --losses "$variantRef" \
          "$out/zoo-$name.$variant.gpu.log" --tol "$tol" \
          ${variantNoise[@]+"${variantNoise[@]}"} > "$out/zoo-$name.$variant.compare.log" 2>&1
        rc=$?
      fi
      what="unfolded gradient adds"
      [ "$variant" = storedmask ] && what="stored ReLU masks"
      [ "$variant" = bnprologue ] && what="BN prologue"
      say "20 steps $name $what (cuda-graph vs CPU): exit $rc; $(tail -1 "$out/zoo-$name.$variant.compare.log" 2>/dev/null)"
    done
  done
  # With the CPU's noise digests (the same step from perturbed parameters,
  # scripts/zoo-digests.sh), an entry may differ by 4x what the perturbation
  # moves it on the CPU, and by 1e-4 where it does not move; without them by
  # a fixed 2e-3 (docs/gpu-tests.md, "The zoo criterion").
  for ref in "$bundle"/zoo/*.cpu.json; do
    model=$(basename "$ref" .cpu.json)
    # cuda-graph: every zoo model captures and replays (the load summary
    # in the log has each subgraph's node count), and its step is checked.
    "$bin/rn-run" "$bundle/zoo/$model.rnx" --synthetic --steps 1 --lr 0.05 \
      --executor "${RN_ZOO_EXECUTOR:-cuda-graph}" \
      --state-digest "$out/zoo-$model.gpu.json" > "$out/zoo-$model.log" 2>&1
    rc=$?
    noise=()
    for n in "$bundle"/zoo/"$model".noise.*.json; do
      [ -f "$n" ] && noise+=(--noise "$n")
    done
    if [ ${#noise[@]} -gt 0 ]; then
      criterion=(--tol "${RN_ZOO_NOISE_TOL:-1e-4}" --noise-factor "${RN_ZOO_NOISE_FACTOR:-4}" "${noise[@]}")
    else
      criterion=(--tol "${RN_ZOO_TOL:-2e-3}")
    fi
    if [ $rc -eq 0 ]; then
      "$python" "$bundle/scripts/compare-digests.py" "$ref" "$out/zoo-$model.gpu.json" \
        "${criterion[@]}" >> "$out/zoo-$model.log" 2>&1
      rc=$?
    fi
    say "zoo $model (${RN_ZOO_EXECUTOR:-cuda-graph}): exit $rc; $(grep -o '[0-9]* graphs with [0-9]* nodes' "$out/zoo-$model.log"); $(tail -1 "$out/zoo-$model.log")"
  done
fi

if has dist && [ -d "$bundle/zoo" ]; then
  # Data-parallel through NCCL on this one GPU (the 2-GPU runs need the
  # 2-GPU machine). Every command runs under `timeout`: a hang is a failure.
  export NCCL_NVLS_ENABLE=0
  # 1. One rank (WORLD_SIZE=1): the all-reduce buckets are NCCL calls
  #    captured in the graphs; the state after every step must equal the
  #    one-process build's, bit for bit (ncclAvg over one rank is a copy).
  for name in fashion_cnn.f32.steps20 resnet18c.f16.steps20; do
    art=$bundle/zoo/$name.buckets.rnx
    [ -f "$art" ] || continue
    cache=$out/plans-dist-$name.json
    # gpus1: the same one rank from a process driving its GPUs by threads.
    for run in plain nccl-graph nccl-eager gpus1; do
      ex=cuda-graph; env=(); extra=()
      [ $run = nccl-eager ] && ex=cuda-eager
      [[ $run == nccl-* ]] && env=(WORLD_SIZE=1 RANK=0 LOCAL_RANK=0)
      [ $run = gpus1 ] && extra=(--gpus 1)
      env ${env[@]+"${env[@]}"} timeout 300 "$bin/rn-run" "$art" --synthetic --steps 20 --lr 0.02 \
        --executor $ex --deterministic --plan-cache "$cache" ${extra[@]+"${extra[@]}"} \
        --state-digest "$out/dist-$name.$run.json" --state-digest-every 1 \
        > "$out/dist-$name.$run.log" 2>&1
      say "dist $name $run: exit $?; $(grep -m1 -E 'NCCL communicator|error' "$out/dist-$name.$run.log")"
    done
    for run in nccl-graph nccl-eager gpus1; do
      "$python" "$bundle/scripts/compare-digests.py" "$out/dist-$name.plain.json" \
        "$out/dist-$name.$run.json" --tol 0 > "$out/dist-$name.$run.compare.log" 2>&1
      say "20 steps $name, one-rank NCCL $run vs one process (tol 0): exit $?; $(tail -1 "$out/dist-$name.$run.compare.log")"
    done
  done
  art=$bundle/zoo/fashion_cnn.f32.steps20.buckets.rnx
  # 2. A rank missing at start-up: rank 0 of 2 alone ends with an error at
  #    its deadline (RN_DIST_TIMEOUT_S=5), never hangs.
  start=$SECONDS
  env WORLD_SIZE=2 RANK=0 LOCAL_RANK=0 MASTER_ADDR=127.0.0.1 MASTER_PORT=29517 RN_DIST_TIMEOUT_S=5 \
    timeout 120 "$bin/rn-run" "$art" --synthetic --steps 5 --executor cuda-graph \
    > "$out/dist-missing-rank.log" 2>&1
  rc=$?
  say "dist missing rank: exit $rc (want 1) after $((SECONDS - start)) s: $(grep -m1 error "$out/dist-missing-rank.log")"
  # 3. Two ranks on this one GPU (both LOCAL_RANK=0): NCCL's bootstrap
  #    across two processes; NCCL refuses two ranks of one communicator on
  #    one device, and each rank must say so and exit, not hang.
  for r in 0 1; do
    env WORLD_SIZE=2 RANK=$r LOCAL_RANK=0 MASTER_ADDR=127.0.0.1 MASTER_PORT=29518 RN_DIST_TIMEOUT_S=20 \
      timeout 120 "$bin/rn-run" "$art" --synthetic --steps 5 --executor cuda-graph \
      > "$out/dist-two-ranks-one-gpu.$r.log" 2>&1 &
  done
  wait
  for r in 0 1; do
    say "dist two ranks on one GPU, rank $r: $(grep -m1 -E 'error|loss' "$out/dist-two-ranks-one-gpu.$r.log")"
  done
fi

if has dist2; then
  # Data-parallel on two GPUs (the nvidia-h200-x2 machine; skipped with
  # fewer). NCCL_NVLS_ENABLE=0: NVLink multicast stays off there.
  export NCCL_NVLS_ENABLE=0
  gpus=$(nvidia-smi -L | wc -l)
  if (( gpus < 2 )); then
    say "dist2: skipped (this machine has $gpus GPU)"
  else
    # 1. The f32 MLP (no BN): 2 GPUs at 64 each, by --gpus 2 and by two
    #    torchrun-style processes, against 1 GPU at the global batch 128.
    timeout 300 "$bin/rn-run" "$models/mlp.dist128.plain.rnx" --synthetic --steps 20 --lr 0.05 \
      --executor cuda-graph > "$out/dist2-mlp-1gpu.log" 2>&1
    timeout 300 "$bin/rn-run" "$models/mlp.dist64.dp.rnx" --synthetic --steps 20 --lr 0.05 \
      --executor cuda-graph --gpus 2 > "$out/dist2-mlp-gpus2.log" 2>&1
    say "dist2 mlp --gpus 2: exit $?; $(grep -m1 'NCCL communicator' "$out/dist2-mlp-gpus2.log")"
    for r in 0 1; do
      env WORLD_SIZE=2 RANK=$r LOCAL_RANK=$r MASTER_ADDR=127.0.0.1 MASTER_PORT=29521 \
        timeout 300 "$bin/rn-run" "$models/mlp.dist64.dp.rnx" --synthetic --steps 20 --lr 0.05 \
        --executor cuda-graph > "$out/dist2-mlp-procs.$r.log" 2>&1 &
    done
    wait
    for run in gpus2 procs.0; do
      "$python" "$bundle/scripts/compare-digests.py" --losses "$out/dist2-mlp-1gpu.log" \
        "$out/dist2-mlp-$run.log" --tol 1e-4 > "$out/dist2-mlp-$run.compare.log" 2>&1
      say "20 steps mlp, 2 GPUs ($run) vs 1 GPU at the global batch (tol 1e-4): exit $?; $(tail -1 "$out/dist2-mlp-$run.compare.log")"
    done
    # 2. Fashion-MNIST on two GPUs with the main job's recipe (global batch 64).
    timeout 300 "$bin/rn-run" "$models/fashion_cnn.dist32.dp.rnx" --data "$data" --epochs 2 \
      --lr 0.01 --gpus 2 --no-progress > "$out/dist2-fashion.log" 2>&1
    say "dist2 fashion_cnn 2 GPUs (2 epochs, lr 0.01): exit $?; $(grep -E 'test loss' "$out/dist2-fashion.log" | tail -1)"
    # 3. A rank killed mid-run: the other ends with an error at its deadline.
    for r in 0 1; do
      env WORLD_SIZE=2 RANK=$r LOCAL_RANK=$r MASTER_ADDR=127.0.0.1 MASTER_PORT=29522 \
        RN_DIST_TIMEOUT_S=10 timeout 120 "$bin/rn-run" "$models/mlp.dist64.dp.rnx" --synthetic \
        --steps 2000000 --executor cuda-graph > "$out/dist2-killed.$r.log" 2>&1 &
      pid[$r]=$!
    done
    sleep 8
    kill -9 "${pid[1]}"
    start=$SECONDS
    wait "${pid[0]}"
    rc=$?
    say "dist2 rank 1 killed: rank 0 exit $rc (want 1) $((SECONDS - start)) s after the kill: $(grep -m1 error "$out/dist2-killed.0.log")"
    # 4. Throughput, RN against PyTorch DDP, 1 and 2 GPUs, one process per
    #    run; the lines go to dist2-bench.jsonl and, with the scaling
    #    efficiency, to dist2-bench.md (bench/collect_results.py).
    jsonl=$out/dist2-bench.jsonl
    : > "$jsonl"
    for spec in resnet18c:256 resnet50:256; do
      name=${spec%%:*} batch=${spec##*:}
      for n in 1 2; do
        timeout 300 "$bin/rn-run" "$models/$name.bench$batch.dp.rnx" --benchmark --steps 40 \
          --warmup 15 --executor cuda-graph --gpus $n > "$out/dist2-bench-rn-$name-$n.log" 2>&1
        say "dist2 bench rn $name bs$batch/GPU x$n: exit $?; $(grep -m1 '^{' "$out/dist2-bench-rn-$name-$n.log")"
        grep -m1 '^{"model"' "$out/dist2-bench-rn-$name-$n.log" |
          sed 's/^{/{"framework": "rn", "mode": "multi-stream", /' >> "$jsonl"
        timeout 300 "$(dirname "$python")/torchrun" --standalone --nproc_per_node $n \
          "$bundle/bench/torch_ddp.py" --models "$spec" > "$out/dist2-bench-ddp-$name-$n.log" 2>&1
        say "dist2 bench ddp $name bs$batch/GPU x$n: exit $?; $(grep '"mode": "ddp"' "$out/dist2-bench-ddp-$name-$n.log" | tail -1)"
        grep '"mode": "ddp"' "$out/dist2-bench-ddp-$name-$n.log" | tail -1 >> "$jsonl"
      done
    done
    "$python" "$bundle/bench/collect_results.py" "$jsonl" --out "$out/dist2-results.json" \
      --markdown "$out/dist2-bench.md" > /dev/null 2>&1
    say "dist2 scaling: $(grep -E 'on 2 GPUs \|' "$out/dist2-bench.md" 2>/dev/null | tr '\n' ' ')"
  fi
fi

if has observe; then
  # cuda-graph's graph dumps and a timeline of resnet18c, in one archive.
  obs=$out/observe
  mkdir -p "$obs"
  "$bin/rn-run" "$models/resnet18c.bench256.rnx" --benchmark --steps 5 --warmup 3 \
    --executor cuda-graph --dump-graphs "$obs/graphs" --trace "$obs/resnet18c.trace.json" \
    > "$obs/resnet18c.log" 2>&1
  say "observe: exit $?; $(ls "$obs/graphs" 2>/dev/null | wc -l) graph dumps; $(tail -1 "$obs/resnet18c.log")"
  tar czf "$out/graphs-and-trace.tgz" -C "$obs" . && rm -rf "$obs"
fi

if has sanitizer; then
  if command -v compute-sanitizer >/dev/null; then
    # Every kernel test under memcheck, in RN_SANITIZE_SHARDS (default 8)
    # gtest shards side by side (the sanitizer's cost is mostly host time),
    # with convolution plans untimed (RN_CONV_AUTOTUNE=0: timing runs every
    # candidate plan under instrumentation; the two Conv.Autotune* tests, the
    # plan cache and the candidate cap, need it)
    # and the large sweeps sampled (RN_TEST_SWEEP=small, cuda_test_util.h).
    # Communicator.* is left out: NCCL's initialization probes its kernels
    # for other architectures (cudaFuncGetAttributes failing with
    # cudaErrorNoKernelImageForDevice inside libnccl), which memcheck counts
    # as API errors, and the instrumented run outlasts the deadline tests'
    # bounds; the unit group runs them.
    shards=${RN_SANITIZE_SHARDS:-8}
    pids=()
    for ((k = 0; k < shards; ++k)); do
      GTEST_TOTAL_SHARDS=$shards GTEST_SHARD_INDEX=$k RN_CONV_AUTOTUNE=0 RN_TEST_SWEEP=small \
        compute-sanitizer --tool memcheck --error-exitcode 3 "$bin/rn-cuda-tests" \
        --gtest_filter="${RN_SANITIZE_FILTER:-*}:-*Bandwidth*:Conv.Autotune*:Communicator.*" \
        > "$out/memcheck-kernels.$k.log" 2>&1 &
      pids+=($!)
    done
    for ((k = 0; k < shards; ++k)); do
      wait "${pids[k]}"
      rc=$?
      log=$out/memcheck-kernels.$k.log
      say "memcheck kernel tests, shard $k of $shards: exit $rc; $(grep -cE '^\[       OK \]' "$log") passed, $(grep -cE '^\[  FAILED  \] [A-Za-z].* \([0-9]+ ms\)$' "$log") failed; $(grep -E 'ERROR SUMMARY' "$log" | tail -1)"
    done
    compute-sanitizer --tool memcheck --error-exitcode 3 "$bin/rn-run" "$models/cnn.rnx" \
      --synthetic --steps 2 --executor cuda-eager > "$out/memcheck-cnn.log" 2>&1
    say "memcheck cnn 2 steps: exit $?; $(grep -E 'ERROR SUMMARY' "$out/memcheck-cnn.log" | tail -1)"
    compute-sanitizer --tool memcheck --error-exitcode 3 "$bin/rn-run" "$models/cnn.rnx" \
      --synthetic --steps 2 --executor cuda-graph > "$out/memcheck-cnn-graph.log" 2>&1
    say "memcheck cnn 2 steps cuda-graph: exit $?; $(grep -E 'ERROR SUMMARY' "$out/memcheck-cnn-graph.log" | tail -1)"
  else
    say "compute-sanitizer not found"
  fi
fi
cat "$summary"
# Failed when a line reports a non-zero exit that is not the one it wants
# (the error paths want 1), a failed test, or a sanitizer error.
if grep -E 'exit [1-9][0-9]*' "$summary" | grep -vqE 'exit ([0-9]+) \(want \1\)' ||
   grep -qE '[1-9][0-9]* failed;|ERROR SUMMARY: [1-9]' "$summary"; then
  exit 1
fi
