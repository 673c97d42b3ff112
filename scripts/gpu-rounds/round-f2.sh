# GPU round F2 (issue 32's final run, second call): RN's side of the benchmark (bench/run-rn.sh: the default build cold and warm, single-stream, cuda-eager, the unfolded build for the conv floor, the BN prologue), then torch.compile on the three batch-256 convolutional configurations.
cd "$(dirname "$0")/.." && bundle=$PWD && source scripts/gpu-env.sh
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee $OUT/gpu.txt
start=$SECONDS
rm -f models/*.ungrouped.rnx models/*.unpadded.rnx models/*.anystridefold.rnx models/*.storedmask.rnx
RN_RUN_TIMEOUT=100 bash bench/run-rn.sh > $OUT/run-rn.log 2>&1
echo "run-rn.sh: exit $? at $((SECONDS - start)) s"
OUT=$OUT/compile RN_BENCH_MODELS=resnet50:256,vgg11c:256,resnet18c:256 RN_PEER_TIMEOUT=130 \
  RN_TORCH_MODES=compile RN_JAX=0 bash bench/run-peers.sh > $OUT/run-peers-compile.log 2>&1
echo "run-peers.sh (compile): exit $? at $((SECONDS - start)) s"
cp $OUT/compile/peers.jsonl $OUT/peers-compile.jsonl
cd $OUT && tar czf logs.tgz *.log compile 2>/dev/null && rm -rf *.log compile; ls $OUT
